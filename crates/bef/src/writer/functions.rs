//! Function bodies (TFRT's `BEFFunctionEmitter`). A body is its location, the register table
//! (block arguments, then every op result, each with its use count), the kernel table (each
//! kernel's offset, operand count and stream id, the pseudo kernel first), the registers the
//! `tfrt.return` returns, padding to 4, then the kernel records as little-endian `u32`s.
//!
//! A kernel record is `code location #args #attributes #functions #results`, a user count per
//! result, then the argument registers, attribute offsets, function indices (symbol references
//! in attribute order, then regions), result registers, and the users of each result. The pseudo
//! kernel's results are a register past the last (used by every op without operands) and the
//! block arguments.

use std::collections::HashMap;

use super::emitter::Emitter;
use super::entities::{Entities, KernelAttribute};
use super::error::WriteError;
use super::locations::LocationWriter;
use super::program::{Program, RETURN};
use super::streams;
use super::uses::Uses;
use crate::format::{PSEUDO_KERNEL_CODE, PSEUDO_KERNEL_LOCATION};
use rtx_mlir::ir::{BlockId, OpId, ValueId};

/// The functions section and the optional sections written alongside it.
pub(super) struct FunctionWriter<'a, 'm> {
    pub(super) program: &'a Program<'m>,
    pub(super) entities: &'a Entities<'m>,
    pub(super) string_offsets: &'a HashMap<&'a [u8], usize>,
    /// Each attribute's offset, as [`Entities::attributes`] orders them.
    pub(super) attribute_offsets: &'a [usize],
    pub(super) locations: &'a mut LocationWriter,
    pub(super) body: Emitter,
    pub(super) attribute_names: Option<Emitter>,
    pub(super) register_types: Option<Emitter>,
}

/// What one function's kernels refer to while they are written.
struct Frame {
    registers: HashMap<ValueId, usize>,
    kernels: HashMap<OpId, u32>,
    uses: Uses,
}

impl Frame {
    /// Writes the count of `users` (a return op uses without being a kernel) into `list` and
    /// their kernel indices into `body`.
    fn users(&self, program: &Program<'_>, users: &[OpId], list: &mut Emitter, body: &mut Emitter) {
        let mut count = 0;
        for &user in users {
            if !program.is(user, RETURN) {
                count += 1;
                body.u32(self.kernels[&user]);
            }
        }
        list.u32(count);
    }
}

impl FunctionWriter<'_, '_> {
    /// Writes the body in `block`, owned by `owner` (a `func.func` or a kernel with regions).
    pub(super) fn function(&mut self, block: BlockId, owner: OpId) -> Result<(), WriteError> {
        let program = self.program;
        let m = program.module;
        let location = self.locations.op_location(&m.context, m.op(owner).loc);
        self.body.vbr(location as usize);

        let ops = &m.block(block).ops;
        let values: Vec<ValueId> = m.arguments(block).chain(ops.iter().flat_map(|&op| m.results(op))).collect();
        let uses = Uses::of_block(m, block);
        self.body.vbr(values.len());
        for &value in &values {
            self.body.vbr(uses.users(value).len());
        }
        if let Some(types) = &mut self.register_types {
            types.vbr(values.len());
            for &value in &values {
                types.vbr(self.entities.type_id(program, m.value(value).ty) as usize);
            }
        }
        let kernel_ops: Vec<OpId> = ops.iter().copied().filter(|&op| !program.is(op, RETURN)).collect();
        let frame = Frame {
            registers: values.iter().enumerate().map(|(i, &v)| (v, i)).collect(),
            kernels: kernel_ops.iter().enumerate().map(|(i, &op)| (op, i as u32 + 1)).collect(),
            uses,
        };
        self.body.vbr(kernel_ops.len() + 1);
        if let Some(names) = &mut self.attribute_names {
            names.vbr(kernel_ops.len() + 1);
        }
        let streams = streams::analyze(program, block).map_err(|bad| WriteError::BadCost(program.site(bad.0)))?;

        let mut kernels = Emitter::new();
        self.body.vbr(0);
        self.body.vbr(0);
        self.body.vbr(streams.root);
        self.pseudo_kernel(&frame, block, values.len(), &mut kernels);
        let mut returned = None;
        for (&op, &stream) in ops.iter().zip(&streams.ops) {
            if program.is(op, RETURN) {
                returned = Some(op);
                continue;
            }
            self.body.vbr(kernels.len());
            self.body.vbr(m.operands(op).len());
            self.body.vbr(stream);
            self.kernel(&frame, op, &mut kernels);
        }
        if let Some(op) = returned {
            for operand in m.operands(op) {
                self.body.vbr(frame.registers[operand]);
            }
        }
        self.body.align(4);
        self.body.append(&kernels);
        Ok(())
    }

    fn pseudo_kernel(&self, frame: &Frame, block: BlockId, registers: usize, kernels: &mut Emitter) {
        let program = self.program;
        let m = program.module;
        let arguments: Vec<ValueId> = m.arguments(block).collect();
        for word in [PSEUDO_KERNEL_CODE, PSEUDO_KERNEL_LOCATION, 0, 0, 0, arguments.len() as u32 + 1] {
            kernels.u32(word);
        }
        let mut body = Emitter::new();
        body.u32(registers as u32);
        for argument in &arguments {
            body.u32(frame.registers[argument] as u32);
        }
        let ready: Vec<OpId> = m.block(block).ops.iter().copied().filter(|&op| m.operands(op).is_empty()).collect();
        frame.users(program, &ready, kernels, &mut body);
        for &argument in &arguments {
            frame.users(program, frame.uses.users(argument), kernels, &mut body);
        }
        kernels.append(&body);
    }

    fn kernel(&mut self, frame: &Frame, op: OpId, kernels: &mut Emitter) {
        let program = self.program;
        let m = program.module;
        let entities = self.entities;
        kernels.u32(entities.kernel_id(m.context.str_bytes(m.context.op_name(m.op(op).name).full)));
        kernels.u32(self.locations.op_location(&m.context, m.op(op).loc));
        let mut body = Emitter::new();
        kernels.u32(m.operands(op).len() as u32);
        for operand in m.operands(op) {
            body.u32(frame.registers[operand] as u32);
        }
        let (mut functions, mut attributes) = (Emitter::new(), Emitter::new());
        let (mut function_count, mut attribute_count) = (0, 0);
        for operand in &entities.kernel_attributes[&op] {
            match operand {
                KernelAttribute::Functions(names) => {
                    for name in names {
                        functions.u32(entities.named_function(name));
                        function_count += 1;
                    }
                }
                KernelAttribute::Attribute { name, index } => {
                    if let Some(names) = &mut self.attribute_names {
                        names.vbr(self.string_offsets[name]);
                    }
                    attributes.u32(self.attribute_offsets[*index] as u32);
                    attribute_count += 1;
                }
            }
        }
        kernels.u32(attribute_count);
        body.append(&attributes);
        for &region in m.op_regions(op) {
            functions.u32(entities.region_function(region));
            function_count += 1;
        }
        kernels.u32(function_count);
        body.append(&functions);
        kernels.u32(m.results(op).len() as u32);
        for result in m.results(op) {
            body.u32(frame.registers[&result] as u32);
        }
        for result in m.results(op) {
            frame.users(program, frame.uses.users(result), kernels, &mut body);
        }
        kernels.align(4);
        kernels.append(&body);
    }
}
