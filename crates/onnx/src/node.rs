//! One ONNX node as the lowering reads it: its name for errors, and its attributes by name with
//! ONNX's defaults.

use super::proto::{AttributeProto, NodeProto};
use super::ImportError;

pub struct Node<'n> {
    pub proto: &'n NodeProto,
    /// The node's name, or its first output's when it has none (what a user can find).
    pub name: String,
    pub op: &'n str,
}

impl<'n> Node<'n> {
    pub fn new(proto: &'n NodeProto) -> Node<'n> {
        let name = match proto.name.as_deref() {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => proto.output.first().cloned().unwrap_or_default(),
        };
        Node { proto, name, op: proto.op_type.as_deref().unwrap_or("") }
    }

    /// An error about this node.
    pub fn error(&self, message: impl Into<String>) -> ImportError {
        ImportError::Node { node: self.name.clone(), op: self.op.to_owned(), message: message.into() }
    }

    /// An error for what the node uses that rtx does not support yet.
    pub fn unsupported(&self, message: impl Into<String>) -> ImportError {
        ImportError::Unsupported { node: self.name.clone(), op: self.op.to_owned(), message: message.into() }
    }

    /// Input `i`'s name, `None` when absent or empty (an omitted optional input).
    pub fn input(&self, i: usize) -> Option<&'n str> {
        self.proto.input.get(i).map(String::as_str).filter(|name| !name.is_empty())
    }

    /// Input `i`'s name, which the operator requires.
    pub fn required(&self, i: usize) -> Result<&'n str, ImportError> {
        self.input(i).ok_or_else(|| self.error(format!("input {i} is missing")))
    }

    /// The node's present inputs, in order.
    pub fn inputs(&self) -> impl Iterator<Item = &'n str> {
        self.proto.input.iter().map(String::as_str).filter(|name| !name.is_empty())
    }

    /// Output 0's name.
    pub fn output(&self) -> Result<&'n str, ImportError> {
        self.proto.output.first().map(String::as_str).ok_or_else(|| self.error("it has no output"))
    }

    pub fn attribute(&self, name: &str) -> Option<&'n AttributeProto> {
        self.proto.attribute.iter().find(|a| a.name.as_deref() == Some(name))
    }

    pub fn has(&self, name: &str) -> bool {
        self.attribute(name).is_some()
    }

    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.attribute(name).and_then(|a| a.i).unwrap_or(default)
    }

    pub fn float(&self, name: &str, default: f32) -> f32 {
        self.attribute(name).and_then(|a| a.f).unwrap_or(default)
    }

    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attribute(name).map(|a| a.ints.clone())
    }

    pub fn string(&self, name: &str) -> Option<String> {
        self.attribute(name).and_then(|a| a.s.as_ref()).map(|s| String::from_utf8_lossy(s).into_owned())
    }

    pub fn tensor(&self, name: &str) -> Option<&'n super::proto::TensorProto> {
        self.attribute(name).and_then(|a| a.t.as_ref())
    }
}
