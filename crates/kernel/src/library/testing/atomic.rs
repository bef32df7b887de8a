//! `tfrt_test.atomic.*.i32`: a shared counter (`!test.atomic.i32`) that kernels update in place,
//! ordered only by the chains they return.

use std::sync::atomic::{AtomicI32, Ordering};

use crate::KernelRegistry;
use rtx_host::Chain;

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_test.atomic.create.i32", |f| f.emplace_result(0, AtomicI32::new(0)));
    registry.add_kernel("tfrt_test.atomic.inc.i32", |f| {
        f.get::<AtomicI32>(0)?.fetch_add(1, Ordering::SeqCst);
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("tfrt_test.atomic.add.i32", |f| {
        let value = *f.get::<i32>(1)?;
        f.get::<AtomicI32>(0)?.fetch_add(value, Ordering::SeqCst);
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("tfrt_test.atomic.get.i32", |f| {
        let value = f.get::<AtomicI32>(0)?.load(Ordering::SeqCst);
        f.emplace_result(0, value)?;
        f.emplace_result(1, Chain)
    });
}
