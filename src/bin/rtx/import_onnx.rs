//! `rtx import-onnx IN.onnx -o OUT`: an ONNX model as a BEF kernel graph (or its MLIR).

use std::path::Path;
use std::process::ExitCode;

use crate::flags::Flags;

pub fn import_onnx(flags: &Flags) -> Result<ExitCode, String> {
    let flags = &flags.llvm_style();
    flags.only(&[])?;
    let (input, output) = match flags.positional.as_slice() {
        [input, o, output] | [o, output, input] if o == "-o" => (input, output),
        _ => return Err(format!("expected one input model and `-o OUT`\n{}", crate::usage::IMPORT_ONNX)),
    };
    rtx::onnx::import_file(Path::new(input), Path::new(output)).map_err(|e| format!("`{input}`: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
