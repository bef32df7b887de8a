//! The built-in `check` module: the assertions IREE's test-style programs import
//! (`check.expect_true(%x) : i32`, `check.expect_eq(%a, %b) : tensor<...>` and friends in MLIR),
//! with the calling conventions of the compiler's `check.imports.mlir`.
//!
//! Like IREE's (which records gtest `EXPECT_*` failures), a failed expectation does not stop the
//! program: it is recorded and the program goes on, so one run reports every failed check. A tool
//! reads the failures with [`CheckModule::take_failures`] after each function (`rtx check`).

use std::sync::{Arc, Mutex};

use super::buffer_view::{self, BufferView};
use super::device;
use super::element_type::ElementType;
use super::run_io::host_tensor;
use super::tensor_io::{approximate_value, fuzzy_equal};
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::function_io::format_g;
use rtx_vm::native::{Arguments, NativeFunction, NativeModule, NativeOutcome, NativeState};
use rtx_vm::refs::Ref;
use rtx_vm::value::Value;

/// The `check` native module. Clones share the failure log.
#[derive(Clone, Debug)]
pub struct CheckModule {
    functions: Arc<[NativeFunction]>,
    failures: Arc<Mutex<Vec<String>>>,
}

impl Default for CheckModule {
    fn default() -> CheckModule {
        CheckModule {
            functions: Arc::new([
                NativeFunction::new("expect_true", "0i_v"),
                NativeFunction::new("expect_false", "0i_v"),
                NativeFunction::new("expect_all_true", "0rr_v"),
                NativeFunction::new("expect_eq", "0rrr_v"),
                NativeFunction::new("expect_almost_eq", "0rrrff_v"),
            ]),
            failures: Arc::default(),
        }
    }
}

impl CheckModule {
    pub fn new() -> CheckModule {
        CheckModule::default()
    }

    /// The failed expectations recorded since the last call, oldest first.
    pub fn take_failures(&self) -> Vec<String> {
        std::mem::take(&mut *self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    fn record(&self, failure: String) {
        self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(failure);
    }
}

impl NativeModule for CheckModule {
    fn name(&self) -> &str {
        "check"
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    fn call(
        &self,
        _state: &mut NativeState,
        ordinal: usize,
        arguments: Arguments<'_>,
        _results: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic> {
        let name = &self.functions[ordinal].name;
        let bad = || Diagnostic::new(StatusCode::InvalidArgument, format!("check.{name}: unexpected arguments"));
        let arguments = arguments.to_values();
        let failure = match (ordinal, &arguments[..]) {
            (0, [Value::I32(operand)]) => (*operand == 0).then(|| format!("Expected {operand} to be nonzero.")),
            (1, [Value::I32(operand)]) => (*operand != 0).then(|| format!("Expected {operand} to be zero.")),
            (2, [Value::Ref(Some(device)), Value::Ref(Some(operand))]) => {
                device::deref(device)?;
                all_true(buffer_view::deref(operand)?)?
            }
            (3, [Value::Ref(Some(device)), Value::Ref(Some(lhs)), Value::Ref(Some(rhs))]) => {
                device::deref(device)?;
                equal(lhs, rhs, None)?
            }
            (
                4,
                [Value::Ref(Some(device)), Value::Ref(Some(lhs)), Value::Ref(Some(rhs)), Value::F32(atol), Value::F32(rtol)],
            ) => {
                device::deref(device)?;
                equal(lhs, rhs, Some((*atol, *rtol)))?
            }
            _ => return Err(bad()),
        };
        if let Some(failure) = failure {
            self.record(failure);
        }
        Ok(NativeOutcome::Ready)
    }
}

/// A buffer view as the failure messages print it (IREE prints up to 1024 elements).
fn printed(view: &BufferView) -> Result<String, Diagnostic> {
    host_tensor(view)?.format(1024)
}

fn unsupported(element_type: ElementType) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, format!("unsupported element type {element_type}"))
}

/// `expect_all_true`: every element nonzero (for floats, -0.0 is zero), for the integer and
/// f32/f64 types IREE checks.
fn all_true(view: &BufferView) -> Result<Option<String>, Diagnostic> {
    let element_type = ElementType(view.element_type());
    let size = match element_type.bit_count() {
        8 | 16 | 32 | 64 if element_type.is_integer() => element_type.bit_count() / 8,
        _ if element_type == ElementType::FLOAT_32 => 4,
        _ if element_type == ElementType::FLOAT_64 => 8,
        _ => return Err(unsupported(element_type)),
    };
    let bytes = view.to_vec()?;
    let zero = bytes.chunks_exact(size).position(|element| match approximate_value(element, element_type) {
        Some(float) => float == 0.0,
        None => element.iter().all(|&b| b == 0),
    });
    match zero {
        None => Ok(None),
        Some(index) => Ok(Some(format!(
            "Expected all elements to be nonzero; element {index} is zero.\n  operand:\n    {}",
            printed(view)?
        ))),
    }
}

/// `expect_eq` (exact, `tolerance` None) and `expect_almost_eq`: element types, shapes and
/// contents, with IREE's message listing what differs and both values.
fn equal(lhs_ref: &Ref, rhs_ref: &Ref, tolerance: Option<(f32, f32)>) -> Result<Option<String>, Diagnostic> {
    let (lhs, rhs) = (buffer_view::deref(lhs_ref)?, buffer_view::deref(rhs_ref)?);
    let types_equal = lhs.element_type() == rhs.element_type();
    let shapes_equal = lhs.shape() == rhs.shape();
    let (lhs_bytes, rhs_bytes) = (lhs.to_vec()?, rhs.to_vec()?);
    let mut message = match tolerance {
        None => "Expected equality of these values.".to_owned(),
        Some(_) => "Expected near equality of these values.".to_owned(),
    };
    if !types_equal {
        message.push_str(" Element types do not match.");
    }
    if !shapes_equal {
        message.push_str(" Shapes do not match.");
    }
    let contents_match = match tolerance {
        None => lhs_bytes == rhs_bytes,
        Some((atol, rtol)) if types_equal && shapes_equal => {
            let element_type = ElementType(lhs.element_type());
            let size = element_type.dense_byte_count().max(1);
            if approximate_value(&vec![0; size], element_type).is_none() {
                return Err(unsupported(element_type));
            }
            let first = lhs_bytes.chunks_exact(size).zip(rhs_bytes.chunks_exact(size)).enumerate().find_map(
                |(index, (l, r))| {
                    let (l, r) = (approximate_value(l, element_type)?, approximate_value(r, element_type)?);
                    (!fuzzy_equal(l, r, f64::from(atol), f64::from(rtol))).then_some((index, l, r))
                },
            );
            if let Some((index, l, r)) = first {
                message.push_str(&format!(
                    " Contents does not match to tolerance parameters atol={}, rtol={}. The first failure occurs at \
                     index {index} as the lhs value {} differs from the rhs value {} by {}.",
                    format_g(f64::from(atol)).to_lowercase(),
                    format_g(f64::from(rtol)).to_lowercase(),
                    format_g(l).to_lowercase(),
                    format_g(r).to_lowercase(),
                    scientific(r - l),
                ));
            }
            first.is_none()
        }
        Some(_) => true,
    };
    if tolerance.is_none() && !contents_match {
        message.push_str(" Contents does not match.");
    }
    if types_equal && shapes_equal && contents_match {
        return Ok(None);
    }
    Ok(Some(format!("{message}\n  lhs:\n    {}\n  rhs:\n    {}", printed(lhs)?, printed(rhs)?)))
}

/// C++'s `std::scientific` with precision 3: `1.500e-01`.
fn scientific(value: f64) -> String {
    let text = format!("{value:.3e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) => {
            let (sign, digits) = exponent.strip_prefix('-').map_or(("+", exponent), |d| ("-", d));
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(shape: &[i64], element_type: ElementType, bytes: Vec<u8>) -> Ref {
        BufferView::from_host(shape.to_vec(), element_type.0, &bytes).unwrap().into_ref()
    }

    fn f32s(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn equality_failures_say_what_differs_and_show_both_values() {
        let a = view(&[2], ElementType::FLOAT_32, f32s(&[1.0, 2.0]));
        let b = view(&[2], ElementType::FLOAT_32, f32s(&[1.0, 2.5]));
        assert_eq!(equal(&a, &a, None).unwrap(), None);
        assert_eq!(
            equal(&a, &b, None).unwrap().unwrap(),
            "Expected equality of these values. Contents does not match.\n  lhs:\n    2xf32=1 2\n  rhs:\n    2xf32=1 2.5"
        );
        assert_eq!(equal(&a, &b, Some((0.6, 0.0))).unwrap(), None);
        assert_eq!(
            equal(&a, &b, Some((0.1, 0.0))).unwrap().unwrap().lines().next().unwrap(),
            "Expected near equality of these values. Contents does not match to tolerance parameters atol=0.1, \
             rtol=0. The first failure occurs at index 1 as the lhs value 2 differs from the rhs value 2.5 by \
             5.000e-01."
        );
        let c = view(&[1, 2], ElementType::INT_32, vec![0; 8]);
        assert!(equal(&a, &c, None).unwrap().unwrap().starts_with(
            "Expected equality of these values. Element types do not match. Shapes do not match. Contents does not match."
        ));
        let nan = view(&[1], ElementType::FLOAT_32, f32s(&[f32::NAN]));
        assert_eq!(equal(&nan, &nan, Some((0.0, 0.0))).unwrap(), None, "NaN equals NaN");
    }

    #[test]
    fn all_true_counts_negative_zero_as_zero() {
        let run = |bytes: Vec<u8>| all_true(buffer_view::deref(&view(&[2], ElementType::FLOAT_32, bytes)).unwrap());
        assert_eq!(run(f32s(&[1.0, -3.0])).unwrap(), None);
        let failure = run(f32s(&[1.0, -0.0])).unwrap().unwrap();
        assert!(failure.starts_with("Expected all elements to be nonzero; element 1 is zero."), "{failure}");
        assert_eq!(scientific(-0.000123), "-1.230e-04");
        assert_eq!(scientific(5.0), "5.000e+00");
    }
}
