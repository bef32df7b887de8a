//! The dataflow executor: runs an async function's kernels as their operands become available.
//!
//! One call is an [`Execution`]: a register per value and a ready count per kernel (its operand
//! count, at least one). Setting a register decrements the ready counts of the kernels that use
//! it; a kernel whose count reaches zero is ready. Ready kernels of the current stream run inline
//! on this thread, last ready first (what it just made ready is still in cache); ready kernels of
//! other streams are queued as one task per stream. A kernel whose result is not available yet
//! gets a continuation on it, which sets the register and carries on on the thread that makes the
//! value available (or, past [`MAX_INLINE_DEPTH`] nested continuations, in a task, so chains of
//! async values cannot overflow the stack).
//!
//! A kernel with an error argument, or one that starts after the request was cancelled, is not
//! run: its results become that error, so only what depends on a failure is skipped, and the
//! error is reported once, by the kernel that made it. The function's results are indirect
//! values created up front and forwarded when their registers are set. As in TFRT, kernels that
//! use a returned register read the result value the caller holds, and the execution lets go of
//! each result once it is forwarded: while the caller keeps a function's result (or its
//! argument), no kernel of the function sees that value as unique.
//!
//! Registers hand out references without atomics: when a value is stored, one reference per
//! remaining use is added at once, and each user then takes one. That relies on what the reader
//! verified at open: each register is defined once, its use count is exact, and every kernel is
//! listed as a user exactly once per operand.

use std::cell::{Cell, UnsafeCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::reader::{BefFile, FunctionBody};

use rtx_host::{tracing, Diagnostic, IndirectAsyncValue, RcAsyncValue, StatusCode};
use rtx_kernel::record::{KernelRecord, Words};
use rtx_kernel::{ExecutionContext, Kernel, KernelError, KernelFrame, KernelSite, Program};

use super::panicked;

/// Continuations nested deeper than this on one thread go to the work queue instead.
const MAX_INLINE_DEPTH: u32 = 100;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Starts `body` on `arguments`; returns the function's results (indirect values).
pub(super) fn execute(
    file: &Arc<BefFile>,
    body: &FunctionBody,
    context: &ExecutionContext,
    arguments: &[RcAsyncValue],
) -> Vec<RcAsyncValue> {
    let results: Box<[IndirectAsyncValue]> = body.results.iter().map(|_| IndirectAsyncValue::new()).collect();
    let returned = results.iter().map(|r| r.value()).collect();
    let execution = Arc::new(Execution {
        file: Arc::clone(file),
        program: Arc::clone(file) as Arc<dyn Program>,
        // SAFETY: see `Execution::body`: the file is kept alive by `file` and never changes.
        body: body as *const FunctionBody,
        context: context.clone(),
        registers: (0..body.num_registers()).map(|_| Register(UnsafeCell::new(std::ptr::null()))).collect(),
        ready: body.kernels.iter().map(|k| AtomicU32::new(k.num_operands.max(1))).collect(),
        results: results.into_vec().into_iter().map(|r| UnsafeCell::new(Some(r))).collect(),
    });
    let mut queue = ReadyQueue::new(body.kernels[0].stream);
    execution.process_arguments(arguments, &mut queue);
    execution.process_ready(queue);
    returned
}

/// A register: null until set, then the raw pointer of a value holding one reference per use
/// not yet taken.
struct Register(UnsafeCell<*const ()>);

/// One call of an async function.
struct Execution {
    file: Arc<BefFile>,
    /// The same file as its kernels' frames see it.
    program: Arc<dyn Program>,
    body: *const FunctionBody,
    context: ExecutionContext,
    registers: Box<[Register]>,
    ready: Box<[AtomicU32]>,
    /// The function's results until they are forwarded.
    results: Box<[UnsafeCell<Option<IndirectAsyncValue>>]>,
}

// SAFETY: registers are written once, by the kernel defining them, before the ready counts of
// their users are decremented (release), and read only by users whose count reached zero
// (acquire); a result is taken once, by whoever sets the one register returned in it; `body`
// points into the immutable file `file` keeps alive. Everything else is Sync.
unsafe impl Sync for Execution {}
// SAFETY: as above; the raw pointers are owned references to thread-safe values.
unsafe impl Send for Execution {}

/// The kernels made ready by what this thread ran: `inline` for the current stream (run here,
/// last in first out), `outline` for other streams (queued as tasks).
struct ReadyQueue {
    stream: u32,
    inline: Vec<u32>,
    outline: Vec<u32>,
}

impl ReadyQueue {
    fn new(stream: u32) -> ReadyQueue {
        ReadyQueue { stream, inline: Vec::new(), outline: Vec::new() }
    }
}

impl Execution {
    #[inline]
    fn body(&self) -> &FunctionBody {
        // SAFETY: `body` points into `self.file`, which this execution keeps alive and which is
        // immutable once opened.
        unsafe { &*self.body }
    }

    /// The pseudo kernel: the pseudo register readies the kernels without operands, then each
    /// argument is stored in its register.
    fn process_arguments(self: &Arc<Self>, arguments: &[RcAsyncValue], queue: &mut ReadyQueue) {
        let body = self.body();
        let record = body.record(self.file.kernel_list(body), 0);
        let mut users = UserCursor::new(record);
        let pseudo_users = users.next();
        self.decrement(pseudo_users, queue);
        for (i, argument) in arguments.iter().enumerate() {
            let register = record.results().get(i + 1);
            let users = users.next();
            if body.register_uses[register as usize] > 0 {
                self.publish(register, argument.clone(), (0, i + 1), users, queue);
            }
        }
    }

    /// Runs ready kernels until none is left for this thread; see the module documentation.
    fn process_ready(self: &Arc<Self>, mut queue: ReadyQueue) {
        let mut arguments = Vec::new();
        let mut results = Vec::new();
        self.balance(&mut queue);
        while let Some(k) = queue.inline.pop() {
            self.run_kernel(k as usize, &mut queue, &mut arguments, &mut results);
            self.balance(&mut queue);
        }
    }

    /// With nothing inline, adopts the stream of the first outline kernel; then queues what is
    /// left of other streams, one task per stream.
    fn balance(self: &Arc<Self>, queue: &mut ReadyQueue) {
        if queue.inline.is_empty() {
            if let Some(&first) = queue.outline.first() {
                let kernels = &self.body().kernels;
                queue.stream = kernels[first as usize].stream;
                let stream = queue.stream;
                queue.outline.retain(|&k| {
                    let adopt = kernels[k as usize].stream == stream;
                    if adopt {
                        queue.inline.push(k);
                    }
                    !adopt
                });
            }
        }
        if queue.outline.is_empty() {
            return;
        }
        let kernels = &self.body().kernels;
        queue.outline.sort_by_key(|&k| kernels[k as usize].stream);
        for group in queue.outline.chunk_by(|&a, &b| kernels[a as usize].stream == kernels[b as usize].stream) {
            let stream = kernels[group[0] as usize].stream;
            let next = ReadyQueue { stream, inline: group.to_vec(), outline: Vec::new() };
            let me = Arc::clone(self);
            self.context.host().work_queue().add_task(Box::new(move || me.process_ready(next)));
        }
        queue.outline.clear();
    }

    fn run_kernel(
        self: &Arc<Self>,
        k: usize,
        queue: &mut ReadyQueue,
        arguments: &mut Vec<RcAsyncValue>,
        results: &mut Vec<Option<RcAsyncValue>>,
    ) {
        let body = self.body();
        let record = body.record(self.file.kernel_list(body), k);
        let mut error = self.context.cancel_value();
        for register in record.arguments().iter() {
            let value = self.take(register);
            if value.is_error() {
                error = Some(value.clone());
            }
            arguments.push(value);
        }
        results.clear();
        results.resize(record.num_results(), None);
        match error {
            None => self.call(record, arguments, results),
            Some(error) => results.iter_mut().for_each(|slot| *slot = Some(error.clone())),
        }
        arguments.clear();
        let mut users = UserCursor::new(record);
        for (i, register) in record.results().iter().enumerate() {
            let users = users.next();
            let value = results[i].take().unwrap_or_else(|| self.unset_result(record, i));
            if body.register_uses[register as usize] > 0 {
                self.publish(register, value, (k, i), users, queue);
            }
        }
    }

    /// Calls the kernel; a failure is reported and fills the results it left unset.
    fn call(&self, record: KernelRecord<'_>, arguments: &[RcAsyncValue], results: &mut [Option<RcAsyncValue>]) {
        if tracing::is_on() {
            return self.call_traced(record, arguments, results);
        }
        self.call_kernel(record, arguments, results);
    }

    /// [`Self::call`] in the kernel's span: out of line, so that the span's drop glue is no cost
    /// of the untraced call.
    #[cold]
    #[inline(never)]
    fn call_traced(&self, record: KernelRecord<'_>, arguments: &[RcAsyncValue], results: &mut [Option<RcAsyncValue>]) {
        let _span = super::spans::kernel_span(&self.file, record);
        self.call_kernel(record, arguments, results);
    }

    fn call_kernel(&self, record: KernelRecord<'_>, arguments: &[RcAsyncValue], results: &mut [Option<RcAsyncValue>]) {
        let mut frame = KernelFrame::new(KernelSite::new(record, &self.program, &self.context), arguments, results);
        let name = || self.file.kernel_name(record.code());
        // A panic is the kernel's error: unwinding on, it would leave the results unset.
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| match self.file.kernel(record.code()) {
            Kernel::Async(kernel) => kernel(&mut frame),
            Kernel::Pure(kernel) => kernel.run_async(&mut frame),
            Kernel::Sync(_) => Err(KernelError::new(
                StatusCode::InvalidArgument,
                format!("`{}` is a sync kernel; it runs only in sync functions", name()),
            )),
        }));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(error)) => frame.report_error(error),
            Err(payload) => frame.report_panic(panicked(name(), payload.as_ref())),
        }
    }

    /// A kernel that returned without setting result `i`: a bug in the kernel, reported as one.
    fn unset_result(&self, record: KernelRecord<'_>, i: usize) -> RcAsyncValue {
        let diagnostic = Diagnostic::new(
            StatusCode::Internal,
            format!("kernel `{}` did not set its result {i}", self.file.kernel_name(record.code())),
        )
        .with_location(self.file.image().location(record.location()).to_location());
        self.context.emit_error(&diagnostic);
        RcAsyncValue::error(diagnostic)
    }

    /// Makes `value` the content of `register` and readies `users` (those of result `result`
    /// of kernel `k`): at once when available, otherwise when it becomes available.
    fn publish(
        self: &Arc<Self>,
        register: u32,
        value: RcAsyncValue,
        (k, result): (usize, usize),
        users: Words<'_>,
        queue: &mut ReadyQueue,
    ) {
        if value.is_available() || users.is_empty() {
            // The register first: once a user's count drops it may run on another thread.
            self.set_register(register, value);
            self.decrement(users, queue);
            return;
        }
        let me = Arc::clone(self);
        let stream = queue.stream;
        let pending = value.clone();
        pending.and_then(move || {
            let depth = DEPTH.with(Cell::get);
            if depth >= MAX_INLINE_DEPTH {
                let host = Arc::clone(me.context.host());
                host.work_queue().add_task(Box::new(move || me.resume(register, value, (k, result), stream)));
            } else {
                DEPTH.with(|d| d.set(depth + 1));
                me.resume(register, value, (k, result), stream);
                DEPTH.with(|d| d.set(depth));
            }
        });
    }

    /// Continues after an unavailable result of kernel `k` became available.
    fn resume(self: &Arc<Self>, register: u32, value: RcAsyncValue, (k, result): (usize, usize), stream: u32) {
        let body = self.body();
        let record = body.record(self.file.kernel_list(body), k);
        let mut cursor = UserCursor::new(record);
        let users = (0..=result).map(|_| cursor.next()).last().expect("result indices are in range");
        let mut queue = ReadyQueue::new(stream);
        self.set_register(register, value);
        self.decrement(users, &mut queue);
        self.process_ready(queue);
    }

    /// Stores `value` with one reference per kernel use, after forwarding the function
    /// results it is; the kernel uses of a returned register get its (first) result instead.
    fn set_register(&self, register: u32, mut value: RcAsyncValue) {
        let body = self.body();
        let mut uses = body.register_uses[register as usize];
        if let Some(group) = body.returned_by.get(body.returned[register as usize] as usize) {
            let mut shown = None;
            for &result in group.iter() {
                // SAFETY: each result is returned from one register (verified), and this is the
                // one time that register is set; see `Execution`'s Sync impl.
                let indirect = unsafe { (*self.results[result as usize].get()).take() };
                let indirect = indirect.expect("each result is forwarded once");
                let forwarded = indirect.forward_to(value.clone());
                debug_assert!(forwarded.is_ok(), "each result register is set once");
                shown.get_or_insert_with(|| indirect.value());
            }
            uses -= group.len() as u32;
            if uses == 0 {
                return;
            }
            value = shown.expect("a returned register is returned at least once");
        }
        if uses == 0 {
            return;
        }
        value.add_refs(uses - 1);
        // SAFETY: the register is defined by one kernel (verified) and set once, before any
        // user can run; see `Execution`'s Sync impl.
        unsafe { *self.registers[register as usize].0.get() = value.into_raw() };
    }

    /// One of the references `set_register` reserved for the uses of `register`.
    #[inline]
    fn take(&self, register: u32) -> RcAsyncValue {
        // SAFETY: a kernel runs only once every register it reads is set (its ready count
        // reached zero after each was stored), and takes exactly one of the references reserved
        // for its use, as the verified use counts guarantee.
        unsafe {
            let raw = *self.registers[register as usize].0.get();
            debug_assert!(!raw.is_null(), "register {register} read before it was set");
            RcAsyncValue::from_raw(raw)
        }
    }

    /// Counts one operand of each user down; the users that become ready join the queue.
    #[inline]
    fn decrement(&self, users: Words<'_>, queue: &mut ReadyQueue) {
        let kernels = &self.body().kernels;
        for user in users.iter() {
            let count = &self.ready[user as usize];
            // The last operand needs no read-modify-write: nobody else can touch the count.
            if count.load(Ordering::Acquire) == 1 || count.fetch_sub(1, Ordering::AcqRel) == 1 {
                if kernels[user as usize].stream == queue.stream {
                    queue.inline.push(user);
                } else {
                    queue.outline.push(user);
                }
            }
        }
    }
}

/// Walks a kernel record's user lists result by result.
struct UserCursor<'a> {
    record: KernelRecord<'a>,
    result: usize,
    next: usize,
}

impl<'a> UserCursor<'a> {
    fn new(record: KernelRecord<'a>) -> UserCursor<'a> {
        UserCursor { record, result: 0, next: 0 }
    }

    /// The users of the next result.
    fn next(&mut self) -> Words<'a> {
        let count = self.record.num_users(self.result);
        let users = self.record.users().slice(self.next, count);
        self.result += 1;
        self.next += count;
        users
    }
}
