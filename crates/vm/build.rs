//! Scalar loops compile to machine code where there is a backend for the target (`src/jit`).

fn main() {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if arch == "x86_64" && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cfg=rtx_jit");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
