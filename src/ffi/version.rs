//! Version queries, so a host can detect a header/library mismatch at run time.

use std::ffi::c_char;

/// The ABI version: the SONAME suffix (`librtx.so.N`), set in Cargo.toml's
/// `[package.metadata.rtx] abi-version` and passed in by build.rs. No ABI stability before 1.0.
pub const ABI_VERSION: u32 = parse_u32(env!("RTX_ABI_VERSION"));

const VERSION: &std::ffi::CStr =
    match std::ffi::CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("the package version contains a NUL"),
    };

const fn parse_u32(text: &str) -> u32 {
    let bytes = text.as_bytes();
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "RTX_ABI_VERSION must be a decimal number");
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

/// The library's version, `"MAJOR.MINOR.PATCH"` (equals `RTX_VERSION` of a matching header).
/// Static storage: never freed.
#[no_mangle]
pub extern "C" fn rtx_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The library's ABI version (equals `RTX_ABI_VERSION` of a compatible header).
#[no_mangle]
pub extern "C" fn rtx_abi_version() -> u32 {
    ABI_VERSION
}
