//! `rtx translate` between MLIR bytecode and text prints what the library prints, writes
//! bytecode of the asked version that rtx (and, with the IREE tools, iree-opt) reads back, and names
//! the file and byte offset of a corrupt input. The reader's own tests against upstream MLIR are
//! crates/mlir/tests/all/mlir_read.rs.

use std::path::PathBuf;
use std::process::Command;

use rtx::mlir::{mlirbc_to_mlir, print_generic, read_bytecode, PrintOptions};
use rtx_test_support::{fixtures_dir, iree_tools_or_skip, upstream_generic};

fn fixture_dir() -> PathBuf {
    fixtures_dir().join("mlir")
}

fn fixture(name: &str, version: u32) -> Vec<u8> {
    std::fs::read(fixture_dir().join(format!("{name}.v{version}.mlirbc"))).expect("fixture")
}

/// `rtx translate --mlirbc-to-mlir` prints what the library prints, to stdout or `-o FILE`, and
/// names the file and byte offset of a corrupt input.
#[test]
fn rtx_translate_writes_the_generic_text() {
    let input = fixture_dir().join("locations.v6.mlirbc");
    let expected = mlirbc_to_mlir(&fixture("locations", 6), true).expect("reads");
    let out = std::env::temp_dir().join(format!("rtx-translate-{}.mlir", std::process::id()));
    let run =
        |args: &[&std::ffi::OsStr]| Command::new(env!("CARGO_BIN_EXE_rtx")).args(args).output().expect("rtx runs");
    let output = run(&[
        "translate".as_ref(),
        "--mlirbc-to-mlir".as_ref(),
        input.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--print-debuginfo".as_ref(),
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read_to_string(&out).expect("written"), expected);
    let _ = std::fs::remove_file(&out);
    let output = run(&["translate".as_ref(), "--mlirbc-to-mlir".as_ref(), input.as_os_str()]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), mlirbc_to_mlir(&fixture("locations", 6), false).unwrap());
    let truncated = std::env::temp_dir().join(format!("rtx-translate-{}.mlirbc", std::process::id()));
    std::fs::write(&truncated, &fixture("locations", 6)[..100]).unwrap();
    let output = run(&["translate".as_ref(), "--mlirbc-to-mlir".as_ref(), truncated.as_os_str()]);
    let _ = std::fs::remove_file(&truncated);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("rtx-translate-") && stderr.contains("at byte "), "{stderr}");
}

/// `rtx translate --mlir-to-mlirbc` turns upstream's generic text into bytecode of the asked
/// version that rtx reads back to the same module and, with the IREE tools, iree-opt prints
/// exactly as it printed the original.
#[test]
fn rtx_translate_writes_bytecode_from_text() {
    let tools = iree_tools_or_skip();
    for name in ["locations", "attributes", "unregistered"] {
        let input = fixture_dir().join(format!("{name}.generic.mlir"));
        let expected = std::fs::read_to_string(&input).expect("fixture");
        for version in [0, 3, 6] {
            let out =
                std::env::temp_dir().join(format!("rtx-translate-{}-{name}-{version}.mlirbc", std::process::id()));
            let output = Command::new(env!("CARGO_BIN_EXE_rtx"))
                .args(["translate", "--mlir-to-mlirbc", &format!("--bytecode-version={version}")])
                .arg(&input)
                .arg("-o")
                .arg(&out)
                .output()
                .expect("rtx runs");
            if name == "unregistered" && version < 5 {
                // Upstream would silently drop the properties of unregistered ops; rtx refuses.
                let stderr = String::from_utf8_lossy(&output.stderr);
                assert!(!output.status.success() && stderr.contains("cannot express the properties"), "{stderr}");
                continue;
            }
            assert!(output.status.success(), "{name} v{version}: {}", String::from_utf8_lossy(&output.stderr));
            let bytes = std::fs::read(&out).expect("written");
            assert_eq!(bytes[4], (version << 1 | 1) as u8, "{name}: the version (a one-byte varint)");
            let reread = print_generic(
                &read_bytecode(&bytes).expect("rtx reads its own file"),
                PrintOptions { debuginfo: true },
            );
            let direct = mlirbc_to_mlir(expected.as_bytes(), true).expect("rtx parses the text");
            // Below v5 properties travel as attributes, so the text differs there by design.
            if version >= 5 {
                assert_eq!(reread.expect("prints"), direct, "{name} v{version}");
            }
            if let Some(tools) = &tools {
                // Old versions lose what they cannot hold exactly as upstream's own files do.
                let upstream = if version >= 5 {
                    Ok(expected.clone())
                } else {
                    upstream_generic(tools, &fixture_dir().join(format!("{name}.v{version}.mlirbc")))
                };
                assert_eq!(upstream_generic(tools, &out), upstream, "{name} v{version}");
            }
            let _ = std::fs::remove_file(&out);
        }
    }
}
