//! A function call's inputs and outputs as `iree-run-module` takes and prints them: `--input`
//! values become VM values (tensors become buffer views on host memory), results are printed,
//! written (`--output`) or compared (`--expected_output`), and failures become IREE's status
//! lines (`CODE; message; annotation; ...`). `rtx run` is this plus the call.
//!
//! Kernel graphs (BEF functions, ONNX models) take more than IREE's programs: their inputs are
//! read by [`parse_graph_inputs`] and their results reported by [`report_graph`], which add
//! tensors of strings (`.npy` arrays of numpy's `<U`/`S` dtypes), sequences of tensors (a `.npz`
//! archive, its arrays in order) and empty optionals (`(null)`).

use std::path::Path;

use super::buffer_view::{self, BufferView};
use super::element_type::ElementType;
use super::npy::{self, Array};
use super::npz;
use super::tensor_io::{
    c_trim, compare_results, parse_tensor, read_npy_arrays, read_npy_inputs, read_npz, write_output_file, Equality,
    HostTensor, InputFiles, OutputSpec, ResultValue,
};
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::abi::ValueKind;
use rtx_vm::function_io::{format_value, parse_scalar};
use rtx_vm::value::Value;

/// `CODE; message; annotations...`, as IREE joins a status and its annotations (an empty message
/// is left out, as IREE prints a bare code).
pub fn status_line(error: &Diagnostic, annotations: &[&str]) -> String {
    let mut parts = vec![error.code.to_string()];
    if !error.message.is_empty() {
        parts.push(error.message.clone());
    }
    parts.extend(annotations.iter().map(|a| a.to_string()));
    parts.join("; ")
}

/// The arguments still to fill, in calling-convention order; each parsed value takes the next.
struct Remaining<'a>(std::slice::Iter<'a, ValueKind>);

impl Remaining<'_> {
    fn peek(&self) -> Option<ValueKind> {
        self.0.as_slice().first().copied()
    }

    /// The next argument's kind; more values than arguments is an error here, as in IREE, while
    /// fewer are left for the call itself to reject.
    fn take(&mut self) -> Result<ValueKind, Diagnostic> {
        self.0
            .next()
            .copied()
            .ok_or_else(|| Diagnostic::new(StatusCode::InvalidArgument, "function expected fewer input values"))
    }

    /// The next argument, which must be a ref (a tensor).
    fn take_ref(&mut self) -> Result<(), Diagnostic> {
        match self.take()? {
            ValueKind::Ref => Ok(()),
            other => Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("function signature mismatch: expected cconv type `r` but provided type `{}`", other.code()),
            )),
        }
    }
}

/// One `--input`, filling the next argument(s): `(null)` is that argument's zero, scalars parse
/// by the argument's type, everything else is a tensor. A `.npy` file may hold several inputs.
fn parse_input(text: &str, remaining: &mut Remaining, files: &mut InputFiles) -> Result<Vec<Value>, Diagnostic> {
    if text.is_empty() {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, "no value specified for input"));
    }
    if text == "(null)" || text == "(ignored)" {
        return Ok(vec![match remaining.take()? {
            ValueKind::I32 => Value::I32(0),
            ValueKind::I64 => Value::I64(0),
            ValueKind::F32 => Value::F32(0.0),
            ValueKind::F64 => Value::F64(0.0),
            ValueKind::Ref => Value::Ref(None),
        }]);
    }
    if text.starts_with(['@', '+', '*']) {
        let tensors = read_npy_inputs(text, files)?;
        return tensors
            .into_iter()
            .map(|tensor| {
                remaining.take_ref()?;
                tensor_value(tensor)
            })
            .collect();
    }
    match remaining.peek() {
        Some(ValueKind::Ref) => {
            remaining.take_ref()?;
            Ok(vec![tensor_value(parse_tensor(text, files)?)?])
        }
        _ => Ok(vec![parse_scalar(text, remaining.take()?)?]),
    }
}

/// One `--input` of a kernel graph: `(null)` is an empty optional, `@a.npz` a sequence of the
/// archive's arrays, `.npy` arrays may hold strings, and the rest parse as tensors do for IREE's
/// programs (a graph takes no scalars).
fn parse_graph_input(text: &str, files: &mut InputFiles) -> Result<Vec<ResultValue>, Diagnostic> {
    let host_value = |array| match array {
        Array::Tensor(tensor) => ResultValue::Tensor(tensor),
        Array::Strings(strings) => ResultValue::Strings(strings),
    };
    if text.is_empty() {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, "no value specified for input"));
    }
    if text == "(null)" {
        return Ok(vec![ResultValue::Empty]);
    }
    if text.starts_with(['@', '+', '*']) && text.ends_with(".npz") {
        let tensors = read_npz(text, files)?
            .into_iter()
            .enumerate()
            .map(|(index, array)| match array {
                Array::Tensor(tensor) => Ok(tensor),
                Array::Strings(_) => Err(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("array {index} holds strings: a sequence holds numeric tensors"),
                )),
            })
            .collect::<Result<_, _>>()?;
        return Ok(vec![ResultValue::Sequence(tensors)]);
    }
    if text.starts_with(['@', '+', '*']) {
        return Ok(read_npy_arrays(text, files)?.into_iter().map(host_value).collect());
    }
    Ok(vec![ResultValue::Tensor(parse_tensor(text, files)?)])
}

/// The `--input`s of a kernel graph (see [`parse_graph_input`]) as host values, in order; an
/// error is the status line to print.
pub fn parse_graph_inputs(texts: &[&str], files: &mut InputFiles) -> Result<Vec<ResultValue>, String> {
    let mut values = Vec::new();
    for text in texts {
        let text = c_trim(text);
        let parsed = parse_graph_input(text, files)
            .map_err(|e| status_line(&e, &[&format!("parsing input `{text}`"), "parsing function inputs"]))?;
        values.extend(parsed);
    }
    Ok(values)
}

/// A host tensor as a buffer view argument.
pub fn tensor_value(tensor: HostTensor) -> Result<Value, Diagnostic> {
    let shape = tensor.shape.iter().map(|&d| d as i64).collect();
    let view = BufferView::from_host(shape, tensor.element_type.0, &tensor.data)?;
    Ok(Value::Ref(Some(view.into_ref())))
}

/// The `--input`s of a function taking `kinds`, parsed as `iree-run-module` parses them (an
/// error is the status line to print). Fewer inputs than arguments is not an error here: like
/// IREE, the tool goes on to the call, which fails after `EXEC` has been printed.
pub fn parse_inputs(texts: &[&str], kinds: &[ValueKind], files: &mut InputFiles) -> Result<Vec<Value>, String> {
    let mut remaining = Remaining(kinds.iter());
    let mut values = Vec::new();
    for text in texts {
        let text = c_trim(text);
        let parsed = parse_input(text, &mut remaining, files)
            .map_err(|e| status_line(&e, &[&format!("parsing input `{text}`"), "parsing function inputs"]))?;
        values.extend(parsed);
    }
    Ok(values)
}

/// A call's value as the comparison and output code sees it: buffer views read back to host.
pub fn result_value(value: &Value) -> Result<ResultValue, Diagnostic> {
    Ok(match value {
        Value::None | Value::Ref(None) => ResultValue::Empty,
        Value::I32(v) => ResultValue::I32(*v),
        Value::I64(v) => ResultValue::I64(*v),
        Value::F32(v) => ResultValue::F32(*v),
        Value::F64(v) => ResultValue::F64(*v),
        Value::Ref(Some(r)) => match buffer_view::deref(r) {
            Ok(view) => ResultValue::Tensor(host_tensor(view)?),
            Err(_) => ResultValue::Ref(r.type_name().to_owned()),
        },
    })
}

/// A copy of a buffer view's contents on the host, read through its buffer's mapping or device.
pub fn host_tensor(view: &BufferView) -> Result<HostTensor, Diagnostic> {
    Ok(HostTensor {
        shape: view.shape().iter().map(|&d| d as usize).collect(),
        element_type: ElementType(view.element_type()),
        data: view.to_vec()?,
    })
}

/// What to do with the results (`--output`, `--expected_output` and their options).
#[derive(Clone, Debug)]
pub struct OutputOptions {
    pub outputs: Vec<String>,
    pub expected: Vec<String>,
    /// `--output_max_element_count` (IREE reads an int32 and casts it, so -1 means all).
    pub max_element_count: usize,
    pub equality: Equality,
}

impl Default for OutputOptions {
    fn default() -> OutputOptions {
        OutputOptions {
            outputs: Vec::new(),
            expected: Vec::new(),
            max_element_count: 1024,
            equality: Equality::default(),
        }
    }
}

/// What the tool prints after `EXEC @f`: stdout text, and the status line when it fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub stdout: String,
    pub error: Option<String>,
    /// The exit status: 0 when everything was printed and matched.
    pub status: u8,
}

impl Report {
    fn failed(stdout: String, error: String) -> Report {
        Report { stdout, error: Some(error), status: 1 }
    }

    /// The results could not be read back.
    fn unreadable(error: &Diagnostic) -> Report {
        Report::failed(String::new(), status_line(error, &["reading function outputs", "processing function outputs"]))
    }
}

/// Prints, writes or compares `results` (of a function returning `result_kinds`) as
/// `iree-run-module` does: expectations parse by the result types, as inputs do by the argument
/// types; `.npy`/`.bin` outputs and `@file` expectations are relative to `directory`.
pub fn report(results: &[Value], result_kinds: &[ValueKind], options: &OutputOptions, directory: &Path) -> Report {
    let results = match results.iter().map(result_value).collect::<Result<Vec<_>, _>>() {
        Ok(results) => results,
        Err(e) => return Report::unreadable(&e),
    };
    let mut remaining = Remaining(result_kinds.iter());
    let expected = move |text: &str, files: &mut InputFiles| {
        parse_input(text, &mut remaining, files)?.iter().map(result_value).collect()
    };
    report_values(results, expected, options, directory)
}

/// [`report`] for a kernel graph's results, read back to the host (or the error reading them):
/// expectations parse as its inputs do ([`parse_graph_inputs`]); a sequence is written to a
/// `.npz` file, strings to `.npy`.
pub fn report_graph(
    results: Result<Vec<ResultValue>, Diagnostic>,
    options: &OutputOptions,
    directory: &Path,
) -> Report {
    match results {
        Ok(results) => report_values(results, parse_graph_input, options, directory),
        Err(e) => Report::unreadable(&e),
    }
}

/// What [`report`] and [`report_graph`] share, given how an expectation parses.
fn report_values(
    results: Vec<ResultValue>,
    mut parse_expected: impl FnMut(&str, &mut InputFiles) -> Result<Vec<ResultValue>, Diagnostic>,
    options: &OutputOptions,
    directory: &Path,
) -> Report {
    let processing = "processing function outputs";
    if !options.expected.is_empty() {
        let mut files = InputFiles::relative_to(directory);
        let mut expected = Vec::new();
        for text in &options.expected {
            let text = c_trim(text);
            match parse_expected(text, &mut files) {
                Ok(values) => expected.extend(values),
                Err(e) => {
                    let annotations =
                        [&format!("parsing input `{text}`"), "parsing expected function outputs", processing];
                    return Report::failed(String::new(), status_line(&e, &annotations));
                }
            }
        }
        return match compare_results(&expected, &results, &options.equality) {
            Ok((matched, text)) => Report { stdout: text, error: None, status: if matched { 0 } else { 1 } },
            Err(e) => Report::failed(String::new(), status_line(&e, &[processing])),
        };
    }
    let mut stdout = String::new();
    if options.outputs.is_empty() {
        for (index, result) in results.iter().enumerate() {
            match print(result, options.max_element_count) {
                Ok(text) => stdout.push_str(&format!("result[{index}]: {text}\n")),
                Err(e) => return Report::failed(stdout, status_line(&e, &["printing results", processing])),
            }
        }
        return Report { stdout, error: None, status: 0 };
    }
    let annotations = ["outputting results", processing];
    if options.outputs.len() != results.len() {
        let error = Diagnostic::new(
            StatusCode::OutOfRange,
            format!(
                "{} outputs specified but the provided variant list only has {} elements",
                options.outputs.len(),
                results.len()
            ),
        );
        return Report::failed(stdout, status_line(&error, &annotations));
    }
    for (spec, result) in options.outputs.iter().zip(&results) {
        let outcome = OutputSpec::parse(spec).and_then(|spec| match spec {
            OutputSpec::Ignore => Ok(()),
            OutputSpec::Print => {
                stdout.push_str(&print(result, options.max_element_count)?);
                stdout.push('\n');
                Ok(())
            }
            OutputSpec::File { path, append } => {
                let target = directory.join(&path);
                let target = target.to_str().ok_or_else(|| {
                    Diagnostic::new(StatusCode::InvalidArgument, format!("output path `{path}` is not UTF-8"))
                })?;
                write_output_file(target, append, &file_bytes(result, &path, append)?)
            }
        });
        if let Err(e) = outcome {
            return Report::failed(stdout, status_line(&e, &annotations));
        }
    }
    Report { stdout, error: None, status: 0 }
}

/// A result as `result[i]: ` continues: a tensor's type line and contents, or a scalar.
fn print(result: &ResultValue, max_element_count: usize) -> Result<String, Diagnostic> {
    Ok(match result {
        ResultValue::Tensor(tensor) => format!("hal.buffer_view\n{}", tensor.format(max_element_count)?),
        ResultValue::Strings(strings) => format!("tensor of strings\n{}", strings.format(max_element_count)),
        ResultValue::Sequence(tensors) => {
            let mut text = format!("sequence of {}", tensors.len());
            for tensor in tensors {
                text.push('\n');
                text.push_str(&tensor.format(max_element_count)?);
            }
            text
        }
        ResultValue::Empty => format_value(&Value::Ref(None)),
        ResultValue::I32(v) => format_value(&Value::I32(*v)),
        ResultValue::I64(v) => format_value(&Value::I64(*v)),
        ResultValue::F32(v) => format_value(&Value::F32(*v)),
        ResultValue::F64(v) => format_value(&Value::F64(*v)),
        ResultValue::Ref(name) => name.clone(),
    })
}

/// A result's bytes in the file `path` names: `.npy` arrays (strings as `<U`), raw bytes for
/// other names, a `.npz` archive for a sequence.
fn file_bytes(result: &ResultValue, path: &str, append: bool) -> Result<Vec<u8>, Diagnostic> {
    let unwritable = |message: &str| Err(Diagnostic::new(StatusCode::InvalidArgument, message));
    match result {
        ResultValue::Strings(strings) if path.ends_with(".npy") => Ok(npy::encode_strings(strings)),
        ResultValue::Strings(_) => unwritable("a tensor of strings is written to a .npy file"),
        ResultValue::Sequence(_) if append => unwritable("a sequence cannot be appended to a file"),
        ResultValue::Sequence(tensors) if path.ends_with(".npz") => npz::encode(tensors),
        ResultValue::Sequence(_) => unwritable("a sequence is written to a .npz file (`--output=@out.npz`)"),
        ResultValue::Empty => unwritable("an empty optional has no file form: print it with `--output=-`"),
        _ => {
            let tensor = as_tensor(result)?;
            if path.ends_with(".npy") {
                npy::encode(&tensor)
            } else {
                Ok(tensor.data)
            }
        }
    }
}

/// What a file output holds: tensors as they are, scalars as rank-0 tensors.
fn as_tensor(result: &ResultValue) -> Result<HostTensor, Diagnostic> {
    let scalar = |element_type: ElementType, data: Vec<u8>| HostTensor { shape: Vec::new(), element_type, data };
    Ok(match result {
        ResultValue::Tensor(tensor) => tensor.clone(),
        ResultValue::I32(v) => scalar(ElementType::INT_32, v.to_le_bytes().to_vec()),
        ResultValue::I64(v) => scalar(ElementType::INT_64, v.to_le_bytes().to_vec()),
        ResultValue::F32(v) => scalar(ElementType::FLOAT_32, v.to_le_bytes().to_vec()),
        ResultValue::F64(v) => scalar(ElementType::FLOAT_64, v.to_le_bytes().to_vec()),
        ResultValue::Empty | ResultValue::Ref(_) | ResultValue::Strings(_) | ResultValue::Sequence(_) => {
            return Err(Diagnostic::new(StatusCode::Unimplemented, "only tensors and scalars can be written to files"))
        }
    })
}
