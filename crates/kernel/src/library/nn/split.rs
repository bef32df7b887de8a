//! Computing a new f32 tensor on the host's work queue. The caller names the tensor's
//! dimensions, how many *units* (contiguous runs of equal length: rows, channel planes) it
//! is made of and what one unit costs; a kernel worth splitting has its units dealt to a few
//! tasks (as `tfrt.parallel_for` deals blocks), each writing its own runs of the new tensor,
//! and its result becomes available when the last task ends. Tasks never wait for each other,
//! so no worker blocks; a small kernel runs on the calling thread.
//!
//! The tensor is not zeroed up front: each task zeroes its own runs just before writing them,
//! in parallel and while they are in its cache — or, for work that writes its runs front to back
//! through a [`Fresh`] (a plane copied out of scratch), not at all. Published, the tensor is sealed
//! (read-only), so the layers that read it next share its elements rather than copy them.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::gemm::{packed_gemm_into, Matrix};
use crate::dtype::DType;
use crate::tensor::{DenseHostTensor, TensorShape};
use crate::{KernelError, KernelFrame};
use rtx_host::work_queue::panic_message;
use rtx_host::{tracing, AsyncValueRef, Diagnostic, StatusCode};

/// Tasks per worker of the queue a kernel's units are dealt to.
const TASKS_PER_WORKER: usize = 4;

/// Work (roughly, multiply-adds) below which a task is not worth its scheduling.
const MIN_TASK_COST: usize = 1 << 15;

/// Sets result 0 of `frame` to a new f32 tensor of `dims`, made of `units` equal runs of
/// elements, run `first..last` written by `work(first..last, elements)`. `unit_cost` is the work
/// of one unit, which decides how many tasks share the units.
pub(crate) fn compute<W>(
    frame: &mut KernelFrame<'_>,
    dims: &[usize],
    units: usize,
    unit_cost: usize,
    work: W,
) -> Result<(), KernelError>
where
    W: Fn(Range<usize>, &mut [f32]) + Send + Sync + 'static,
{
    let out = unfilled(frame, dims)?;
    let unit_len = out.num_elements().checked_div(units).unwrap_or(0);
    // Callers derive `units` from the dimensions: a miss is a bug here, not bad input.
    assert_eq!(unit_len * units, out.num_elements(), "{}: units do not tile the tensor", frame.kernel_name());
    spread(frame, out, units, unit_cost, 1, Runs { unit_len, work })
}

/// As [`compute`], for work that writes its runs front to back through a [`Fresh`] (a GEMM's
/// result, a plane copied out of scratch): what it copies is not zeroed first. Each task takes
/// at least `min_run` units: for work that each task repeats once whatever its share (a GEMM
/// packing the operand all its rows multiply), so that the repetition stays small beside it.
pub(crate) fn compute_fresh<W>(
    frame: &mut KernelFrame<'_>,
    dims: &[usize],
    units: usize,
    unit_cost: usize,
    min_run: usize,
    work: W,
) -> Result<(), KernelError>
where
    W: Fn(Range<usize>, &mut Fresh<'_>) + Send + Sync + 'static,
{
    let out = unfilled(frame, dims)?;
    let unit_len = out.num_elements().checked_div(units).unwrap_or(0);
    // Callers derive `units` from the dimensions: a miss is a bug here, not bad input.
    assert_eq!(unit_len * units, out.num_elements(), "{}: units do not tile the tensor", frame.kernel_name());
    spread(frame, out, units, unit_cost, min_run, FreshRuns { unit_len, work })
}

/// Sets result 0 of `frame` to a new f32 tensor of `dims`, `[n, rows, ...]`: `n` matrices of
/// `rows x width` (a convolution's channels by its output pixels), whose columns are dealt to
/// tasks — each writes its columns of every row, through a [`Band`] per matrix it reaches, by
/// `work(image, band)`; the band's rows are written top down by its products, and rows the work
/// leaves unwritten are zeroed after it. For work whose operands are made per column (an im2col
/// matrix), which the tasks then make in parallel, each only its own. `column_cost` is the work
/// of one column; each task takes at least `min_columns`, and gives `work` bands of at most
/// `max_band` columns (operands made per column then stay in cache). Columns are dealt in blocks
/// of `block` (whole output rows, for work that makes several rows at once), a band starting at
/// a block's first column; a band's last block may be cut short by the end of its matrix.
pub(crate) fn compute_in_bands<W>(
    frame: &mut KernelFrame<'_>,
    dims: &[usize],
    column_cost: usize,
    [block, min_columns, max_band]: [usize; 3],
    work: W,
) -> Result<(), KernelError>
where
    W: Fn(usize, &mut Band<'_>) + Send + Sync + 'static,
{
    let out = unfilled(frame, dims)?;
    let (n, rows) = (dims.first().copied().unwrap_or(0), dims.get(1).copied().unwrap_or(0));
    let width = dims[2..].iter().product::<usize>();
    assert_eq!(n * rows * width, out.num_elements(), "{}: bands do not tile the tensor", frame.kernel_name());
    let block = block.max(1);
    let (per_matrix, max_band) = (width.div_ceil(block), (max_band / block).max(1));
    let bands = Bands { rows, width, block, per_matrix, max_band, work };
    spread(frame, out, n * per_matrix, column_cost.saturating_mul(block), min_columns.div_ceil(block), bands)
}

/// A new f32 tensor of `dims` whose elements are not yet written.
fn unfilled(frame: &KernelFrame<'_>, dims: &[usize]) -> Result<DenseHostTensor, KernelError> {
    let shape = TensorShape::new(dims.iter().map(|&d| d as i64).collect())?;
    // SAFETY: the callers check that their units tile the tensor before anything is written, and
    // each `Writer` zeroes its units before the work sees them: every byte is written before the
    // tensor is published, and only then read.
    Ok(unsafe { DenseHostTensor::new_unfilled(frame.host(), DType::F32, shape)? })
}

/// Deals the `units` of `out` to tasks that write them with `writer`, and publishes `out` as
/// result 0 when the last one ends.
fn spread<R: Writer + 'static>(
    frame: &mut KernelFrame<'_>,
    out: DenseHostTensor,
    units: usize,
    unit_cost: usize,
    min_run: usize,
    writer: R,
) -> Result<(), KernelError> {
    let workers = frame.host().parallelism_level().max(1);
    let tasks = units
        .min(workers * TASKS_PER_WORKER)
        .min(units.saturating_mul(unit_cost) / MIN_TASK_COST)
        .min(units / min_run.max(1))
        .max(1);
    // A multiple of the workers past one round: three equal tasks on two workers would leave one
    // worker a task behind the other, two tasks of half the units each do not.
    let tasks = if tasks > workers { tasks - tasks % workers } else { tasks };
    if tasks == 1 || units == 0 {
        // SAFETY: the tensor's buffer is a new block of its f32s aligned to TENSOR_ALIGNMENT,
        // which the units tile; this one call writes them all, and the tensor is published only
        // after it returns. (A panic unwinds into the executor, which makes it the kernel's error.)
        unsafe { writer.write(out.buffer().as_ptr().cast_mut().cast::<f32>(), 0..units) };
        // The work, and the operands it holds, go before the result is published.
        drop(writer);
        out.buffer().seal();
        return frame.emplace_result(0, out);
    }
    let done = frame.allocate_result::<DenseHostTensor>(0)?;
    let kernel = Arc::<str>::from(frame.kernel_name());
    let split = Arc::new(Split {
        out,
        writer,
        remaining: AtomicUsize::new(tasks),
        done,
        kernel: Arc::clone(&kernel),
        panic: OnceLock::new(),
    });
    // Task `t` writes units `[t * units / tasks, (t + 1) * units / tasks)`.
    let first = move |t: usize| t * units / tasks;
    // Traced, each task is a span named after the kernel, wherever and whenever it runs.
    let traced = tracing::is_on().then_some(kernel);
    for t in 1..tasks {
        let split = Arc::clone(&split);
        let name = traced.clone();
        frame.host().work_queue().add_task(Box::new(move || {
            let _span = name.map(|name| tracing::span(tracing::Category::Task, move || name, tracing::Args::none));
            Split::run(split, first(t)..first(t + 1))
        }));
    }
    Split::run(split, 0..first(1));
    Ok(())
}

/// How a task's units lie in the tensor, and the work that writes them.
trait Writer: Send + Sync {
    /// Zeroes units `units` of the tensor whose elements start at `base`, then writes them.
    ///
    /// # Safety
    ///
    /// `base` is the first of the tensor's elements, which the units tile; no other call is given
    /// any of `units`, and nothing else reaches the tensor until every call has returned.
    unsafe fn write(&self, base: *mut f32, units: Range<usize>);
}

/// Units that are contiguous runs of `unit_len` elements.
struct Runs<W> {
    unit_len: usize,
    work: W,
}

impl<W: Fn(Range<usize>, &mut [f32]) + Send + Sync> Writer for Runs<W> {
    unsafe fn write(&self, base: *mut f32, units: Range<usize>) {
        let (start, len) = (units.start * self.unit_len, units.len() * self.unit_len);
        // SAFETY: `units` lie within the tensor and are this call's alone (the contract); they
        // are zeroed (written) before the slice over them is made.
        let elements = unsafe {
            let first = base.add(start);
            first.write_bytes(0, len);
            std::slice::from_raw_parts_mut(first, len)
        };
        (self.work)(units, elements);
    }
}

/// Units that are contiguous runs of `unit_len` elements, which the work writes front to back.
struct FreshRuns<W> {
    unit_len: usize,
    work: W,
}

impl<W: Fn(Range<usize>, &mut Fresh<'_>) + Send + Sync> Writer for FreshRuns<W> {
    unsafe fn write(&self, base: *mut f32, units: Range<usize>) {
        let (start, len) = (units.start * self.unit_len, units.len() * self.unit_len);
        // SAFETY: `units` lie within the tensor and are this call's alone (the contract).
        let mut fresh = Fresh { next: unsafe { base.add(start) }, left: len, written: 0, _elements: PhantomData };
        (self.work)(units, &mut fresh);
        // Whatever the work left unwritten is zeroed, so that every element is written.
        // SAFETY: the `left` elements after `next` are the rest of this call's runs.
        unsafe { fresh.next.write_bytes(0, fresh.left) };
    }
}

/// A task's runs of a new tensor, written front to back: each call writes the elements after
/// the last ones written, and only written elements can be read.
pub(crate) struct Fresh<'a> {
    /// The first element not yet written, and how many follow it in the task's runs.
    next: *mut f32,
    left: usize,
    /// How many elements before `next` are written.
    written: usize,
    _elements: PhantomData<&'a mut [f32]>,
}

impl<'a> Fresh<'a> {
    /// A writer over `elements`, for tests of the work.
    #[cfg(test)]
    pub(crate) fn over(elements: &'a mut [f32]) -> Fresh<'a> {
        Fresh { next: elements.as_mut_ptr(), left: elements.len(), written: 0, _elements: PhantomData }
    }

    /// Claims the next `len` elements: a pointer to the first of them, which the caller must
    /// write (all of them) before it reads them or claims more.
    fn claim(&mut self, len: usize) -> *mut f32 {
        assert!(len <= self.left, "writing {len} elements where {} are left", self.left);
        let first = self.next;
        // SAFETY: `len` elements are left after `next`.
        self.next = unsafe { self.next.add(len) };
        (self.left, self.written) = (self.left - len, self.written + len);
        first
    }

    /// The next `len` elements, for work that writes them in an order of its own (the planes of
    /// a block of channels, from sums laid out pixel by pixel).
    ///
    /// # Safety
    ///
    /// The caller writes every one of them before it reads written elements ([`Fresh::last`]) or
    /// the task ends: until then they are claimed but hold nothing.
    pub(crate) unsafe fn slots(&mut self, len: usize) -> &mut [MaybeUninit<f32>] {
        let first = self.claim(len);
        // SAFETY: `first` starts `len` elements that are this writer's alone, which no slice
        // reaches yet; `MaybeUninit` asks nothing of what they hold.
        unsafe { std::slice::from_raw_parts_mut(first.cast::<MaybeUninit<f32>>(), len) }
    }

    /// The next `input.len()` elements become `f` of `input`'s.
    #[inline(always)]
    pub(crate) fn map(&mut self, input: &[f32], f: impl Fn(f32) -> f32) {
        // SAFETY: the loop writes every slot.
        let slots = unsafe { self.slots(input.len()) };
        for (slot, &x) in slots.iter_mut().zip(input) {
            slot.write(f(x));
        }
    }

    /// The next `a.len()` elements become `f` of `a`'s and `b`'s, pairwise (`b` as long as `a`).
    #[inline(always)]
    pub(crate) fn map2(&mut self, a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
        assert_eq!(a.len(), b.len(), "operands of different lengths");
        // SAFETY: the loop writes every slot.
        let slots = unsafe { self.slots(a.len()) };
        for ((slot, &x), &y) in slots.iter_mut().zip(a).zip(b) {
            slot.write(f(x, y));
        }
    }

    /// The next `len` elements become `f(0)`, `f(1)`, ...
    #[inline(always)]
    pub(crate) fn fill(&mut self, len: usize, mut f: impl FnMut(usize) -> f32) {
        // SAFETY: the loop writes every slot.
        let slots = unsafe { self.slots(len) };
        for (k, slot) in slots.iter_mut().enumerate() {
            slot.write(f(k));
        }
    }

    /// The next `values.len()` elements become `values`.
    pub(crate) fn copy(&mut self, values: &[f32]) {
        let first = self.claim(values.len());
        // SAFETY: `first` starts `values.len()` elements that are this writer's alone; `values`
        // is a shared borrow, so it cannot overlap them.
        unsafe { first.copy_from_nonoverlapping(values.as_ptr(), values.len()) }
    }

    /// The next `m x n` elements (row-major) become `a * b`: `a` is `m x k`, `b` is `k x n`, as
    /// [`packed_gemm`](super::gemm::packed_gemm) reads them.
    pub(crate) fn multiply(&mut self, (m, k, n): (usize, usize, usize), a: (&[f32], Matrix), b: (&[f32], Matrix)) {
        let first = self.claim(m * n);
        // SAFETY: the `m x n` elements at `first`, `n` apart, are this writer's alone; with a zero
        // `beta` the product only writes them.
        unsafe { packed_gemm_into((m, k, n), 1.0, a, b, 0.0, first, n) }
    }

    /// The last `len` elements written.
    pub(crate) fn last(&mut self, len: usize) -> &mut [f32] {
        assert!(len <= self.written, "reading {len} elements where {} are written", self.written);
        // SAFETY: the `len` elements before `next` are written and this writer's alone; the
        // exclusive borrow of the writer keeps the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.next.sub(len), len) }
    }
}

/// Units that are blocks of `block` columns of `n` matrices of `rows x width`, one after the
/// other: `per_matrix` blocks each, the last one cut short by the matrix's end.
struct Bands<W> {
    rows: usize,
    width: usize,
    block: usize,
    per_matrix: usize,
    /// The most blocks of one band.
    max_band: usize,
    work: W,
}

impl<W: Fn(usize, &mut Band<'_>) + Send + Sync> Writer for Bands<W> {
    unsafe fn write(&self, base: *mut f32, units: Range<usize>) {
        let mut unit = units.start;
        while unit < units.end {
            let image = unit / self.per_matrix;
            let first = unit % self.per_matrix;
            let end =
                (units.end - image * self.per_matrix).min(self.per_matrix).min(first.saturating_add(self.max_band));
            let columns = first * self.block..(end * self.block).min(self.width);
            // SAFETY: the image's matrix lies within the tensor; this call is given its columns
            // `columns` of every row alone (the contract).
            let matrix = unsafe { base.add(image * self.rows * self.width) };
            unit = image * self.per_matrix + end;
            let (start, len) = (columns.start, columns.len());
            let mut band =
                Band { matrix, rows: self.rows, width: self.width, columns, written: 0, _elements: PhantomData };
            (self.work)(image, &mut band);
            for row in band.written..self.rows {
                // SAFETY: row `row`'s band columns lie within the matrix and are this call's alone.
                unsafe { matrix.add(row * self.width + start).write_bytes(0, len) };
            }
        }
    }
}

/// A task's columns of every row of one `rows x width` matrix of the result: its only way to
/// reach them, since the rows between belong to other tasks. Rows are written top down, by
/// products; only written rows can be read.
pub(crate) struct Band<'a> {
    matrix: *mut f32,
    rows: usize,
    width: usize,
    columns: Range<usize>,
    /// Rows `0..written` are written.
    written: usize,
    _elements: PhantomData<&'a mut [f32]>,
}

impl Band<'_> {
    /// The columns of the matrix this band holds.
    pub(crate) fn columns(&self) -> Range<usize> {
        self.columns.clone()
    }

    /// Row `row`'s elements in this band, once written.
    pub(crate) fn row(&mut self, row: usize) -> &mut [f32] {
        assert!(row < self.written, "row {row} of a band of {} rows written", self.written);
        // SAFETY: the band's columns of each written row are initialised and this band's alone;
        // the exclusive borrow of the band keeps the slice unique.
        unsafe {
            std::slice::from_raw_parts_mut(self.matrix.add(row * self.width + self.columns.start), self.columns.len())
        }
    }

    /// The next row of the band becomes `pieces`, one after the other (the band's width together).
    pub(crate) fn copy_row<'s>(&mut self, pieces: impl IntoIterator<Item = &'s [f32]>) {
        let row = self.written;
        assert!(row < self.rows, "row {row} of a band of {} rows", self.rows);
        let len = self.columns.len();
        // SAFETY: the band's columns of row `row` lie within the matrix and are the band's alone.
        let first = unsafe { self.matrix.add(row * self.width + self.columns.start) };
        let mut at = 0;
        for piece in pieces {
            assert!(at + piece.len() <= len, "pieces longer than a band of {len} columns");
            // SAFETY: elements `at..at + piece.len()` of the row's band are within it (checked) and
            // the band's alone; `piece` is a shared borrow, so it cannot overlap them.
            unsafe { first.add(at).copy_from_nonoverlapping(piece.as_ptr(), piece.len()) };
            at += piece.len();
        }
        assert_eq!(at, len, "pieces shorter than a band of {len} columns");
        self.written += 1;
    }

    /// The next `count` rows of the band become `a * b`: `a` is `count x k`, `b` is `k x` the
    /// band's width in columns (as [`packed_gemm`](super::gemm::packed_gemm) reads them).
    pub(crate) fn multiply(&mut self, count: usize, k: usize, a: (&[f32], Matrix), b: (&[f32], Matrix)) {
        let first_row = self.written;
        assert!(count <= self.rows - first_row, "{count} rows after {first_row} of a band of {} rows", self.rows);
        let (n, first) = (self.columns.len(), self.columns.start);
        // SAFETY: the band's columns of rows `first_row..first_row + count`, `width` apart, are the
        // band's alone, and with a zero `beta` the product only writes them; `packed_gemm_into`
        // checks `a` and `b`.
        unsafe {
            packed_gemm_into((count, k, n), 1.0, a, b, 0.0, self.matrix.add(first_row * self.width + first), self.width)
        }
        self.written += count;
    }
}

/// One kernel's new tensor while its tasks write it.
struct Split<R> {
    /// Made for this kernel and published only when every task is done: no one else sees it.
    out: DenseHostTensor,
    writer: R,
    remaining: AtomicUsize,
    done: AsyncValueRef<DenseHostTensor>,
    /// The kernel's name, for the error of a task that panicked.
    kernel: Arc<str>,
    /// What the first task that panicked said: the result is then that error, never the tensor,
    /// whose units that task left unwritten.
    panic: OnceLock<String>,
}

impl<R: Writer> Split<R> {
    /// Writes units `units` of the tensor.
    fn write(&self, units: Range<usize>) {
        // SAFETY: the tensor's buffer is a new block of its f32s aligned to TENSOR_ALIGNMENT,
        // which the units tile; no other task is given any of `units`; the tensor is not
        // published until every task has ended (`remaining`).
        unsafe { self.writer.write(self.out.buffer().as_ptr().cast_mut().cast::<f32>(), units) }
    }

    /// Writes `units`, then publishes the tensor if this was the last task: or, if a task
    /// panicked, the panic as the result's error (a worker's task has no caller to unwind into,
    /// and a result never set would leave the kernel's users waiting for ever).
    fn run(split: Arc<Self>, units: Range<usize>) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| split.write(units))) {
            let _ = split.panic.set(panic_message(payload.as_ref()).to_owned());
        }
        if split.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Only this task reaches here, once; the value was allocated unset. The task lets go
            // of the work (and the operands it holds) first: what the result wakes may run here.
            let (done, out) = (split.done.clone(), split.out.clone());
            let failure = split.panic.get().map(|message| {
                let text = format!("kernel `{}` panicked in a task: {message}", split.kernel);
                Diagnostic::new(StatusCode::Panic, text)
            });
            drop(split);
            let _ = match failure {
                Some(error) => done.as_untyped().set_error(error),
                None => {
                    out.buffer().seal();
                    done.emplace(out)
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_host::HostContext;

    /// Zeroes its units, or panics on a task given unit `bad`.
    struct PanicsOn {
        unit_len: usize,
        bad: usize,
    }

    impl Writer for PanicsOn {
        unsafe fn write(&self, base: *mut f32, units: Range<usize>) {
            assert!(!units.contains(&self.bad), "unit {} is bad", self.bad);
            // SAFETY: the units lie within the tensor and are this call's alone (the contract).
            unsafe { base.add(units.start * self.unit_len).write_bytes(0, units.len() * self.unit_len) }
        }
    }

    #[test]
    fn a_task_that_panics_makes_the_result_its_error_once_every_task_is_done() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        for bad in [0, 3, 4] {
            let shape = TensorShape::from_dims(&[4, 2]).unwrap();
            // SAFETY: published only if every unit was written (no task panicked).
            let out = unsafe { DenseHostTensor::new_unfilled(&host, DType::F32, shape) }.unwrap();
            let done = AsyncValueRef::<DenseHostTensor>::unconstructed();
            let split = Arc::new(Split {
                out,
                writer: PanicsOn { unit_len: 2, bad },
                remaining: AtomicUsize::new(2),
                done: done.clone(),
                kernel: Arc::from("t.split"),
                panic: OnceLock::new(),
            });
            Split::run(Arc::clone(&split), 0..2);
            assert!(!done.as_untyped().is_available(), "a task to go");
            Split::run(split, 2..4);
            let error = done.as_untyped().get_error().map(|e| e.message.clone());
            match bad {
                4 => assert_eq!((error, done.get().num_elements()), (None, 8), "no task panicked"),
                _ => {
                    assert_eq!(error.unwrap(), format!("kernel `t.split` panicked in a task: unit {bad} is bad"));
                    assert_eq!(done.as_untyped().get_error().unwrap().code, StatusCode::Panic);
                }
            }
        }
    }
}
