//! Float values of every builtin float type, shared by the text parser (decimal literals to
//! bits) and the bytecode reader's dialect decoders (bits to the text upstream prints). Both
//! directions need the same facts about each format and the same exact arithmetic, so they live
//! here once: [`semantics`] says how each [`FloatKind`](crate::ir::FloatKind) spends its
//! bits, [`big`] is the big-integer arithmetic that exact decimal conversion needs, [`decimal`]
//! reads decimal text into bits and [`print`] writes bits as `APFloat::toString` does.

mod big;
mod decimal;
mod print;
mod semantics;

pub(crate) use decimal::decimal_to_bits;
pub(crate) use print::print_float;
