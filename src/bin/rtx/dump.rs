//! `rtx dump`: a module's metadata and disassembly, as `iree-dump-module` prints them.

use std::process::ExitCode;

use rtx::vm::dump::{write_dump, DumpOptions, DumpOutput};
use rtx::vm::Module;

use crate::flags::Flags;

pub fn dump(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&["output", "function", "bytecode_offsets"])?;
    let [path] = flags.positional.as_slice() else {
        return Err(format!("expected one module path\n{}", crate::usage::DUMP));
    };
    let output = match flags.last("output").unwrap_or("all") {
        "all" => DumpOutput::All,
        "metadata" => DumpOutput::Metadata,
        "disassembly" => DumpOutput::Disassembly,
        other => return Err(format!("unknown --output `{other}` (all, metadata, disassembly)")),
    };
    let options = DumpOptions {
        output,
        function: flags.last("function").map(str::to_owned),
        bytecode_offsets: flags.has("bytecode_offsets"),
    };
    let module = Module::load_file(path).map_err(|e| format!("loading `{path}`: {e}"))?;
    let mut text = String::new();
    write_dump(&module, &mut text, &options).map_err(|e| e.to_string())?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
