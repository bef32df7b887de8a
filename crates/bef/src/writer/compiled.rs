//! Symbol references into `tfrt.compiled` modules: the kernel gets the symbol and the module
//! that defines it, printed in MLIR's generic form, as one attribute —
//! `vbr(id) vbr(root length) vbr(#nested) vbr(nested length)* vbr(module length)`, the names
//! back to back, the module's text, and a NUL. `id` counts such attributes in the order written.

use super::emitter::Emitter;
use super::entities::compiled_symbol;
use super::error::WriteError;
use super::program::Program;
use rtx_mlir::ir::AttrId;
use rtx_mlir::text::print::print_op_generic;

/// Writes the symbol reference `attr` as the `id`-th compilation unit; returns its offset.
pub(super) fn write(program: &Program<'_>, attr: AttrId, id: usize, out: &mut Emitter) -> Result<usize, WriteError> {
    let (names, module) = compiled_symbol(program, attr).expect("collected as a symbol in a compiled module");
    let text = print_op_generic(program.module, module)?;
    let offset = out.len();
    out.vbr(id);
    out.vbr(names[0].len());
    out.vbr(names.len() - 1);
    for name in &names[1..] {
        out.vbr(name.len());
    }
    out.vbr(text.len());
    for name in &names {
        out.bytes(name);
    }
    out.bytes(text.as_bytes());
    out.byte(0);
    Ok(offset)
}
