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
        (Input::Read(bytes), "<stdin>")
    } else {
        (Input::map(input).map_err(|e| format!("reading `{input}`: {e}"))?, input)
    };
    let bytes: &[u8] = &bytes;
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
        #[cfg(not(feature = "tfrt"))]
        [false, false, true, false] | [false, false, false, true] => {
            return Err(rtx::runtime::left_out("tfrt", "translating between MLIR and BEF").message)
        }
        #[cfg(feature = "tfrt")]
        [false, false, true, false] => {
            let disable_optional_sections = match flags.last("disable_optional_sections") {
                None | Some("false") => false,
                Some("" | "true") => true,
                Some(other) => return Err(format!("bad --disable-optional-sections `{other}` (true or false)")),
            };
            let module = rtx::mlir::read_any(bytes, Some(input)).map_err(failed)?;
            let options = rtx::bef::WriteOptions { disable_optional_sections };
            rtx::bef::mlir_to_bef(&module, &options).map_err(|e| format!("`{input}`: {e}"))?
        }
        #[cfg(feature = "tfrt")]
        [false, false, false, true] => {
            let disassembly = rtx::bef::bef_to_mlir(bytes, input).map_err(|e| format!("`{input}`: {e}"))?;
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
            rtx::mlir::mlirbc_to_mlir(bytes, flags.has("print_debuginfo")).map_err(failed)?.into_bytes()
        }
        [false, true, false, false] => {
            let version = match flags.last("bytecode_version") {
                None => rtx::mlir::WriteOptions::default().version,
                Some(text) => text.parse().map_err(|_| format!("bad --bytecode-version `{text}`"))?,
            };
            let module = rtx::mlir::read_any(bytes, Some(input)).map_err(failed)?;
            let options = rtx::mlir::WriteOptions { version, ..rtx::mlir::WriteOptions::default() };
            let out = rtx::mlir::write_bytecode(&module, &options).map_err(|e| failed(e.into()))?;
            // The process ends right after writing: freeing a large module piece by piece
            // (hundreds of thousands of allocations) would only delay the exit.
            std::mem::forget(module);
            out
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

/// The input file: mapped (a large text module is parsed in place, without a heap copy) or, for
/// stdin and files that cannot be mapped (pipes, empty files), read.
enum Input {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl Input {
    fn map(path: &str) -> std::io::Result<Input> {
        let file = std::fs::File::open(path)?;
        if file.metadata()?.is_file() && file.metadata()?.len() > 0 {
            // SAFETY: the mapping is read-only and private; like every mmap-based loader we rely
            // on the file not being truncated or rewritten by another process while we read it.
            if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
                return Ok(Input::Mapped(map));
            }
        }
        let mut bytes = Vec::new();
        (&file).read_to_end(&mut bytes)?;
        Ok(Input::Read(bytes))
    }
}

impl std::ops::Deref for Input {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Input::Mapped(map) => map,
            Input::Read(bytes) => bytes,
        }
    }
}
