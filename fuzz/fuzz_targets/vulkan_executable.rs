//! Arbitrary bytes as a Vulkan executable (the `vulkan-spirv-fb` FlatBuffer, `VKE1`, that a
//! compiled module hands `hal.executable.create`), read and verified as a device does before
//! any of it reaches a driver: the FlatBuffer reader, every table and vector, the descriptor set
//! and pipeline layouts, the shader modules and, in each, the SPIR-V entry point, workgroup
//! size and built-ins the runtime looks for. Each input must end in a definition or an error,
//! never a panic, hang or huge allocation. No device is needed: a verified definition is what a
//! device would be given.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rtx::hal::vulkan::executable_def::ExecutableDef;

fuzz_target!(|data: &[u8]| {
    if let Ok(def) = ExecutableDef::parse(data) {
        // What a verified definition promises: every index it holds is in range.
        for pipeline in &def.pipelines {
            assert!(pipeline.shader_module < def.shader_modules.len());
            assert!(pipeline.pipeline_layout < def.pipeline_layouts.len());
        }
        let _ = def.export_names();
    }
});
