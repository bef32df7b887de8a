//! The dispatch loop.
//!
//! Registers are indexed through slices of the frame's window, so every access is bounds-checked
//! by Rust; the verifier and the lowering guarantee the checks pass, which keeps them predictable
//! branches rather than failures. Errors leave the loop through `fail!`, which records the pc so
//! the error can name the instruction and its source location.

use std::sync::Arc;

use super::op::{BufferElement, CallOp, Callee, Moves, Op, RefCheck, RefReg, Reg, Target};
use super::scalar;
use super::{bytecode_module, call_native, read64, Invocation, Pending, Step};
use crate::host::{Diagnostic, StatusCode};
use crate::vm::abi::ValueKind;
use crate::vm::buffer::Buffer;
use crate::vm::context::{BytecodeState, Instance, Resolved, State};
use crate::vm::list::{List, ListElementType};
use crate::vm::native::NativeOutcome;
use crate::vm::refs::Ref;
use crate::vm::value::Value;

/// What the inner loop hands to the frame loop.
enum Transfer {
    /// Enter a bytecode function (the caller's pc already points at its call op).
    Enter { instance: u32, function: u32 },
    /// The current frame returned.
    Return,
    /// Call a native function with these arguments.
    Native { instance: u32, function: u32, arguments: Vec<Value> },
}

fn error(code: StatusCode, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(code, message)
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

fn take_or_clone(refs: &mut [Option<Ref>], r: RefReg) -> Option<Ref> {
    if r.is_move {
        refs[r.reg as usize].take()
    } else {
        refs[r.reg as usize].clone()
    }
}

fn buffer(refs: &[Option<Ref>], reg: Reg) -> Result<&Arc<Buffer>, Diagnostic> {
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

impl Invocation {
    pub(super) fn execute(&mut self, instances: &[Instance], states: &mut [State]) -> Result<Step, Diagnostic> {
        loop {
            let frame = *self.frames.last().expect("an executing invocation has a frame");
            let module = bytecode_module(instances, frame.instance)?;
            let Some(Instance::Bytecode { imports, .. }) = instances.get(frame.instance as usize) else {
                return Err(error(StatusCode::Internal, "frame of a non-bytecode module"));
            };
            let Some(State::Bytecode(state)) = states.get_mut(frame.instance as usize) else {
                return Err(error(StatusCode::Internal, "frame without bytecode state"));
            };
            let function = &module.functions()[frame.function as usize];
            let ops = &function.ops[..];
            let i32_base = frame.i32_base as usize;
            let ref_base = frame.ref_base as usize;
            let i32_end = i32_base + function.i32_register_count as usize;
            let ref_end = ref_base + function.ref_register_count as usize;
            let mut pc = frame.pc as usize;
            let mut budget = self.budget;
            let transfer = {
                let regs = &mut self.i32s[i32_base..i32_end];
                let refs = &mut self.refs[ref_base..ref_end];
                macro_rules! fail {
                    ($error:expr) => {{
                        let error = $error;
                        self.budget = budget;
                        self.frames.last_mut().expect("executing").pc = pc as u32;
                        return Err(self.locate(instances, error));
                    }};
                }
                macro_rules! r#try {
                    ($e:expr) => {
                        match $e {
                            Ok(v) => v,
                            Err(e) => fail!(e),
                        }
                    };
                }
                macro_rules! r32 {
                    ($r:expr) => {
                        *register(regs, $r)
                    };
                }
                macro_rules! r64 {
                    ($r:expr) => {{
                        let r = $r;
                        *register(regs, r) as u64 | (*register(regs, r + 1) as u64) << 32
                    }};
                }
                macro_rules! w64 {
                    ($r:expr, $v:expr) => {{
                        let (r, v) = ($r, $v);
                        *register(regs, r) = v as u32;
                        *register(regs, r + 1) = (v >> 32) as u32;
                    }};
                }
                macro_rules! jump {
                    ($target:expr) => {{
                        let target: &Target = $target;
                        if budget == 0 {
                            fail!(error(
                                StatusCode::DeadlineExceeded,
                                "the invocation's branch budget is exhausted (Invocation::set_budget)"
                            ));
                        }
                        budget -= 1;
                        match &target.moves {
                            Moves::None => {}
                            Moves::One(s, d) => *register(regs, *d) = *register(regs, *s),
                            Moves::Many(remap) => {
                                for &(s, d) in remap.ints.iter() {
                                    *register(regs, d) = *register(regs, s);
                                }
                                for &(s, d) in remap.refs.iter() {
                                    if !(s.is_move && s.reg == d) {
                                        refs[d as usize] = take_or_clone(refs, s);
                                    }
                                }
                            }
                        }
                        pc = target.op as usize;
                        continue;
                    }};
                }
                loop {
                    debug_assert!(pc < ops.len());
                    // SAFETY: `pc` is always an op index of this function: it starts at 0 or at a
                    // saved pc, branches go to op indices the lowering resolved from verified block
                    // targets, and it only steps to `pc + 1` after an op that is not a terminator,
                    // while the verifier proved the function's last op is a terminator (`vm.fail`
                    // with status 0, the one terminator that falls through, checks the bound).
                    match unsafe { ops.get_unchecked(pc) } {
                        Op::AddI32 { a, b, d } => r32!(*d) = scalar::add_i32(r32!(*a), r32!(*b)),
                        Op::SubI32 { a, b, d } => r32!(*d) = scalar::sub_i32(r32!(*a), r32!(*b)),
                        Op::MulI32 { a, b, d } => r32!(*d) = scalar::mul_i32(r32!(*a), r32!(*b)),
                        Op::AddI64 { a, b, d } => w64!(*d, scalar::add_i64(r64!(*a), r64!(*b))),
                        Op::MulI64 { a, b, d } => w64!(*d, scalar::mul_i64(r64!(*a), r64!(*b))),
                        Op::CmpLtI32S { a, b, d } => r32!(*d) = scalar::cmp_lt_i32_s(r32!(*a), r32!(*b)),
                        Op::CmpLtI64S { a, b, d } => r32!(*d) = scalar::cmp_lt_i64_s(r64!(*a), r64!(*b)),
                        Op::CmpEqI64 { a, b, d } => r32!(*d) = scalar::cmp_eq_i64(r64!(*a), r64!(*b)),
                        Op::Const32 { value, d } => r32!(*d) = *value,
                        Op::Const64 { value, d } => w64!(*d, *value),
                        Op::Un32 { f, a, d } => r32!(*d) = f(r32!(*a)),
                        Op::Bin32 { f, a, b, d } => r32!(*d) = f(r32!(*a), r32!(*b)),
                        Op::Tern32 { f, a, b, c, d } => r32!(*d) = f(r32!(*a), r32!(*b), r32!(*c)),
                        Op::Un64 { f, a, d } => w64!(*d, f(r64!(*a))),
                        Op::Bin64 { f, a, b, d } => w64!(*d, f(r64!(*a), r64!(*b))),
                        Op::Tern64 { f, a, b, c, d } => w64!(*d, f(r64!(*a), r64!(*b), r64!(*c))),
                        Op::Shift64 { f, a, b, d } => w64!(*d, f(r64!(*a), r32!(*b))),
                        Op::Narrow { f, a, d } => r32!(*d) = f(r64!(*a)),
                        Op::Widen { f, a, d } => w64!(*d, f(r32!(*a))),
                        Op::Cmp64 { f, a, b, d } => r32!(*d) = f(r64!(*a), r64!(*b)),
                        Op::Div32 { f, a, b, d } => match f(r32!(*a), r32!(*b)) {
                            Some(v) => r32!(*d) = v,
                            None => fail!(division_error(r32!(*a) as i32 as i64, r32!(*b) as i32 as i64)),
                        },
                        Op::Div64 { f, a, b, d } => match f(r64!(*a), r64!(*b)) {
                            Some(v) => w64!(*d, v),
                            None => fail!(division_error(r64!(*a) as i64, r64!(*b) as i64)),
                        },
                        Op::Select32 { c, t, f, d } => r32!(*d) = if r32!(*c) != 0 { r32!(*t) } else { r32!(*f) },
                        Op::Select64 { c, t, f, d } => w64!(*d, if r32!(*c) != 0 { r64!(*t) } else { r64!(*f) }),
                        Op::SelectRef { c, check, t, f, d } => {
                            let (chosen, other) = if r32!(*c) != 0 { (*t, *f) } else { (*f, *t) };
                            let value = take_or_clone(refs, chosen);
                            r#try!(check_ref(check, &value));
                            if other.is_move && other.reg != *d {
                                refs[other.reg as usize] = None;
                            }
                            refs[*d as usize] = value;
                        }
                        Op::Switch32 { index, default, values, d } => {
                            let i = r32!(*index) as i32;
                            let source =
                                if i >= 0 && (i as usize) < values.len() { values[i as usize] } else { *default };
                            r32!(*d) = r32!(source);
                        }
                        Op::Switch64 { index, default, values, d } => {
                            let i = r32!(*index) as i32;
                            let source =
                                if i >= 0 && (i as usize) < values.len() { values[i as usize] } else { *default };
                            w64!(*d, r64!(source));
                        }
                        Op::SwitchRef { index, check, default, values, d } => {
                            let i = r32!(*index) as i32;
                            let source =
                                if i >= 0 && (i as usize) < values.len() { values[i as usize] } else { *default };
                            let value = take_or_clone(refs, source);
                            r#try!(check_ref(check, &value));
                            refs[*d as usize] = value;
                        }

                        Op::GlobalLoad32 { offset, d } => {
                            let range = r#try!(global_range(state, *offset, 4));
                            r32!(*d) = u32::from_le_bytes(state.rwdata[range].try_into().expect("4 bytes"));
                        }
                        Op::GlobalStore32 { offset, s } => {
                            let range = r#try!(global_range(state, *offset, 4));
                            state.rwdata[range].copy_from_slice(&r32!(*s).to_le_bytes());
                        }
                        Op::GlobalLoad64 { offset, d } => {
                            let range = r#try!(global_range(state, *offset, 8));
                            w64!(*d, u64::from_le_bytes(state.rwdata[range].try_into().expect("8 bytes")));
                        }
                        Op::GlobalStore64 { offset, s } => {
                            let range = r#try!(global_range(state, *offset, 8));
                            state.rwdata[range].copy_from_slice(&r64!(*s).to_le_bytes());
                        }
                        Op::GlobalLoadIndirect32 { offset, d } => {
                            let range = r#try!(global_range(state, r32!(*offset), 4));
                            r32!(*d) = u32::from_le_bytes(state.rwdata[range].try_into().expect("4 bytes"));
                        }
                        Op::GlobalStoreIndirect32 { offset, s } => {
                            let range = r#try!(global_range(state, r32!(*offset), 4));
                            state.rwdata[range].copy_from_slice(&r32!(*s).to_le_bytes());
                        }
                        Op::GlobalLoadIndirect64 { offset, d } => {
                            let range = r#try!(global_range(state, r32!(*offset), 8));
                            w64!(*d, u64::from_le_bytes(state.rwdata[range].try_into().expect("8 bytes")));
                        }
                        Op::GlobalStoreIndirect64 { offset, s } => {
                            let range = r#try!(global_range(state, r32!(*offset), 8));
                            state.rwdata[range].copy_from_slice(&r64!(*s).to_le_bytes());
                        }
                        Op::GlobalLoadRef { global, check, d } => {
                            let g = r#try!(global_ref(state, *global));
                            let value = if d.is_move { state.refs[g].take() } else { state.refs[g].clone() };
                            r#try!(check_ref(check, &value));
                            refs[d.reg as usize] = value;
                        }
                        Op::GlobalStoreRef { global, check, s } => {
                            let g = r#try!(global_ref(state, *global));
                            let value = take_or_clone(refs, *s);
                            r#try!(check_ref(check, &value));
                            state.refs[g] = value;
                        }
                        Op::GlobalLoadIndirectRef { global, check, d } => {
                            let g = r#try!(global_ref(state, r32!(*global)));
                            let value = if d.is_move { state.refs[g].take() } else { state.refs[g].clone() };
                            r#try!(check_ref(check, &value));
                            refs[d.reg as usize] = value;
                        }
                        Op::GlobalStoreIndirectRef { global, check, s } => {
                            let g = r#try!(global_ref(state, r32!(*global)));
                            let value = take_or_clone(refs, *s);
                            r#try!(check_ref(check, &value));
                            state.refs[g] = value;
                        }

                        Op::ConstRefZero { d } => refs[*d as usize] = None,
                        Op::ConstRodata { ordinal, d } => {
                            let slot = &mut state.rodata[*ordinal as usize];
                            let buffer = match slot {
                                Some(buffer) => buffer.clone(),
                                None => {
                                    let buffer = r#try!(Buffer::rodata(module.clone(), *ordinal as usize));
                                    *slot = Some(buffer.clone());
                                    buffer
                                }
                            };
                            refs[*d as usize] = Some(Ref::Buffer(buffer));
                        }
                        Op::AssignRef { s, d } => {
                            if !(s.is_move && s.reg == *d) {
                                refs[*d as usize] = take_or_clone(refs, *s);
                            }
                        }
                        Op::CastAnyRef { s, check, d } => {
                            let value = take_or_clone(refs, *s);
                            r#try!(check_ref(check, &value));
                            refs[*d as usize] = value;
                        }
                        Op::DiscardRefs { regs: list } | Op::DiscardMoved { regs: list } => {
                            for &r in list.iter() {
                                refs[r as usize] = None;
                            }
                        }
                        Op::CmpEqRef { a, b, d } => r32!(*d) = ref_eq(&refs[*a as usize], &refs[*b as usize]) as u32,
                        Op::CmpNeRef { a, b, d } => r32!(*d) = !ref_eq(&refs[*a as usize], &refs[*b as usize]) as u32,
                        Op::CmpNzRef { a, d } => r32!(*d) = refs[*a as usize].is_some() as u32,

                        Op::BufferAlloc { length, alignment, d } => {
                            let buffer = r#try!(Buffer::allocate(r64!(*length) as i64, r32!(*alignment) as i32));
                            refs[*d as usize] = Some(Ref::Buffer(buffer));
                        }
                        Op::BufferClone { source, offset, length, alignment, d } => {
                            let clone = r#try!(r#try!(buffer(refs, *source)).clone_range(
                                r64!(*offset) as i64,
                                r64!(*length) as i64,
                                r32!(*alignment) as i32
                            ));
                            refs[*d as usize] = Some(Ref::Buffer(clone));
                        }
                        Op::BufferLength { buffer: b, d } => w64!(*d, r#try!(buffer(refs, *b)).len() as u64),
                        Op::BufferCopy { source, source_offset, target, target_offset, length } => {
                            r#try!(Buffer::copy(
                                r#try!(buffer(refs, *source)),
                                r64!(*source_offset) as i64,
                                r#try!(buffer(refs, *target)),
                                r64!(*target_offset) as i64,
                                r64!(*length) as i64
                            ))
                        }
                        Op::BufferCompare { lhs, lhs_offset, rhs, rhs_offset, length, d } => {
                            let equal = r#try!(Buffer::compare(
                                r#try!(buffer(refs, *lhs)),
                                r64!(*lhs_offset) as i64,
                                r#try!(buffer(refs, *rhs)),
                                r64!(*rhs_offset) as i64,
                                r64!(*length) as i64
                            ));
                            r32!(*d) = equal as u32;
                        }
                        Op::BufferFill { element, buffer: b, offset, length, value } => {
                            let target = r#try!(buffer(refs, *b));
                            let (offset, length) = (r64!(*offset) as i64, r64!(*length) as i64);
                            r#try!(match element {
                                BufferElement::I8U | BufferElement::I8S =>
                                    target.fill_i8(offset, length, r32!(*value) as i8),
                                BufferElement::I16U | BufferElement::I16S => {
                                    target.fill_i16(offset, length, r32!(*value) as i16)
                                }
                                BufferElement::I32 | BufferElement::F32 =>
                                    target.fill_i32(offset, length, r32!(*value) as i32),
                                BufferElement::I64 | BufferElement::F64 =>
                                    target.fill_i64(offset, length, r64!(*value) as i64),
                            })
                        }
                        Op::BufferLoad { element, buffer: b, offset, d } => {
                            let source = r#try!(buffer(refs, *b));
                            let offset = r64!(*offset) as i64;
                            match element {
                                BufferElement::I8U => r32!(*d) = r#try!(source.load_i8_u(offset)) as u32,
                                BufferElement::I8S => r32!(*d) = r#try!(source.load_i8_s(offset)) as u32,
                                BufferElement::I16U => r32!(*d) = r#try!(source.load_i16_u(offset)) as u32,
                                BufferElement::I16S => r32!(*d) = r#try!(source.load_i16_s(offset)) as u32,
                                BufferElement::I32 | BufferElement::F32 => {
                                    r32!(*d) = r#try!(source.load_i32(offset)) as u32
                                }
                                BufferElement::I64 | BufferElement::F64 => {
                                    w64!(*d, r#try!(source.load_i64(offset)) as u64)
                                }
                            }
                        }
                        Op::BufferStore { element, buffer: b, offset, value } => {
                            let target = r#try!(buffer(refs, *b));
                            let offset = r64!(*offset) as i64;
                            r#try!(match element {
                                BufferElement::I8U | BufferElement::I8S => target.store_i8(offset, r32!(*value) as i8),
                                BufferElement::I16U | BufferElement::I16S =>
                                    target.store_i16(offset, r32!(*value) as i16),
                                BufferElement::I32 | BufferElement::F32 =>
                                    target.store_i32(offset, r32!(*value) as i32),
                                BufferElement::I64 | BufferElement::F64 =>
                                    target.store_i64(offset, r64!(*value) as i64),
                            })
                        }
                        Op::BufferHash { buffer: b, offset, length, d } => {
                            let hash =
                                r#try!(r#try!(buffer(refs, *b)).hash(r64!(*offset) as i64, r64!(*length) as i64));
                            w64!(*d, hash as u64);
                        }

                        Op::ListAlloc { element_type, capacity, d } => {
                            let name = module.types().get(*element_type as usize).map_or("?", |t| t.full_name.as_str());
                            let element = r#try!(ListElementType::from_type_name(name));
                            let new = r#try!(List::new(element, r32!(*capacity) as i32));
                            refs[*d as usize] = Some(Ref::List(new));
                        }
                        Op::ListReserve { list: l, capacity } => {
                            r#try!(r#try!(list(refs, *l)).reserve(r32!(*capacity) as i32))
                        }
                        Op::ListSize { list: l, d } => r32!(*d) = r#try!(list(refs, *l)).size() as u32,
                        Op::ListResize { list: l, size } => r#try!(r#try!(list(refs, *l)).resize(r32!(*size) as i32)),
                        Op::ListGet { kind, list: l, index, d } => {
                            let l = r#try!(list(refs, *l));
                            let index = r32!(*index) as i32;
                            match kind {
                                ValueKind::I32 => r32!(*d) = r#try!(l.get_i32(index)) as u32,
                                ValueKind::F32 => r32!(*d) = r#try!(l.get_f32(index)).to_bits(),
                                ValueKind::I64 => w64!(*d, r#try!(l.get_i64(index)) as u64),
                                ValueKind::F64 | ValueKind::Ref => w64!(*d, r#try!(l.get_f64(index)).to_bits()),
                            }
                        }
                        Op::ListSet { kind, list: l, index, value } => {
                            let l = r#try!(list(refs, *l));
                            let index = r32!(*index) as i32;
                            r#try!(match kind {
                                ValueKind::I32 => l.set_i32(index, r32!(*value) as i32),
                                ValueKind::F32 => l.set_f32(index, f32::from_bits(r32!(*value))),
                                ValueKind::I64 => l.set_i64(index, r64!(*value) as i64),
                                ValueKind::F64 | ValueKind::Ref => l.set_f64(index, f64::from_bits(r64!(*value))),
                            })
                        }
                        Op::ListGetRef { list: l, index, check, d } => {
                            let value = r#try!(r#try!(list(refs, *l)).get_ref(r32!(*index) as i32));
                            // IREE puts null in the register on a type mismatch rather than failing.
                            refs[d.reg as usize] = value.filter(|v| check.admits(v));
                        }
                        Op::ListSetRef { list: l, index, value } => {
                            let v = take_or_clone(refs, *value);
                            r#try!(r#try!(list(refs, *l)).set_ref(r32!(*index) as i32, v));
                        }

                        Op::Br(target) | Op::Yield(target) => jump!(target),
                        Op::CondBr { c, t, f } => {
                            if r32!(*c) != 0 {
                                jump!(t)
                            } else {
                                jump!(f)
                            }
                        }
                        Op::CondBrLtI32S { a, b, d, t, e } => {
                            let c = scalar::cmp_lt_i32_s(r32!(*a), r32!(*b));
                            r32!(*d) = c;
                            if c != 0 {
                                jump!(t)
                            } else {
                                jump!(e)
                            }
                        }
                        Op::CondBrLtI64S { a, b, d, t, e } => {
                            let c = scalar::cmp_lt_i64_s(r64!(*a), r64!(*b));
                            r32!(*d) = c;
                            if c != 0 {
                                jump!(t)
                            } else {
                                jump!(e)
                            }
                        }
                        Op::CondBrCmp32 { f, a, b, d, t, e } => {
                            let c = f(r32!(*a), r32!(*b));
                            r32!(*d) = c;
                            if c != 0 {
                                jump!(t)
                            } else {
                                jump!(e)
                            }
                        }
                        Op::CondBrCmp64 { f, a, b, d, t, e } => {
                            let c = f(r64!(*a), r64!(*b));
                            r32!(*d) = c;
                            if c != 0 {
                                jump!(t)
                            } else {
                                jump!(e)
                            }
                        }
                        Op::BrTable { index, default, cases } => {
                            let i = r32!(*index) as i32;
                            if i >= 0 && (i as usize) < cases.len() {
                                jump!(&cases[i as usize])
                            } else {
                                jump!(default)
                            }
                        }
                        Op::Return { .. } => break Transfer::Return,
                        Op::Fail { status, message } => {
                            let code = r32!(*status);
                            if code != 0 {
                                let code = StatusCode::from_u32(code).unwrap_or(StatusCode::Unknown);
                                fail!(error(code, &**message));
                            }
                            // Status 0 continues with the next op, as in IREE; there must be one.
                            if pc + 1 >= ops.len() {
                                fail!(error(StatusCode::Internal, "`vm.fail` with status 0 at the end of a function"));
                            }
                        }
                        Op::ImportResolved { import, d } => {
                            r32!(*d) = imports.get(*import as usize).is_some_and(Option::is_some) as u32
                        }
                        Op::Call(call) => {
                            let target = match call.callee {
                                Callee::Internal(function) => Resolved::Bytecode { instance: frame.instance, function },
                                Callee::Import(import) => match imports.get(import as usize).copied().flatten() {
                                    Some(target) => target,
                                    None => fail!(error(
                                        StatusCode::NotFound,
                                        format!(
                                            "optional import `{}` is not resolved in this context",
                                            module.imported_functions()[import as usize].full_name
                                        )
                                    )),
                                },
                            };
                            match target {
                                Resolved::Bytecode { instance, function } => {
                                    break Transfer::Enter { instance, function }
                                }
                                Resolved::Native { instance, function } => {
                                    let arguments = native_arguments(call, regs, refs);
                                    break Transfer::Native { instance, function, arguments };
                                }
                            }
                        }
                    }
                    pc += 1;
                }
            };
            self.budget = budget;
            self.frames.last_mut().expect("executing").pc = pc as u32;
            match transfer {
                Transfer::Enter { instance, function } => {
                    if self.budget == 0 {
                        let e = error(StatusCode::DeadlineExceeded, "the invocation's branch budget is exhausted");
                        return Err(self.locate(instances, e));
                    }
                    self.budget -= 1;
                    let Op::Call(call) = &ops[pc] else { unreachable!("entered from a call op") };
                    let callee = &bytecode_module(instances, instance)?.functions()[function as usize];
                    if let Err(e) = self.push_frame(instance, function, callee) {
                        return Err(self.locate(instances, e));
                    }
                    let new = *self.frames.last().expect("just pushed");
                    for (source, destination) in call.arguments.iter().zip(callee.arguments.iter()) {
                        self.copy_slot(&frame, *source, &new, *destination);
                    }
                }
                Transfer::Return => {
                    let Op::Return { values } = &ops[pc] else { unreachable!("returned from a return op") };
                    self.frames.pop();
                    let results = match self.frames.last().copied() {
                        None => Some(
                            values.iter().map(|slot| self.read_value(frame.i32_base, frame.ref_base, *slot)).collect(),
                        ),
                        Some(caller) => {
                            let caller_module = bytecode_module(instances, caller.instance)?;
                            let Op::Call(call) =
                                &caller_module.functions()[caller.function as usize].ops[caller.pc as usize]
                            else {
                                unreachable!("a caller frame stops at its call op")
                            };
                            // The caller's registers lie below the callee's: copy straight across.
                            for (source, destination) in values.iter().zip(call.results.iter()) {
                                self.copy_slot(&frame, *source, &caller, *destination);
                            }
                            self.frames.last_mut().expect("caller").pc = call.resume.unwrap_or(caller.pc + 1);
                            None
                        }
                    };
                    self.i32s.truncate(frame.i32_base as usize);
                    self.refs.truncate(frame.ref_base as usize);
                    if let Some(results) = results {
                        return Ok(Step::Done(results));
                    }
                }
                Transfer::Native { instance, function, arguments } => {
                    match call_native(instances, states, (instance, function), &arguments) {
                        Ok(NativeOutcome::Ready(results)) => {
                            self.finish_native_call(instances, (instance, function), results)?
                        }
                        Ok(NativeOutcome::Pending(results)) => {
                            let wait = results.as_untyped().clone();
                            self.pending = Some(Pending { results, native: (instance, function) });
                            return Ok(Step::Wait(wait));
                        }
                        Err(e) => return Err(self.locate(instances, e)),
                    }
                }
            }
        }
    }
}

/// One i32-bank register of the current frame, without a bounds check.
#[inline(always)]
fn register(registers: &mut [u32], ordinal: Reg) -> &mut u32 {
    debug_assert!((ordinal as usize) < registers.len());
    // SAFETY: `registers` is exactly the frame's i32 bank (`i32_register_count` long) and every
    // ordinal an op holds was proved in range at load: the verifier checks each register field
    // against the function's register count (an i64/f64 pair as `n + 1 < count`), and the lowering
    // does the same for call, return and native-call slots it types itself.
    unsafe { registers.get_unchecked_mut(ordinal as usize) }
}

fn ref_eq(a: &Option<Ref>, b: &Option<Ref>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.ptr_eq(b),
        _ => false,
    }
}

fn division_error(lhs: i64, rhs: i64) -> Diagnostic {
    if rhs == 0 {
        error(StatusCode::InvalidArgument, format!("integer division by zero ({lhs} / 0)"))
    } else {
        error(StatusCode::InvalidArgument, format!("integer division overflow ({lhs} / {rhs})"))
    }
}

/// Gathers a native call's arguments: plain values in order, and for each variadic span its
/// tuple count followed by the flattened tuples.
fn native_arguments(call: &CallOp, regs: &mut [u32], refs: &mut [Option<Ref>]) -> Vec<Value> {
    let mut values = Vec::with_capacity(call.arguments.len() + call.segments.len());
    let mut slots = call.arguments.iter();
    let mut read = |slot: &super::op::Slot| match slot.kind {
        ValueKind::I32 => Value::I32(regs[slot.reg as usize] as i32),
        ValueKind::F32 => Value::F32(f32::from_bits(regs[slot.reg as usize])),
        ValueKind::I64 => Value::I64(read64(regs, slot.reg as usize) as i64),
        ValueKind::F64 => Value::F64(f64::from_bits(read64(regs, slot.reg as usize))),
        ValueKind::Ref => Value::Ref(take_or_clone(refs, RefReg { reg: slot.reg, is_move: slot.is_move })),
    };
    if call.segments.is_empty() {
        return slots.map(&mut read).collect();
    }
    for segment in call.segments.iter() {
        match *segment {
            None => values.extend(slots.next().map(&mut read)),
            Some((count, fields)) => {
                values.push(Value::I32(count as i32));
                values.extend(slots.by_ref().take(count as usize * fields as usize).map(&mut read));
            }
        }
    }
    values
}
