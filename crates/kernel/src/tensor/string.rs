//! [`StringHostTensor`]: a tensor of strings, printed as TFRT prints it.

use std::fmt;

use super::dense::PRINTED_ELEMENTS;
use super::shape::TensorShape;
use rtx_host::{Diagnostic, StatusCode};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StringHostTensor {
    shape: TensorShape,
    strings: Vec<String>,
}

impl StringHostTensor {
    /// A tensor of `shape` holding `strings` in row-major order; their count must match.
    pub fn new(shape: TensorShape, strings: Vec<String>) -> Result<StringHostTensor, Diagnostic> {
        if shape.num_elements() != i64::try_from(strings.len()).ok() {
            return Err(Diagnostic::new(StatusCode::Internal, "Shape mismatch"));
        }
        Ok(StringHostTensor { shape, strings })
    }

    pub fn shape(&self) -> &TensorShape {
        &self.shape
    }

    pub fn strings(&self) -> &[String] {
        &self.strings
    }
}

/// `StringHostTensor shape = [2], values = ["a", "b"]`, at most [`PRINTED_ELEMENTS`] strings.
impl fmt::Display for StringHostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StringHostTensor shape = {}, values = [", self.shape)?;
        for (i, s) in self.strings.iter().take(PRINTED_ELEMENTS).enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "\"{s}\"")?;
        }
        if self.strings.len() > PRINTED_ELEMENTS {
            write!(f, ", ... ")?;
        }
        write!(f, "]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_tensors_check_their_count_and_print_quoted() {
        let shape = TensorShape::new(vec![2]).unwrap();
        let tensor = StringHostTensor::new(shape.clone(), vec!["string".into(), "tensor".into()]).unwrap();
        assert_eq!(tensor.to_string(), "StringHostTensor shape = [2], values = [\"string\", \"tensor\"]");
        assert_eq!(StringHostTensor::new(shape, vec![]).unwrap_err().message, "Shape mismatch");
    }
}
