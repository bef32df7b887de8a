//! The x86-64 instructions the loop compiler emits, encoded by hand.
//!
//! Almost every memory operand is a VM register: `[rdi + 4 * ordinal]`, with `rdi` holding the
//! frame's i32 bank and `rsi` the invocation's remaining budget. Scratch values use `rax`, `rcx`,
//! `rdx` and `xmm0` (caller-saved in the System V ABI, so the code needs no prologue); those low
//! eight general registers need no REX prefix except for 64-bit width. Calls between compiled
//! functions also use three of the high registers ([`Ext`]: the register stack's top and limit,
//! the depth left), and buffer accesses a fourth (the table of the frame's buffers), through the
//! few instructions that take them. Encodings: Intel SDM vol. 2
//! (opcode, ModRM `mod=01/10, rm=111` for `[rdi + disp]`, `/digit` extensions).

/// A general register (its ModRM number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Gpr {
    Rax = 0,
    Rcx = 1,
    Rdx = 2,
    Rsi = 6,
    Rdi = 7,
}

/// A high general register (its ModRM number less 8: REX.B or REX.R supplies the top bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Ext {
    R8 = 0,
    R9 = 1,
    R10 = 2,
    R11 = 3,
}

/// How an element is read from memory into a general register: the loads of `vm.buffer.load.*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    U8,
    S8,
    U16,
    S16,
    /// 32 bits (i32 and f32).
    W32,
    /// 64 bits (i64 and f64).
    W64,
}

impl Element {
    /// log2 of the size in bytes: the SIB scale, and the shift from a byte count to elements.
    pub fn shift(self) -> u8 {
        match self {
            Element::U8 | Element::S8 => 0,
            Element::U16 | Element::S16 => 1,
            Element::W32 => 2,
            Element::W64 => 3,
        }
    }
}

/// Operand size of an integer instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    W32,
    W64,
}

/// Condition codes (the low nibble of `jcc`, `setcc`, `cmovcc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cond {
    B = 0x2,
    Ae = 0x3,
    E = 0x4,
    Ne = 0x5,
    Be = 0x6,
    A = 0x7,
    S = 0x8,
    Ns = 0x9,
    P = 0xA,
    Np = 0xB,
    L = 0xC,
    G = 0xF,
}

/// Two-operand integer instructions with a register destination and a memory source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alu {
    Add,
    Sub,
    And,
    Or,
    Xor,
    Cmp,
}

impl Alu {
    fn opcode(self) -> u8 {
        match self {
            Alu::Add => 0x03,
            Alu::Or => 0x0B,
            Alu::And => 0x23,
            Alu::Sub => 0x2B,
            Alu::Xor => 0x33,
            Alu::Cmp => 0x3B,
        }
    }

    /// The `/digit` of the immediate form (`81 /digit id`).
    fn digit(self) -> u8 {
        match self {
            Alu::Add => 0,
            Alu::Or => 1,
            Alu::And => 4,
            Alu::Sub => 5,
            Alu::Xor => 6,
            Alu::Cmp => 7,
        }
    }
}

/// Shifts by `cl` (`D3 /digit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shift {
    Shl = 4,
    Shr = 5,
    Sar = 7,
}

/// Scalar SSE operations on `xmm0` with a memory source (`F3`/`F2 0F op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Sse {
    Load = 0x10,
    Add = 0x58,
    Mul = 0x59,
    Sub = 0x5C,
    Min = 0x5D,
    Div = 0x5E,
    Max = 0x5F,
}

/// A jump destination; bound to a code offset once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label(usize);

/// A point to roll the assembler back to (the code of an instruction it could not finish).
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    code: usize,
    labels: usize,
    fixups: usize,
}

#[derive(Default)]
pub struct Assembler {
    code: Vec<u8>,
    labels: Vec<Option<usize>>,
    /// (offset of a rel32 field, its label).
    fixups: Vec<(usize, Label)>,
}

impl Assembler {
    pub fn offset(&self) -> usize {
        self.code.len()
    }

    pub fn mark(&self) -> Mark {
        Mark { code: self.code.len(), labels: self.labels.len(), fixups: self.fixups.len() }
    }

    /// Forgets everything emitted and every label made since `mark`.
    pub fn rollback(&mut self, mark: Mark) {
        self.code.truncate(mark.code);
        self.labels.truncate(mark.labels);
        self.fixups.truncate(mark.fixups);
        for label in &mut self.labels {
            if label.is_some_and(|at| at > mark.code) {
                *label = None;
            }
        }
    }

    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    pub fn bind(&mut self, label: Label) {
        debug_assert!(self.labels[label.0].is_none(), "label bound twice");
        self.labels[label.0] = Some(self.code.len());
    }

    /// The code with every jump resolved; `None` if a jump names a label never bound or the code
    /// outgrew rel32 reach.
    pub fn finish(mut self) -> Option<Vec<u8>> {
        for &(at, label) in &self.fixups {
            let target = self.labels[label.0]?;
            let rel = i32::try_from(target as i64 - (at as i64 + 4)).ok()?;
            self.code[at..at + 4].copy_from_slice(&rel.to_le_bytes());
        }
        Some(self.code)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.code.extend_from_slice(bytes);
    }

    fn rex_w(&mut self, width: Width) {
        if width == Width::W64 {
            self.code.push(0x48);
        }
    }

    /// ModRM (+ disp) for `[rdi + 4 * slot]` with `reg` in the reg field.
    fn slot(&mut self, reg: u8, slot: u16) {
        let disp = u32::from(slot) * 4;
        if disp < 0x80 {
            self.bytes(&[0x40 | reg << 3 | 7, disp as u8]);
        } else {
            self.code.push(0x80 | reg << 3 | 7);
            self.bytes(&disp.to_le_bytes());
        }
    }

    /// ModRM for a register-direct operand.
    fn direct(&mut self, reg: u8, rm: u8) {
        self.code.push(0xC0 | reg << 3 | rm);
    }

    /// `mov r, [slot]`
    pub fn load(&mut self, width: Width, r: Gpr, slot: u16) {
        self.rex_w(width);
        self.code.push(0x8B);
        self.slot(r as u8, slot);
    }

    /// `mov [slot], r`
    pub fn store(&mut self, width: Width, slot: u16, r: Gpr) {
        self.rex_w(width);
        self.code.push(0x89);
        self.slot(r as u8, slot);
    }

    /// `op r, [slot]`
    pub fn alu(&mut self, op: Alu, width: Width, r: Gpr, slot: u16) {
        self.rex_w(width);
        self.code.push(op.opcode());
        self.slot(r as u8, slot);
    }

    /// `op r, imm32` (sign-extended to 64 bits for `W64`).
    pub fn alu_imm(&mut self, op: Alu, width: Width, r: Gpr, imm: i32) {
        self.rex_w(width);
        self.code.push(0x81);
        self.direct(op.digit(), r as u8);
        self.bytes(&imm.to_le_bytes());
    }

    /// `cmp [slot], imm8` (sign-extended).
    pub fn cmp_slot_imm(&mut self, width: Width, slot: u16, imm: i8) {
        self.rex_w(width);
        self.code.push(0x83);
        self.slot(Alu::Cmp.digit(), slot);
        self.code.push(imm as u8);
    }

    /// `imul r, [slot]`
    pub fn imul(&mut self, width: Width, r: Gpr, slot: u16) {
        self.rex_w(width);
        self.bytes(&[0x0F, 0xAF]);
        self.slot(r as u8, slot);
    }

    /// `mov dword [slot], imm32`
    pub fn store_imm32(&mut self, slot: u16, imm: u32) {
        self.code.push(0xC7);
        self.slot(0, slot);
        self.bytes(&imm.to_le_bytes());
    }

    /// `mov r64, imm64`
    pub fn mov_imm64(&mut self, r: Gpr, imm: u64) {
        self.bytes(&[0x48, 0xB8 + r as u8]);
        self.bytes(&imm.to_le_bytes());
    }

    /// `mov eax, imm32` (zero-extended).
    pub fn mov_imm32(&mut self, r: Gpr, imm: u32) {
        self.code.push(0xB8 + r as u8);
        self.bytes(&imm.to_le_bytes());
    }

    /// `mov dst, src`
    pub fn mov(&mut self, width: Width, dst: Gpr, src: Gpr) {
        self.rex_w(width);
        self.code.push(0x8B);
        self.direct(dst as u8, src as u8);
    }

    /// `setcc r8; movzx r32, r8` (r is rax, rcx or rdx: their low bytes need no REX).
    pub fn set(&mut self, cond: Cond, r: Gpr) {
        self.bytes(&[0x0F, 0x90 | cond as u8]);
        self.direct(0, r as u8);
        self.bytes(&[0x0F, 0xB6]);
        self.direct(r as u8, r as u8);
    }

    /// `cmovcc r, [slot]`
    pub fn cmov(&mut self, cond: Cond, width: Width, r: Gpr, slot: u16) {
        self.rex_w(width);
        self.bytes(&[0x0F, 0x40 | cond as u8]);
        self.slot(r as u8, slot);
    }

    /// `cmovcc dst, src`
    pub fn cmov_reg(&mut self, cond: Cond, width: Width, dst: Gpr, src: Gpr) {
        self.rex_w(width);
        self.bytes(&[0x0F, 0x40 | cond as u8]);
        self.direct(dst as u8, src as u8);
    }

    /// `and dst, src` / `or dst, src` on the low 32 bits.
    pub fn and_reg(&mut self, dst: Gpr, src: Gpr) {
        self.code.push(0x23);
        self.direct(dst as u8, src as u8);
    }

    pub fn or_reg(&mut self, dst: Gpr, src: Gpr) {
        self.code.push(0x0B);
        self.direct(dst as u8, src as u8);
    }

    /// `test r32, r32`
    pub fn test(&mut self, r: Gpr) {
        self.code.push(0x85);
        self.direct(r as u8, r as u8);
    }

    /// `shl/shr/sar r, cl`
    pub fn shift(&mut self, op: Shift, width: Width, r: Gpr) {
        self.rex_w(width);
        self.code.push(0xD3);
        self.direct(op as u8, r as u8);
    }

    /// `not r`
    pub fn not(&mut self, width: Width, r: Gpr) {
        self.rex_w(width);
        self.code.push(0xF7);
        self.direct(2, r as u8);
    }

    /// `neg r`
    pub fn neg(&mut self, width: Width, r: Gpr) {
        self.rex_w(width);
        self.code.push(0xF7);
        self.direct(3, r as u8);
    }

    /// `xor r32, r32` (clears the whole register).
    pub fn zero(&mut self, r: Gpr) {
        self.code.push(0x31);
        self.direct(r as u8, r as u8);
    }

    /// `cdq`/`cqo` before a signed division, or `xor edx, edx` before an unsigned one.
    pub fn extend_dividend(&mut self, width: Width, signed: bool) {
        if signed {
            self.rex_w(width);
            self.code.push(0x99);
        } else {
            self.zero(Gpr::Rdx);
        }
    }

    /// `idiv/div [slot]`: quotient in rax, remainder in rdx.
    pub fn divide(&mut self, width: Width, signed: bool, slot: u16) {
        self.rex_w(width);
        self.code.push(0xF7);
        self.slot(if signed { 7 } else { 6 }, slot);
    }

    /// `movsx/movzx r32, byte/word [slot]`.
    pub fn load_extended(&mut self, bits: u8, signed: bool, r: Gpr, slot: u16) {
        let opcode = match (bits, signed) {
            (8, false) => 0xB6,
            (8, true) => 0xBE,
            (16, false) => 0xB7,
            _ => 0xBF,
        };
        self.bytes(&[0x0F, opcode]);
        self.slot(r as u8, slot);
    }

    /// `movsxd r64, dword [slot]`
    pub fn load_sign_extended32(&mut self, r: Gpr, slot: u16) {
        self.code.push(0x48);
        self.code.push(0x63);
        self.slot(r as u8, slot);
    }

    fn sse_prefix(&mut self, width: Width) {
        self.code.push(if width == Width::W32 { 0xF3 } else { 0xF2 });
    }

    /// `op{ss,sd} xmm0, [slot]` (`Load` is `movss/movsd xmm0, [slot]`).
    pub fn sse(&mut self, op: Sse, width: Width, slot: u16) {
        self.sse_prefix(width);
        self.bytes(&[0x0F, op as u8]);
        self.slot(0, slot);
    }

    /// `movss/movsd [slot], xmm0`
    pub fn sse_store(&mut self, width: Width, slot: u16) {
        self.sse_prefix(width);
        self.bytes(&[0x0F, 0x11]);
        self.slot(0, slot);
    }

    /// `ucomiss/ucomisd xmm0, [slot]`
    pub fn ucomi(&mut self, width: Width, slot: u16) {
        if width == Width::W64 {
            self.code.push(0x66);
        }
        self.bytes(&[0x0F, 0x2E]);
        self.slot(0, slot);
    }

    /// `xorps xmm0, xmm0`: the conversions below write only the low lane of `xmm0`, so without
    /// this each would wait for whatever last wrote it (a dependency carried around a loop).
    fn clear_xmm0(&mut self) {
        self.bytes(&[0x0F, 0x57, 0xC0]);
    }

    /// `cvtsi2ss/cvtsi2sd xmm0, r/m` (`float` W32/W64) from a 32-bit slot, or from a 64-bit one
    /// (`source` W64), after clearing `xmm0`.
    pub fn int_to_float(&mut self, float: Width, source: Width, slot: u16) {
        self.clear_xmm0();
        self.sse_prefix(float);
        self.rex_w(source);
        self.bytes(&[0x0F, 0x2A]);
        self.slot(0, slot);
    }

    /// `cvtsi2ss/cvtsi2sd xmm0, r64`, after clearing `xmm0`.
    pub fn int_to_float_reg(&mut self, float: Width, r: Gpr) {
        self.clear_xmm0();
        self.sse_prefix(float);
        self.bytes(&[0x48, 0x0F, 0x2A]);
        self.direct(0, r as u8);
    }

    pub fn jump(&mut self, label: Label) {
        self.code.push(0xE9);
        self.rel32(label);
    }

    pub fn jump_if(&mut self, cond: Cond, label: Label) {
        self.bytes(&[0x0F, 0x80 | cond as u8]);
        self.rel32(label);
    }

    fn rel32(&mut self, label: Label) {
        self.fixups.push((self.code.len(), label));
        self.bytes(&[0; 4]);
    }

    pub fn ret(&mut self) {
        self.code.push(0xC3);
    }

    /// `call rel32` to code outside this assembler's: returns the offset of the rel32 field,
    /// which the linker fills in.
    pub fn call_external(&mut self) -> usize {
        self.code.push(0xE8);
        let at = self.code.len();
        self.bytes(&[0; 4]);
        at
    }

    pub fn push(&mut self, r: Gpr) {
        self.code.push(0x50 + r as u8);
    }

    pub fn pop(&mut self, r: Gpr) {
        self.code.push(0x58 + r as u8);
    }

    /// `test r64, r64`
    pub fn test64(&mut self, r: Gpr) {
        self.code.push(0x48);
        self.test(r);
    }

    /// `mov dst, src` (64-bit) from a low register into a high one.
    pub fn mov_to_ext(&mut self, dst: Ext, src: Gpr) {
        self.bytes(&[0x49, 0x89]);
        self.direct(src as u8, dst as u8);
    }

    /// `mov dst, src` (64-bit) from a high register into a low one.
    pub fn mov_from_ext(&mut self, dst: Gpr, src: Ext) {
        self.bytes(&[0x4C, 0x89]);
        self.direct(src as u8, dst as u8);
    }

    /// `mov dst, src` (64-bit) between high registers.
    pub fn mov_ext(&mut self, dst: Ext, src: Ext) {
        self.bytes(&[0x4D, 0x89]);
        self.direct(src as u8, dst as u8);
    }

    /// `add/sub/cmp r, imm32` on a high register (64-bit).
    pub fn ext_imm(&mut self, op: Alu, r: Ext, imm: i32) {
        self.bytes(&[0x49, 0x81]);
        self.direct(op.digit(), r as u8);
        self.bytes(&imm.to_le_bytes());
    }

    /// `cmp r, ext` (64-bit): flags of `r - ext`.
    pub fn cmp_ext(&mut self, r: Gpr, ext: Ext) {
        self.bytes(&[0x4C, 0x39]);
        self.direct(ext as u8, r as u8);
    }

    /// REX and opcode, then ModRM + disp32 for `[base + disp]` with `reg` in the reg field.
    fn at_ext(&mut self, width: Width, opcode: u8, reg: u8, base: Ext, disp: u32) {
        self.bytes(&[if width == Width::W64 { 0x49 } else { 0x41 }, opcode]);
        self.code.push(0x80 | reg << 3 | base as u8);
        self.bytes(&disp.to_le_bytes());
    }

    /// `mov r, [base + disp]`
    pub fn load_ext(&mut self, width: Width, r: Gpr, base: Ext, disp: u32) {
        self.at_ext(width, 0x8B, r as u8, base, disp);
    }

    /// `mov [base + disp], r`
    pub fn store_ext(&mut self, width: Width, base: Ext, disp: u32, r: Gpr) {
        self.at_ext(width, 0x89, r as u8, base, disp);
    }

    /// `mov qword [base + disp], 0`
    pub fn zero_ext(&mut self, base: Ext, disp: u32) {
        self.at_ext(Width::W64, 0xC7, 0, base, disp);
        self.bytes(&[0; 4]);
    }

    /// `cmp qword [base + disp], imm32` (sign-extended): flags of `[base + disp] - imm`.
    pub fn cmp_ext_imm(&mut self, base: Ext, disp: u32, imm: i32) {
        self.at_ext(Width::W64, 0x81, Alu::Cmp.digit(), base, disp);
        self.bytes(&imm.to_le_bytes());
    }

    /// `mov r, [base + disp32]`
    pub fn load_at(&mut self, width: Width, r: Gpr, base: Gpr, disp: u32) {
        self.rex_w(width);
        self.code.push(0x8B);
        self.code.push(0x80 | (r as u8) << 3 | base as u8);
        self.bytes(&disp.to_le_bytes());
    }

    /// `mov [base + disp32], r`
    pub fn store_at(&mut self, width: Width, base: Gpr, disp: u32, r: Gpr) {
        self.rex_w(width);
        self.code.push(0x89);
        self.code.push(0x80 | (r as u8) << 3 | base as u8);
        self.bytes(&disp.to_le_bytes());
    }

    /// `lea r, [base + disp]`
    pub fn lea_ext(&mut self, r: Gpr, base: Ext, disp: u32) {
        self.at_ext(Width::W64, 0x8D, r as u8, base, disp);
    }

    /// `op dst, src` between general registers.
    pub fn alu_reg(&mut self, op: Alu, width: Width, dst: Gpr, src: Gpr) {
        self.rex_w(width);
        self.code.push(op.opcode());
        self.direct(dst as u8, src as u8);
    }

    /// `shr r64, imm8`
    pub fn shr_imm64(&mut self, r: Gpr, imm: u8) {
        self.bytes(&[0x48, 0xC1]);
        self.direct(Shift::Shr as u8, r as u8);
        self.code.push(imm);
    }

    /// ModRM + SIB for `[base + index * element size]` with `reg` in the reg field (`base` is
    /// never rbp, so no displacement).
    fn indexed(&mut self, reg: u8, element: Element, base: Gpr, index: Gpr) {
        self.code.push(reg << 3 | 0b100);
        self.code.push(element.shift() << 6 | (index as u8) << 3 | base as u8);
    }

    /// `mov`/`movzx`/`movsx r, [base + index * size]`: the element zero- or sign-extended to 32
    /// bits (which clears the upper half), or all 64.
    pub fn load_element(&mut self, element: Element, r: Gpr, base: Gpr, index: Gpr) {
        match element {
            Element::U8 => self.bytes(&[0x0F, 0xB6]),
            Element::S8 => self.bytes(&[0x0F, 0xBE]),
            Element::U16 => self.bytes(&[0x0F, 0xB7]),
            Element::S16 => self.bytes(&[0x0F, 0xBF]),
            Element::W32 => self.code.push(0x8B),
            Element::W64 => self.bytes(&[0x48, 0x8B]),
        }
        self.indexed(r as u8, element, base, index);
    }

    /// `mov [base + index * size], r8/r16/r32/r64` (the low bytes of `r`: al, cl or dl need no
    /// REX).
    pub fn store_element(&mut self, element: Element, base: Gpr, index: Gpr, r: Gpr) {
        match element {
            Element::U8 | Element::S8 => self.code.push(0x88),
            Element::U16 | Element::S16 => self.bytes(&[0x66, 0x89]),
            Element::W32 => self.code.push(0x89),
            Element::W64 => self.bytes(&[0x48, 0x89]),
        }
        self.indexed(r as u8, element, base, index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected bytes from the Intel SDM encodings (cross-checked with `objdump -d` on GNU as
    // output of the same mnemonics).
    #[test]
    fn encodings() {
        let mut a = Assembler::default();
        a.load(Width::W32, Gpr::Rax, 3); // mov eax, [rdi+12]
        a.store(Width::W64, 40, Gpr::Rcx); // mov [rdi+160], rcx
        a.alu(Alu::Add, Width::W32, Gpr::Rdx, 1); // add edx, [rdi+4]
        a.set(Cond::L, Gpr::Rax); // setl al; movzx eax, al
        a.cmp_slot_imm(Width::W32, 2, 0); // cmp dword [rdi+8], 0
        a.sse(Sse::Add, Width::W32, 5); // addss xmm0, [rdi+20]
        a.divide(Width::W64, true, 6); // idiv qword [rdi+24]
        let code = a.finish().unwrap();
        assert_eq!(
            code,
            [
                0x8B, 0x47, 0x0C, //
                0x48, 0x89, 0x8F, 0xA0, 0x00, 0x00, 0x00, //
                0x03, 0x57, 0x04, //
                0x0F, 0x9C, 0xC0, 0x0F, 0xB6, 0xC0, //
                0x83, 0x7F, 0x08, 0x00, //
                0xF3, 0x0F, 0x58, 0x47, 0x14, //
                0x48, 0xF7, 0x7F, 0x18,
            ]
        );
    }

    // The instructions on high registers, checked the same way.
    #[test]
    fn high_register_encodings() {
        let mut a = Assembler::default();
        a.mov_to_ext(Ext::R8, Gpr::Rdx); // mov r8, rdx
        a.mov_from_ext(Gpr::Rdi, Ext::R8); // mov rdi, r8
        a.mov_ext(Ext::R10, Ext::R8); // mov r10, r8
        a.ext_imm(Alu::Sub, Ext::R10, 1); // sub r10, 1
        a.cmp_ext(Gpr::Rax, Ext::R9); // cmp rax, r9
        a.load_ext(Width::W32, Gpr::Rcx, Ext::R8, 8); // mov ecx, [r8+8]
        a.store_ext(Width::W64, Ext::R8, 4, Gpr::Rax); // mov [r8+4], rax
        a.zero_ext(Ext::R8, 16); // mov qword [r8+16], 0
        a.lea_ext(Gpr::Rax, Ext::R8, 12); // lea rax, [r8+12]
        a.push(Gpr::Rdi);
        a.pop(Gpr::Rdi);
        assert_eq!(
            a.finish().unwrap(),
            [
                0x49, 0x89, 0xD0, //
                0x4C, 0x89, 0xC7, //
                0x4D, 0x89, 0xC2, //
                0x49, 0x81, 0xEA, 0x01, 0x00, 0x00, 0x00, //
                0x4C, 0x39, 0xC8, //
                0x41, 0x8B, 0x88, 0x08, 0x00, 0x00, 0x00, //
                0x49, 0x89, 0x80, 0x04, 0x00, 0x00, 0x00, //
                0x49, 0xC7, 0x80, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
                0x49, 0x8D, 0x80, 0x0C, 0x00, 0x00, 0x00, //
                0x57, 0x5F,
            ]
        );
    }

    // The buffer and global access instructions, checked the same way.
    #[test]
    fn element_encodings() {
        let mut a = Assembler::default();
        a.mov_ext(Ext::R11, Ext::R9); // mov r11, r9
        a.load_ext(Width::W64, Gpr::Rcx, Ext::R11, 32); // mov rcx, [r11+32]
        a.shr_imm64(Gpr::Rcx, 3); // shr rcx, 3
        a.alu_reg(Alu::Cmp, Width::W64, Gpr::Rax, Gpr::Rcx); // cmp rax, rcx
        a.load_element(Element::U8, Gpr::Rax, Gpr::Rcx, Gpr::Rax); // movzx eax, byte [rcx+rax]
        a.load_element(Element::S16, Gpr::Rax, Gpr::Rcx, Gpr::Rax); // movsx eax, word [rcx+rax*2]
        a.load_element(Element::W32, Gpr::Rax, Gpr::Rcx, Gpr::Rax); // mov eax, [rcx+rax*4]
        a.load_element(Element::W64, Gpr::Rax, Gpr::Rcx, Gpr::Rax); // mov rax, [rcx+rax*8]
        a.store_element(Element::S8, Gpr::Rcx, Gpr::Rax, Gpr::Rdx); // mov [rcx+rax], dl
        a.store_element(Element::U16, Gpr::Rcx, Gpr::Rax, Gpr::Rdx); // mov [rcx+rax*2], dx
        a.store_element(Element::W32, Gpr::Rcx, Gpr::Rax, Gpr::Rdx); // mov [rcx+rax*4], edx
        a.store_element(Element::W64, Gpr::Rcx, Gpr::Rax, Gpr::Rdx); // mov [rcx+rax*8], rdx
        a.cmp_ext_imm(Ext::R11, 8, 16); // cmp qword [r11+8], 16
        a.load_at(Width::W32, Gpr::Rax, Gpr::Rcx, 16); // mov eax, [rcx+16]
        a.store_at(Width::W64, Gpr::Rcx, 16, Gpr::Rax); // mov [rcx+16], rax
        assert_eq!(
            a.finish().unwrap(),
            [
                0x4D, 0x89, 0xCB, //
                0x49, 0x8B, 0x8B, 0x20, 0x00, 0x00, 0x00, //
                0x48, 0xC1, 0xE9, 0x03, //
                0x48, 0x3B, 0xC1, //
                0x0F, 0xB6, 0x04, 0x01, //
                0x0F, 0xBF, 0x04, 0x41, //
                0x8B, 0x04, 0x81, //
                0x48, 0x8B, 0x04, 0xC1, //
                0x88, 0x14, 0x01, //
                0x66, 0x89, 0x14, 0x41, //
                0x89, 0x14, 0x81, //
                0x48, 0x89, 0x14, 0xC1, //
                0x49, 0x81, 0xBB, 0x08, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, //
                0x8B, 0x81, 0x10, 0x00, 0x00, 0x00, //
                0x48, 0x89, 0x81, 0x10, 0x00, 0x00, 0x00,
            ]
        );
    }

    #[test]
    fn jumps_resolve_and_rollback_forgets() {
        let mut a = Assembler::default();
        let top = a.label();
        a.bind(top);
        a.ret();
        let mark = a.mark();
        let lost = a.label();
        a.jump(lost);
        a.rollback(mark);
        a.jump(top);
        assert_eq!(a.finish().unwrap(), [0xC3, 0xE9, 0xFA, 0xFF, 0xFF, 0xFF]);

        let mut unbound = Assembler::default();
        let nowhere = unbound.label();
        unbound.jump(nowhere);
        assert!(unbound.finish().is_none());
    }
}
