//! The `tfrt.compiled` modules that symbol-reference attributes carry as text: each is parsed
//! on its own first (so an error names its unit), then all of them inside the top-level module
//! the disassembly is built in, each module once.

use super::error::DisassembleError;
use rtx_kernel::attribute::CompilationUnit;
use rtx_mlir::ir::Module;
use rtx_mlir::parse_text;

/// A module holding one copy of each distinct compilation unit's module, in the order of the
/// units.
pub(super) fn top_module(units: &[CompilationUnit<'_>]) -> Result<Module, DisassembleError> {
    let mut text = String::from("module {\n");
    let mut seen = std::collections::HashSet::new();
    for unit in units.iter().filter(|unit| seen.insert(unit.module)) {
        parse_text(unit.module).map_err(|error| DisassembleError::CompilationUnit {
            id: unit.id,
            root: unit.root.to_owned(),
            error,
        })?;
        text.push_str(unit.module);
        text.push('\n');
    }
    text.push('}');
    parse_text(&text).map_err(DisassembleError::CompiledModules)
}
