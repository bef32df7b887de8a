//! The integration tests of rtx-onnx, in one binary.

mod onnx_import;
