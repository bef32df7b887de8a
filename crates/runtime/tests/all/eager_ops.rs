//! Eager ops through the runtime API: one op at a time on a context's `cpu` handler — TFRT's cpu
//! ops and every kernel of the context — with tensors in and out as async values, results that
//! match the same op in a BEF graph, and errors that name the op.

use std::sync::Arc;

use rtx_bef::{mlir_text_to_bef, WriteOptions};
use rtx_corert::{OpAttr, OpAttrs, TensorHandle};
use rtx_host::{AsyncValueRef, RcAsyncValue, StatusCode};
use rtx_runtime::{Context, ContextOptions, DenseHostTensor, Module, Runtime, TensorShape};

fn context() -> Context {
    Runtime::new().context_with(ContextOptions::from_spec("mstd:2").unwrap()).expect("a context")
}

fn tensor(context: &Context, dims: &[i64], values: &[f32]) -> RcAsyncValue {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let shape = TensorShape::from_dims(dims).unwrap();
    let dense = DenseHostTensor::from_bytes(context.host(), rtx_kernel::DType::F32, shape, &bytes).unwrap();
    AsyncValueRef::available(dense).into_untyped()
}

/// The results once they are all there, as (shape, elements).
fn floats(context: &Context, results: &[RcAsyncValue]) -> Vec<(Vec<i64>, Vec<f32>)> {
    context.await_values(results).unwrap();
    results
        .iter()
        .map(|r| {
            let dense = r.try_get::<DenseHostTensor>().unwrap_or_else(|e| panic!("a dense tensor, not {e:?}"));
            (dense.shape().dims().to_vec(), dense.values::<f32>().unwrap())
        })
        .collect()
}

fn attrs(entries: Vec<(&str, OpAttr)>) -> Arc<OpAttrs> {
    let mut attrs = OpAttrs::new();
    for (key, value) in entries {
        attrs.set(key, value);
    }
    Arc::new(attrs)
}

fn i64s(values: &[i64]) -> OpAttr {
    OpAttr::Array { dtype: rtx_kernel::DType::I64, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
}

#[test]
fn a_cpu_op_runs_on_tensors_and_gives_them_back() {
    let context = context();
    let a = tensor(&context, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let b = tensor(&context, &[2, 2], &[0.5, -2.0, 0.25, 8.0]);
    let sum = context.execute_op_values("cpu", "tfrt_test.add", &[a, b], None, 1).unwrap();
    assert_eq!(floats(&context, &sum), vec![(vec![2, 2], vec![1.5, 0.0, 3.25, 12.0])]);
    // A scalar tensor comes back written out.
    let shape = attrs(vec![("shape", i64s(&[3])), ("value", OpAttr::F32(2.5))]);
    let scalar = context.execute_op_values("cpu", "tfrt_test.create_from_scalar", &[], Some(&shape), 1).unwrap();
    assert_eq!(floats(&context, &scalar), vec![(vec![3], vec![2.5; 3])]);
}

/// `onnx.Transpose` and `onnx.Gemm` with their attributes, eagerly and in a graph.
#[test]
fn a_kernel_op_gives_what_the_same_kernel_gives_in_a_graph() {
    let context = context();
    let x = || tensor(&context, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let perm = attrs(vec![("perm", i64s(&[1, 0]))]);
    let eager = context.execute_op_values("cpu", "onnx.Transpose", &[x()], Some(&perm), 1).unwrap();
    let expected = (vec![3, 2], vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(floats(&context, &eager), vec![expected.clone()]);

    let graph = r#"
      func.func @transpose(%x: !t.tensor) -> !t.tensor {
        %y = "onnx.Transpose"(%x) {perm = [1, 0]} : (!t.tensor) -> !t.tensor
        tfrt.return %y : !t.tensor
      }"#;
    let module = Module::load_memory(&mlir_text_to_bef(graph, &WriteOptions::default()).unwrap()).unwrap();
    context.add_module(&module).unwrap();
    let in_graph = context.invoke(&context.function("transpose").unwrap(), &[x()]).unwrap();
    assert_eq!(floats(&context, &in_graph), vec![expected]);

    // Gemm: alpha * A B' + beta * C, with a float and an integer attribute.
    let gemm = attrs(vec![("alpha", OpAttr::F32(0.5)), ("transB", OpAttr::I64(1))]);
    let a = tensor(&context, &[1, 2], &[2.0, 4.0]);
    let b = tensor(&context, &[3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    let product = context.execute_op_values("cpu", "onnx.Gemm", &[a, b], Some(&gemm), 1).unwrap();
    assert_eq!(floats(&context, &product), vec![(vec![1, 3], vec![1.0, 2.0, 3.0])]);
}

#[test]
fn ops_are_prepared_once_and_run_on_tensor_handles() {
    let context = context();
    let add = context.make_op("cpu", "tfrt_test.add").unwrap();
    let again = context.make_op("cpu", "tfrt_test.add").unwrap();
    assert_eq!((add.name(), again.name()), ("tfrt_test.add", "tfrt_test.add"));
    let x = TensorHandle::from_tensor(tensor(&context, &[2], &[1.0, 2.0]));
    // The result's shape is known before its data is.
    let pending = AsyncValueRef::<DenseHostTensor>::unconstructed();
    let later = TensorHandle::new(Arc::from(x.device()), x.async_metadata(), pending.as_untyped().clone());
    let results = context.execute_op(&add, &[x.clone(), later], &Arc::default(), 1);
    assert_eq!(results[0].available_metadata().unwrap().shape.dims(), &[2]);
    assert!(!results[0].tensor().is_available());
    pending.emplace(x.tensor().try_get::<DenseHostTensor>().unwrap().clone()).unwrap();
    let tensors: Vec<RcAsyncValue> = results.iter().map(|r| r.tensor().clone()).collect();
    assert_eq!(floats(&context, &tensors), vec![(vec![2], vec![2.0, 4.0])]);
}

#[test]
fn errors_name_the_op() {
    let context = context();
    let unknown = context.execute_op_values("cpu", "my.nothing", &[], None, 1).unwrap_err();
    assert_eq!(unknown.code, StatusCode::Unimplemented);
    assert!(unknown.message.contains("my.nothing was not supported by NullOpHandler"), "{}", unknown.message);
    let handler = context.execute_op_values("gpu", "tfrt_test.add", &[], None, 1).unwrap_err();
    assert!(handler.message.contains("op_handler not found: gpu"), "{}", handler.message);

    let a = tensor(&context, &[2], &[1.0, 2.0]);
    let b = tensor(&context, &[3], &[1.0, 2.0, 3.0]);
    let mismatched = context.execute_op_values("cpu", "tfrt_test.add", &[a.clone(), b], None, 1).unwrap();
    context.await_values(&mismatched).unwrap();
    let error = mismatched[0].get_error().expect("an error");
    assert!(error.message.contains("tfrt_test.add") && error.message.contains("same shape"), "{}", error.message);

    let bad = attrs(vec![("perm", i64s(&[0, 5]))]);
    let transposed =
        context.execute_op_values("cpu", "onnx.Transpose", std::slice::from_ref(&a), Some(&bad), 1).unwrap();
    context.await_values(&transposed).unwrap();
    let error = transposed[0].get_error().expect("an error");
    assert!(error.message.contains("onnx.Transpose") && error.message.contains("perm"), "{}", error.message);

    let strings = attrs(vec![("to", OpAttr::Func("f".into()))]);
    let function = context.execute_op_values("cpu", "onnx.Cast", std::slice::from_ref(&a), Some(&strings), 1).unwrap();
    context.await_values(&function).unwrap();
    assert!(function[0].get_error().expect("an error").message.contains("is a function"));

    let not_a_tensor = context
        .execute_op_values("cpu", "tfrt_test.relu", &[RcAsyncValue::from(AsyncValueRef::available(3i32))], None, 1)
        .unwrap();
    context.await_values(&not_a_tensor).unwrap();
    let error = not_a_tensor[0].get_error().expect("an error");
    assert!(error.message.contains("argument 0 of op `tfrt_test.relu`"), "{}", error.message);
}

/// `@twice_plus(%ch, %x) = (%ch, x + x + x)` through two executeops, registered as an op.
#[test]
fn a_bef_function_registered_as_an_op_runs_eagerly() {
    let context = context();
    let program = r#"
      func.func @twice_plus(%ch: !tfrt.chain, %x: !corert.tensorhandle) -> (!tfrt.chain, !corert.tensorhandle) {
        %cpu = corert.get_op_handler %ch "cpu"
        %y = corert.executeop(%cpu) "tfrt_test.add"(%x, %x) : 1
        %z = corert.executeop(%cpu) "onnx.Add"(%y, %x) : 1
        tfrt.return %ch, %z : !tfrt.chain, !corert.tensorhandle
      }
      func.func @not_an_op(%x: i32) -> i32 {
        tfrt.return %x : i32
      }"#;
    let module = Module::load_memory(&mlir_text_to_bef(program, &WriteOptions::default()).unwrap()).unwrap();
    context.add_module(&module).unwrap();
    context.register_composite_op("my.thrice", "twice_plus").unwrap();
    let x = tensor(&context, &[3], &[1.0, -2.0, 0.5]);
    let y = context.execute_op_values("cpu", "my.thrice", &[x], None, 1).unwrap();
    assert_eq!(floats(&context, &y), vec![(vec![3], vec![3.0, -6.0, 1.5])]);

    let taken = context.register_composite_op("my.thrice", "twice_plus").unwrap_err();
    assert_eq!(taken.code, StatusCode::AlreadyExists);
    let kernel = context.register_composite_op("onnx.Add", "twice_plus").unwrap_err();
    assert_eq!(kernel.code, StatusCode::AlreadyExists, "{}", kernel.message);
    let signature = context.register_composite_op("my.scalar", "not_an_op").unwrap_err();
    assert_eq!(signature.code, StatusCode::InvalidArgument);
    assert!(signature.message.contains("not a !tfrt.chain"), "{}", signature.message);
    let missing = context.register_composite_op("my.none", "nowhere").unwrap_err();
    assert_eq!(missing.code, StatusCode::NotFound);
}
