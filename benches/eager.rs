//! What an eager op costs on small tensors (two 4-element f32 tensors added by `tfrt_test.add`
//! on the context's `cpu` handler, its result awaited), each row against the op through the
//! runtime's Rust API (`Context::execute_op` on tensor handles, the op prepared once) in the same
//! run (`support::row`):
//!
//! - `eager/add4 C API`: `rtx_context_execute_op` on async values a C host got from earlier ops
//!   (tensors), the result awaited and released: the per-op cost of an eager program in C.
//! - `eager/add4 C API buffer views`: the same on async values of buffer views, the result read
//!   as a buffer view: data in from the host and out to it on every op.
//! - `eager/add4 BEF executeop`: a BEF function of 64 chained `corert.executeop`s, per op.
//!
//! numpy's own cost for the same add is the anchor of `python/bench/eager_ops.py`, which times
//! the Python path.
//!
//! `cargo bench --bench eager [-- FILTER]`

mod support;

use std::sync::Arc;

use rtx::ffi::async_value::{
    rtx_async_value_await, rtx_async_value_get_buffer_view, rtx_async_value_release, rtx_async_value_t,
};
use rtx::ffi::buffer_view::{rtx_buffer_view_release, rtx_buffer_view_t};
use rtx::ffi::context::rtx_context_t;
use rtx::ffi::eager::rtx_context_execute_op;
use rtx::ffi::handle;
use rtx::host::{AsyncValueRef, RcAsyncValue};
use rtx::kernel::tensor::{DenseHostTensor, TensorShape};
use rtx::kernel::DType;
use rtx::runtime::bridge::tensors::tensor_to_view;
use rtx::runtime::{Context, ContextOptions, Module, Runtime, TensorHandle};
use support::{per_call, row};

/// Chained adds in the BEF row's function.
const CHAIN: u64 = 64;

fn tensor(context: &Context) -> DenseHostTensor {
    let bytes: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    DenseHostTensor::from_bytes(context.host(), DType::F32, TensorShape::new(vec![4]).unwrap(), &bytes).unwrap()
}

/// A round of `calls` adds through the Rust API.
fn rust_round(context: &Context, calls: u64) -> f64 {
    let op = context.make_op("cpu", "tfrt_test.add").unwrap();
    let x = TensorHandle::from_tensor(AsyncValueRef::available(tensor(context)).into_untyped());
    let attrs = Arc::default();
    per_call(calls, &mut || {
        let results = context.execute_op(&op, &[x.clone(), x.clone()], &attrs, 1);
        context.await_values(std::slice::from_ref(results[0].tensor())).unwrap();
    })
}

/// `tfrt_test.add` of `arguments` through the C API: its result, awaited.
fn c_add(context: *mut rtx_context_t, arguments: &[*mut rtx_async_value_t; 2]) -> *mut rtx_async_value_t {
    let mut result: *mut rtx_async_value_t = std::ptr::null_mut();
    // SAFETY: live handles, a NUL-terminated name, room for one result.
    let error = unsafe {
        rtx_context_execute_op(
            context,
            std::ptr::null(),
            c"tfrt_test.add".as_ptr(),
            arguments.as_ptr(),
            2,
            std::ptr::null(),
            &mut result,
            1,
        )
    };
    assert!(error.is_null());
    // SAFETY: live handles.
    assert!(unsafe { rtx_async_value_await(context, &result, 1) }.is_null());
    result
}

/// A round of `calls` adds through the C API on earlier results, each result released.
fn c_round(context: *mut rtx_context_t, arguments: &[*mut rtx_async_value_t; 2], calls: u64) -> f64 {
    per_call(calls, &mut || {
        // SAFETY: the result is the caller's to release, once.
        unsafe { rtx_async_value_release(c_add(context, arguments)) };
    })
}

/// A round of `calls` adds through the C API on buffer views, each result read as a view.
fn c_views_round(context: *mut rtx_context_t, arguments: &[*mut rtx_async_value_t; 2], calls: u64) -> f64 {
    per_call(calls, &mut || {
        let result = c_add(context, arguments);
        let mut view: *mut rtx_buffer_view_t = std::ptr::null_mut();
        // SAFETY: live value, writable out-parameter; both released right after.
        unsafe {
            assert!(rtx_async_value_get_buffer_view(result, &mut view).is_null());
            rtx_buffer_view_release(view);
            rtx_async_value_release(result);
        }
    })
}

fn bef_module() -> Module {
    let mut body = String::from("func.func @adds(%x: !corert.tensorhandle) -> !corert.tensorhandle {\n");
    body.push_str("  %ch = tfrt.new.chain\n  %cpu = corert.get_op_handler %ch \"cpu\"\n  %v0 = corert.executeop(%cpu) \"tfrt_test.add\"(%x, %x) : 1\n");
    for i in 1..CHAIN {
        body.push_str(&format!("  %v{i} = corert.executeop(%cpu) \"tfrt_test.add\"(%v{}, %x) : 1\n", i - 1));
    }
    body.push_str(&format!("  tfrt.return %v{} : !corert.tensorhandle\n}}\n", CHAIN - 1));
    let bytes = rtx::bef::mlir_text_to_bef(&body, &rtx::bef::WriteOptions::default()).unwrap();
    Module::load_memory(&bytes).unwrap()
}

fn main() {
    let wanted = support::filter();
    let context = Runtime::new().context_with(ContextOptions::from_spec("s").unwrap()).unwrap();
    let calls = 20_000;
    if wanted("eager/add4 C API") {
        let c_context: *mut rtx_context_t =
            handle::to_handle(Arc::new(Runtime::new().context_with(ContextOptions::from_spec("s").unwrap()).unwrap()));
        // SAFETY: the handle was just made.
        let c_side = unsafe { handle::borrow(c_context, "bench", "context") }.unwrap();
        let view = tensor_to_view(&tensor(c_side)).unwrap();
        let viewed: *mut rtx_async_value_t = handle::to_handle(AsyncValueRef::available(view).into_untyped());
        let earlier = c_add(c_context, &[viewed, viewed]);
        let mut anchor = || rust_round(&context, calls);
        let mut subject = || c_round(c_context, &[earlier, earlier], calls);
        row("eager/add4 C API", "Context::execute_op (Rust)", &mut anchor, &mut subject);
        let mut subject = || c_views_round(c_context, &[viewed, viewed], calls);
        if wanted("eager/add4 C API buffer views") {
            row("eager/add4 C API buffer views", "Context::execute_op (Rust)", &mut anchor, &mut subject);
        }
        // SAFETY: the bench's own handles, released once.
        unsafe {
            rtx_async_value_release(earlier);
            rtx_async_value_release(viewed);
            handle::release(c_context);
        }
    }
    if wanted("eager/add4 BEF executeop") {
        context.add_module(&bef_module()).unwrap();
        let function = context.function("adds").unwrap();
        let x: RcAsyncValue = AsyncValueRef::available(TensorHandle::from_tensor(
            AsyncValueRef::available(tensor(&context)).into_untyped(),
        ))
        .into_untyped();
        let mut anchor = || rust_round(&context, calls);
        let mut subject = || {
            per_call(calls / CHAIN, &mut || {
                let results = context.invoke(&function, std::slice::from_ref(&x)).unwrap();
                context.await_values(&results).unwrap();
                assert!(!results[0].is_error());
            }) / CHAIN as f64
        };
        row("eager/add4 BEF executeop", "Context::execute_op (Rust)", &mut anchor, &mut subject);
    }
}
