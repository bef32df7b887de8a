//! `include/rtx.h` is generated from `src/ffi/` by cbindgen and checked in: this test regenerates
//! it and fails when the checked-in copy differs. `RTX_BLESS=1 cargo test --test ffi header::` rewrites it.

use std::path::Path;

fn generate() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml parses");
    // The version macros come from Cargo.toml, never from a hand-kept copy.
    let (major, minor, patch) = (
        env!("CARGO_PKG_VERSION_MAJOR").parse::<u32>().unwrap(),
        env!("CARGO_PKG_VERSION_MINOR").parse::<u32>().unwrap(),
        env!("CARGO_PKG_VERSION_PATCH").parse::<u32>().unwrap(),
    );
    config.after_includes = Some(format!(
        "\n#define RTX_VERSION_MAJOR {major}\n#define RTX_VERSION_MINOR {minor}\n#define RTX_VERSION_PATCH {patch}\n\
         #define RTX_VERSION \"{}\"\n/** MAJOR * 1000000 + MINOR * 1000 + PATCH, for #if comparisons. */\n\
         #define RTX_VERSION_NUMBER {}\n/** The SONAME suffix: librtx.so.RTX_ABI_VERSION. */\n#define RTX_ABI_VERSION {}",
        env!("CARGO_PKG_VERSION"),
        major * 1_000_000 + minor * 1_000 + patch,
        rtx::ffi::version::ABI_VERSION,
    ));
    let mut out = Vec::new();
    // Only src/ffi is the C surface: parsing it alone keeps the layers below, whose `repr` types are
    // Rust-internal, out of the header whatever they add.
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen parses src/ffi")
        .write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn checked_in_header_matches_cbindgen_output() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/rtx.h");
    let generated = generate();
    if std::env::var_os("RTX_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("include/rtx.h is writable");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/rtx.h is stale: run `RTX_BLESS=1 cargo test --test ffi header::` and commit the result"
    );
}

#[test]
fn header_documents_every_function_and_guards_cplusplus() {
    let header = generate();
    assert!(header.contains("#ifdef __cplusplus\nextern \"C\" {"), "extern \"C\" guard missing");
    assert!(header.contains("#ifndef RTX_H"), "include guard missing");
    let lines: Vec<&str> = header.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let is_function = line.contains(" rtx_") && line.contains('(') && !line.trim_start().starts_with('*');
        if is_function && !line.starts_with("typedef") && !line.starts_with(' ') {
            let before = lines[..i].iter().rev().find(|l| !l.trim().is_empty()).copied().unwrap_or("");
            assert!(before.trim_end().ends_with("*/"), "function without a doc comment: {line}");
        }
    }
}

#[test]
fn version_macros_match_the_library() {
    let header = generate();
    // SAFETY: rtx_version returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(rtx::ffi::version::rtx_version()) }.to_str().unwrap().to_string();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert!(header.contains(&format!("#define RTX_VERSION \"{version}\"")));
    assert!(header.contains(&format!("#define RTX_ABI_VERSION {}", rtx::ffi::version::rtx_abi_version())));
}
