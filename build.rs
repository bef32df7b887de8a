//! Build script: kept tiny. It passes the ABI version from Cargo.toml to the code and to the
//! linker (SONAME `librtx.so.<ABI>`), and tells -sys style dependents where the header is.

use std::env;
use std::fs;

fn main() {
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let manifest = fs::read_to_string(format!("{manifest_dir}/Cargo.toml")).expect("Cargo.toml is readable");
    let abi = abi_version(&manifest).expect("Cargo.toml needs `abi-version = N` under [package.metadata.rtx]");
    println!("cargo:rustc-env=RTX_ABI_VERSION={abi}");
    match env::var("CARGO_CFG_TARGET_OS").as_deref() {
        Ok("macos") => println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/librtx.{abi}.dylib"),
        Ok("windows") => {}
        _ => println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librtx.so.{abi}"),
    }
    println!("cargo:include={manifest_dir}/include");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=build.rs");
}

/// The `abi-version` key of the `[package.metadata.rtx]` table.
fn abi_version(manifest: &str) -> Option<u32> {
    let mut in_table = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line == "[package.metadata.rtx]";
        } else if in_table {
            if let Some(value) = line.strip_prefix("abi-version") {
                return value.trim_start().strip_prefix('=')?.trim().parse().ok();
            }
        }
    }
    None
}
