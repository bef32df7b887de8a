//! A context's memory goes through its allocator on every path (a VM program on a CPU device, a
//! BEF kernel graph, an ONNX model), is counted in its figures, is held under its limit, and a
//! failed allocation anywhere is an error: the Nth allocation is refused, for every N a whole
//! run makes, and each run either gives the clean run's results or fails with
//! RESOURCE_EXHAUSTED; the context then finishes the work with the results of a clean run, and
//! every block is back once it is dropped.

use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rtx_hal::buffer_view::BufferView;
use rtx_hal::npy;
use rtx_host::{AsyncValueRef, CountingAllocator, Diagnostic, HostAllocator, RcAsyncValue, StatusCode};
use rtx_kernel::tensor::DenseHostTensor;
use rtx_runtime::bridge::tensors::tensor_to_view;
use rtx_runtime::{Context, ContextOptions, Module, Runtime};
use rtx_test_support::{fixtures_dir, repo_root};

/// Counts what goes through it, and refuses the request numbered `fail_at` (from 1; 0: none).
struct Failing {
    counting: CountingAllocator,
    requests: AtomicU64,
    fail_at: AtomicU64,
}

impl Failing {
    fn new() -> Arc<Failing> {
        Arc::new(Failing {
            counting: CountingAllocator::default(),
            requests: AtomicU64::new(0),
            fail_at: AtomicU64::new(0),
        })
    }
}

// SAFETY: forwards to the counting allocator, or refuses.
unsafe impl HostAllocator for Failing {
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        let request = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        if request == self.fail_at.load(Ordering::Relaxed) {
            return None;
        }
        self.counting.allocate(size, align)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.counting.deallocate(ptr, size, align) }
    }
}

/// A model run: a device (for VM programs), a module, and a function called on inputs.
struct Case {
    name: &'static str,
    device: Option<&'static str>,
    module: Module,
    function: &'static str,
    inputs: Vec<Arc<BufferView>>,
}

/// How far a context got through a case: what is done is not done again.
#[derive(Default)]
struct Progress {
    device: bool,
    module: bool,
}

fn digits() -> PathBuf {
    repo_root().join("models/digits")
}

/// `file`'s tensor, reshaped to `shape` when given.
fn npy_view(file: PathBuf, shape: Option<Vec<i64>>) -> Arc<BufferView> {
    let (tensor, _) = npy::decode(&std::fs::read(file).unwrap()).unwrap();
    let shape = shape.unwrap_or_else(|| tensor.shape.iter().map(|&d| d as i64).collect());
    Arc::new(BufferView::from_host(shape, tensor.element_type.0, &tensor.data).unwrap())
}

/// The three paths: the digits MLP compiled by IREE on `local-sync`, the same MLP as a BEF
/// kernel graph, and the MobileNet-style ONNX model.
fn cases() -> Vec<Case> {
    let graphs = std::fs::read_to_string(digits().join("graphs.mlir")).unwrap();
    let bef = rtx_bef::mlir_text_to_bef(&graphs, &rtx_bef::WriteOptions::default()).unwrap();
    let architectures = fixtures_dir().join("onnx/architectures");
    vec![
        Case {
            name: "VM",
            device: Some("local-sync"),
            module: Module::load_file(digits().join("mlp.vmfb")).unwrap(),
            function: "predict",
            inputs: vec![npy_view(digits().join("digit_3.npy"), None)],
        },
        Case {
            name: "BEF",
            device: None,
            module: Module::load_memory(&bef).unwrap(),
            function: "mlp",
            inputs: vec![npy_view(digits().join("digit_3.npy"), Some(vec![1, 64]))],
        },
        Case {
            name: "ONNX",
            device: None,
            module: Module::load_file(architectures.join("mobilenet.onnx")).unwrap(),
            function: "mobilenet",
            inputs: vec![npy_view(architectures.join("mobilenet.input_0.npy"), None)],
        },
    ]
}

/// A context on the single-threaded queue (so that runs are repeatable) whose memory comes from
/// `allocator`.
fn context(allocator: Option<Arc<dyn HostAllocator>>, memory_limit: Option<usize>) -> Context {
    let options = ContextOptions { allocator, memory_limit, ..ContextOptions::from_spec("s").unwrap() };
    Runtime::new().context_with(options).unwrap()
}

/// Takes `case` on from where `progress` says and returns its results' bytes.
fn advance(context: &Context, case: &Case, progress: &mut Progress) -> Result<Vec<Vec<u8>>, Diagnostic> {
    if let (Some(device), false) = (case.device, progress.device) {
        context.add_device(device)?;
        progress.device = true;
    }
    if !progress.module {
        context.add_module(&case.module)?;
        progress.module = true;
    }
    let arguments: Vec<RcAsyncValue> =
        case.inputs.iter().map(|view| AsyncValueRef::available(Arc::clone(view)).into_untyped()).collect();
    let results = context.invoke(&context.function(case.function)?, &arguments)?;
    context.await_values(&results)?;
    results
        .iter()
        .map(|result| {
            if let Some(error) = result.get_error() {
                return Err(error.clone());
            }
            match result.try_get::<Arc<BufferView>>() {
                Ok(view) => view.to_vec(),
                Err(_) => tensor_to_view(result.try_get::<DenseHostTensor>().expect("a tensor"))?.to_vec(),
            }
        })
        .collect()
}

#[test]
fn every_allocation_on_every_path_can_fail_and_is_an_error_that_leaves_the_context_usable() {
    for case in cases() {
        let allocator = Failing::new();
        let clean = {
            let context = context(Some(allocator.clone()), None);
            let results = advance(&context, &case, &mut Progress::default()).unwrap();
            let stats = context.memory_stats();
            assert!(stats.allocations > 0 && stats.peak_bytes > 0, "{}: the context's memory is counted", case.name);
            results
        };
        let requests = allocator.requests.load(Ordering::Relaxed);
        assert_eq!(allocator.counting.live_allocations(), 0, "{}: every block is back", case.name);
        assert!(requests > 0, "{}: the allocator was used", case.name);
        let mut refused = 0;
        for n in 1..=requests {
            let allocator = Failing::new();
            allocator.fail_at.store(n, Ordering::Relaxed);
            {
                let context = context(Some(allocator.clone()), None);
                let mut progress = Progress::default();
                match advance(&context, &case, &mut progress) {
                    Ok(results) => assert_eq!(results, clean, "{}: request {n} refused, the results differ", case.name),
                    Err(error) => {
                        assert_eq!(
                            error.code,
                            StatusCode::ResourceExhausted,
                            "{}: request {n} refused: {error}",
                            case.name
                        );
                        refused += 1;
                    }
                }
                allocator.fail_at.store(0, Ordering::Relaxed);
                let again = advance(&context, &case, &mut progress)
                    .unwrap_or_else(|error| panic!("{}: after request {n} was refused: {error}", case.name));
                assert_eq!(again, clean, "{}: after request {n} was refused", case.name);
            }
            assert_eq!(allocator.counting.live_allocations(), 0, "{}: request {n} refused, a block leaked", case.name);
        }
        assert!(refused > 0, "{}: some refusal must have been felt", case.name);
    }
}

#[test]
fn a_memory_limit_holds_the_context_under_it_and_the_context_stays_usable() {
    for case in cases() {
        let unlimited = context(None, None);
        let clean = advance(&unlimited, &case, &mut Progress::default()).unwrap();
        let needed = unlimited.memory_stats().peak_bytes as usize;
        assert!(needed > 0, "{}: the default allocator is counted", case.name);

        let roomy = context(None, Some(needed));
        assert_eq!(advance(&roomy, &case, &mut Progress::default()).unwrap(), clean, "{}: within the limit", case.name);
        assert!(roomy.memory_stats().peak_bytes as usize <= needed);

        let tight = context(None, Some(needed / 2));
        let mut progress = Progress::default();
        let error = advance(&tight, &case, &mut progress).expect_err("half the memory it needs");
        assert_eq!(error.code, StatusCode::ResourceExhausted, "{}: {error}", case.name);
        assert!(tight.memory_stats().peak_bytes as usize <= needed / 2, "{}: held under the limit", case.name);
    }
}
