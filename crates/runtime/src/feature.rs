//! What a build of rtx leaves out: the parts behind Cargo features (`vulkan`, `tfrt`) say so
//! when asked for, with one error, instead of failing as if the request were wrong.

use rtx_host::{Diagnostic, StatusCode};

/// UNIMPLEMENTED: `what` needs `feature`, which this build left out.
pub fn left_out(feature: &str, what: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::new(
        StatusCode::Unimplemented,
        format!("{what} needs the `{feature}` feature, which this build of rtx leaves out"),
    )
}

#[cfg(test)]
mod tests {
    #[cfg(not(all(feature = "tfrt", feature = "vulkan")))]
    use crate::Runtime;
    #[cfg(not(all(feature = "tfrt", feature = "vulkan")))]
    use rtx_host::{Diagnostic, StatusCode};

    #[cfg(not(all(feature = "tfrt", feature = "vulkan")))]
    fn assert_left_out(result: Result<(), Diagnostic>, feature: &str) {
        let error = result.expect_err("a part left out cannot succeed");
        assert_eq!(error.code, StatusCode::Unimplemented, "{error}");
        assert!(error.message.contains(&format!("`{feature}` feature")), "{error}");
    }

    #[test]
    #[cfg(not(feature = "tfrt"))]
    fn without_tfrt_bef_modules_and_kernels_say_they_are_left_out() {
        let context = Runtime::new().context().unwrap();
        assert_left_out(context.register_kernel("my.kernel", |_| Ok(())), "tfrt");
        assert_left_out(context.add_bef_native_module("graphs"), "tfrt");
        // The smallest BEF file: magic and version, no sections.
        assert_left_out(crate::Module::load_memory(&[0x0B, 0xEF, 0x00]).map(drop), "tfrt");
    }

    #[test]
    #[cfg(not(feature = "vulkan"))]
    fn without_vulkan_vulkan_devices_say_they_are_left_out() {
        let context = Runtime::new().context().unwrap();
        assert_left_out(context.add_device("vulkan://0"), "vulkan");
        assert_left_out(crate::vulkan::physical_devices().map(drop), "vulkan");
        assert_left_out(crate::vulkan::open_index(0).map(drop), "vulkan");
        assert_left_out(crate::vulkan::open_uuid([0; 16]).map(drop), "vulkan");
    }
}
