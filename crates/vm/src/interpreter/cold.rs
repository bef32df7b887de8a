//! The out-of-line half of the dispatch loop: ops on refs, globals, buffers and lists.
//!
//! These ops touch reference counts, allocate or check bounds, so a call per op is noise for
//! them; keeping their code out of the loop function keeps the loop's hot values (the op pointer,
//! the register window, the budget) in machine registers instead of spilled around calls. Register
//! accesses here are bounds-checked: nothing is gained by skipping the checks on this path.

use std::sync::Arc;

use super::op::{BufferElement, ColdOp, RefCheck, RefReg, Reg};
use super::{read64, write64};
use crate::abi::ValueKind;
use crate::buffer::ByteBuffer;
use crate::context::BytecodeState;
use crate::list::{List, ListElementType};
use crate::module::Module;
use crate::refs::Ref;
use rtx_host::{Diagnostic, StatusCode};

/// What the cold ops reach besides the i32 registers.
pub(super) struct Env<'a> {
    /// The frame's ref registers.
    pub refs: &'a mut [Option<Ref>],
    pub state: &'a mut BytecodeState,
    pub module: &'a Arc<Module>,
}

pub(super) fn error(code: StatusCode, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(code, message)
}

#[inline(never)]
pub(super) fn execute(op: &ColdOp, regs: &mut [u32], env: &mut Env<'_>) -> Result<(), Diagnostic> {
    let refs = &mut *env.refs;
    let state = &mut *env.state;
    let module = env.module;
    macro_rules! r32 {
        ($r:expr) => {
            regs[$r as usize]
        };
    }
    macro_rules! r64 {
        ($r:expr) => {
            read64(regs, $r as usize)
        };
    }
    macro_rules! w64 {
        ($r:expr, $v:expr) => {
            write64(regs, $r as usize, $v)
        };
    }
    macro_rules! r#try {
        ($e:expr) => {
            $e?
        };
    }
    match op {
        ColdOp::SelectRef { c, check, t, f, d } => {
            let (chosen, other) = if r32!(*c) != 0 { (*t, *f) } else { (*f, *t) };
            let value = take_or_clone(refs, chosen);
            r#try!(check_ref(check, &value));
            if other.is_move && other.reg != *d {
                refs[other.reg as usize] = None;
            }
            refs[*d as usize] = value;
        }
        ColdOp::Switch32 { index, default, values, d } => {
            let i = r32!(*index) as i32;
            let source = if i >= 0 && (i as usize) < values.len() { values[i as usize] } else { *default };
            r32!(*d) = r32!(source);
        }
        ColdOp::Switch64 { index, default, values, d } => {
            let i = r32!(*index) as i32;
            let source = if i >= 0 && (i as usize) < values.len() { values[i as usize] } else { *default };
            w64!(*d, r64!(source));
        }
        ColdOp::SwitchRef { index, check, default, values, d } => {
            let i = r32!(*index) as i32;
            let source = if i >= 0 && (i as usize) < values.len() { values[i as usize] } else { *default };
            let value = take_or_clone(refs, source);
            r#try!(check_ref(check, &value));
            refs[*d as usize] = value;
        }

        ColdOp::GlobalLoad32 { offset, d } => {
            let range = r#try!(global_range(state, *offset, 4));
            r32!(*d) = u32::from_le_bytes(state.rwdata[range].try_into().expect("4 bytes"));
        }
        ColdOp::GlobalStore32 { offset, s } => {
            let range = r#try!(global_range(state, *offset, 4));
            state.rwdata[range].copy_from_slice(&r32!(*s).to_le_bytes());
        }
        ColdOp::GlobalLoad64 { offset, d } => {
            let range = r#try!(global_range(state, *offset, 8));
            w64!(*d, u64::from_le_bytes(state.rwdata[range].try_into().expect("8 bytes")));
        }
        ColdOp::GlobalStore64 { offset, s } => {
            let range = r#try!(global_range(state, *offset, 8));
            state.rwdata[range].copy_from_slice(&r64!(*s).to_le_bytes());
        }
        ColdOp::GlobalLoadIndirect32 { offset, d } => {
            let range = r#try!(global_range(state, r32!(*offset), 4));
            r32!(*d) = u32::from_le_bytes(state.rwdata[range].try_into().expect("4 bytes"));
        }
        ColdOp::GlobalStoreIndirect32 { offset, s } => {
            let range = r#try!(global_range(state, r32!(*offset), 4));
            state.rwdata[range].copy_from_slice(&r32!(*s).to_le_bytes());
        }
        ColdOp::GlobalLoadIndirect64 { offset, d } => {
            let range = r#try!(global_range(state, r32!(*offset), 8));
            w64!(*d, u64::from_le_bytes(state.rwdata[range].try_into().expect("8 bytes")));
        }
        ColdOp::GlobalStoreIndirect64 { offset, s } => {
            let range = r#try!(global_range(state, r32!(*offset), 8));
            state.rwdata[range].copy_from_slice(&r64!(*s).to_le_bytes());
        }
        ColdOp::GlobalLoadRef { global, check, d } => {
            let g = r#try!(global_ref(state, *global));
            let value = if d.is_move { state.refs[g].take() } else { state.refs[g].clone() };
            r#try!(check_ref(check, &value));
            refs[d.reg as usize] = value;
        }
        ColdOp::GlobalStoreRef { global, check, s } => {
            let g = r#try!(global_ref(state, *global));
            let value = take_or_clone(refs, *s);
            r#try!(check_ref(check, &value));
            state.refs[g] = value;
        }
        ColdOp::GlobalLoadIndirectRef { global, check, d } => {
            let g = r#try!(global_ref(state, r32!(*global)));
            let value = if d.is_move { state.refs[g].take() } else { state.refs[g].clone() };
            r#try!(check_ref(check, &value));
            refs[d.reg as usize] = value;
        }
        ColdOp::GlobalStoreIndirectRef { global, check, s } => {
            let g = r#try!(global_ref(state, r32!(*global)));
            let value = take_or_clone(refs, *s);
            r#try!(check_ref(check, &value));
            state.refs[g] = value;
        }

        ColdOp::ConstRefZero { d } => refs[*d as usize] = None,
        ColdOp::ConstRodata { ordinal, d } => {
            let slot = &mut state.rodata[*ordinal as usize];
            let buffer = match slot {
                Some(buffer) => buffer.clone(),
                None => {
                    let buffer = r#try!(ByteBuffer::rodata(module.clone(), *ordinal as usize));
                    *slot = Some(buffer.clone());
                    buffer
                }
            };
            refs[*d as usize] = Some(Ref::Buffer(buffer));
        }
        ColdOp::AssignRef { s, d } => {
            if !(s.is_move && s.reg == *d) {
                refs[*d as usize] = take_or_clone(refs, *s);
            }
        }
        ColdOp::CastAnyRef { s, check, d } => {
            let value = take_or_clone(refs, *s);
            r#try!(check_ref(check, &value));
            refs[*d as usize] = value;
        }
        ColdOp::DiscardRefs { regs: list } | ColdOp::DiscardMoved { regs: list } => {
            for &r in list.iter() {
                refs[r as usize] = None;
            }
        }
        ColdOp::CmpEqRef { a, b, d } => r32!(*d) = ref_eq(&refs[*a as usize], &refs[*b as usize]) as u32,
        ColdOp::CmpNeRef { a, b, d } => r32!(*d) = !ref_eq(&refs[*a as usize], &refs[*b as usize]) as u32,
        ColdOp::CmpNzRef { a, d } => r32!(*d) = refs[*a as usize].is_some() as u32,

        ColdOp::BufferAlloc { length, alignment, d } => {
            let buffer =
                r#try!(ByteBuffer::allocate(state.allocator.as_ref(), r64!(*length) as i64, r32!(*alignment) as i32));
            refs[*d as usize] = Some(Ref::Buffer(buffer));
        }
        ColdOp::BufferClone { source, offset, length, alignment, d } => {
            let clone = r#try!(r#try!(buffer(refs, *source)).clone_range(
                state.allocator.as_ref(),
                r64!(*offset) as i64,
                r64!(*length) as i64,
                r32!(*alignment) as i32
            ));
            refs[*d as usize] = Some(Ref::Buffer(clone));
        }
        ColdOp::BufferLength { buffer: b, d } => w64!(*d, r#try!(buffer(refs, *b)).len() as u64),
        ColdOp::BufferCopy { source, source_offset, target, target_offset, length } => {
            r#try!(ByteBuffer::copy(
                r#try!(buffer(refs, *source)),
                r64!(*source_offset) as i64,
                r#try!(buffer(refs, *target)),
                r64!(*target_offset) as i64,
                r64!(*length) as i64
            ))
        }
        ColdOp::BufferCompare { lhs, lhs_offset, rhs, rhs_offset, length, d } => {
            let equal = r#try!(ByteBuffer::compare(
                r#try!(buffer(refs, *lhs)),
                r64!(*lhs_offset) as i64,
                r#try!(buffer(refs, *rhs)),
                r64!(*rhs_offset) as i64,
                r64!(*length) as i64
            ));
            r32!(*d) = equal as u32;
        }
        ColdOp::BufferFill { element, buffer: b, offset, length, value } => {
            let target = r#try!(buffer(refs, *b));
            let (offset, length) = (r64!(*offset) as i64, r64!(*length) as i64);
            r#try!(match element {
                BufferElement::I8U | BufferElement::I8S => target.fill_i8(offset, length, r32!(*value) as i8),
                BufferElement::I16U | BufferElement::I16S => {
                    target.fill_i16(offset, length, r32!(*value) as i16)
                }
                BufferElement::I32 | BufferElement::F32 => target.fill_i32(offset, length, r32!(*value) as i32),
                BufferElement::I64 | BufferElement::F64 => target.fill_i64(offset, length, r64!(*value) as i64),
            })
        }
        ColdOp::BufferLoad { element, buffer: b, offset, d } => {
            let source = r#try!(buffer(refs, *b));
            let offset = r64!(*offset) as i64;
            match element {
                BufferElement::I8U => r32!(*d) = r#try!(source.load_i8_u(offset)) as u32,
                BufferElement::I8S => r32!(*d) = r#try!(source.load_i8_s(offset)) as u32,
                BufferElement::I16U => r32!(*d) = r#try!(source.load_i16_u(offset)) as u32,
                BufferElement::I16S => r32!(*d) = r#try!(source.load_i16_s(offset)) as u32,
                BufferElement::I32 | BufferElement::F32 => r32!(*d) = r#try!(source.load_i32(offset)) as u32,
                BufferElement::I64 | BufferElement::F64 => {
                    w64!(*d, r#try!(source.load_i64(offset)) as u64)
                }
            }
        }
        ColdOp::BufferStore { element, buffer: b, offset, value } => {
            let target = r#try!(buffer(refs, *b));
            let offset = r64!(*offset) as i64;
            r#try!(match element {
                BufferElement::I8U | BufferElement::I8S => target.store_i8(offset, r32!(*value) as i8),
                BufferElement::I16U | BufferElement::I16S => target.store_i16(offset, r32!(*value) as i16),
                BufferElement::I32 | BufferElement::F32 => target.store_i32(offset, r32!(*value) as i32),
                BufferElement::I64 | BufferElement::F64 => target.store_i64(offset, r64!(*value) as i64),
            })
        }
        ColdOp::BufferHash { buffer: b, offset, length, d } => {
            let hash = r#try!(r#try!(buffer(refs, *b)).hash(r64!(*offset) as i64, r64!(*length) as i64));
            w64!(*d, hash as u64);
        }

        ColdOp::ListAlloc { element_type, capacity, d } => {
            let name = module.types().get(*element_type as usize).map_or("?", |t| t.full_name.as_str());
            let element = r#try!(ListElementType::from_type_name(name));
            let new = r#try!(List::new(element, r32!(*capacity) as i32));
            refs[*d as usize] = Some(Ref::List(new));
        }
        ColdOp::ListReserve { list: l, capacity } => {
            r#try!(r#try!(list(refs, *l)).reserve(r32!(*capacity) as i32))
        }
        ColdOp::ListSize { list: l, d } => r32!(*d) = r#try!(list(refs, *l)).size() as u32,
        ColdOp::ListResize { list: l, size } => r#try!(r#try!(list(refs, *l)).resize(r32!(*size) as i32)),
        ColdOp::ListGet { kind, list: l, index, d } => {
            let l = r#try!(list(refs, *l));
            let index = r32!(*index) as i32;
            match kind {
                ValueKind::I32 => r32!(*d) = r#try!(l.get_i32(index)) as u32,
                ValueKind::F32 => r32!(*d) = r#try!(l.get_f32(index)).to_bits(),
                ValueKind::I64 => w64!(*d, r#try!(l.get_i64(index)) as u64),
                ValueKind::F64 | ValueKind::Ref => w64!(*d, r#try!(l.get_f64(index)).to_bits()),
            }
        }
        ColdOp::ListSet { kind, list: l, index, value } => {
            let l = r#try!(list(refs, *l));
            let index = r32!(*index) as i32;
            r#try!(match kind {
                ValueKind::I32 => l.set_i32(index, r32!(*value) as i32),
                ValueKind::F32 => l.set_f32(index, f32::from_bits(r32!(*value))),
                ValueKind::I64 => l.set_i64(index, r64!(*value) as i64),
                ValueKind::F64 | ValueKind::Ref => l.set_f64(index, f64::from_bits(r64!(*value))),
            })
        }
        ColdOp::ListGetRef { list: l, index, check, d } => {
            let value = r#try!(r#try!(list(refs, *l)).get_ref(r32!(*index) as i32));
            // IREE puts null in the register on a type mismatch rather than failing.
            refs[d.reg as usize] = value.filter(|v| check.admits(v));
        }
        ColdOp::ListSetRef { list: l, index, value } => {
            let v = take_or_clone(refs, *value);
            r#try!(r#try!(list(refs, *l)).set_ref(r32!(*index) as i32, v));
        }
    }
    Ok(())
}

/// Performs the ref moves of a branch. The loop does the i32 moves first; the banks are
/// disjoint, so splitting them changes nothing.
#[inline(never)]
pub(super) fn move_refs(moves: &[(RefReg, Reg)], refs: &mut [Option<Ref>]) {
    for &(s, d) in moves {
        if !(s.is_move && s.reg == d) {
            refs[d as usize] = take_or_clone(refs, s);
        }
    }
}

impl RefCheck {
    /// Whether a non-null `value` may be used where this check's type is required.
    fn admits(&self, value: &Ref) -> bool {
        match self {
            RefCheck::Any => true,
            RefCheck::Named(name) => value.type_name() == &**name,
            RefCheck::Primitive(_) => false,
        }
    }
}

/// A typed ref operation's check: null always passes, a ref of the wrong type is an error.
fn check_ref(check: &RefCheck, value: &Option<Ref>) -> Result<(), Diagnostic> {
    match value {
        Some(value) if !check.admits(value) => {
            let expected = match check {
                RefCheck::Any => "any ref",
                RefCheck::Named(name) | RefCheck::Primitive(name) => name,
            };
            Err(error(
                StatusCode::InvalidArgument,
                format!("ref type mismatch: a `{}` where `{expected}` is required", value.type_name()),
            ))
        }
        _ => Ok(()),
    }
}

pub(super) fn take_or_clone(refs: &mut [Option<Ref>], r: RefReg) -> Option<Ref> {
    if r.is_move {
        refs[r.reg as usize].take()
    } else {
        refs[r.reg as usize].clone()
    }
}

fn buffer(refs: &[Option<Ref>], reg: Reg) -> Result<&Arc<ByteBuffer>, Diagnostic> {
    match &refs[reg as usize] {
        Some(Ref::Buffer(buffer)) => Ok(buffer),
        Some(other) => {
            Err(error(StatusCode::InvalidArgument, format!("expected a `vm.buffer`, got a `{}`", other.type_name())))
        }
        None => Err(error(StatusCode::InvalidArgument, "buffer is null")),
    }
}

fn list(refs: &[Option<Ref>], reg: Reg) -> Result<&Arc<List>, Diagnostic> {
    match &refs[reg as usize] {
        Some(Ref::List(list)) => Ok(list),
        Some(other) => {
            Err(error(StatusCode::InvalidArgument, format!("expected a `vm.list`, got a `{}`", other.type_name())))
        }
        None => Err(error(StatusCode::InvalidArgument, "list is null")),
    }
}

fn global_range(state: &BytecodeState, offset: u32, width: usize) -> Result<std::ops::Range<usize>, Diagnostic> {
    let start = offset as usize;
    if start + width > state.rwdata.len() {
        return Err(error(
            StatusCode::OutOfRange,
            format!("global byte_offset out of range: {offset} (rwdata={})", state.rwdata.len()),
        ));
    }
    Ok(start..start + width)
}

fn global_ref(state: &BytecodeState, global: u32) -> Result<usize, Diagnostic> {
    if global as usize >= state.refs.len() {
        return Err(error(
            StatusCode::OutOfRange,
            format!("global ref ordinal out of range: {global} (table={})", state.refs.len()),
        ));
    }
    Ok(global as usize)
}

fn ref_eq(a: &Option<Ref>, b: &Option<Ref>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.ptr_eq(b),
        _ => false,
    }
}
