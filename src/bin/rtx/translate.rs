//! `rtx translate`: MLIR bytecode to and from MLIR's generic text form, MLIR to BEF and BEF back
//! to MLIR.

use std::io::Read;
use std::process::ExitCode;

use crate::flags::Flags;

/// `rtx translate --mlirbc-to-mlir IN [-o OUT] [--print-debuginfo]` and
/// `rtx translate --mlir-to-mlirbc IN [-o OUT] [--bytecode-version=N]` and
/// `rtx translate --mlir-to-bef IN [-o OUT] [--disable-optional-sections[=true|false]]` and
/// `rtx translate --bef-to-mlir IN [-o OUT] [--mlir-print-op-generic] [--mlir-print-debuginfo]`;
/// IN absent or `-` is stdin, `-` or no `-o` is stdout. Flags may have one dash or two.
pub fn translate(flags: &Flags) -> Result<ExitCode, String> {
    let flags = &flags.llvm_style();
    flags.only(&[
        "mlirbc_to_mlir",
        "mlir_to_mlirbc",
        "mlir_to_bef",
        "bef_to_mlir",
        "print_debuginfo",
        "bytecode_version",
        "disable_optional_sections",
        "mlir_print_op_generic",
        "mlir_print_debuginfo",
    ])?;
    let (input, output) = match flags.positional.as_slice() {
        [] => ("-", None),
        [input] => (input.as_str(), None),
        [o, output] if o == "-o" => ("-", Some(output)),
        [input, o, output] | [o, output, input] if o == "-o" => (input.as_str(), Some(output)),
        _ => {
            return Err(format!(
                "expected at most one input file and an optional `-o OUT`\n{}",
                crate::usage::TRANSLATE
            ))
        }
    };
    let (bytes, input) = if input == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("reading stdin: {e}"))?;
        (bytes, "<stdin>")
    } else {
        (std::fs::read(input).map_err(|e| format!("reading `{input}`: {e}"))?, input)
    };
    let failed = |e: rtx::mlir::Error| format!("`{input}`: {e}");
    let modes =
        [flags.has("mlirbc_to_mlir"), flags.has("mlir_to_mlirbc"), flags.has("mlir_to_bef"), flags.has("bef_to_mlir")];
    if flags.has("disable_optional_sections") && !modes[2] {
        return Err("--disable-optional-sections applies to --mlir-to-bef".to_owned());
    }
    if (flags.has("mlir_print_op_generic") || flags.has("mlir_print_debuginfo")) && !modes[3] {
        return Err("--mlir-print-op-generic and --mlir-print-debuginfo apply to --bef-to-mlir".to_owned());
    }
    let out = match modes {
        [false, false, true, false] => {
            let disable_optional_sections = match flags.last("disable_optional_sections") {
                None | Some("false") => false,
                Some("" | "true") => true,
                Some(other) => return Err(format!("bad --disable-optional-sections `{other}` (true or false)")),
            };
            let module = rtx::mlir::read_any(&bytes, Some(input)).map_err(failed)?;
            let options = rtx::bef::WriteOptions { disable_optional_sections };
            rtx::bef::mlir_to_bef(&module, &options).map_err(|e| format!("`{input}`: {e}"))?
        }
        [false, false, false, true] => {
            let disassembly = rtx::bef::bef_to_mlir(&bytes, input).map_err(|e| format!("`{input}`: {e}"))?;
            for warning in &disassembly.warnings {
                eprintln!("{input}:0:0: warning: {warning}");
            }
            let options = rtx::mlir::AsmOptions {
                generic: flags.has("mlir_print_op_generic"),
                debuginfo: flags.has("mlir_print_debuginfo"),
            };
            rtx::mlir::print_asm(&disassembly.module, options).map_err(|e| format!("`{input}`: {e}"))?.into_bytes()
        }
        [true, false, false, false] => {
            if flags.has("bytecode_version") {
                return Err("--bytecode-version applies to --mlir-to-mlirbc".to_owned());
            }
            rtx::mlir::mlirbc_to_mlir(&bytes, flags.has("print_debuginfo")).map_err(failed)?.into_bytes()
        }
        [false, true, false, false] => {
            let version = match flags.last("bytecode_version") {
                None => rtx::mlir::WriteOptions::default().version,
                Some(text) => text.parse().map_err(|_| format!("bad --bytecode-version `{text}`"))?,
            };
            rtx::mlir::mlir_to_mlirbc(&bytes, Some(input), version).map_err(failed)?
        }
        _ => {
            return Err(format!(
                "say what to translate: --mlirbc-to-mlir, --mlir-to-mlirbc, --mlir-to-bef or --bef-to-mlir\n{}",
                crate::usage::TRANSLATE
            ))
        }
    };
    match output.map(String::as_str) {
        None | Some("-") => {
            std::io::Write::write_all(&mut std::io::stdout(), &out).map_err(|e| format!("writing: {e}"))?
        }
        Some(path) => std::fs::write(path, out).map_err(|e| format!("writing `{path}`: {e}"))?,
    }
    Ok(ExitCode::SUCCESS)
}
