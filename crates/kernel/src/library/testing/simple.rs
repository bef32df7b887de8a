//! Simple test kernels: pass-throughs (`identity`, `multi_arg_result`, `make_indirect`), what
//! the executor knows of a value or kernel (`get_uniqueness`, `get_thread_id`,
//! `print_debug_info`, `unique_loc`), printing (`print_hello`, `print_bool`, `test_cost`,
//! `logging`), arithmetic helpers (`sum`, `count3`, `copy.with_delay`, `flat`), host resources
//! (`allocate_resource`/`deallocate_resource`, `use_sample_shared_context`,
//! `memory_leak_one_int32`), AsyncValue behaviour (`async_value_get`, `async_value_ref`), tensor
//! types by name (`get_static_tensor_type`, `print_tensor_type`) and the sync kernel
//! `sync_sum_attributes`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::async_kernels::sleep_for_random_duration;
use crate::tensor::TensorType;
use crate::{KernelError, KernelRegistry, OutputHandler};
use rtx_host::{AsyncValueRef, Chain, IndirectAsyncValue};

pub(crate) fn register(registry: &mut KernelRegistry) {
    register_pass_throughs(registry);
    register_printing(registry);
    register_arithmetic(registry);
    register_resources(registry);
    register_async_value_checks(registry);
}

fn register_pass_throughs(registry: &mut KernelRegistry) {
    // Operand 0 is a chain; the others come back as they are.
    registry.add_kernel("tfrt_test.identity", |f| {
        for (i, value) in f.arguments()[1..].iter().enumerate() {
            f.set_result(i, value.clone())?;
        }
        Ok(())
    });
    registry.add_kernel("tfrt_test.multi_arg_result", |f| {
        for (i, value) in f.arguments().iter().enumerate() {
            f.set_result(i, value.clone())?;
        }
        Ok(())
    });
    registry.add_kernel("tfrt_test.make_indirect", |f| {
        for (i, value) in f.arguments().iter().enumerate() {
            let indirect = IndirectAsyncValue::new();
            indirect.forward_to(value.clone())?;
            f.set_result(i, indirect.value())?;
        }
        Ok(())
    });
    registry.add_kernel("tfrt_test.get_uniqueness", |f| {
        for (i, value) in f.arguments().iter().enumerate() {
            f.emplace_result(i, value.is_unique())?;
        }
        Ok(())
    });
}

/// A small number per thread, in the order threads first ask.
fn thread_id() -> i32 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static ID: i32 = i32::try_from(NEXT.fetch_add(1, Ordering::Relaxed)).unwrap_or(i32::MAX));
    ID.with(|id| *id)
}

/// The names `tfrt_test.unique_loc` has seen, by location entry.
#[derive(Default)]
struct SeenLocations(Mutex<HashMap<(usize, u32), String>>);

fn register_printing(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_test.print_hello", |f| {
        f.context().print("hello host executor!\n");
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("tfrt_test.get_thread_id", |f| f.emplace_result(0, thread_id()));
    // Operands: a chain, then the i1.
    registry.add_kernel("tfrt_test.print_bool", |f| {
        let value = *f.get::<bool>(1)?;
        f.context().print(if value { "true\n" } else { "false\n" });
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("tfrt_test.test_cost", |f| {
        let id = f.scalar_attribute::<i64>(0)?;
        f.context().print(&format!("id: {id}\n"));
        f.emplace_result(0, 0i32)
    });
    registry.add_kernel("tfrt_test.get_static_tensor_type", |f| {
        let tensor_type = TensorType::from_name(f.string_attribute(0)?);
        f.emplace_result(0, tensor_type)
    });
    registry.add_kernel("tfrt_test.print_tensor_type", |f| {
        let line = format!("tensor_type = {}\n", f.get::<TensorType>(0)?);
        f.context().print(&line);
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("tfrt_test.print_debug_info", |f| {
        let line = match f.debug_name() {
            Some(name) => format!("{name}\n"),
            None => "Kernel has no debug info\n".to_owned(),
        };
        f.context().print(&line);
        f.emplace_result(0, Chain)
    });
    // Fails when two kernels given different names share a location entry.
    registry.add_kernel("tfrt_test.unique_loc", |f| {
        let name = f.string_attribute(0)?;
        let seen = f.host().resource(SeenLocations::default);
        let mut seen = seen.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (_, offset) = f.location_key();
        if *seen.entry(f.location_key()).or_insert_with(|| name.to_owned()) != name {
            return Err(format!("duplicate locations {offset}").into());
        }
        f.emplace_result(0, Chain)
    });
    // Log lines go to standard error, one per level, as TFRT's logger writes them.
    registry.add_kernel("tfrt_test.logging", |f| {
        let text = f.get::<String>(0)?;
        for (level, macro_name) in [
            ('I', "TFRT_LOG(INFO)"),
            ('W', "TFRT_LOG(WARNING)"),
            ('E', "TFRT_LOG(ERROR)"),
            ('I', "TFRT_LOG_IF(INFO, true)"),
            ('W', "TFRT_LOG_IF(WARNING, true)"),
            ('E', "TFRT_LOG_IF(ERROR, true)"),
        ] {
            eprintln!("{level} tfrt_test.logging] from {macro_name}: {text}");
        }
        f.emplace_result(0, Chain)
    });
}

fn register_arithmetic(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_test.sum", |f| {
        let mut sum = 0i32;
        for i in 0..f.num_arguments() {
            sum = sum.wrapping_add(*f.get::<i32>(i)?);
        }
        f.emplace_result(0, sum)
    });
    macro_rules! per_integer {
        ($($t:ty: $suffix:literal),*) => {$(
            registry.add_kernel(concat!("tfrt_test.count3.", $suffix), |f| {
                let x = *f.get::<$t>(0)?;
                for i in 0..3 {
                    f.emplace_result(i, x.wrapping_add(i as $t + 1))?;
                }
                Ok(())
            });
            registry.add_kernel(concat!("tfrt_test.copy.with_delay.", $suffix), |f| {
                let x = *f.get::<$t>(0)?;
                sleep_for_random_duration();
                f.emplace_result(0, x)
            });
        )*};
    }
    per_integer!(i32: "i32", i64: "i64");
    // `value = [[string, [i32, i32]], [f32]]`, flattened into four results.
    registry.add_kernel("tfrt_test.flat", |f| {
        let outer = f.attribute(0)?.aggregate()?;
        let first = outer.get(0)?.aggregate()?;
        let text = first.get(0)?.string()?.to_owned();
        let pair = first.get(1)?.array::<i32>()?;
        let float = outer.get(1)?.array::<f32>()?;
        let missing = || KernelError::from("tfrt_test.flat's attribute has too few elements");
        f.emplace_result(0, text)?;
        f.emplace_result(1, pair.get(0).ok_or_else(missing)?)?;
        f.emplace_result(2, pair.get(1).ok_or_else(missing)?)?;
        f.emplace_result(3, float.get(0).ok_or_else(missing)?)
    });
    registry.add_sync_kernel("tfrt_test.sync_sum_attributes", |f| {
        let mut sum = 0i32;
        for i in 0..f.num_attributes() {
            sum = sum.wrapping_add(f.scalar_attribute::<i32>(i)?);
        }
        f.set_result(0, sum)
    });
}

/// A resource that announces when it is made and destroyed.
pub struct TestResource {
    output: OutputHandler,
}

impl TestResource {
    fn new(output: OutputHandler) -> TestResource {
        output("Allocated TestResource\n");
        TestResource { output }
    }
}

impl Drop for TestResource {
    fn drop(&mut self) {
        (self.output)("Destroyed TestResource\n");
    }
}

/// What `tfrt_test.allocate_resource` returns: a resource its owner can destroy early.
pub struct ResourceHandle(Mutex<Option<TestResource>>);

/// One per host; its name counts the instances made in the process.
struct SampleSharedContext {
    name: String,
}

fn register_resources(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_test.allocate_resource", |f| {
        let resource = TestResource::new(f.context().output_handler());
        let chain = f.argument(0)?.clone();
        f.emplace_result(0, ResourceHandle(Mutex::new(Some(resource))))?;
        f.set_result(1, chain)
    });
    registry.add_kernel("tfrt_test.deallocate_resource", |f| {
        drop(f.get::<ResourceHandle>(0)?.0.lock().unwrap_or_else(PoisonError::into_inner).take());
        let chain = f.argument(1)?.clone();
        f.set_result(0, chain)?;
        f.context().print("tfrt_test.deallocate_resource done\n");
        Ok(())
    });
    registry.add_kernel("tfrt_test.use_sample_shared_context", |f| {
        static INSTANCES: AtomicUsize = AtomicUsize::new(0);
        let shared = f.host().resource(|| SampleSharedContext {
            name: format!("sample_shared_context{}", INSTANCES.fetch_add(1, Ordering::Relaxed)),
        });
        let chain = f.argument(0)?.clone();
        f.emplace_result(0, shared.name.clone())?;
        f.set_result(1, chain)
    });
    // Leaks four bytes of host memory, for the driver's leak check to find.
    registry.add_kernel("tfrt_test.memory_leak_one_int32", |f| {
        f.host().allocate(4, 4)?;
        Ok(())
    });
}

fn register_async_value_checks(registry: &mut KernelRegistry) {
    // Payloads of several kinds read back through an AsyncValue.
    registry.add_kernel("tfrt_test.async_value_get", |f| {
        struct Named(&'static str);
        let parts = [
            AsyncValueRef::available(Named("base1")).get().0.to_owned(),
            AsyncValueRef::available(Named("base2")).get().0.to_owned(),
            AsyncValueRef::available(Named("final_class")).get().0.to_owned(),
            AsyncValueRef::available(3i32).get().to_string(),
        ];
        f.emplace_result(0, parts.join(":"))
    });
    // Availability before and after emplace, and a continuation that runs at emplace.
    registry.add_kernel("tfrt_test.async_value_ref", |f| {
        fn describe(value: &AsyncValueRef<i32>) -> String {
            match value.is_available() {
                true => format!("available:{}", value.get()),
                false => "unavailable".to_owned(),
            }
        }
        let text = Arc::new(Mutex::new(String::new()));
        let push = |s: &str| text.lock().unwrap_or_else(PoisonError::into_inner).push_str(s);
        push(&describe(&AsyncValueRef::available(2)));
        let three = AsyncValueRef::<i32>::unconstructed();
        push(&format!(";{}", describe(&three)));
        let (later, waited) = (Arc::clone(&text), three.clone());
        three.and_then(move || {
            later.lock().unwrap_or_else(PoisonError::into_inner).push_str(&format!("({})", waited.get()))
        });
        push(";");
        three.emplace(3)?;
        push(&format!(";{}", describe(&three)));
        let four = AsyncValueRef::<i32>::unconstructed();
        push(&format!(";{}", describe(&four)));
        // Set through a second reference, which is then dropped.
        let copy = four.clone();
        copy.emplace(4)?;
        drop(copy);
        push(&format!(";{}", describe(&four)));
        let result = text.lock().unwrap_or_else(PoisonError::into_inner).clone();
        f.emplace_result(0, result)
    });
}
