//! Control flow: `onnx.If`, `onnx.Loop`, `onnx.Scan`. The importer writes each subgraph as a
//! function of the program, which the kernel refers to by its attribute (functions come in the
//! order of their attribute names: If's `else_branch` is function 0, `then_branch` function 1).
//! A body takes its graph's inputs, then the outer-scope values it reads: the kernel's last
//! `_captures` operands, passed unchanged to every run. The values flowing through a body are
//! whatever the graph carries (tensors, sequences, optionals); the kernel reads only the
//! conditions, trip counts and scanned tensors.
//!
//! Loops never block: each iteration runs the body, and the next starts once its results are
//! available (on the work queue when it had to wait, so the stack does not grow); the kernel's
//! results are indirect values forwarded when the loop ends, or set to the first error.

use std::sync::Arc;

use rtx_host::{join, AsyncValueRef, HostContext, IndirectAsyncValue, RcAsyncValue};

use super::tensors::{count, dims, error, integer, opset};
use crate::dtype::DType;
use crate::frame::ErrorReporter;
use crate::function::ProgramFunction;
use crate::library::nn::{int, ints};
use crate::library::set_results;
use crate::tensor::{DenseHostTensor, TensorShape};
use crate::{ExecutionContext, KernelError, KernelFrame, KernelRegistry};

pub(super) const OPERATORS: &[&str] = &["If", "Loop", "Scan"];

/// A control-flow node's operands: its inputs by ONNX index (`None` where left out), and the
/// outer-scope values its bodies read.
pub(super) struct Operands {
    pub inputs: Vec<Option<RcAsyncValue>>,
    pub captures: Vec<RcAsyncValue>,
}

impl Operands {
    pub fn new(frame: &KernelFrame<'_>) -> Result<Operands, KernelError> {
        let all = frame.arguments();
        let captures = usize::try_from(int(frame, "_captures", 0)?)
            .ok()
            .filter(|&c| c <= all.len())
            .ok_or_else(|| error(frame, "`_captures` counts more operands than the kernel has"))?;
        let (own, captured) = all.split_at(all.len() - captures);
        let slots = ints(frame, "_inputs", &[])?;
        let slots: Vec<usize> = if slots.is_empty() {
            (0..own.len()).collect()
        } else if slots.len() == own.len() && slots.iter().all(|&s| (0..=own.len() as i64 + 2).contains(&s)) {
            slots.iter().map(|&s| s as usize).collect()
        } else {
            return Err(error(frame, format_args!("`_inputs` {slots:?} does not place {} operands", own.len())));
        };
        let mut inputs = vec![None; slots.iter().max().map_or(0, |&m| m + 1)];
        for (&slot, value) in slots.iter().zip(own) {
            inputs[slot] = Some(value.clone());
        }
        Ok(Operands { inputs, captures: captured.to_vec() })
    }

    /// Input `index` when the node has it.
    pub fn optional(&self, index: usize) -> Option<&RcAsyncValue> {
        self.inputs.get(index).and_then(Option::as_ref)
    }
}

/// The tensor `value` holds.
fn tensor<'v>(kernel: &str, value: &'v RcAsyncValue) -> Result<&'v DenseHostTensor, KernelError> {
    value
        .try_get::<DenseHostTensor>()
        .map_err(|_| format!("{kernel}: {} where a tensor is expected", value.type_name()).into())
}

/// The truth of a one-element tensor (a condition).
fn truth(kernel: &str, value: &RcAsyncValue) -> Result<bool, KernelError> {
    let condition = tensor(kernel, value)?;
    if condition.num_elements() != 1 {
        return Err(format!("{kernel}: a condition of {:?} is not one element", dims(condition)).into());
    }
    Ok(condition.with_bytes(|bytes| bytes.iter().any(|&b| b != 0)))
}

/// A scalar tensor holding `value`.
fn scalar<T: crate::tensor::Element>(host: &HostContext, dtype: DType, value: T) -> Result<RcAsyncValue, KernelError> {
    let tensor = DenseHostTensor::new_zeroed(host, dtype, TensorShape::new(vec![])?)?;
    tensor.set_values(&[value])?;
    Ok(AsyncValueRef::available(tensor).into_untyped())
}

fn available(tensor: DenseHostTensor) -> RcAsyncValue {
    AsyncValueRef::available(tensor).into_untyped()
}

fn new_dense(host: &HostContext, dtype: DType, dims: &[usize]) -> Result<DenseHostTensor, KernelError> {
    count(dims)?;
    Ok(DenseHostTensor::new_zeroed(host, dtype, TensorShape::new(dims.iter().map(|&d| d as i64).collect())?)?)
}

/// Elements `start..start + length` of `x` along `axis` (in range: callers check).
pub(super) fn narrow(
    host: &HostContext,
    x: &DenseHostTensor,
    axis: usize,
    start: usize,
    length: usize,
) -> Result<DenseHostTensor, KernelError> {
    let mut shape = dims(x);
    let whole = std::mem::replace(&mut shape[axis], length);
    let size = x.dtype().byte_size().unwrap_or(0);
    let outer = count(&shape[..axis])?;
    let inner = count(&shape[axis + 1..])? * size;
    let out = new_dense(host, x.dtype(), &shape)?;
    x.with_bytes(|from| {
        out.buffer().with_bytes_mut(|to| {
            for o in 0..outer {
                to[o * length * inner..][..length * inner]
                    .copy_from_slice(&from[(o * whole + start) * inner..][..length * inner]);
            }
        })
    })?;
    Ok(out)
}

/// `x`'s elements under `dims` (as many), sharing its buffer.
pub(super) fn with_dims(x: &DenseHostTensor, dims: &[usize]) -> Result<DenseHostTensor, KernelError> {
    let shape = TensorShape::new(dims.iter().map(|&d| d as i64).collect())?;
    Ok(DenseHostTensor::from_buffer(x.dtype(), shape, x.buffer().clone())?)
}

/// Element `index` of `x` along `axis`: a tensor of `x`'s rank less one.
pub(super) fn slice_at(
    host: &HostContext,
    x: &DenseHostTensor,
    axis: usize,
    index: usize,
) -> Result<DenseHostTensor, KernelError> {
    let mut shape = dims(x);
    shape.remove(axis);
    with_dims(&narrow(host, x, axis, index, 1)?, &shape)
}

/// `parts` (of one element type and rank, alike but along `axis`) joined along `axis`, or, with
/// `new_axis`, (of one shape) stacked along a new axis `axis`; negative axes count from the end
/// of the result's rank.
pub(super) fn join(
    host: &HostContext,
    kernel: &str,
    parts: &[DenseHostTensor],
    axis: i64,
    new_axis: bool,
) -> Result<DenseHostTensor, KernelError> {
    let Some(first) = parts.first() else {
        return new_dense(host, DType::F32, &[0]);
    };
    let mut shape = dims(first);
    let rank = shape.len() as i64 + i64::from(new_axis);
    let axis = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&axis) {
        return Err(format!("{kernel}: axis {axis} is outside a result of rank {rank}").into());
    }
    let axis = axis as usize;
    if new_axis {
        if parts.iter().any(|p| dims(p) != shape) {
            return Err(format!("{kernel}: the tensors to stack differ in shape").into());
        }
        shape.insert(axis, 1);
        let lifted = parts.iter().map(|p| with_dims(p, &shape)).collect::<Result<Vec<_>, _>>()?;
        return join(host, kernel, &lifted, axis as i64, false);
    }
    shape[axis] = 0;
    for part in parts {
        let other = dims(part);
        let alike = other.len() == shape.len() && (0..shape.len()).all(|k| k == axis || other[k] == shape[k]);
        if part.dtype() != first.dtype() || !alike {
            return Err(
                format!("{kernel}: cannot join tensors of {:?} and {other:?} along axis {axis}", dims(first)).into()
            );
        }
        shape[axis] =
            shape[axis].checked_add(other[axis]).ok_or_else(|| format!("{kernel}: the result is too large"))?;
    }
    let out = new_dense(host, first.dtype(), &shape)?;
    let size = first.dtype().byte_size().unwrap_or(0);
    let outer = count(&shape[..axis])?;
    let row = count(&shape[axis..])? * size;
    let mut at = 0;
    out.buffer().with_bytes_mut(|to| {
        for part in parts {
            let block = dims(part)[axis..].iter().product::<usize>() * size;
            part.with_bytes(|from| {
                for o in 0..outer {
                    to[o * row + at..][..block].copy_from_slice(&from[o * block..][..block]);
                }
            });
            at += block;
        }
    })?;
    Ok(out)
}

/// What a loop does after each run of its body (and before the first).
pub(super) enum Next {
    /// Runs the body on these arguments.
    Run(Vec<RcAsyncValue>),
    /// Ends with these results.
    Done(Vec<RcAsyncValue>),
}

/// A loop's state: called with `None` first, then with each run's results (available, none an
/// error).
pub(super) type Step = Box<dyn FnMut(Option<Vec<RcAsyncValue>>) -> Result<Next, KernelError> + Send>;

/// Runs `body` as `step` says, the kernel's results forwarded to the loop's.
pub(super) fn iterate(frame: &mut KernelFrame<'_>, body: ProgramFunction, step: Step) -> Result<(), KernelError> {
    let results = (0..frame.num_results()).map(|i| frame.allocate_indirect_result(i)).collect::<Result<_, _>>()?;
    let driver = Driver { context: frame.context().clone(), body, results, reporter: frame.error_reporter(), step };
    driver.run(None);
    Ok(())
}

struct Driver {
    context: ExecutionContext,
    body: ProgramFunction,
    results: Vec<IndirectAsyncValue>,
    reporter: ErrorReporter,
    step: Step,
}

impl Driver {
    fn run(mut self, mut returned: Option<Vec<RcAsyncValue>>) {
        let count = self.results.len();
        loop {
            if let Some(failed) = returned.iter().flatten().find(|v| v.is_error()) {
                return self.finish(vec![failed.clone(); count]);
            }
            let arguments = match (self.step)(returned.take()) {
                Ok(Next::Run(arguments)) => arguments,
                Ok(Next::Done(values)) => return self.finish(values),
                Err(e) => {
                    let failed = self.reporter.report(e);
                    return self.finish(vec![failed; count]);
                }
            };
            if let Some(cancelled) = self.context.cancel_value() {
                return self.finish(vec![cancelled; count]);
            }
            let values = self.body.execute(&self.context, &arguments);
            if values.iter().all(RcAsyncValue::is_available) {
                returned = Some(values);
                continue;
            }
            let waited = values.clone();
            join::run_when_ready(&waited, move || {
                let host = Arc::clone(self.context.host());
                host.work_queue().add_task(Box::new(move || self.run(Some(values))));
            });
            return;
        }
    }

    fn finish(self, values: Vec<RcAsyncValue>) {
        for (result, value) in self.results.iter().zip(values) {
            let _ = result.forward_to(value);
        }
    }
}

/// The body function of a node, checked to take `arguments` values and return `results`.
fn body(frame: &KernelFrame<'_>, arguments: usize, results: usize) -> Result<ProgramFunction, KernelError> {
    let body = frame.function(0)?;
    if body.num_arguments() != arguments || body.num_results() != results {
        return Err(error(
            frame,
            format_args!(
                "the body takes {} values and returns {}, not {arguments} and {results}",
                body.num_arguments(),
                body.num_results()
            ),
        ));
    }
    Ok(body)
}

/// `If`: the branch the condition picks, run on the captures.
fn if_(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let operands = Operands::new(frame)?;
    let condition = operands.optional(0).ok_or_else(|| error(frame, "it has no condition"))?;
    if frame.num_functions() != 2 {
        return Err(error(frame, format_args!("{} branches, not 2", frame.num_functions())));
    }
    let branch = frame.function(if truth(frame.kernel_name(), condition)? { 1 } else { 0 })?;
    if branch.num_results() != frame.num_results() || branch.num_arguments() != operands.captures.len() {
        return Err(error(frame, format_args!("its branch `{}` does not fit the node", branch.name())));
    }
    let results = branch.execute(frame.context(), &operands.captures);
    set_results(frame, results)
}

/// `Loop`: `(condition, carried..., scanned...) = body(iteration, condition, carried...)` while
/// the iteration is below the trip count `M` (when given) and the condition holds; the results
/// are the last carried values and each scanned output stacked along a new first axis.
fn loop_(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let operands = Operands::new(frame)?;
    let name = frame.kernel_name().to_owned();
    let trip = operands.optional(0).map(|m| integer(frame, tensor(&name, m)?)).transpose()?;
    let mut go = operands.optional(1).map(|c| truth(&name, c)).transpose()?.unwrap_or(true);
    let mut carried = operands
        .inputs
        .iter()
        .skip(2)
        .cloned()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| error(frame, "a loop-carried value is missing"))?;
    let n = carried.len();
    let k = frame.num_results().checked_sub(n).ok_or_else(|| error(frame, "fewer results than carried values"))?;
    let captures = operands.captures;
    let body = body(frame, 2 + n + captures.len(), 1 + n + k)?;
    let host = Arc::clone(frame.host());
    let mut iteration = 0i64;
    let mut scans: Vec<Vec<DenseHostTensor>> = vec![Vec::new(); k];
    let step = move |returned: Option<Vec<RcAsyncValue>>| {
        if let Some(values) = returned {
            go = truth(&name, &values[0])?;
            carried = values[1..=n].to_vec();
            for (scan, value) in scans.iter_mut().zip(&values[1 + n..]) {
                scan.push(tensor(&name, value)?.clone());
            }
            iteration += 1;
        }
        if go && trip.is_none_or(|m| iteration < m) {
            let mut arguments = vec![scalar(&host, DType::I64, iteration)?, scalar(&host, DType::I1, go)?];
            arguments.extend(carried.iter().cloned());
            arguments.extend(captures.iter().cloned());
            return Ok(Next::Run(arguments));
        }
        let mut results = std::mem::take(&mut carried);
        for scan in &scans {
            results.push(available(join(&host, &name, scan, 0, true)?));
        }
        Ok(Next::Done(results))
    };
    iterate(frame, body, Box::new(step))
}

/// `Scan`: `(state..., out...) = body(state..., slice...)` over the slices of the scan inputs
/// along their axes (backwards for direction 1), each output stacked along its axis. Before
/// opset 9 every operand has a batch axis first, scanned batch by batch along axis 1, and an
/// optional first input `sequence_lens` (which must be the full length).
fn scan(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let operands = Operands::new(frame)?;
    let name = frame.kernel_name().to_owned();
    let batched = opset(frame)? < 9;
    let first = usize::from(batched);
    let values: Vec<DenseHostTensor> = operands.inputs[first.min(operands.inputs.len())..]
        .iter()
        .map(|v| {
            v.as_ref().ok_or_else(|| error(frame, "an input is missing")).and_then(|v| Ok(tensor(&name, v)?.clone()))
        })
        .collect::<Result<_, _>>()?;
    let m = usize::try_from(int(frame, "num_scan_inputs", 0)?)
        .ok()
        .filter(|&m| m >= 1 && m <= values.len())
        .ok_or_else(|| error(frame, "`num_scan_inputs` does not fit its inputs"))?;
    let n = values.len() - m;
    let k = frame.num_results().checked_sub(n).ok_or_else(|| error(frame, "fewer results than states"))?;
    let captures = operands.captures.clone();
    let body = body(frame, n + m + captures.len(), n + k)?;
    let directions = ints(frame, if batched { "directions" } else { "scan_input_directions" }, &vec![0; m])?;
    let out_directions = if batched { vec![0; k] } else { ints(frame, "scan_output_directions", &vec![0; k])? };
    let out_axes = if batched { vec![0; k] } else { ints(frame, "scan_output_axes", &vec![0; k])? };
    let in_axes = if batched { vec![0; m] } else { ints(frame, "scan_input_axes", &vec![0; m])? };
    if directions.len() != m || in_axes.len() != m || out_directions.len() != k || out_axes.len() != k {
        return Err(error(frame, "the scan axes and directions do not match the inputs and outputs"));
    }
    let host = Arc::clone(frame.host());
    // Each batch's states and scan inputs (one batch, the operands, from opset 9).
    let batches = if batched { values.first().map_or(0, |v| dims(v).first().copied().unwrap_or(0)) } else { 1 };
    let mut runs = Vec::new();
    for b in 0..batches {
        let mut run = Vec::with_capacity(values.len());
        for v in &values {
            if !batched {
                run.push(v.clone());
            } else if dims(v).first() == Some(&batches) {
                run.push(slice_at(&host, v, 0, b)?);
            } else {
                return Err(error(frame, "the operands do not share their batch axis"));
            }
        }
        runs.push(run);
    }
    let mut plans = Vec::with_capacity(runs.len());
    for run in &runs {
        let mut length = None;
        let mut axes = Vec::with_capacity(m);
        for (x, &axis) in run[n..].iter().zip(&in_axes) {
            let shape = dims(x);
            let axis = super::tensors::axis(frame, axis, shape.len())?;
            if length.is_some_and(|l| l != shape[axis]) {
                return Err(error(frame, "the scan inputs differ in length"));
            }
            length = Some(shape[axis]);
            axes.push(axis);
        }
        plans.push((length.unwrap_or(0), axes));
    }
    if let Some(lengths) = batched.then(|| operands.optional(0)).flatten() {
        let lengths = super::tensors::integers(frame, tensor(&name, lengths)?)?;
        if lengths.iter().zip(&plans).any(|(&l, plan)| l != plan.0 as i64) {
            return Err(error(frame, "`sequence_lens` shorter than the inputs are not supported"));
        }
    }
    let (mut b, mut t) = (0usize, 0usize);
    let mut states: Vec<RcAsyncValue> =
        runs.first().map_or(Vec::new(), |r| r[..n].iter().cloned().map(available).collect());
    let mut outputs: Vec<Vec<DenseHostTensor>> = vec![Vec::new(); k];
    let mut finals: Vec<Vec<DenseHostTensor>> = vec![Vec::new(); n];
    let mut stacked: Vec<Vec<DenseHostTensor>> = vec![Vec::new(); k];
    let step = move |returned: Option<Vec<RcAsyncValue>>| -> Result<Next, KernelError> {
        if let Some(values) = returned {
            states = values[..n].to_vec();
            for (output, value) in outputs.iter_mut().zip(&values[n..]) {
                output.push(tensor(&name, value)?.clone());
            }
            t += 1;
        }
        loop {
            if b == runs.len() {
                let mut results = Vec::with_capacity(n + k);
                if batched {
                    for state in &finals {
                        results.push(available(join(&host, &name, state, 0, true)?));
                    }
                    for output in &stacked {
                        results.push(available(join(&host, &name, output, 0, true)?));
                    }
                } else {
                    results.extend(states.iter().cloned());
                    results.extend(stacked.iter_mut().map(|o| available(o.pop().expect("one batch"))));
                }
                return Ok(Next::Done(results));
            }
            let (length, axes) = &plans[b];
            if t < *length {
                let mut arguments = states.clone();
                for ((x, &axis), &direction) in runs[b][n..].iter().zip(axes).zip(&directions) {
                    let index = if direction == 1 { length - 1 - t } else { t };
                    arguments.push(available(slice_at(&host, x, axis, index)?));
                }
                arguments.extend(captures.iter().cloned());
                return Ok(Next::Run(arguments));
            }
            for (j, output) in outputs.iter_mut().enumerate() {
                let mut parts = std::mem::take(output);
                if out_directions[j] == 1 {
                    parts.reverse();
                }
                stacked[j].push(join(&host, &name, &parts, out_axes[j], true)?);
            }
            for (fin, state) in finals.iter_mut().zip(&states) {
                fin.push(tensor(&name, state)?.clone());
            }
            b += 1;
            t = 0;
            if let Some(run) = runs.get(b) {
                states = run[..n].iter().cloned().map(available).collect();
            }
        }
    };
    iterate(frame, body, Box::new(step))
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.If", if_);
    registry.add_kernel("onnx.Loop", loop_);
    registry.add_kernel("onnx.Scan", scan);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor_of(host: &HostContext, dims: &[i64], values: &[i32]) -> DenseHostTensor {
        let tensor = DenseHostTensor::new_zeroed(host, DType::I32, TensorShape::from_dims(dims).unwrap()).unwrap();
        tensor.set_values(values).unwrap();
        tensor
    }

    #[test]
    fn scans_slice_and_stack_along_an_axis() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        // [[0, 1, 2], [3, 4, 5]]: column 1 is [1, 4], row 1 is [3, 4, 5].
        let x = tensor_of(&host, &[2, 3], &[0, 1, 2, 3, 4, 5]);
        let column = slice_at(&host, &x, 1, 1).unwrap();
        assert_eq!((dims(&column), column.values::<i32>().unwrap()), (vec![2], vec![1, 4]));
        let row = slice_at(&host, &x, 0, 1).unwrap();
        assert_eq!(row.values::<i32>().unwrap(), vec![3, 4, 5]);
        // Stacking the columns back along axis 1 (or -1) gives x; along 0, its transpose.
        let columns: Vec<_> = (0..3).map(|c| slice_at(&host, &x, 1, c).unwrap()).collect();
        let back = join(&host, "test", &columns, -1, true).unwrap();
        assert_eq!((dims(&back), back.values::<i32>().unwrap()), (vec![2, 3], vec![0, 1, 2, 3, 4, 5]));
        let transposed = join(&host, "test", &columns, 0, true).unwrap();
        assert_eq!((dims(&transposed), transposed.values::<i32>().unwrap()), (vec![3, 2], vec![0, 3, 1, 4, 2, 5]));
        assert!(join(&host, "test", &columns, 2, true).is_err());
        assert!(join(&host, "test", &[row, column], 0, true).is_err());
    }

    #[test]
    fn parts_narrow_and_join_along_an_axis() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        // [[0, 1, 2], [3, 4, 5]] split along axis 1 into 2 and 1 columns, joined back.
        let x = tensor_of(&host, &[2, 3], &[0, 1, 2, 3, 4, 5]);
        let left = narrow(&host, &x, 1, 0, 2).unwrap();
        let right = narrow(&host, &x, 1, 2, 1).unwrap();
        assert_eq!((dims(&left), left.values::<i32>().unwrap()), (vec![2, 2], vec![0, 1, 3, 4]));
        assert_eq!((dims(&right), right.values::<i32>().unwrap()), (vec![2, 1], vec![2, 5]));
        let joined = join(&host, "test", &[left.clone(), right.clone()], -1, false).unwrap();
        assert_eq!((dims(&joined), joined.values::<i32>().unwrap()), (vec![2, 3], vec![0, 1, 2, 3, 4, 5]));
        // Along axis 0 the columns differ: an error, not a panic.
        assert!(join(&host, "test", &[left, right], 0, false).is_err());
        let empty = narrow(&host, &x, 0, 1, 0).unwrap();
        assert_eq!(dims(&empty), vec![0, 3]);
    }

    #[test]
    fn conditions_are_one_element() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let value = |t: DenseHostTensor| AsyncValueRef::available(t).into_untyped();
        assert!(truth("k", &value(tensor_of(&host, &[1], &[7]))).unwrap());
        assert!(!truth("k", &value(tensor_of(&host, &[], &[0]))).unwrap());
        assert!(truth("k", &value(tensor_of(&host, &[2], &[1, 1]))).is_err());
        assert!(truth("k", &AsyncValueRef::available(3i32).into_untyped()).is_err());
    }
}
