//! `rtx opt`: reads MLIR (custom or generic text, or bytecode) and prints it as `tfrt_opt` and
//! `mlir-opt` do, in custom op syntax where rtx knows an op's form.

use std::io::Read;
use std::process::ExitCode;

use crate::flags::Flags;

/// The flags `rtx opt` takes; upstream's tools spell them with one dash or two.
const KNOWN: &[&str] = &["allow_unregistered_dialect", "mlir_print_op_generic", "mlir_print_debuginfo"];

/// `rtx opt [IN] [-o OUT] [--mlir-print-op-generic] [--mlir-print-debuginfo]`; IN absent or `-`
/// is stdin. Unregistered dialects are always allowed (their ops print generic).
pub fn opt(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(KNOWN)?;
    let mut generic = flags.has("mlir_print_op_generic");
    let mut debuginfo = flags.has("mlir_print_debuginfo");
    let mut files = Vec::new();
    let mut arguments = flags.positional.iter();
    let mut output = None;
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "-o" => output = Some(arguments.next().ok_or("`-o` needs a file")?.clone()),
            "-allow-unregistered-dialect" => {}
            "-mlir-print-op-generic" => generic = true,
            "-mlir-print-debuginfo" => debuginfo = true,
            flag if flag.starts_with('-') && flag != "-" => return Err(format!("unknown flag `{flag}`")),
            _ => files.push(argument.clone()),
        }
    }
    let (bytes, name) = match files.as_slice() {
        [] => (read_stdin()?, "<stdin>".to_owned()),
        [path] if path == "-" => (read_stdin()?, "<stdin>".to_owned()),
        [path] => (std::fs::read(path).map_err(|e| format!("reading `{path}`: {e}"))?, path.clone()),
        _ => return Err(format!("expected at most one input file\n{}", crate::usage::OPT)),
    };
    let module = match rtx::mlir::read_any(&bytes, Some(&name)) {
        Ok(module) => module,
        Err(rtx::mlir::Error::Parse(e)) => {
            eprintln!("{name}:{}:{}: error: {}", e.line, e.column, e.message);
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(format!("`{name}`: {e}")),
    };
    let options = rtx::mlir::AsmOptions { debuginfo, generic };
    let text = rtx::mlir::print_asm(&module, options).map_err(|e| format!("`{name}`: {e}"))?;
    match output.as_deref() {
        None | Some("-") => {
            std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()).map_err(|e| format!("writing: {e}"))?
        }
        Some(path) => std::fs::write(path, text).map_err(|e| format!("writing `{path}`: {e}"))?,
    }
    Ok(ExitCode::SUCCESS)
}

fn read_stdin() -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("reading stdin: {e}"))?;
    Ok(bytes)
}
