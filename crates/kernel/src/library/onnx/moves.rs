//! Tensors of strings through the operators that only move elements (`Reshape`, `Transpose`,
//! `Gather`, `Concat`, `Where`, `Slice`...): the operator's kernel runs once on i64 tensors that
//! number the strings, in their place, and each result's numbers become the strings they number.
//! One kernel per operator serves numbers and strings alike, and a kernel that reads values (an
//! arithmetic one) is never handed a string.

use rtx_host::AsyncValueRef;

use super::strings::new_strings;
use super::tensors::{dims, error};
use crate::dtype::DType;
use crate::registry::Kernel;
use crate::tensor::{DenseHostTensor, StringHostTensor};
use crate::{KernelError, KernelFrame, KernelRegistry};

/// An operator whose results' elements are its data operands' elements, moved.
struct Moving {
    op: &'static str,
    /// The operands holding the elements moved (`None`: every operand).
    data: Option<&'static [usize]>,
    /// Whether the results are elements moved (`Shape` and `Size` read only the shape).
    moves: bool,
}

const fn first(op: &'static str) -> Moving {
    Moving { op, data: Some(&[0]), moves: true }
}

const MOVING: &[Moving] = &[
    first("Reshape"),
    first("Flatten"),
    first("Squeeze"),
    first("Unsqueeze"),
    first("Transpose"),
    first("Expand"),
    first("Tile"),
    first("Slice"),
    first("Split"),
    first("ReverseSequence"),
    first("Gather"),
    first("GatherElements"),
    first("GatherND"),
    first("Compress"),
    Moving { op: "Concat", data: None, moves: true },
    Moving { op: "Where", data: Some(&[1, 2]), moves: true },
    Moving { op: "ScatterElements", data: Some(&[0, 2]), moves: true },
    Moving { op: "Scatter", data: Some(&[0, 2]), moves: true },
    Moving { op: "ScatterND", data: Some(&[0, 2]), moves: true },
    Moving { op: "Shape", data: Some(&[0]), moves: false },
    Moving { op: "Size", data: Some(&[0]), moves: false },
];

/// The operators of [`MOVING`] (registered before this runs) take tensors of strings too.
pub(super) fn register(registry: &mut KernelRegistry) {
    for moving in MOVING {
        let name = format!("onnx.{}", moving.op);
        let Some(Kernel::Async(kernel)) = registry.kernel(&name).cloned() else {
            panic!("`{name}` is registered as an async kernel before strings are added to it")
        };
        let (data, moves) = (moving.data, moving.moves);
        registry.add_kernel(&name, move |frame: &mut KernelFrame<'_>| {
            // Numbers, the common case, go straight to the kernel: no allocation on the way.
            let holds_strings = |i: &usize| frame.get::<StringHostTensor>(*i).is_ok();
            let any_strings = match data {
                None => (0..frame.num_arguments()).any(|i| holds_strings(&i)),
                Some(data) => data.iter().any(holds_strings),
            };
            if !any_strings {
                return kernel(frame);
            }
            let positions: Vec<usize> = match data {
                None => (0..frame.num_arguments()).collect(),
                Some(data) => data.iter().copied().filter(|&i| i < frame.num_arguments()).collect(),
            };
            let strings: Vec<Option<&StringHostTensor>> =
                positions.iter().map(|&i| frame.get::<StringHostTensor>(i).ok()).collect();
            if strings.iter().any(Option::is_none) {
                return Err(error(frame, "it takes tensors of strings and of numbers together"));
            }
            // Each string operand becomes the numbers of its strings in one table.
            let mut table: Vec<&str> = Vec::new();
            let mut arguments = frame.arguments().to_vec();
            for (&i, strings) in positions.iter().zip(strings.into_iter().flatten()) {
                let start = table.len() as i64;
                let numbers = DenseHostTensor::new_zeroed(frame.host(), DType::I64, strings.shape().clone())?;
                numbers.set_values(&(start..start + strings.strings().len() as i64).collect::<Vec<_>>())?;
                table.extend(strings.strings().iter().map(String::as_str));
                arguments[i] = AsyncValueRef::available(numbers).into_untyped();
            }
            let mut results = vec![None; frame.num_results()];
            kernel(&mut KernelFrame::new(**frame, &arguments, &mut results))?;
            for (i, result) in results.into_iter().enumerate() {
                let Some(value) = result else { continue };
                let value = match value.try_get::<DenseHostTensor>() {
                    Ok(numbers) if moves => AsyncValueRef::available(numbered(frame, numbers, &table)?).into_untyped(),
                    // Errors, and results that are no elements moved, as the kernel gave them.
                    _ => value,
                };
                frame.set_result(i, value)?;
            }
            Ok(())
        });
    }
}

/// The strings of `table` that `numbers` number, in its shape.
fn numbered(
    frame: &KernelFrame<'_>,
    numbers: &DenseHostTensor,
    table: &[&str],
) -> Result<StringHostTensor, KernelError> {
    let strings = numbers
        .values::<i64>()?
        .into_iter()
        .map(|n| usize::try_from(n).ok().and_then(|n| table.get(n)).map(|s| (*s).to_owned()))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| error(frame, "a moved element is no string of the operands"))?;
    new_strings(frame, &dims(numbers), strings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_moving_operator_is_an_onnx_kernel() {
        let operators = super::super::operators();
        for moving in MOVING {
            assert!(operators.contains(&moving.op), "{}", moving.op);
        }
        // Registration finds each one (it panics otherwise).
        let _ = KernelRegistry::with_model_kernels();
    }
}
