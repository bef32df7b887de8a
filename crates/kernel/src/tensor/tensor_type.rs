//! [`TensorType`]: the kinds of host tensor rtx has, named as TFRT registers its tensor types
//! (`DenseHost`, `StringHost`, `CooHost`); any other name is the `Unknown` type, as a name TFRT
//! never registered is.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorType {
    Unknown,
    /// [`DenseHostTensor`](super::DenseHostTensor).
    DenseHost,
    /// [`StringHostTensor`](super::StringHostTensor).
    StringHost,
    /// [`CooHostTensor`](super::CooHostTensor).
    CooHost,
}

impl TensorType {
    const KNOWN: [TensorType; 3] = [TensorType::DenseHost, TensorType::StringHost, TensorType::CooHost];

    /// The type named `name`.
    pub fn from_name(name: &str) -> TensorType {
        TensorType::KNOWN.into_iter().find(|t| t.name() == name).unwrap_or(TensorType::Unknown)
    }

    pub fn name(self) -> &'static str {
        match self {
            TensorType::Unknown => "Unknown",
            TensorType::DenseHost => "DenseHost",
            TensorType::StringHost => "StringHost",
            TensorType::CooHost => "CooHost",
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_types_and_back() {
        for t in TensorType::KNOWN {
            assert_eq!(TensorType::from_name(t.name()), t);
        }
        assert_eq!(TensorType::from_name("ScalarHost"), TensorType::Unknown);
        assert_eq!(TensorType::from_name("Unknown").to_string(), "Unknown");
    }
}
