//! Pure kernels: scalar operations whose only effect is their results (constants, arithmetic,
//! comparisons, casts, chain merges).
//!
//! A pure kernel computes on 64-bit slots and declares the scalar types of its arguments and
//! results, so the executor can run it three ways from one definition: as an async kernel on
//! available values, as a sync kernel on plain values, and inside a *plan* — an async function
//! made only of pure kernels, type-checked once and run as straight-line code over a slot array,
//! with no AsyncValue, reference count or ready count per kernel (see
//! `bef::executor::plan`). Because a pure kernel has no effect, a plan that meets an error can be
//! abandoned and the function run again by the dataflow executor, which reports it as usual.

use super::error::KernelError;
use super::frame::{KernelFrame, KernelSite, SyncKernelFrame};
use super::value::Value;
use rtx_host::{AsyncValueRef, Chain, RcAsyncValue, StatusCode};

/// The types pure kernels compute on. Each value fits one 64-bit slot; a chain holds nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarType {
    I1,
    I32,
    I64,
    UI32,
    UI64,
    F32,
    F64,
    Chain,
}

/// What a pure kernel computes: its argument slots (unused ones are zero) and its immediate (the
/// decoded attribute, zero without one) to its result slots, or its failure into `error` (the
/// slots returned are then meaningless). The slots come back in registers, where a `Result`
/// would come back through memory: in a plan's chain of dependent kernels that round trip was a
/// tenth of each kernel's time.
pub type PureFn = fn(arguments: [u64; 2], immediate: u64, error: &mut Option<KernelError>) -> [u64; 2];

/// Decodes a pure kernel's attributes into its immediate, once per kernel record in a plan.
pub type ImmediateFn = fn(&KernelSite<'_>) -> Result<u64, KernelError>;

/// A pure kernel: its signature and its code (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct PureKernel {
    arguments: Option<&'static [ScalarType]>,
    results: &'static [ScalarType],
    immediate: Option<ImmediateFn>,
    run: PureFn,
}

/// The most arguments and results a pure kernel has (the width of [`PureFn`]'s slot arrays).
pub const MAX_SLOTS: usize = 2;

impl PureKernel {
    /// A kernel reading `arguments` (at most [`MAX_SLOTS`]) and writing `results` (at most
    /// [`MAX_SLOTS`]), with the attributes `immediate` decodes. As in TFRT, a record may pass
    /// trailing chains past the declared arguments.
    pub const fn new(
        arguments: &'static [ScalarType],
        results: &'static [ScalarType],
        immediate: Option<ImmediateFn>,
        run: PureFn,
    ) -> PureKernel {
        assert!(arguments.len() <= MAX_SLOTS && results.len() <= MAX_SLOTS, "a pure kernel has at most 2 slots");
        PureKernel { arguments: Some(arguments), results, immediate, run }
    }

    /// A kernel that takes any number of values of any type, reads none, and makes a chain
    /// (`tfrt.merge.chains`, `tfrt.new.chain`): it only orders.
    pub const fn ordering() -> PureKernel {
        fn chain(_: [u64; 2], _: u64, _: &mut Option<KernelError>) -> [u64; 2] {
            [0; 2]
        }
        PureKernel { arguments: None, results: &[ScalarType::Chain], immediate: None, run: chain }
    }

    /// The argument types; `None` for ordering kernels, which take anything.
    pub fn arguments(&self) -> Option<&'static [ScalarType]> {
        self.arguments
    }

    pub fn results(&self) -> &'static [ScalarType] {
        self.results
    }

    pub fn immediate(&self, site: &KernelSite<'_>) -> Result<u64, KernelError> {
        self.immediate.map_or(Ok(0), |decode| decode(site))
    }

    pub fn run_fn(&self) -> PureFn {
        self.run
    }

    /// The result slots of `arguments`, or the kernel's error.
    fn call(&self, arguments: [u64; 2], immediate: u64) -> Result<[u64; 2], KernelError> {
        let mut error = None;
        let results = (self.run)(arguments, immediate, &mut error);
        error.map_or(Ok(results), Err)
    }

    /// Runs as an async kernel: the frame's (available) arguments in, available results out.
    pub fn run_async(&self, frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
        let mut slots = [0; MAX_SLOTS];
        for (i, ty) in self.arguments.unwrap_or_default().iter().enumerate() {
            slots[i] = ty.slot_of_async(frame.argument(i)?)?;
        }
        let results = self.call(slots, self.immediate(frame)?)?;
        for (i, ty) in self.results.iter().enumerate() {
            frame.set_result(i, ty.async_of_slot(results[i]))?;
        }
        Ok(())
    }

    /// Runs as a sync kernel, on the plain values of a sync function's registers.
    pub fn run_sync(&self, frame: &mut SyncKernelFrame<'_>) -> Result<(), KernelError> {
        let mut slots = [0; MAX_SLOTS];
        for (i, ty) in self.arguments.unwrap_or_default().iter().enumerate() {
            slots[i] = ty.slot_of_value(frame.argument(i)?).map_err(|error| error.at_argument(i))?;
        }
        let results = self.call(slots, self.immediate(frame)?)?;
        for (i, ty) in self.results.iter().enumerate() {
            frame.set_result(i, ty.value_of_slot(results[i]))?;
        }
        Ok(())
    }
}

impl ScalarType {
    /// The scalar type a BEF type name stands for (`i32`, `!tfrt.chain`); `None` for others.
    pub fn from_type_name(name: &str) -> Option<ScalarType> {
        Some(match name {
            "i1" => ScalarType::I1,
            "i32" => ScalarType::I32,
            "i64" => ScalarType::I64,
            "ui32" => ScalarType::UI32,
            "ui64" => ScalarType::UI64,
            "f32" => ScalarType::F32,
            "f64" => ScalarType::F64,
            "!tfrt.chain" => ScalarType::Chain,
            _ => return None,
        })
    }

    /// The slot of an available value of this type.
    pub fn slot_of_async(self, value: &RcAsyncValue) -> Result<u64, KernelError> {
        Ok(match self {
            ScalarType::I1 => value.try_get::<bool>()?.into_slot(),
            ScalarType::I32 => value.try_get::<i32>()?.into_slot(),
            ScalarType::I64 => value.try_get::<i64>()?.into_slot(),
            ScalarType::UI32 => value.try_get::<u32>()?.into_slot(),
            ScalarType::UI64 => value.try_get::<u64>()?.into_slot(),
            ScalarType::F32 => value.try_get::<f32>()?.into_slot(),
            ScalarType::F64 => value.try_get::<f64>()?.into_slot(),
            ScalarType::Chain => value.try_get::<Chain>()?.into_slot(),
        })
    }

    /// An available value holding `slot` as this type.
    pub fn async_of_slot(self, slot: u64) -> RcAsyncValue {
        fn available<T: Slot + Send + Sync>(slot: u64) -> RcAsyncValue {
            AsyncValueRef::available(T::from_slot(slot)).into_untyped()
        }
        match self {
            ScalarType::I1 => available::<bool>(slot),
            ScalarType::I32 => available::<i32>(slot),
            ScalarType::I64 => available::<i64>(slot),
            ScalarType::UI32 => available::<u32>(slot),
            ScalarType::UI64 => available::<u64>(slot),
            ScalarType::F32 => available::<f32>(slot),
            ScalarType::F64 => available::<f64>(slot),
            ScalarType::Chain => Chain::ready().into_untyped(),
        }
    }

    fn slot_of_value(self, value: &Value) -> Result<u64, TypeMismatch> {
        fn slot<T: Slot>(value: &Value) -> Result<u64, TypeMismatch> {
            value
                .get::<T>()
                .map(|v| v.into_slot())
                .ok_or(TypeMismatch { held: value.type_name(), expected: std::any::type_name::<T>() })
        }
        match self {
            ScalarType::I1 => slot::<bool>(value),
            ScalarType::I32 => slot::<i32>(value),
            ScalarType::I64 => slot::<i64>(value),
            ScalarType::UI32 => slot::<u32>(value),
            ScalarType::UI64 => slot::<u64>(value),
            ScalarType::F32 => slot::<f32>(value),
            ScalarType::F64 => slot::<f64>(value),
            ScalarType::Chain => slot::<Chain>(value),
        }
    }

    fn value_of_slot(self, slot: u64) -> Value {
        match self {
            ScalarType::I1 => Value::I1(bool::from_slot(slot)),
            ScalarType::I32 => Value::I32(i32::from_slot(slot)),
            ScalarType::I64 => Value::I64(i64::from_slot(slot)),
            ScalarType::UI32 => Value::new(u32::from_slot(slot)),
            ScalarType::UI64 => Value::new(u64::from_slot(slot)),
            ScalarType::F32 => Value::F32(f32::from_slot(slot)),
            ScalarType::F64 => Value::F64(f64::from_slot(slot)),
            ScalarType::Chain => Value::Chain,
        }
    }
}

/// A sync argument of another type than the kernel reads.
struct TypeMismatch {
    held: &'static str,
    expected: &'static str,
}

impl TypeMismatch {
    fn at_argument(self, i: usize) -> KernelError {
        KernelError::new(
            StatusCode::InvalidArgument,
            format!("argument {i} holds {}, not {}", self.held, self.expected),
        )
    }
}

/// A Rust type pure kernels compute on, and how it sits in a slot.
pub trait Slot: Copy + 'static {
    const TYPE: ScalarType;
    fn from_slot(slot: u64) -> Self;
    fn into_slot(self) -> u64;
}

macro_rules! integer_slot {
    ($($t:ty => $unsigned:ty, $variant:ident);*) => {$(
        impl Slot for $t {
            const TYPE: ScalarType = ScalarType::$variant;
            #[inline(always)]
            fn from_slot(slot: u64) -> $t {
                slot as $unsigned as $t
            }
            #[inline(always)]
            fn into_slot(self) -> u64 {
                self as $unsigned as u64
            }
        }
    )*};
}
integer_slot!(i32 => u32, I32; i64 => u64, I64; u32 => u32, UI32; u64 => u64, UI64);

impl Slot for bool {
    const TYPE: ScalarType = ScalarType::I1;
    #[inline(always)]
    fn from_slot(slot: u64) -> bool {
        slot != 0
    }
    #[inline(always)]
    fn into_slot(self) -> u64 {
        u64::from(self)
    }
}

impl Slot for f32 {
    const TYPE: ScalarType = ScalarType::F32;
    #[inline(always)]
    fn from_slot(slot: u64) -> f32 {
        f32::from_bits(slot as u32)
    }
    #[inline(always)]
    fn into_slot(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Slot for f64 {
    const TYPE: ScalarType = ScalarType::F64;
    #[inline(always)]
    fn from_slot(slot: u64) -> f64 {
        f64::from_bits(slot)
    }
    #[inline(always)]
    fn into_slot(self) -> u64 {
        self.to_bits()
    }
}

impl Slot for Chain {
    const TYPE: ScalarType = ScalarType::Chain;
    #[inline(always)]
    fn from_slot(_: u64) -> Chain {
        Chain
    }
    #[inline(always)]
    fn into_slot(self) -> u64 {
        0
    }
}

/// Defines and registers a pure kernel from a typed body. With a decoder of the kernel's
/// attributes before the body, the body also gets the decoded immediate (`u64`) first:
///
/// ```
/// use rtx_kernel::{KernelError, KernelRegistry, KernelSite};
/// use rtx_kernel::pure_kernel;
///
/// fn scale(site: &KernelSite<'_>) -> Result<u64, KernelError> {
///     Ok(u64::from(site.scalar_attribute::<u32>(0)?))
/// }
///
/// let mut registry = KernelRegistry::new();
/// pure_kernel!(registry, "my.average.i32", |a: i32, b: i32| -> i32 { Ok(((i64::from(a) + i64::from(b)) / 2) as i32) });
/// pure_kernel!(registry, "my.scale.i32", Some(scale), |factor, x: i32| -> i32 {
///     Ok(x.wrapping_mul(factor as i32))
/// });
/// ```
#[macro_export]
macro_rules! pure_kernel {
    ($registry:expr, $name:expr, |$($arg:ident: $t:ty),*| -> $r:ty $body:block) => {
        $crate::pure_kernel!($registry, $name, None, |_immediate $(, $arg: $t)*| -> $r $body)
    };
    ($registry:expr, $name:expr, $immediate:expr, |$imm:ident $(, $arg:ident: $t:ty)*| -> $r:ty $body:block) => {{
        #[allow(unused_variables, unused_mut)]
        fn run(arguments: [u64; 2], $imm: u64, error: &mut Option<$crate::KernelError>) -> [u64; 2] {
            use $crate::pure::Slot;
            let mut slots = arguments.into_iter();
            $(let $arg = <$t as Slot>::from_slot(slots.next().unwrap_or_default());)*
            let result: Result<$r, $crate::KernelError> = $body;
            match result {
                Ok(value) => [Slot::into_slot(value), 0],
                Err(failure) => {
                    *error = Some(failure);
                    [0, 0]
                }
            }
        }
        const KERNEL: $crate::pure::PureKernel = $crate::pure::PureKernel::new(
            &[$(<$t as $crate::pure::Slot>::TYPE),*],
            &[<$r as $crate::pure::Slot>::TYPE],
            $immediate,
            run,
        );
        $registry.add_pure_kernel($name, KERNEL);
    }};
}
