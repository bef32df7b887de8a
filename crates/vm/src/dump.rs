//! Renders a loaded module as text, the way `iree-dump-module` (IREE 3.13) prints it, so that a
//! user can diff our view of a `.vmfb` against the reference tool line by line.
//!
//! Two parts, selected by [`DumpOutput`] like the tool's `--output=` flag:
//!
//! * **Metadata**: the module header, required features, attributes, types, dependencies, imports
//!   and exports with their calling conventions and reflection attributes, section sizes, the
//!   bytecode function table and a debug-database summary.
//! * **Disassembly**: a `vm.module` listing with every internal function decoded, registers named
//!   the way IREE's disassembler names them (`%i3`; `%i4:5` for an i64/f64 pair; `%r2`, or `%R2`
//!   when the instruction may move the reference) and branch targets named by block (`^bb2`).
//!
//! The output is byte-identical to the tool for every fixture in `tests/fixtures/vm` (checked by
//! `crates/vm/tests/all/vm_dump.rs`), including these format facts of the tool that look like
//! accidents:
//!
//! * Internal callees are named from the debug database's function list *by position*, while the
//!   compiler lists source maps only for some functions; so `vm.call @m.f` may name another
//!   function than the callee, and callees past the list print as `@m:3`. We print the same.
//! * Function headers count argument registers without the pair alignment the body uses
//!   (`%i0: i32, %i1:2: i64` where the body reads `%i2:3`).
//! * Operands of mixed lists (call arguments, `vm.return`, branch remaps) cannot tell an i64 from
//!   an i32 and print only the first register (`vm.return %i4` for an i64).
//!
//! Instructions that neither the fixtures nor the VM-dialect module in
//! `crates/vm/tests/all/vm_dump.rs` produce (indirect global accesses, `vm.yield`, non-variadic
//! `vm.call.yieldable`, `vm.break`, `vm.cond_break`, `vm.switch.ref`; the 3.13 compiler crashes on
//! the first) are printed in the layout of their siblings in upstream's printer, unverified against
//! the tool.
//!
//! Where the FlatBuffer distinguishes "absent" from "empty" or "zero" and [`ModuleDef`] does not,
//! empty and zero are treated as absent (the compiler omits such fields, so the fixtures agree):
//! module requirements 0 and an all-zero module state print nothing. The rodata compression type
//! is not kept by the loader, so the tool's `uncompressed` tag (never emitted by IREE 3.13
//! compilers) is not printed. Calling conventions the tool cannot parse abort it; here an unknown
//! type character prints as `?`.
//!
//! [`ModuleDef`]: super::module_def::ModuleDef

use std::fmt::{self, Write};

use super::bytecode::decode::{decode_function, DecodedInstruction, DecodedOperand, Register, RegisterRemap};
use super::bytecode::isa::{Access, GlobalSpace, InstructionKind, OperandKind, PrintForm, RegisterBank};
use super::container::Container;
use super::error::LoadError;
use super::module::Module;
use super::module_def::{Attr, FeatureBits};

/// Which parts to print, as `iree-dump-module --output=all|metadata|disassembly`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DumpOutput {
    #[default]
    All,
    Metadata,
    Disassembly,
}

/// Options of [`write_dump`], mirroring the tool's flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpOptions {
    pub output: DumpOutput,
    /// `--function=`: disassemble only the function with this name or internal ordinal.
    pub function: Option<String>,
    /// `--bytecode_offsets`: prefix each disassembly line with its `[%08X]` bytecode offset.
    pub bytecode_offsets: bool,
}

/// Why a dump could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("writing the dump failed")]
    Write(#[from] fmt::Error),
    /// Only reachable for a module the loader would have rejected; kept so that nothing panics.
    #[error("module does not decode: {0}")]
    Malformed(#[from] LoadError),
}

/// Writes the dump of `module` selected by `options` to `out`.
pub fn write_dump(module: &Module, out: &mut impl Write, options: &DumpOptions) -> Result<(), DumpError> {
    match options.output {
        DumpOutput::All => {
            write_metadata(module, out)?;
            out.write_char('\n')?;
            write_disassembly(module, out, options)
        }
        DumpOutput::Metadata => write_metadata(module, out),
        DumpOutput::Disassembly => write_disassembly(module, out, options),
    }
}

/// The dump as a string.
pub fn dump_to_string(module: &Module, options: &DumpOptions) -> Result<String, DumpError> {
    let mut text = String::new();
    write_dump(module, &mut text, options)?;
    Ok(text)
}

const RULE: &str = "//===--------------------------------------------------------------------------------------------------------------===//";
/// `sizeof(iree_vm_ref_t)` on 64-bit hosts: the tool estimates module state size with it.
const REF_SIZE: u64 = 16;
/// Embedded rodata previews stop after this many characters.
const PREVIEW_LIMIT: usize = 32;
/// Width the function table's requirements column is padded to.
const REQUIREMENTS_WIDTH: usize = 12;

fn section(out: &mut impl Write, title: fmt::Arguments<'_>) -> fmt::Result {
    writeln!(out, "{RULE}\n// {title}\n{RULE}")
}

/// Writes feature bits as `EXT_F32 | EXT_F64 | 0000000C` and returns how many characters the
/// names took (separators not counted, as the table's padding expects).
fn write_feature_bits(out: &mut impl Write, bits: FeatureBits) -> Result<usize, fmt::Error> {
    let mut rest = bits.0;
    let mut width = 0;
    for (flag, name) in [(FeatureBits::EXT_F32, "EXT_F32"), (FeatureBits::EXT_F64, "EXT_F64")] {
        if rest & flag.0 != 0 {
            if width > 0 {
                out.write_str(" | ")?;
            }
            out.write_str(name)?;
            width += name.len();
            rest &= !flag.0;
        }
    }
    if rest != 0 {
        if width > 0 {
            out.write_str(" | ")?;
        }
        write!(out, "{rest:08X}")?;
        width += 8;
    }
    Ok(width)
}

fn write_attrs(out: &mut impl Write, attrs: &[Attr], indent: usize) -> fmt::Result {
    for attr in attrs {
        writeln!(out, "{:indent$}{}: {}", "", attr.key, attr.value)?;
    }
    Ok(())
}

/// The argument and result parts of a calling convention (`0rIi_r` → `rIi`, `r`), if it is one.
fn cconv_fragments(cconv: &str) -> Option<(&str, &str)> {
    cconv.strip_prefix('0')?.split_once('_')
}

fn cconv_type_name(c: char) -> &'static str {
    match c {
        'v' => "",
        'i' => "i32",
        'f' => "f32",
        'I' => "i64",
        'F' => "f64",
        'r' => "!vm.ref<?>",
        _ => "?",
    }
}

/// One fragment as the metadata prints it: `i32, tuple<i32, !vm.ref<?>>...`.
fn write_cconv_fragment(out: &mut impl Write, fragment: &str) -> fmt::Result {
    let chars: Vec<char> = fragment.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if i > 0 {
            out.write_str(", ")?;
        }
        if chars[i] == 'C' {
            let end = chars[i + 1..].iter().position(|&c| c == 'D').map_or(chars.len(), |p| i + 1 + p);
            let inner: String = chars[i + 1..end].iter().collect();
            out.write_str("tuple<")?;
            write_cconv_fragment(out, &inner)?;
            out.write_str(">...")?;
            i = end + 1;
        } else {
            out.write_str(cconv_type_name(chars[i]))?;
            i += 1;
        }
    }
    Ok(())
}

fn write_cconv(out: &mut impl Write, cconv: &str) -> fmt::Result {
    let (arguments, results) = cconv_fragments(cconv).unwrap_or((cconv, ""));
    out.write_char('(')?;
    write_cconv_fragment(out, arguments)?;
    out.write_str(") -> (")?;
    write_cconv_fragment(out, results)?;
    out.write_char(')')
}

/// The printable prefix of embedded rodata up to its first NUL, or `None` if it holds other bytes.
fn string_preview(data: &[u8]) -> Option<&[u8]> {
    let text = data.split(|&b| b == 0).next().unwrap_or_default();
    text.iter().all(|b| (0x20..0x7F).contains(b)).then_some(text)
}

fn write_metadata(module: &Module, out: &mut impl Write) -> Result<(), DumpError> {
    let def = module.def();
    section(out, format_args!("@{} : version {}", def.name, def.version))?;
    out.write_char('\n')?;
    if def.requirements.0 != 0 {
        out.write_str("Requirements: ")?;
        write_feature_bits(out, def.requirements)?;
        out.write_str("\n\n")?;
    }
    if !def.attrs.is_empty() {
        out.write_str("Attributes:\n")?;
        write_attrs(out, &def.attrs, 2)?;
        out.write_char('\n')?;
    }
    if !def.types.is_empty() {
        out.write_str("Required Types:\n")?;
        for (i, ty) in def.types.iter().enumerate() {
            writeln!(out, "  [{i:3}] {}", ty.full_name)?;
        }
        out.write_char('\n')?;
    }
    if !def.dependencies.is_empty() {
        out.write_str("Module Dependencies:\n")?;
        for dependency in &def.dependencies {
            let kind = if dependency.is_optional() { "optional" } else { "required" };
            writeln!(out, "  {}, version >= {}, {kind}", dependency.name, dependency.minimum_version)?;
        }
        out.write_char('\n')?;
    }
    if !def.imported_functions.is_empty() {
        out.write_str("Imported Functions:\n")?;
        for (i, import) in def.imported_functions.iter().enumerate() {
            let optional = if import.is_optional() { "?" } else { "" };
            write!(out, "  [{i:3}] {optional}{}", import.full_name)?;
            let signature = import.signature.as_ref();
            if let Some(cconv) = signature.and_then(|s| s.calling_convention.as_deref()) {
                write_cconv(out, cconv)?;
            }
            out.write_char('\n')?;
            write_attrs(out, signature.map_or(&[], |s| &s.attrs[..]), 8)?;
        }
        out.write_char('\n')?;
    }
    if !def.exported_functions.is_empty() {
        out.write_str("Exported Functions:\n")?;
        for (i, export) in def.exported_functions.iter().enumerate() {
            write!(out, "  [{i:3}] {}", export.local_name)?;
            let signature = module.export_signature(export);
            if let Some(cconv) = signature.and_then(|s| s.calling_convention.as_deref()) {
                write_cconv(out, cconv)?;
            }
            out.write_char('\n')?;
            write_attrs(out, signature.map_or(&[], |s| &s.attrs[..]), 8)?;
        }
        out.write_char('\n')?;
    }

    section(out, format_args!("Sections"))?;
    out.write_char('\n')?;
    let state = def.module_state;
    if state.global_bytes_capacity != 0 || state.global_ref_count != 0 {
        let total = u64::from(state.global_bytes_capacity) + REF_SIZE * u64::from(state.global_ref_count);
        writeln!(
            out,
            "Module State:\n  {} bytes, {} refs, ~{total} bytes total\n",
            state.global_bytes_capacity, state.global_ref_count
        )?;
    }
    let flatbuffer_len = Container::parse(module.bytes())?.flatbuffer.len();
    writeln!(out, "FlatBuffer: {flatbuffer_len} bytes")?;
    writeln!(out, "  Bytecode: {} bytes", def.bytecode_data.len)?;
    let mut external_total = 0u64;
    for (i, segment) in module.rodata_segments().enumerate() {
        write!(out, "  .rodata[{i:3}] ")?;
        if segment.is_external {
            let len = segment.data.len() as u64;
            let offset = segment.offset.saturating_sub(def.rodata_base) as u64;
            external_total += len;
            writeln!(out, "external {len:8} bytes (offset {offset} / {offset:X}h to {:X}h)", offset + len)?;
        } else {
            write!(out, "embedded {:8} bytes", segment.data.len())?;
            if let Some(text) = string_preview(segment.data) {
                let shown = String::from_utf8_lossy(&text[..text.len().min(PREVIEW_LIMIT)]);
                write!(out, " `{shown}`")?;
                if text.len() >= PREVIEW_LIMIT {
                    out.write_str("...")?;
                }
            }
            out.write_char('\n')?;
        }
    }
    for (i, segment) in def.rwdata_segments.iter().enumerate() {
        writeln!(out, "  .rwdata[{i:3}] {} bytes", segment.byte_size)?;
    }
    out.write_char('\n')?;
    if external_total > 0 {
        writeln!(out, "External .rodata: ~{external_total} bytes\n")?;
    }

    section(out, format_args!("Bytecode : version {}", def.version))?;
    out.write_char('\n')?;
    if !def.function_descriptors.is_empty() {
        out.write_str("  # | Offset   |   Length | Blocks | i32 # | ref # | Requirements | Aliases\n")?;
        out.write_str(
            "----+----------+----------+--------+-------+-------+--------------+-----------------------------------------------------\n",
        )?;
        for (i, descriptor) in def.function_descriptors.iter().enumerate() {
            write!(
                out,
                "{i:3} | {:08X} | {:8} | {:6} | {:5} | {:5} | ",
                descriptor.bytecode_offset,
                descriptor.bytecode_length,
                descriptor.block_count,
                descriptor.i32_register_count,
                descriptor.ref_register_count
            )?;
            let width = write_feature_bits(out, descriptor.requirements)?;
            write!(out, "{:pad$} | ", "", pad = REQUIREMENTS_WIDTH.saturating_sub(width))?;
            let aliases: Vec<&str> = def
                .exported_functions
                .iter()
                .filter(|e| e.internal_ordinal as usize == i)
                .map(|e| e.local_name.as_str())
                .collect();
            writeln!(out, "{}", aliases.join(", "))?;
        }
    }
    out.write_char('\n')?;

    if let Some(database) = module.debug_database() {
        section(out, format_args!("Debug Information"))?;
        out.write_str("// NOTE: debug databases are large and should be stripped in deployed artifacts.\n\n")?;
        writeln!(out, "Locations: {}\n", database.location_table.len())?;
    }
    Ok(())
}

fn write_disassembly(module: &Module, out: &mut impl Write, options: &DumpOptions) -> Result<(), DumpError> {
    let def = module.def();
    writeln!(out, "vm.module @{} version {}", def.name, def.version)?;
    for ty in &def.types {
        writeln!(out, "vm.type {}", ty.full_name)?;
    }
    for import in &def.imported_functions {
        let optional = if import.is_optional() { "optional " } else { "" };
        let cconv = import.signature.as_ref().and_then(|s| s.calling_convention.as_deref()).unwrap_or_default();
        writeln!(out, "vm.import {optional}@{} cconv \"{cconv}\"", import.full_name)?;
    }
    for (i, segment) in module.rodata_segments().enumerate() {
        write!(out, "vm.rodata[{i}] = ")?;
        for byte in segment.data {
            write!(out, "{byte:02X}")?;
        }
        out.write_char('\n')?;
    }
    let context = Names::new(module);
    let mut printed_any = false;
    for ordinal in 0..def.function_descriptors.len() {
        let name = context.function_name(ordinal);
        if let Some(filter) = options.function.as_deref().filter(|f| !f.is_empty()) {
            let matches = match filter.parse::<usize>() {
                Ok(wanted) => wanted == ordinal,
                Err(_) => filter == name,
            };
            if !matches {
                continue;
            }
        }
        printed_any = true;
        out.write_char('\n')?;
        for export in def.exported_functions.iter().filter(|e| e.internal_ordinal as usize == ordinal) {
            if export.local_name == name {
                writeln!(out, "vm.export @{name}")?;
            } else {
                writeln!(out, "vm.export @{} = @{name}", export.local_name)?;
            }
        }
        write!(out, "vm.func @{name}")?;
        let cconv = def.function_signatures.get(ordinal).and_then(|s| s.calling_convention.as_deref());
        write_function_signature(out, cconv.unwrap_or_default())?;
        out.write_str(" {\n")?;
        let bytecode = module.function_bytecode(ordinal).unwrap_or_default();
        let instructions = decode_function(bytecode)?;
        let blocks: Vec<u32> = instructions
            .iter()
            .filter(|i| i.instruction.kind == InstructionKind::BlockMarker)
            .map(|i| i.offset as u32)
            .collect();
        let printer = FunctionPrinter { context: &context, blocks: &blocks };
        for instruction in &instructions {
            if options.bytecode_offsets {
                write!(out, "[{:08X}]", instruction.offset)?;
            }
            match instruction.instruction.kind {
                InstructionKind::BlockMarker => {
                    writeln!(out, "{}:", printer.block(instruction.offset as u32))?;
                }
                _ => {
                    out.write_str("  ")?;
                    printer.write_instruction(out, instruction)?;
                    out.write_char('\n')?;
                }
            }
        }
        out.write_str("}\n")?;
    }
    // iree-dump-module ends the listing with a blank line even when no function was asked for.
    if !printed_any {
        out.write_char('\n')?;
    }
    Ok(())
}

/// `(%i0: i32, %i1:2: i64, %r0: !vm.ref<?>) -> (i32)`: arguments get registers in order, one i32
/// register per i32/f32 and two per i64/f64, without the even alignment the runtime uses.
fn write_function_signature(out: &mut impl Write, cconv: &str) -> fmt::Result {
    let (arguments, results) = cconv_fragments(cconv).unwrap_or_default();
    let (mut next_i32, mut next_ref) = (0u64, 0u64);
    out.write_char('(')?;
    let mut first = true;
    for c in arguments.chars().filter(|c| !matches!(c, 'v' | 'C' | 'D')) {
        if !first {
            out.write_str(", ")?;
        }
        first = false;
        match c {
            'I' | 'F' => {
                write!(out, "%i{}:{}", next_i32, next_i32 + 1)?;
                next_i32 += 2;
            }
            'r' => {
                write!(out, "%r{next_ref}")?;
                next_ref += 1;
            }
            _ => {
                write!(out, "%i{next_i32}")?;
                next_i32 += 1;
            }
        }
        write!(out, ": {}", cconv_type_name(c))?;
    }
    out.write_str(") -> (")?;
    let types: Vec<&str> = results.chars().filter(|c| !matches!(c, 'v' | 'C' | 'D')).map(cconv_type_name).collect();
    write!(out, "{})", types.join(", "))
}

/// Name lookups the disassembly makes in the module.
struct Names<'m> {
    module: &'m Module,
}

impl<'m> Names<'m> {
    fn new(module: &'m Module) -> Names<'m> {
        Names { module }
    }

    /// The name the runtime gives internal function `ordinal`: its debug-database entry at the
    /// same position (see the module docs for why that may be another function's name).
    fn runtime_name(&self, ordinal: usize) -> Option<&'m str> {
        let database = self.module.debug_database()?;
        let name = database.functions.get(ordinal)?.local_name.as_str();
        (!name.is_empty()).then_some(name)
    }

    /// The name in a `vm.func` header: the first export's, else the runtime name, else `fnN`.
    fn function_name(&self, ordinal: usize) -> String {
        let exported = self.module.exported_functions().iter().find(|e| e.internal_ordinal as usize == ordinal);
        match exported.map(|e| e.local_name.as_str()).or_else(|| self.runtime_name(ordinal)) {
            Some(name) => name.to_owned(),
            None => format!("fn{ordinal}"),
        }
    }

    fn callee(&self, ordinal: u32, is_import: bool) -> String {
        let module_name = self.module.name();
        if is_import {
            match self.module.imported_functions().get(ordinal as usize) {
                Some(import) if !import.full_name.is_empty() => import.full_name.clone(),
                _ => format!("import:{ordinal}"),
            }
        } else {
            match self.runtime_name(ordinal as usize) {
                Some(name) => format!("{module_name}.{name}"),
                None => format!("{module_name}:{ordinal}"),
            }
        }
    }

    fn type_name(&self, id: u32) -> String {
        match self.module.types().get(id as usize) {
            Some(ty) => ty.full_name.clone(),
            None => format!("<type {id}>"),
        }
    }
}

struct FunctionPrinter<'a> {
    context: &'a Names<'a>,
    /// Offsets of the function's block markers, ascending: block `N` starts at `blocks[N]`.
    blocks: &'a [u32],
}

/// `%i3`, `%i4:5` for a pair, `%r2`; `%R2` when `honor_move` and the move bit is set.
fn register(register: &Register, honor_move: bool) -> String {
    match register.bank {
        RegisterBank::I32 | RegisterBank::F32 => format!("%i{}", register.ordinal),
        RegisterBank::I64 | RegisterBank::F64 => format!("%i{}:{}", register.ordinal, u32::from(register.ordinal) + 1),
        RegisterBank::Ref if honor_move && register.is_move => format!("%R{}", register.ordinal),
        RegisterBank::Ref => format!("%r{}", register.ordinal),
    }
}

/// A register of a list, which the tool names from the raw field: bank by bit 15, never a pair.
fn list_register(reg: &Register) -> String {
    register(&Register::from_any(reg.raw), true)
}

fn register_list(list: &[Register]) -> String {
    list.iter().map(list_register).collect::<Vec<_>>().join(", ")
}

fn remap_list(remaps: &[RegisterRemap]) -> String {
    remaps
        .iter()
        .map(|r| format!("{}->{}", list_register(&r.source), list_register(&r.destination)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// C's `%.<precision>g`, which the tool uses for float constants (9 digits for f32, 17 for f64).
fn format_g(value: f64, precision: usize) -> String {
    if value.is_nan() {
        return if value.is_sign_negative() { "-nan" } else { "nan" }.to_owned();
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    let precision = precision.max(1);
    let scientific = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if exponent < -4 || exponent >= precision as i32 {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.unsigned_abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        trim(&format!("{value:.decimals$}"))
    }
}

impl FunctionPrinter<'_> {
    fn block(&self, target: u32) -> String {
        match self.blocks.binary_search(&target) {
            Ok(index) => format!("^bb{index}"),
            Err(_) => format!("^{target:08X}"),
        }
    }

    /// The text of one operand in the generic layout.
    fn operand(&self, operand: &DecodedOperand<'_>, movable: bool) -> String {
        match operand {
            DecodedOperand::Register(reg) => register(reg, movable),
            DecodedOperand::ImmediateI32(v) => format!("{v}  // 0x{:08X}", *v as u32),
            DecodedOperand::ImmediateI64(v) => format!("{v}  // 0x{:016X}", *v as u64),
            DecodedOperand::ImmediateF32(v) => format_g(f64::from(*v), 9),
            DecodedOperand::ImmediateF64(v) => format_g(*v, 17),
            DecodedOperand::ConstI16(v) => v.to_string(),
            DecodedOperand::FunctionOrdinal { ordinal, is_import } => {
                format!("@{}", self.context.callee(*ordinal, *is_import))
            }
            DecodedOperand::GlobalByteOffset(offset) => format!(".rwdata[{offset}]"),
            DecodedOperand::GlobalRefOrdinal(ordinal) => format!(".refs[{ordinal}]"),
            DecodedOperand::TypeId(id) => self.context.type_name(*id),
            DecodedOperand::RodataOrdinal(ordinal) => {
                let len = self.context.module.rodata_segment(*ordinal as usize).map_or(0, |s| s.data.len());
                format!("{ordinal}  // {len}b")
            }
            DecodedOperand::String(bytes) => format!("\"{}\"", String::from_utf8_lossy(bytes)),
            DecodedOperand::BranchTarget(target) => self.block(*target),
            DecodedOperand::BranchOperands(remaps) => format!("({})", remap_list(remaps)),
            DecodedOperand::BranchTableCases(_) => String::new(),
            DecodedOperand::SegmentSizes(sizes) => {
                format!("segments[{}]", sizes.iter().map(u16::to_string).collect::<Vec<_>>().join(", "))
            }
            DecodedOperand::Registers(list) => register_list(list),
        }
    }

    fn write_instruction(&self, out: &mut impl Write, decoded: &DecodedInstruction<'_>) -> fmt::Result {
        let name = decoded.instruction.name;
        let fields = decoded.instruction.operands;
        let texts: Vec<String> = fields
            .iter()
            .zip(&decoded.operands)
            .map(|(field, operand)| {
                let movable = matches!(field.kind, OperandKind::Register { movable: true, .. });
                self.operand(operand, movable)
            })
            .collect();
        let text = |i: usize| texts.get(i).map_or("", String::as_str);
        let is_result = |i: usize| {
            matches!(
                fields.get(i).map(|f| f.kind),
                Some(OperandKind::Register { access: Access::Write, .. } | OperandKind::VariadicResults { .. })
            )
        };
        let results: Vec<&str> =
            (0..texts.len()).filter(|&i| is_result(i)).map(text).filter(|t| !t.is_empty()).collect();
        let inputs: Vec<usize> = (0..texts.len()).filter(|&i| !is_result(i)).collect();
        let input = |n: usize| inputs.get(n).map_or("", |&i| text(i));
        let assign = |out: &mut dyn Write| -> fmt::Result {
            match results.is_empty() {
                true => Ok(()),
                false => write!(out, "{} = ", results.join(", ")),
            }
        };

        match decoded.instruction.print {
            PrintForm::Select => {
                assign(out)?;
                write!(out, "{name} {} ? {} : {}", input(0), input(1), input(2))
            }
            PrintForm::SelectRef => {
                assign(out)?;
                write!(out, "{name} {} ? {} : {} -> {}", input(0), input(2), input(3), input(1))
            }
            PrintForm::Switch => {
                assign(out)?;
                write!(out, "{name} {}[{}] else {}", input(0), input(2), input(1))
            }
            PrintForm::CastAnyRef => {
                assign(out)?;
                write!(out, "{name} {} : !vm.ref<?> -> {}", input(0), input(1))
            }
            PrintForm::ListAlloc => {
                assign(out)?;
                write!(out, "{name} {} : !vm.list<{}>", input(1), input(0))
            }
            PrintForm::Trace => write!(out, "{name} {}({})", input(0), input(1)),
            PrintForm::BranchTable => {
                write!(out, "{name} {} {{ default: {}{}", input(0), input(1), input(2))?;
                if let Some(DecodedOperand::BranchTableCases(cases)) = decoded.operands.last() {
                    for (i, case) in cases.iter().enumerate() {
                        write!(out, ", {i}: {}({})", self.block(case.target), remap_list(&case.remaps))?;
                    }
                }
                out.write_str(" }")
            }
            PrintForm::Call => {
                assign(out)?;
                write!(out, "{name} {}({})", input(0), input(1))
            }
            PrintForm::CallVariadic => {
                assign(out)?;
                write!(out, "{name} {} {}({})", input(0), input(1), input(2))
            }
            PrintForm::CallYieldable => {
                write!(out, "{name} {}({}) -> {}({})", input(0), input(1), input(2), results.join(", "))
            }
            PrintForm::CallVariadicYieldable => {
                write!(out, "{name} {} {}({}) -> {}({})", input(0), input(1), input(2), input(3), results.join(", "))
            }
            // Not operations: the disassembly prints markers as block labels, and prefixes never
            // reach it (the decoder reads them as part of the extension opcode).
            PrintForm::Name => out.write_str(name),
            // Everything else follows the table's operand order (see `write_generic`).
            PrintForm::Generic | PrintForm::Store | PrintForm::IndirectLoad(_) | PrintForm::IndirectStore(_) => {
                self.write_generic(out, decoded, &texts, &results, &inputs)
            }
        }
    }

    /// `results = name operands`, with the tool's conventions: stores name the value first, an
    /// indirect global's offset register is wrapped as `.rwdata[%iN]`/`.refs[%iN]`, a type is
    /// appended as ` : T`, and branch remaps attach to their target (`^bb1(%i1->%i2)`).
    fn write_generic(
        &self,
        out: &mut impl Write,
        decoded: &DecodedInstruction<'_>,
        texts: &[String],
        results: &[&str],
        inputs: &[usize],
    ) -> fmt::Result {
        let name = decoded.instruction.name;
        let mut order: Vec<usize> = inputs.to_vec();
        // The offset (or ref ordinal) register of an indirect global access is its first field.
        let (stores_value, indirect) = match decoded.instruction.print {
            PrintForm::Store => (true, None),
            PrintForm::IndirectLoad(space) => (false, Some(space)),
            PrintForm::IndirectStore(space) => (true, Some(space)),
            _ => (false, None),
        };
        let address = indirect.map(|space| match space {
            GlobalSpace::Rwdata => "rwdata",
            GlobalSpace::Refs => "refs",
        });
        if stores_value {
            let value =
                order.iter().rposition(|&i| matches!(decoded.operands.get(i), Some(DecodedOperand::Register(_))));
            if let Some(position) = value {
                let index = order.remove(position);
                order.insert(0, index);
            }
        }
        let mut args = String::new();
        let mut type_suffix = String::new();
        for &i in &order {
            let mut piece = texts.get(i).cloned().unwrap_or_default();
            match decoded.operands.get(i) {
                Some(DecodedOperand::TypeId(_)) => {
                    type_suffix = format!(" : {piece}");
                    continue;
                }
                Some(DecodedOperand::BranchOperands(_)) => {
                    args.push_str(&piece);
                    continue;
                }
                Some(DecodedOperand::Register(_)) if i == 0 => {
                    if let Some(space) = address {
                        piece = format!(".{space}[{piece}]");
                    }
                }
                _ => {}
            }
            if !args.is_empty() {
                args.push_str(", ");
            }
            args.push_str(&piece);
        }
        if !results.is_empty() {
            write!(out, "{} = ", results.join(", "))?;
        }
        out.write_str(name)?;
        if !args.is_empty() {
            write!(out, " {args}")?;
        }
        out.write_str(&type_suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_prints_its_mnemonic_and_operands() {
        use crate::bytecode::decode::sample;
        use crate::bytecode::isa::instructions;
        let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/vm/calls.vmfb")).unwrap();
        let module = Module::load_memory(&bytes).unwrap();
        let context = Names::new(&module);
        let printer = FunctionPrinter { context: &context, blocks: &[0] };
        for instruction in instructions().iter().filter(|i| i.kind == InstructionKind::Operation) {
            let mut text = String::new();
            printer.write_instruction(&mut text, &sample(instruction)).unwrap();
            assert!(text.contains(instruction.name), "{}: {text}", instruction.name);
            // Every register operand shows up (register 0 of its bank, as the sample has it).
            for field in instruction.operands {
                if let OperandKind::Register { bank, .. } = field.kind {
                    let shown = match bank {
                        RegisterBank::Ref => "%r0",
                        RegisterBank::I64 | RegisterBank::F64 => "%i0:1",
                        RegisterBank::I32 | RegisterBank::F32 => "%i0",
                    };
                    assert!(text.contains(shown), "{}: {text} lacks {shown}", instruction.name);
                }
            }
        }
    }

    #[test]
    fn floats_print_like_c_percent_g() {
        assert_eq!(format_g(1.5, 9), "1.5");
        assert_eq!(format_g(f64::from(1.0e-4f32), 9), "9.99999975e-05");
        assert_eq!(format_g(100.0, 9), "100");
        assert_eq!(format_g(0.0, 9), "0");
        assert_eq!(format_g(-2.5e10, 9), "-2.5e+10");
        assert_eq!(format_g(123456789.0, 9), "123456789");
        assert_eq!(format_g(1234567890.0, 9), "1.23456789e+09");
        assert_eq!(format_g(0.1, 17), "0.10000000000000001");
        assert_eq!(format_g(f64::NEG_INFINITY, 9), "-inf");
        assert_eq!(format_g(f64::NAN, 9), "nan");
    }

    #[test]
    fn cconv_fragments_print_tuples_as_spans() {
        let mut text = String::new();
        write_cconv(&mut text, "0rIiCiirD_v").unwrap();
        assert_eq!(text, "(!vm.ref<?>, i64, i32, tuple<i32, i32, !vm.ref<?>>...) -> ()");
    }

    #[test]
    fn signatures_count_registers_without_pair_alignment() {
        let mut text = String::new();
        write_function_signature(&mut text, "0iIfIr_Ifi").unwrap();
        assert_eq!(text, "(%i0: i32, %i1:2: i64, %i3: f32, %i4:5: i64, %r0: !vm.ref<?>) -> (i64, f32, i32)");
    }

    #[test]
    fn feature_bits_report_unknown_bits_in_hex() {
        let mut text = String::new();
        let width = write_feature_bits(&mut text, FeatureBits(0b1101)).unwrap();
        assert_eq!((text.as_str(), width), ("EXT_F32 | 0000000C", 15));
    }

    #[test]
    fn embedded_rodata_previews_only_printable_text() {
        assert_eq!(string_preview(b"local*"), Some(&b"local*"[..]));
        assert_eq!(string_preview(b"ab\0\x01"), Some(&b"ab"[..]));
        assert_eq!(string_preview(b"\x01ab"), None);
    }
}
