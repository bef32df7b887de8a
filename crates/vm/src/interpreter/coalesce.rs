//! Load-time copy coalescing on unconditional branches.
//!
//! The compiler passes a loop-carried value to the loop header as a block argument: the latch
//! computes it into a scratch register and the back edge copies it into the header's register
//! (`%i4 = vm.add.i32 %i3, %i1 ... vm.br ^bb1(%i4->%i3)`). Interpreted, that copy is a store and a
//! load in the carried value's dependency chain every iteration. When the scratch register is
//! dead at the destination and nothing in between touches either register, the defining
//! instruction can write the destination register itself and the branch drops that move.
//!
//! The analysis is local and conservative: it only looks at the straight-line code of the latch
//! block and of the destination block, and gives up on anything it does not model (variadic
//! operand lists, calls, nested terminators, i64 halves).

use std::collections::HashMap;

use crate::bytecode::decode::{DecodedInstruction, DecodedOperand, INT_ORDINAL_MASK};
use crate::bytecode::isa::{Access, InstructionKind, Opcode, OperandKind, RegisterBank};

/// One rewrite: instruction `def` writes `to` instead of the branch `branch` copying into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rewrite {
    def: usize,
    branch: usize,
    /// The operand field of `def` that is the written register.
    field: usize,
    from: u16,
    to: u16,
    /// The instruction of the destination block whose write proved the source register dead.
    kill: usize,
}

/// Rewrites `decoded` (one function, verified) in place.
pub(super) fn coalesce(decoded: &mut [DecodedInstruction<'_>]) {
    let blocks: HashMap<u32, usize> = decoded
        .iter()
        .enumerate()
        .filter(|(_, d)| d.instruction.kind == InstructionKind::BlockMarker)
        .map(|(i, d)| (d.offset as u32, i))
        .collect();
    let mut rewrites: Vec<Rewrite> = (0..decoded.len()).flat_map(|i| candidates(decoded, &blocks, i)).collect();
    // A rewritten instruction no longer writes its old register, so it cannot be the write that
    // proves another rewrite's source dead: drop such rewrites one at a time (dropping one may
    // make its own definition a valid proof for another again).
    while let Some(dependent) =
        rewrites.iter().position(|r| r.kill != r.def && rewrites.iter().any(|other| other.def == r.kill))
    {
        rewrites.remove(dependent);
    }
    for rewrite in rewrites {
        if let DecodedOperand::Register(register) = &mut decoded[rewrite.def].operands[rewrite.field] {
            register.raw = (register.raw & !INT_ORDINAL_MASK) | rewrite.to;
            register.ordinal = rewrite.to;
        }
        for operand in &mut decoded[rewrite.branch].operands {
            if let DecodedOperand::BranchOperands(remaps) = operand {
                remaps.retain(|m| {
                    m.source.bank == RegisterBank::Ref
                        || (m.source.ordinal, m.destination.ordinal) != (rewrite.from, rewrite.to)
                });
            }
        }
    }
}

/// The rewrites for the i32 moves of the `vm.br` at `branch`. A move is considered only when no
/// other move of the branch names either of its registers: the moves run in order, so removing
/// one would otherwise change what the others read or leave behind.
fn candidates(decoded: &[DecodedInstruction<'_>], blocks: &HashMap<u32, usize>, branch: usize) -> Vec<Rewrite> {
    let instruction = &decoded[branch];
    if instruction.opcode() != Opcode::Branch {
        return Vec::new();
    }
    let (target, remaps) = match &instruction.operands[..] {
        [DecodedOperand::BranchTarget(target), DecodedOperand::BranchOperands(remaps)] => (*target, remaps),
        _ => return Vec::new(),
    };
    let ints: Vec<(u16, u16)> = remaps
        .iter()
        .filter(|m| m.source.bank != RegisterBank::Ref)
        .map(|m| (m.source.ordinal, m.destination.ordinal))
        .collect();
    ints.iter()
        .enumerate()
        .filter(|&(i, &(from, to))| {
            from != to
                && ints.iter().enumerate().all(|(j, &(s, d))| i == j || (s != from && s != to && d != from && d != to))
        })
        .filter_map(|(_, &(from, to))| candidate(decoded, blocks, branch, target, from, to))
        .collect()
}

/// The rewrite that makes the definition of `from` before the `vm.br` at `branch` write `to`.
fn candidate(
    decoded: &[DecodedInstruction<'_>],
    blocks: &HashMap<u32, usize>,
    branch: usize,
    target: u32,
    from: u16,
    to: u16,
) -> Option<Rewrite> {
    // Back through the latch block to the instruction that defines `from`; nothing in between may
    // touch either register.
    let mut def = None;
    for index in (0..branch).rev() {
        let access = accesses(&decoded[index])?;
        if access.writes.iter().any(|w| w.covers(from)) {
            match access.writes[..] {
                [Word { first, pair: false }] if first == from => def = Some(index),
                _ => return None,
            }
            break;
        }
        if access.touches(from) || access.touches(to) {
            return None;
        }
    }
    let def = def?;
    let field = decoded[def].operands.iter().zip(decoded[def].instruction.operands).position(|(operand, field)| {
        matches!(
            (operand, field.kind),
            (DecodedOperand::Register(r), OperandKind::Register { access: Access::Write, .. }) if r.bank != RegisterBank::Ref
        )
    })?;
    // `from` must be dead where the branch goes: written before any read in the straight-line
    // start of the destination block.
    let start = *blocks.get(&target)? + 1;
    for (index, instruction) in decoded.iter().enumerate().skip(start) {
        let access = accesses(instruction)?;
        if access.reads.iter().any(|r| r.covers(from)) {
            return None;
        }
        if access.writes.iter().any(|w| w.covers(from)) {
            return Some(Rewrite { def, branch, field, from, to, kill: index });
        }
    }
    None
}

/// An i32 register, or the pair starting at `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word {
    first: u16,
    pair: bool,
}

impl Word {
    fn covers(self, ordinal: u16) -> bool {
        ordinal == self.first || (self.pair && ordinal == self.first + 1)
    }
}

struct Accesses {
    reads: Vec<Word>,
    writes: Vec<Word>,
}

impl Accesses {
    fn touches(&self, ordinal: u16) -> bool {
        self.reads.iter().chain(&self.writes).any(|w| w.covers(ordinal))
    }
}

/// The i32-bank registers a plain instruction reads and writes, or `None` for a block marker, a
/// branch, or an instruction with operand lists (calls, returns, remaps), which the analysis
/// does not follow.
fn accesses(instruction: &DecodedInstruction<'_>) -> Option<Accesses> {
    if instruction.instruction.kind != InstructionKind::Operation
        || instruction.operands.len() != instruction.instruction.operands.len()
    {
        return None;
    }
    let mut access = Accesses { reads: Vec::new(), writes: Vec::new() };
    for (operand, field) in instruction.operands.iter().zip(instruction.instruction.operands) {
        match (operand, field.kind) {
            (DecodedOperand::Register(register), OperandKind::Register { access: a, .. }) => {
                if register.bank == RegisterBank::Ref {
                    continue;
                }
                let word = Word { first: register.ordinal, pair: register.is_pair() };
                match a {
                    Access::Read => access.reads.push(word),
                    Access::Write => access.writes.push(word),
                }
            }
            (
                DecodedOperand::Registers(_)
                | DecodedOperand::BranchOperands(_)
                | DecodedOperand::BranchTableCases(_)
                | DecodedOperand::BranchTarget(_)
                | DecodedOperand::SegmentSizes(_),
                _,
            ) => return None,
            _ => {}
        }
    }
    Some(access)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytecode::decode::{Register, RegisterRemap};
    use crate::bytecode::isa::find_by_name;

    /// Builds a function: `None` is a block marker, `Some((name, operands))` an instruction.
    fn function(items: Vec<Option<(&str, Vec<DecodedOperand<'static>>)>>) -> Vec<DecodedInstruction<'static>> {
        let marker = crate::bytecode::isa::instructions()
            .iter()
            .find(|i| i.kind == InstructionKind::BlockMarker)
            .expect("the table has the block marker");
        items
            .into_iter()
            .enumerate()
            .map(|(offset, item)| match item {
                None => DecodedInstruction { offset, length: 1, instruction: marker, operands: Vec::new() },
                Some((name, operands)) => DecodedInstruction {
                    offset,
                    length: 1,
                    instruction: find_by_name(name).expect("known instruction"),
                    operands,
                },
            })
            .collect()
    }

    fn r(ordinal: u16) -> DecodedOperand<'static> {
        DecodedOperand::Register(Register::with_bank(ordinal, RegisterBank::I32))
    }

    fn pair(ordinal: u16) -> DecodedOperand<'static> {
        DecodedOperand::Register(Register::with_bank(ordinal, RegisterBank::I64))
    }

    fn add(a: u16, b: u16, d: u16) -> Option<(&'static str, Vec<DecodedOperand<'static>>)> {
        Some(("vm.add.i32", vec![r(a), r(b), r(d)]))
    }

    fn br(target: u32, moves: &[(u16, u16)]) -> Option<(&'static str, Vec<DecodedOperand<'static>>)> {
        let remaps = moves
            .iter()
            .map(|&(s, d)| RegisterRemap { source: Register::from_any(s), destination: Register::from_any(d) })
            .collect();
        Some(("vm.br", vec![DecodedOperand::BranchTarget(target), DecodedOperand::BranchOperands(remaps)]))
    }

    fn written(instruction: &DecodedInstruction<'_>) -> u16 {
        match instruction.operands[2] {
            DecodedOperand::Register(register) => register.ordinal,
            _ => unreachable!(),
        }
    }

    fn moves(instruction: &DecodedInstruction<'_>) -> usize {
        match &instruction.operands[1] {
            DecodedOperand::BranchOperands(remaps) => remaps.len(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_loop_latch_writes_the_header_register() {
        // ^bb0 (offset 0): %i4 = add %i3, %i1 ; %i1 = add %i1, %i2 ; br ^bb0(%i4->%i3)
        // where ^bb0 first overwrites %i4, so %i4 is dead on entry.
        let mut f = function(vec![None, add(1, 0, 4), add(3, 1, 4), add(1, 2, 1), br(0, &[(4, 3)])]);
        coalesce(&mut f);
        assert_eq!(written(&f[2]), 3);
        assert_eq!(moves(&f[4]), 0);
        assert_eq!(written(&f[1]), 4, "other instructions keep their registers");
    }

    #[test]
    fn a_source_read_at_the_destination_is_kept() {
        // ^bb0 reads %i4 before writing it: the old value must arrive.
        let mut f = function(vec![None, add(4, 0, 5), add(3, 1, 4), br(0, &[(4, 3)])]);
        let original = f.clone();
        coalesce(&mut f);
        assert_eq!(f, original);
    }

    #[test]
    fn a_use_between_the_definition_and_the_branch_is_kept() {
        for between in [add(3, 0, 5), add(4, 0, 5), add(0, 0, 3), add(5, 5, 3)] {
            let mut f = function(vec![None, add(0, 0, 4), add(3, 1, 4), between, br(0, &[(4, 3)])]);
            let original = f.clone();
            coalesce(&mut f);
            assert_eq!(f, original);
        }
    }

    #[test]
    fn unknown_liveness_at_the_destination_is_kept() {
        // ^bb0 (offset 0) falls off into a block marker without writing %i4 first.
        let mut f = function(vec![None, add(0, 0, 5), None, add(3, 1, 4), br(0, &[(4, 3)])]);
        let original = f.clone();
        coalesce(&mut f);
        assert_eq!(f, original);
    }

    #[test]
    fn a_pair_definition_or_dependent_moves_are_kept() {
        let wide = Some(("vm.add.i64", vec![pair(4), pair(4), pair(4)]));
        let mut f = function(vec![None, add(0, 0, 4), wide, br(0, &[(4, 3)])]);
        let original = f.clone();
        coalesce(&mut f);
        assert_eq!(f, original);
        // Moves that name each other's registers (a swap) run in order and stay.
        let mut f = function(vec![None, add(0, 0, 4), add(0, 0, 3), add(3, 1, 4), br(0, &[(4, 3), (3, 4)])]);
        let original = f.clone();
        coalesce(&mut f);
        assert_eq!(f, original);
    }

    #[test]
    fn independent_moves_of_one_branch_are_each_coalesced() {
        let mut f = function(vec![None, add(0, 0, 4), add(0, 0, 5), add(3, 1, 4), br(0, &[(4, 3), (5, 6)])]);
        coalesce(&mut f);
        assert_eq!((written(&f[2]), written(&f[3])), (6, 3));
        assert_eq!(moves(&f[4]), 0);
    }

    #[test]
    fn a_rewrite_does_not_rely_on_a_write_another_rewrite_removes() {
        // ^bb0 (0): %i4 = add ... ; br ^bb1(%i4->%i3)   -- proven by ^bb1's write of %i4...
        // ^bb1 (3): %i4 = add %i0, %i0 ; br ^bb0(%i4->%i6) -- ...which its own rewrite removes.
        // ^bb0 writes %i4 first, so ^bb1's rewrite stands and ^bb0's must not.
        let mut f = function(vec![None, add(0, 0, 4), br(3, &[(4, 3)]), None, add(0, 0, 4), br(0, &[(4, 6)])]);
        coalesce(&mut f);
        assert_eq!(written(&f[4]), 6);
        assert_eq!(moves(&f[5]), 0);
        assert_eq!(written(&f[1]), 4);
        assert_eq!(moves(&f[2]), 1);
    }
}
