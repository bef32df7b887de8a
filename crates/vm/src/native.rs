//! Native modules: functions written in Rust (or C, through the FFI layer) that bytecode modules
//! import, like IREE's `hal` and `check` modules.
//!
//! A native module publishes its functions with the exact calling-convention strings the
//! compiler's imports carry, because import resolution compares those strings byte for byte. Each
//! context that adds the module gets its own state from [`NativeModule::create_state`].

use std::any::Any;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use super::abi::ValueKind;
use super::interpreter::op::Passed;
use super::refs::Ref;
use super::value::Value;
use rtx_host::{AsyncValueRef, Diagnostic};

/// One exported function of a native module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeFunction {
    /// The name without the module prefix (`expect_true`, not `check.expect_true`).
    pub name: String,
    /// The calling convention, e.g. `0i_v`.
    pub cconv: String,
}

impl NativeFunction {
    pub fn new(name: impl Into<String>, cconv: impl Into<String>) -> NativeFunction {
        NativeFunction { name: name.into(), cconv: cconv.into() }
    }
}

/// What a native function produced.
pub enum NativeOutcome {
    /// The results are in the `results` the caller passed, in calling-convention order.
    Ready,
    /// The results will arrive later (a fence wait, a host callback): the calling invocation
    /// suspends without blocking its thread and resumes when this value is available. An error
    /// value fails the invocation.
    Pending(AsyncValueRef<Vec<Value>>),
}

/// Per-context state of a native module.
pub type NativeState = Box<dyn Any + Send>;

/// A module implemented by the host.
pub trait NativeModule: Send + Sync {
    /// The name imports use before the first `.` (`check`).
    fn name(&self) -> &str;

    /// Compared against a bytecode module's `minimum_version` dependency.
    fn version(&self) -> u32 {
        0
    }

    /// The exported functions; a function's index here is its ordinal in [`NativeModule::call`].
    fn functions(&self) -> &[NativeFunction];

    /// Whether calls of function `ordinal` get a tracing span: one that only looks something up
    /// or makes a handle takes less time than its span costs, and is better left out.
    fn traced(&self, _ordinal: usize) -> bool {
        true
    }

    /// Creates this module's state for one context.
    fn create_state(&self) -> Result<NativeState, Diagnostic> {
        Ok(Box::new(()))
    }

    /// Calls function `ordinal` with `arguments` already checked against its calling
    /// convention: one value per plain argument, and for a variadic span first its tuple count
    /// as an i32, then the tuples' values flattened. A function that answers at once pushes its
    /// results onto `results` (empty on entry): the caller reuses that vector call after call, so
    /// a program driving the HAL allocates nothing to pass results back.
    fn call(
        &self,
        state: &mut NativeState,
        ordinal: usize,
        arguments: Arguments<'_>,
        results: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic>;
}

/// One argument of a native call as the callee sees it: scalars by value, refs borrowed from the
/// caller (a callee that keeps one clones it).
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    /// `None` is the null ref.
    Ref(Option<&'a Ref>),
}

impl Arg<'_> {
    /// The type name, as [`Value::type_name`] gives it.
    pub fn type_name(&self) -> &str {
        match self {
            Arg::I32(_) => "i32",
            Arg::I64(_) => "i64",
            Arg::F32(_) => "f32",
            Arg::F64(_) => "f64",
            Arg::Ref(None) => "null",
            Arg::Ref(Some(r)) => r.type_name(),
        }
    }

    /// The argument as an owned value (a ref cloned).
    pub fn to_value(self) -> Value {
        match self {
            Arg::I32(v) => Value::I32(v),
            Arg::I64(v) => Value::I64(v),
            Arg::F32(v) => Value::F32(v),
            Arg::F64(v) => Value::F64(v),
            Arg::Ref(r) => Value::Ref(r.cloned()),
        }
    }
}

/// The arguments of one native call, read where they are: in the values a host passed, or, for a
/// call from bytecode, straight from the calling frame's registers, so a program driving the HAL
/// builds, moves and drops no argument values (refs the call moves are released by the caller
/// once the callee returns).
#[derive(Clone, Copy)]
pub struct Arguments<'a> {
    source: Source<'a>,
}

#[derive(Clone, Copy)]
enum Source<'a> {
    Values(&'a [Value]),
    Registers { passed: &'a [Passed], i32s: &'a [u32], refs: &'a [Option<Ref>] },
}

impl<'a> Arguments<'a> {
    /// Arguments a host passed as values.
    pub fn values(values: &'a [Value]) -> Arguments<'a> {
        Arguments { source: Source::Values(values) }
    }

    /// The arguments `passed` names in the caller's registers (`i32s` and `refs` start at its
    /// frame's first register).
    pub(crate) fn registers(passed: &'a [Passed], i32s: &'a [u32], refs: &'a [Option<Ref>]) -> Arguments<'a> {
        Arguments { source: Source::Registers { passed, i32s, refs } }
    }

    pub fn len(&self) -> usize {
        match self.source {
            Source::Values(values) => values.len(),
            Source::Registers { passed, .. } => passed.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Argument `index`, if there is one. (A value a host passed as [`Value::None`] reads as a
    /// null ref: calls are checked against the calling convention before they are made.)
    /// Always inlined: native modules read every argument through it.
    #[inline(always)]
    pub fn get(&self, index: usize) -> Option<Arg<'a>> {
        match self.source {
            Source::Values(values) => Some(match values.get(index)? {
                Value::I32(v) => Arg::I32(*v),
                Value::I64(v) => Arg::I64(*v),
                Value::F32(v) => Arg::F32(*v),
                Value::F64(v) => Arg::F64(*v),
                Value::Ref(r) => Arg::Ref(r.as_ref()),
                Value::None => Arg::Ref(None),
            }),
            Source::Registers { passed, i32s, refs } => Some(match *passed.get(index)? {
                Passed::Count(count) => Arg::I32(i32::from(count)),
                Passed::Register(slot) => {
                    let i = slot.reg as usize;
                    let wide = || i32s[i] as u64 | (i32s[i + 1] as u64) << 32;
                    match slot.kind {
                        ValueKind::I32 => Arg::I32(i32s[i] as i32),
                        ValueKind::F32 => Arg::F32(f32::from_bits(i32s[i])),
                        ValueKind::I64 => Arg::I64(wide() as i64),
                        ValueKind::F64 => Arg::F64(f64::from_bits(wide())),
                        ValueKind::Ref => Arg::Ref(refs[i].as_ref()),
                    }
                }
            }),
        }
    }

    /// The arguments in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Arg<'a>> + '_ {
        (0..self.len()).map(|index| self.get(index).expect("in range"))
    }

    /// The arguments as owned values (refs cloned), for callees that keep them or match on them.
    pub fn to_values(&self) -> Vec<Value> {
        self.iter().map(Arg::to_value).collect()
    }
}

/// A native module as a context holds it, with the names of its calls' tracing spans
/// (`module.function`, `None` where [`NativeModule::traced`] says no), made at the first traced
/// call.
pub(crate) struct NativeInstance {
    module: Arc<dyn NativeModule>,
    span_names: OnceLock<Box<[Option<Arc<str>>]>>,
}

impl NativeInstance {
    pub(crate) fn new(module: Arc<dyn NativeModule>) -> NativeInstance {
        NativeInstance { module, span_names: OnceLock::new() }
    }

    /// The name of function `ordinal`'s spans, if its calls are traced.
    pub(crate) fn span_name(&self, ordinal: usize) -> Option<&Arc<str>> {
        let names = self.span_names.get_or_init(|| {
            let module = self.module.as_ref();
            let traced = |(ordinal, function): (usize, &NativeFunction)| {
                module.traced(ordinal).then(|| Arc::from(format!("{}.{}", module.name(), function.name)))
            };
            module.functions().iter().enumerate().map(traced).collect()
        });
        names.get(ordinal)?.as_ref()
    }
}

impl Deref for NativeInstance {
    type Target = dyn NativeModule;

    fn deref(&self) -> &(dyn NativeModule + 'static) {
        self.module.as_ref()
    }
}
