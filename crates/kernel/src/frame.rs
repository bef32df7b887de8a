//! Kernel frames: what a kernel sees of the kernel record it runs for — its arguments, its
//! attributes decoded from its program, the functions it refers to, its result slots, its
//! location and the execution context.

use std::sync::Arc;

use super::context::ExecutionContext;
use super::error::KernelError;
use super::value::Value;
use crate::attribute::{Attribute, Scalar};
use crate::function::{Program, ProgramFunction};
use crate::record::KernelRecord;
use rtx_host::{AsyncValueRef, Diagnostic, HostContext, IndirectAsyncValue, Location, RcAsyncValue, StatusCode};

/// What both kinds of frame offer (they dereference to it): the kernel's attributes, the
/// functions it refers to, its location, and the request it runs in.
#[derive(Clone, Copy)]
pub struct KernelSite<'a> {
    record: KernelRecord<'a>,
    program: &'a Arc<dyn Program>,
    context: &'a ExecutionContext,
}

impl<'a> KernelSite<'a> {
    pub fn new(
        record: KernelRecord<'a>,
        program: &'a Arc<dyn Program>,
        context: &'a ExecutionContext,
    ) -> KernelSite<'a> {
        KernelSite { record, program, context }
    }

    pub fn num_attributes(&self) -> usize {
        self.record.num_attributes()
    }

    /// The program the kernel's record belongs to (what a tensor over its attributes' bytes
    /// holds: [`Program::attributes_owner`]).
    pub fn program(&self) -> &'a Arc<dyn Program> {
        self.program
    }

    /// `make()`, the data named `what` this kernel derives from `sources` (weights in the layout
    /// it wants): kept with the program and shared by later calls when the sources are the
    /// program's constants, made afresh otherwise (see [`crate::derived`]).
    pub fn derived<T: std::any::Any + Send + Sync>(
        &self,
        sources: &[&crate::tensor::DenseHostTensor],
        what: &'static str,
        make: impl FnOnce() -> Result<T, KernelError>,
    ) -> Result<Arc<T>, KernelError> {
        self.program.derived().get_or_make(self.program.attributes_section(), sources, what, make)
    }

    /// Attribute `i` (attributes come in the order of their names), to read as the kernel expects.
    pub fn attribute(&self, i: usize) -> Result<Attribute<'a>, KernelError> {
        let attributes = self.record.attributes();
        if i >= attributes.len() {
            return Err(self.out_of_range("attribute", i, attributes.len()));
        }
        Ok(Attribute::new(self.program.attributes_section(), attributes.get(i) as usize))
    }

    pub fn scalar_attribute<T: Scalar>(&self, i: usize) -> Result<T, KernelError> {
        Ok(self.attribute(i)?.scalar()?)
    }

    pub fn string_attribute(&self, i: usize) -> Result<&'a str, KernelError> {
        Ok(self.attribute(i)?.string()?)
    }

    /// The attribute named `name` (a BEF file needs its optional attribute-names section).
    pub fn named_attribute(&self, name: &str) -> Result<Attribute<'a>, KernelError> {
        self.find_attribute(name)?.ok_or_else(|| {
            KernelError::new(
                StatusCode::NotFound,
                format!("kernel `{}` has no attribute named `{name}`", self.kernel_name()),
            )
        })
    }

    /// The attribute named `name`, `None` when the kernel has none: for attributes with defaults,
    /// read without building the error an absent one would be.
    pub fn find_attribute(&self, name: &str) -> Result<Option<Attribute<'a>>, KernelError> {
        self.program.attribute_position(self.record, name)?.map(|i| self.attribute(i)).transpose()
    }

    pub fn num_functions(&self) -> usize {
        self.record.num_functions()
    }

    /// ProgramFunction reference `i` (`@callee`, a region body).
    pub fn function(&self, i: usize) -> Result<ProgramFunction, KernelError> {
        let functions = self.record.functions();
        if i >= functions.len() {
            return Err(self.out_of_range("function", i, functions.len()));
        }
        Ok(ProgramFunction::new(Arc::clone(self.program), functions.get(i) as usize))
    }

    /// Where the kernel is in the source its program was made from.
    pub fn location(&self) -> Location {
        self.program.location(self.record.location())
    }

    /// The kernel's name location (`loc("name")`), TFRT's debug info.
    pub fn debug_name(&self) -> Option<String> {
        self.program.debug_name(self.record.location())
    }

    /// What identifies the kernel's location entry: its program and the entry's offset.
    /// Kernels share a key only when the program gave them the same entry (every unknown
    /// location gets an entry of its own).
    pub fn location_key(&self) -> (usize, u32) {
        (Arc::as_ptr(self.program) as *const () as usize, self.record.location())
    }

    /// The kernel's registered name.
    pub fn kernel_name(&self) -> &'a str {
        self.program.kernel_name(self.record.code())
    }

    pub fn context(&self) -> &'a ExecutionContext {
        self.context
    }

    pub fn host(&self) -> &'a Arc<HostContext> {
        self.context.host()
    }

    fn out_of_range(&self, what: &str, i: usize, count: usize) -> KernelError {
        KernelError::new(
            StatusCode::InvalidArgument,
            format!("kernel `{}` asks for {what} {i} but has {count}", self.kernel_name()),
        )
    }
}

/// The frame of an async kernel. Arguments are available (concrete: a kernel with an error
/// argument is skipped); results may be set now or later (allocate them, set them from a task).
pub struct KernelFrame<'a> {
    site: KernelSite<'a>,
    arguments: &'a [RcAsyncValue],
    results: &'a mut [Option<RcAsyncValue>],
}

impl<'a> KernelFrame<'a> {
    pub fn new(
        site: KernelSite<'a>,
        arguments: &'a [RcAsyncValue],
        results: &'a mut [Option<RcAsyncValue>],
    ) -> KernelFrame<'a> {
        KernelFrame { site, arguments, results }
    }

    pub fn num_arguments(&self) -> usize {
        self.arguments.len()
    }

    pub fn arguments(&self) -> &'a [RcAsyncValue] {
        self.arguments
    }

    pub fn argument(&self, i: usize) -> Result<&'a RcAsyncValue, KernelError> {
        self.arguments.get(i).ok_or_else(|| self.site.out_of_range("argument", i, self.arguments.len()))
    }

    /// Argument `i`'s payload, which must be a `T`.
    pub fn get<T: 'static>(&self, i: usize) -> Result<&'a T, KernelError> {
        Ok(self.argument(i)?.try_get::<T>()?)
    }

    pub fn num_results(&self) -> usize {
        self.results.len()
    }

    fn slot(&mut self, i: usize) -> Result<&mut Option<RcAsyncValue>, KernelError> {
        let count = self.results.len();
        let site = self.site;
        self.results.get_mut(i).ok_or_else(|| site.out_of_range("result", i, count))
    }

    /// Sets result `i` (replacing what was there).
    pub fn set_result(&mut self, i: usize, value: RcAsyncValue) -> Result<(), KernelError> {
        *self.slot(i)? = Some(value);
        Ok(())
    }

    /// Sets result `i` to an available value.
    pub fn emplace_result<T: Send + Sync + 'static>(&mut self, i: usize, value: T) -> Result<(), KernelError> {
        self.set_result(i, AsyncValueRef::available(value).into_untyped())
    }

    /// Makes result `i` a promise for a `T`, set later through the returned reference.
    pub fn allocate_result<T: Send + Sync + 'static>(&mut self, i: usize) -> Result<AsyncValueRef<T>, KernelError> {
        let value = AsyncValueRef::<T>::unconstructed();
        self.set_result(i, value.as_untyped().clone())?;
        Ok(value)
    }

    /// Makes result `i` an indirect value, forwarded later to whatever produces it.
    pub fn allocate_indirect_result(&mut self, i: usize) -> Result<IndirectAsyncValue, KernelError> {
        let value = IndirectAsyncValue::new();
        self.set_result(i, value.value())?;
        Ok(value)
    }

    /// An indirect value for every result, to forward once the results are known (loops,
    /// conditionals).
    pub fn allocate_indirect_results(&mut self) -> Result<Vec<IndirectAsyncValue>, KernelError> {
        (0..self.num_results()).map(|i| self.allocate_indirect_result(i)).collect()
    }

    /// Whether result `i` is set.
    pub fn has_result(&self, i: usize) -> bool {
        self.results.get(i).is_some_and(Option::is_some)
    }

    /// Reports `error` at this kernel's location and makes it every unset result's value.
    pub fn report_error(&mut self, error: impl Into<KernelError>) {
        let error = self.error_reporter().report(error);
        for slot in self.results.iter_mut().filter(|slot| slot.is_none()) {
            *slot = Some(error.clone());
        }
    }

    /// For a kernel that panicked: [`KernelFrame::report_error`], and `error` also becomes the
    /// value of every result it had allocated and not yet set, which nothing will set now (their
    /// users would wait for ever).
    pub fn report_panic(&mut self, error: impl Into<KernelError>) {
        let error = self.error_reporter().report(error);
        for slot in self.results.iter_mut() {
            match slot {
                None => *slot = Some(error.clone()),
                Some(value) if !value.is_available() => {
                    let _ = value.set_error(error.get_error().cloned().expect("an error value"));
                }
                Some(_) => {}
            }
        }
    }

    /// A handle that reports errors at this kernel's location later (from a task or a
    /// continuation) and gives the error value.
    pub fn error_reporter(&self) -> ErrorReporter {
        ErrorReporter {
            program: Arc::clone(self.site.program),
            location: self.site.record.location(),
            context: self.site.context.clone(),
        }
    }
}

/// Reports errors at one kernel's location, once each (see [`KernelFrame::error_reporter`]).
#[derive(Clone)]
pub struct ErrorReporter {
    program: Arc<dyn Program>,
    location: u32,
    context: ExecutionContext,
}

impl ErrorReporter {
    /// Emits `error` with the kernel's location and returns it as an error value.
    pub fn report(&self, error: impl Into<KernelError>) -> RcAsyncValue {
        RcAsyncValue::error(self.report_diagnostic(error))
    }

    /// Emits `error` with the kernel's location and returns the located diagnostic (to set as
    /// the error of a result allocated earlier).
    pub fn report_diagnostic(&self, error: impl Into<KernelError>) -> Diagnostic {
        let diagnostic = self.locate(error.into().0);
        self.context.emit_error(&diagnostic);
        diagnostic
    }

    fn locate(&self, diagnostic: Diagnostic) -> Diagnostic {
        diagnostic.with_location(self.program.location(self.location))
    }
}

/// The frame of a sync kernel: plain values in the function's registers, results set before
/// the kernel returns.
pub struct SyncKernelFrame<'a> {
    site: KernelSite<'a>,
    registers: &'a mut [Value],
}

impl<'a> SyncKernelFrame<'a> {
    pub fn new(site: KernelSite<'a>, registers: &'a mut [Value]) -> SyncKernelFrame<'a> {
        SyncKernelFrame { site, registers }
    }

    pub fn num_arguments(&self) -> usize {
        self.site.record.num_arguments()
    }

    pub fn argument(&self, i: usize) -> Result<&Value, KernelError> {
        let arguments = self.site.record.arguments();
        if i >= arguments.len() {
            return Err(self.site.out_of_range("argument", i, arguments.len()));
        }
        Ok(&self.registers[arguments.get(i) as usize])
    }

    /// Argument `i`'s payload, which must be a `T`.
    pub fn get<T: 'static>(&self, i: usize) -> Result<&T, KernelError> {
        let value = self.argument(i)?;
        value.get::<T>().ok_or_else(|| {
            KernelError::new(
                StatusCode::InvalidArgument,
                format!("argument {i} holds {}, not {}", value.type_name(), std::any::type_name::<T>()),
            )
        })
    }

    pub fn num_results(&self) -> usize {
        self.site.record.num_results()
    }

    pub fn set_result(&mut self, i: usize, value: impl Into<Value>) -> Result<(), KernelError> {
        let results = self.site.record.results();
        if i >= results.len() {
            return Err(self.site.out_of_range("result", i, results.len()));
        }
        self.registers[results.get(i) as usize] = value.into();
        Ok(())
    }
}

impl<'a> std::ops::Deref for KernelFrame<'a> {
    type Target = KernelSite<'a>;
    fn deref(&self) -> &KernelSite<'a> {
        &self.site
    }
}

impl<'a> std::ops::Deref for SyncKernelFrame<'a> {
    type Target = KernelSite<'a>;
    fn deref(&self) -> &KernelSite<'a> {
        &self.site
    }
}
