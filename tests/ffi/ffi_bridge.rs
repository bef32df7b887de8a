//! Dense host tensors cross the C boundary as `rtx_buffer_view_t`: a C host passes a buffer view to
//! a BEF function's tensor argument and reads the graph's tensor result as a buffer view, here
//! through a graph that calls an IREE-compiled function (`rtx.vm.call`).

use std::ffi::{c_void, CString};
use std::path::Path;
use std::ptr;

use crate::common::{invoke, load_file, new_context, ok, release_all, take};
use rtx::bef::{mlir_to_bef, WriteOptions};
use rtx::ffi::async_value::*;
use rtx::ffi::buffer_view::*;
use rtx::ffi::context::*;
use rtx::ffi::device::*;
use rtx::ffi::error::*;
use rtx::ffi::invocation::*;
use rtx::ffi::module::*;

/// `bef.scale_then_add(x, k)`: `bridge.scale(x, k) + x`.
const GRAPH: &str = r#"
func.func @scale_then_add(%x: !tfrt_tensor.tensor, %k: f32) -> !tfrt_tensor.tensor {
  %y = "rtx.vm.call"(%x, %k) {callee = "bridge.scale"} : (!tfrt_tensor.tensor, f32) -> !tfrt_tensor.tensor
  %z = "nn.add.f32"(%y, %x) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %z : !tfrt_tensor.tensor
}
"#;

/// Adds `module` to `context` and releases the caller's reference.
fn add(context: *mut rtx_context_t, module: *mut rtx_module_t) {
    // SAFETY: live handles.
    unsafe {
        ok(rtx_context_add_module(context, module));
        rtx_module_release(module);
    }
}

#[test]
fn a_c_host_passes_and_reads_a_graphs_tensors_as_buffer_views() {
    let context = new_context(c"mstd:2");
    let device = CString::new("local-task").unwrap();
    // SAFETY: a live context and a NUL-terminated name.
    ok(unsafe { rtx_context_add_device(context, device.as_ptr()) });
    add(context, load_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bridge/bridge.vmfb")));
    let module = rtx::mlir::parse_text(GRAPH).expect("parses");
    let bef = mlir_to_bef(&module, &WriteOptions::default()).expect("BEF");
    let mut graph = ptr::null_mut();
    // SAFETY: `bef.len()` readable bytes and an out pointer.
    ok(unsafe { rtx_module_load_memory(bef.as_ptr(), bef.len(), &mut graph) });
    add(context, graph);

    let x = [1.0f32, -2.0, 0.5, 4.0];
    let mut view = ptr::null_mut();
    // SAFETY: the shape, data and out pointer are valid for the sizes given.
    unsafe {
        ok(rtx_buffer_view_new(0x2100_0020, [4i64].as_ptr(), 1, x.as_ptr().cast(), 16, &mut view));
    }
    // SAFETY: a live view; the value takes its own reference.
    let arguments = [unsafe { rtx_async_value_new_buffer_view(view) }, rtx_async_value_new_f32(2.0)];
    // SAFETY: the test's reference.
    unsafe { rtx_buffer_view_release(view) };
    let results = invoke(context, "bef.scale_then_add", &arguments, 1);
    // SAFETY: live values and out pointers.
    unsafe {
        assert_eq!(rtx_async_value_type(results[0]), rtx_value_type_t::RTX_VALUE_TYPE_BUFFER_VIEW);
        let mut out = ptr::null_mut();
        ok(rtx_async_value_get_buffer_view(results[0], &mut out));
        assert_eq!((rtx_buffer_view_rank(out), rtx_buffer_view_dim(out, 0)), (1, 4));
        assert_eq!(rtx_buffer_view_element_type(out), 0x2100_0020);
        let mut z = [0f32; 4];
        ok(rtx_buffer_view_copy_data(out, z.as_mut_ptr().cast::<c_void>(), 16));
        assert_eq!(z, [3.0, -6.0, 1.5, 12.0], "2x + x, by hand");
        rtx_buffer_view_release(out);
    }
    release_all(&arguments);
    release_all(&results);
    // SAFETY: the test's reference.
    unsafe { rtx_context_release(context) };
}

/// `rtx_context_call` runs a BEF function with buffer views in and out (on the context's queue,
/// the caller waiting), and names a result that is not a tensor.
#[test]
fn a_c_host_calls_a_graph_with_buffer_views_and_waits() {
    const TWICE: &str = r#"
func.func @twice(%x: !tfrt_tensor.tensor) -> !tfrt_tensor.tensor {
  %z = "nn.add.f32"(%x, %x) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %z : !tfrt_tensor.tensor
}

func.func @seven(%x: !tfrt_tensor.tensor) -> i32 {
  %c = tfrt.constant.i32 7
  tfrt.return %c : i32
}
"#;
    for spec in [c"s", c"mstd:2"] {
        let context = new_context(spec);
        let bef = mlir_to_bef(&rtx::mlir::parse_text(TWICE).expect("parses"), &WriteOptions::default()).expect("BEF");
        let mut graph = ptr::null_mut();
        // SAFETY: `bef.len()` readable bytes and an out pointer.
        ok(unsafe { rtx_module_load_memory(bef.as_ptr(), bef.len(), &mut graph) });
        add(context, graph);
        let x = [1.0f32, -2.0, 0.5];
        // SAFETY: live handles, arrays of the sizes given; every handle made here is released here.
        unsafe {
            let mut view = ptr::null_mut();
            ok(rtx_buffer_view_new(0x2100_0020, [3i64].as_ptr(), 1, x.as_ptr().cast(), 12, &mut view));
            let mut out = ptr::null_mut();
            ok(rtx_context_call(context, c"twice".as_ptr(), &view, 1, &mut out, 1));
            assert_eq!((rtx_buffer_view_rank(out), rtx_buffer_view_dim(out, 0)), (1, 3), "{spec:?}");
            let mut z = [0f32; 3];
            ok(rtx_buffer_view_copy_data(out, z.as_mut_ptr().cast::<c_void>(), 12));
            assert_eq!(z, [2.0, -4.0, 1.0], "x + x, by hand ({spec:?})");
            rtx_buffer_view_release(out);

            let mut out = ptr::null_mut();
            let (code, message) =
                take(rtx_context_call(context, c"seven".as_ptr(), &view, 1, &mut out, 1)).expect("refused");
            assert_eq!(code, rtx_status_code_t::RTX_STATUS_CODE_INVALID_ARGUMENT);
            assert!(message.starts_with("result 0 of `"), "{message}");
            assert!(message.contains("is i32, not a tensor"), "{message}");
            assert!(out.is_null());
            rtx_buffer_view_release(view);
            rtx_context_release(context);
        }
    }
}
