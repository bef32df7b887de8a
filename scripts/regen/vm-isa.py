#!/usr/bin/env python3
"""Generates crates/vm/src/bytecode/isa_table.rs from IREE's machine-readable VM instruction set.

The input is IREE's `runtime/src/iree/vm/bytecode/isa/isa.json` from iree-org/iree at commit
b48a5955 (Apache-2.0 WITH LLVM-exception), checked in unchanged as scripts/regen/data/iree-vm-isa.json.
The output is a Rust table of every instruction (opcode set, opcode, symbol, mnemonic, encoding
name, and the operand fields of its encoding, expanded from the JSON's operation classes into the
operand vocabulary declared in crates/vm/src/bytecode/isa.rs) and the `Opcode` enum, one variant per
instruction named by its symbol, that decoding yields and everything else matches on.

Each row also carries the instruction's classes, so that the disassembler, the interpreter's
lowering and the JIT match on a class instead of listing opcodes: its scalar shape and its
bit-transfer form, derived from the JSON (operation class, register banks, value type, mnemonic),
and its print form and JIT class, derived from the mnemonic where its structure says (stores,
indirect globals) and otherwise taken from CLASSES below, the one place those facts live.

Usage:
    scripts/regen/vm-isa.py [ISA_JSON]           write crates/vm/src/bytecode/isa_table.rs
    scripts/regen/vm-isa.py --check [ISA_JSON]   exit 1 if the checked-in file differs from the output

ISA_JSON defaults to scripts/regen/data/iree-vm-isa.json. Every
field kind, register bank and value type in the JSON must map to an operand kind here; anything
unknown stops the script with an error rather than being dropped.
"""

import argparse
import json
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
DEFAULT_JSON = REPO / "scripts" / "data" / "iree-vm-isa.json"
OUTPUT = REPO / "crates" / "vm" / "src" / "bytecode" / "isa_table.rs"

SETS = {"core": "Core", "ext_f32": "ExtF32", "ext_f64": "ExtF64"}
BANKS = {"i32": "I32", "i64": "I64", "f32": "F32", "f64": "F64", "ref": "Ref"}
ELEMENT_TYPES = {"any": "Any", "i32": "I32", "i64": "I64", "f32": "F32", "f64": "F64", "ref": "Ref"}
IMMEDIATE_TYPES = {"i32": "I32", "i64": "I64", "f32": "F32", "f64": "F64"}
ACCESS = {"read": "Read", "write": "Write"}
# `global_attr` names a global by where it lives: primitive globals by byte offset into the
# module's rwdata, ref globals by ordinal in the ref table. The JSON tells them apart by field name.
GLOBAL_FIELDS = {"byte_offset": "GlobalByteOffset", "global": "GlobalRefOrdinal"}
FIXED_KINDS = {
    "type_of": "TypeId",
    "func_attr": "FunctionOrdinal",
    "rodata_attr": "RodataOrdinal",
    "string_attr": "String",
    "branch_target": "BranchTarget",
    "branch_operands": "BranchOperands",
    "branch_table_cases": "BranchTableCases",
    "const_i16": "ConstI16",
}


# What isa.json does not say, by mnemonic: how the disassembly lays an instruction out where that is
# not the generic `results = name operands` (a `PrintForm`; stores and indirect globals follow from
# the mnemonic), and how the JIT compiles it (a `Jit`; an instruction not listed here is left to
# the interpreter). In a key `{i}` stands for i32 and i64, `{f}` for f32 and f64, `{v}` for all
# four; in a JIT class `{w}` is the register width of that type (`W32`, `W64`). Every key must name
# instructions of the table and no instruction may match two keys.
CLASSES = {
    # mnemonic: (print form, JIT class)
    "const.{v}.zero": (None, "ConstZero"),
    "const.{v}": (None, "Const"),
    "select.{v}": ("Select", "Select"),
    "select.ref": ("SelectRef", None),
    "switch.{v}": ("Switch", None),
    "switch.ref": ("Switch", None),
    "cast.any.ref": ("CastAnyRef", None),
    "list.alloc": ("ListAlloc", None),
    "trace": ("Trace", None),
    "print": ("Trace", None),
    "global.load.{v}": (None, "GlobalLoad(Width::{w})"),
    "global.store.{v}": (None, "GlobalStore(Width::{w})"),
    "buffer.load.i8.u": (None, "BufferLoad(BufferAccess::U8)"),
    "buffer.load.i8.s": (None, "BufferLoad(BufferAccess::S8)"),
    "buffer.load.i16.u": (None, "BufferLoad(BufferAccess::U16)"),
    "buffer.load.i16.s": (None, "BufferLoad(BufferAccess::S16)"),
    "buffer.load.{v}": (None, "BufferLoad(BufferAccess::{w})"),
    "buffer.store.i8": (None, "BufferStore(BufferAccess::U8)"),
    "buffer.store.i16": (None, "BufferStore(BufferAccess::U16)"),
    "buffer.store.{v}": (None, "BufferStore(BufferAccess::{w})"),
    "buffer.length": (None, "BufferLength"),
    "add.{i}": (None, "IntAlu(IntAlu::Add)"),
    "sub.{i}": (None, "IntAlu(IntAlu::Sub)"),
    "and.{i}": (None, "IntAlu(IntAlu::And)"),
    "or.{i}": (None, "IntAlu(IntAlu::Or)"),
    "xor.{i}": (None, "IntAlu(IntAlu::Xor)"),
    "mul.{i}": (None, "IntMul"),
    "fma.{i}": (None, "IntMulAdd"),
    "not.{i}": (None, "IntNot"),
    "abs.{i}": (None, "IntAbs"),
    "min.{i}.s": (None, "IntMinMax(MinMax::MinS)"),
    "min.{i}.u": (None, "IntMinMax(MinMax::MinU)"),
    "max.{i}.s": (None, "IntMinMax(MinMax::MaxS)"),
    "max.{i}.u": (None, "IntMinMax(MinMax::MaxU)"),
    "shl.{i}": (None, "IntShift(IntShift::Shl)"),
    "shr.{i}.s": (None, "IntShift(IntShift::ShrS)"),
    "shr.{i}.u": (None, "IntShift(IntShift::ShrU)"),
    "div.{i}.s": (None, "IntDivide { signed: true, remainder: false }"),
    "div.{i}.u": (None, "IntDivide { signed: false, remainder: false }"),
    "rem.{i}.s": (None, "IntDivide { signed: true, remainder: true }"),
    "rem.{i}.u": (None, "IntDivide { signed: false, remainder: true }"),
    "trunc.i32.i8": (None, "Extend { bits: 8, signed: false }"),
    "trunc.i32.i16": (None, "Extend { bits: 16, signed: false }"),
    "ext.i8.i32.u": (None, "Extend { bits: 8, signed: false }"),
    "ext.i16.i32.u": (None, "Extend { bits: 16, signed: false }"),
    "ext.i8.i32.s": (None, "Extend { bits: 8, signed: true }"),
    "ext.i16.i32.s": (None, "Extend { bits: 16, signed: true }"),
    "trunc.i64.i32": (None, "Move(Width::W32)"),
    "bitcast.i32.f32": (None, "Move(Width::W32)"),
    "bitcast.f32.i32": (None, "Move(Width::W32)"),
    "bitcast.i64.f64": (None, "Move(Width::W64)"),
    "bitcast.f64.i64": (None, "Move(Width::W64)"),
    "ext.i32.i64.s": (None, "Widen { signed: true }"),
    "ext.i32.i64.u": (None, "Widen { signed: false }"),
    "cmp.eq.{i}": (None, "IntCompare(IntCompare::Eq)"),
    "cmp.ne.{i}": (None, "IntCompare(IntCompare::Ne)"),
    "cmp.lt.{i}.s": (None, "IntCompare(IntCompare::LtS)"),
    "cmp.lt.{i}.u": (None, "IntCompare(IntCompare::LtU)"),
    "cmp.nz.{i}": (None, "IntNonZero"),
    "add.{f}": (None, "FloatOp(FloatOp::Add)"),
    "sub.{f}": (None, "FloatOp(FloatOp::Sub)"),
    "mul.{f}": (None, "FloatOp(FloatOp::Mul)"),
    "div.{f}": (None, "FloatOp(FloatOp::Div)"),
    "min.{f}": (None, "FloatOp(FloatOp::Min)"),
    "max.{f}": (None, "FloatOp(FloatOp::Max)"),
    "fma.{f}": (None, "FloatMulAdd"),
    "abs.f32": (None, "SignBitF32 { negate: false }"),
    "neg.f32": (None, "SignBitF32 { negate: true }"),
    "cast.si32.f32": (None, "SignedToFloat { from: Width::W32, to: Width::W32 }"),
    "cast.si64.f32": (None, "SignedToFloat { from: Width::W64, to: Width::W32 }"),
    "cast.si32.f64": (None, "SignedToFloat { from: Width::W32, to: Width::W64 }"),
    "cast.si64.f64": (None, "SignedToFloat { from: Width::W64, to: Width::W64 }"),
    "cast.ui32.f32": (None, "UnsignedToFloat { to: Width::W32 }"),
    "cast.ui32.f64": (None, "UnsignedToFloat { to: Width::W64 }"),
    "cmp.eq.{f}.o": (None, "FloatCompare(FloatCompare::EqO)"),
    "cmp.eq.{f}.u": (None, "FloatCompare(FloatCompare::EqU)"),
    "cmp.ne.{f}.o": (None, "FloatCompare(FloatCompare::Ne)"),
    "cmp.ne.{f}.u": (None, "FloatCompare(FloatCompare::Ne)"),
    "cmp.lt.{f}.o": (None, "FloatCompare(FloatCompare::LtO)"),
    "cmp.lte.{f}.o": (None, "FloatCompare(FloatCompare::LteO)"),
    "cmp.lt.{f}.u": (None, "FloatCompare(FloatCompare::LtU)"),
    "cmp.lte.{f}.u": (None, "FloatCompare(FloatCompare::LteU)"),
    "cmp.nan.{f}": (None, "FloatCompare(FloatCompare::NaN)"),
    "br": (None, "Branch"),
    "cond_br": (None, "CondBranch"),
    "br_table": ("BranchTable", "BranchTable"),
    "call": ("Call", "Call"),
    "call.variadic": ("CallVariadic", None),
    "call.yieldable": ("CallYieldable", None),
    "call.variadic.yieldable": ("CallVariadicYieldable", None),
    "return": (None, "Return"),
}
PLACEHOLDERS = {"{i}": ["i32", "i64"], "{f}": ["f32", "f64"], "{v}": ["i32", "i64", "f32", "f64"]}
WIDTHS = {"i32": "W32", "f32": "W32", "i64": "W64", "f64": "W64"}
# isa.json operation classes of register-only scalar instructions (with a non-ref value type).
SCALAR_CLASSES = {"unary", "binary", "ternary", "shift", "unary_comparison", "binary_comparison", "conversion"}
# The scalar shape by the widths (wide: i64/f64) of the register operands, reads then the write.
SCALAR_SHAPES = {
    (False, False): "Un32",
    (False, False, False): "Bin32",
    (False, False, False, False): "Tern32",
    (True, True): "Un64",
    (True, True, True): "Bin64",
    (True, True, True, True): "Tern64",
    (True, False, True): "Shift64",
    (True, False): "Narrow",
    (False, True): "Widen",
    (True, True, False): "Cmp64",
}
# isa.json operation classes that move a value's bits without reading them as a number.
TRANSFER_CLASSES = {
    "zero_constant": "ConstZero",
    "constant": "Const",
    "select": "Select",
    "switch": "Switch",
    "global_load": "GlobalLoad",
    "global_store": "GlobalStore",
    "global_load_indirect": "GlobalLoadIndirect",
    "global_store_indirect": "GlobalStoreIndirect",
}


class IsaError(Exception):
    pass


def lookup(mapping, key, what):
    if key not in mapping:
        raise IsaError(f"unknown {what} {key!r} in the ISA JSON; teach scripts/regen/vm-isa.py about it")
    return mapping[key]


def substitute(value, parameters, where):
    """Replaces a `$parameter` reference with the encoding's argument for it."""
    if isinstance(value, str) and value.startswith("$"):
        name = value[1:]
        if name not in parameters:
            raise IsaError(f"{where}: parameter {name!r} is not bound")
        return parameters[name]
    return value


def movable(field, where):
    move = field.get("move")
    if move is None:
        return "false"
    if move == "allow":
        return "true"
    raise IsaError(f"{where}: unknown move rule {move!r}")


def operand_kind(field, parameters, where):
    """The Rust `OperandKind` expression for one encoding field."""
    known = {"name", "kind", "bank", "access", "move", "type"}
    extra = set(field) - known
    if extra:
        raise IsaError(f"{where}: unknown field properties {sorted(extra)}")
    kind = field["kind"]
    if kind == "register":
        bank = lookup(BANKS, substitute(field["bank"], parameters, where), "register bank")
        access = lookup(ACCESS, field["access"], "access")
        return (f"OperandKind::Register {{ bank: RegisterBank::{bank}, access: Access::{access}, "
                f"movable: {movable(field, where)} }}")
    if kind == "attribute":
        value_type = lookup(IMMEDIATE_TYPES, substitute(field["type"], parameters, where), "immediate type")
        return f"OperandKind::Immediate(ImmediateType::{value_type})"
    if kind == "variadic_operands":
        element = lookup(ELEMENT_TYPES, substitute(field["type"], parameters, where), "element type")
        return (f"OperandKind::VariadicOperands {{ element: ElementType::{element}, "
                f"movable: {movable(field, where)} }}")
    if kind == "variadic_results":
        element = lookup(ELEMENT_TYPES, substitute(field["type"], parameters, where), "element type")
        if "move" in field:
            raise IsaError(f"{where}: move rule on variadic results")
        return f"OperandKind::VariadicResults {{ element: ElementType::{element} }}"
    if kind == "global_attr":
        return "OperandKind::" + lookup(GLOBAL_FIELDS, field["name"], "global_attr field name")
    if kind in FIXED_KINDS:
        return "OperandKind::" + FIXED_KINDS[kind]
    raise IsaError(f"{where}: unknown field kind {kind!r}")


def encoding_fields(isa, name):
    """The fields of a named encoding with its class parameters bound."""
    encoding = isa["encodings"][name]
    if "fields" in encoding:
        return encoding["fields"], {}
    op_class = isa["operation_classes"][encoding["class"]]
    parameters = encoding.get("parameters", {})
    declared = set(op_class.get("parameters", {}))
    if set(parameters) != declared:
        raise IsaError(f"encoding {name}: parameters {sorted(parameters)} do not match class "
                       f"{encoding['class']} {sorted(declared)}")
    return op_class["fields"], parameters


def const_name(encoding):
    return "ENC_" + encoding.upper()


def rust_str(text):
    return json.dumps(text)


def expand_classes(mnemonics):
    """CLASSES with its keys expanded to mnemonics: mnemonic -> (print form, JIT class)."""
    classes = {}
    for key, (form, jit) in CLASSES.items():
        found = [p for p in PLACEHOLDERS if p in key]
        if len(found) > 1:
            raise IsaError(f"CLASSES key {key!r} has more than one placeholder")
        types = PLACEHOLDERS[found[0]] if found else [None]
        for type_name in types:
            mnemonic = key.replace(found[0], type_name) if found else key
            if mnemonic not in mnemonics:
                raise IsaError(f"CLASSES key {key!r} names {mnemonic!r}, which isa.json lacks")
            if mnemonic in classes:
                raise IsaError(f"CLASSES names {mnemonic!r} twice")
            expanded = jit
            if jit is not None and "{w}" in jit:
                if type_name is None:
                    raise IsaError(f"CLASSES key {key!r} uses {{w}} without a type placeholder")
                expanded = jit.replace("{w}", WIDTHS[type_name])
            classes[mnemonic] = (form, expanded)
    return classes


def value_type(isa, inst):
    """The `value_type` parameter of the instruction's encoding class, if it has one."""
    encoding = isa["encodings"][inst["encoding"]]
    return encoding.get("parameters", {}).get("value_type")


def scalar_shape(isa, inst):
    """The `Scalar` shape of a register-only scalar instruction, `None` for any other."""
    encoding = isa["encodings"][inst["encoding"]]
    if encoding.get("class") not in SCALAR_CLASSES or value_type(isa, inst) == "ref":
        return None
    fields, parameters = encoding_fields(isa, inst["encoding"])
    wide = []
    for field in fields:
        if field["kind"] != "register":
            raise IsaError(f"{inst['mnemonic']}: scalar with a {field['kind']} operand")
        bank = substitute(field["bank"], parameters, inst["mnemonic"])
        if bank == "ref":
            raise IsaError(f"{inst['mnemonic']}: scalar with a ref operand")
        wide.append(bank in ("i64", "f64"))
    shape = SCALAR_SHAPES.get(tuple(wide))
    if shape is None:
        raise IsaError(f"{inst['mnemonic']}: no scalar shape has register widths {wide}")
    # Integer division and remainder fail on a zero divisor (and signed MIN / -1), so they have
    # shapes of their own that can report it.
    if inst["mnemonic"].split(".")[0] in ("div", "rem") and value_type(isa, inst) in ("i32", "i64"):
        shape = {"Bin32": "Div32", "Bin64": "Div64"}[shape]
    return shape


def transfer(isa, inst):
    """The `(Transfer, Width)` of an instruction that moves an i32/i64/f32/f64 value's bits."""
    encoding = isa["encodings"][inst["encoding"]]
    kind = TRANSFER_CLASSES.get(encoding.get("class"))
    if kind is None:
        return None
    width = WIDTHS.get(value_type(isa, inst))
    if width is None:
        raise IsaError(f"{inst['mnemonic']}: {encoding['class']} of value type {value_type(isa, inst)!r}")
    return kind, width


def print_form(mnemonic, listed):
    """The `PrintForm`: CLASSES' where it gives one, else by the mnemonic's structure."""
    if listed is not None:
        return listed
    parts = mnemonic.split(".")
    if parts[0] == "global" and "indirect" in parts:
        space = "Refs" if parts[-1] == "ref" else "Rwdata"
        kind = "IndirectStore" if parts[1] == "store" else "IndirectLoad"
        return f"{kind}(GlobalSpace::{space})"
    if parts[0] in ("global", "buffer") and parts[1] == "store":
        return "Store"
    return "Generic"


def generate(isa):
    version = isa["bytecode_version"]
    sets = [s["id"] for s in isa["opcode_sets"]]
    if sets != list(SETS):
        raise IsaError(f"opcode sets {sets} differ from the known {list(SETS)}")
    prefixes = {s["prefix"]: s["id"] for s in isa["opcode_sets"] if s["prefix"]}

    instructions = sorted(isa["instructions"], key=lambda i: (sets.index(i["opcode_set"]), i["opcode"]))
    seen = set()
    for inst in instructions:
        key = (inst["opcode_set"], inst["opcode"])
        if key in seen:
            raise IsaError(f"duplicate opcode {key}")
        if not 0 <= inst["opcode"] <= 0xFF:
            raise IsaError(f"opcode {key} does not fit a byte")
        seen.add(key)

    classes = expand_classes({i["mnemonic"] for i in instructions if i.get("mnemonic")})

    used = sorted({i["encoding"] for i in instructions if "encoding" in i})
    unused = sorted(set(isa["encodings"]) - set(used))
    if unused:
        raise IsaError(f"encodings used by no instruction: {unused}")

    out = []
    emit = out.append
    emit("// Generated by scripts/regen/vm-isa.py from IREE's VM instruction set, isa.json")
    emit("// (iree-org/iree runtime/src/iree/vm/bytecode/isa/isa.json at commit b48a5955,")
    emit("// Apache-2.0 WITH LLVM-exception; checked in as scripts/regen/data/iree-vm-isa.json).")
    emit("// DO NOT EDIT: change the generator or the JSON and run `python3 scripts/regen/vm-isa.py`.")
    emit("")
    emit("use super::isa::{")
    emit("    Access, BufferAccess, ElementType, FloatCompare, FloatOp, GlobalSpace, ImmediateType, Instruction,")
    emit("    InstructionKind, IntAlu, IntCompare, IntShift, Jit, MinMax, OpcodeSet, Operand, OperandKind, PrintForm,")
    emit("    RegisterBank, Scalar, Transfer, Width,")
    emit("};")
    emit("")
    emit(f"/// Bytecode version the table describes (major {version['major']}, minor {version['minor']}).")
    emit(f"pub const BYTECODE_VERSION_MAJOR: u16 = {version['major']};")
    emit(f"/// Minor bytecode version the table describes.")
    emit(f"pub const BYTECODE_VERSION_MINOR: u16 = {version['minor']};")
    emit("")
    for name in used:
        fields, parameters = encoding_fields(isa, name)
        emit(f"/// Encoding `{name}`.")
        emit(f"const {const_name(name)}: &[Operand] = &[")
        for field in fields:
            kind = operand_kind(field, parameters, f"encoding {name} field {field['name']}")
            emit(f"    Operand {{ name: {rust_str(field['name'])}, kind: {kind} }},")
        emit("];")
    emit("")
    emit("/// One variant per instruction, named by its isa.json symbol and in table order, so that")
    emit("/// `opcode as usize` is the instruction's position in [`INSTRUCTIONS`].")
    emit("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]")
    emit("#[repr(u16)]")
    emit("pub enum Opcode {")
    for inst in instructions:
        symbol = inst["symbol"]
        if not symbol.isidentifier() or not symbol[0].isupper():
            raise IsaError(f"symbol {symbol!r} is not a Rust variant name")
        label = "vm." + inst["mnemonic"] if inst.get("kind") is None else symbol
        emit(f"    /// `{label}`: {SETS[inst['opcode_set']]} 0x{inst['opcode']:02X}.")
        emit(f"    {symbol},")
    emit("}")
    emit("")
    emit(f"/// Every instruction, ordered by opcode set then opcode.")
    emit(f"pub static INSTRUCTIONS: [Instruction; {len(instructions)}] = [")
    index = {s: ["NONE"] * 256 for s in sets}
    for position, inst in enumerate(instructions):
        set_id = inst["opcode_set"]
        index[set_id][inst["opcode"]] = str(position)
        kind = inst.get("kind")
        if kind is None:
            if not inst.get("mnemonic") or "encoding" not in inst:
                raise IsaError(f"instruction {inst['symbol']} lacks a mnemonic or encoding")
            name = "vm." + inst["mnemonic"]
            kind_expr = "InstructionKind::Operation"
            encoding = rust_str(inst["encoding"])
            operands = const_name(inst["encoding"])
            listed_print, jit = classes.get(inst["mnemonic"], (None, None))
            print_expr = "PrintForm::" + print_form(inst["mnemonic"], listed_print)
            jit_expr = "Jit::" + (jit or "Interpret")
            shape = scalar_shape(isa, inst)
            scalar_expr = f"Some(Scalar::{shape})" if shape else "None"
            moved = transfer(isa, inst)
            transfer_expr = f"Some((Transfer::{moved[0]}, Width::{moved[1]}))" if moved else "None"
        elif kind == "marker":
            name = inst["symbol"]
            kind_expr = "InstructionKind::BlockMarker"
            encoding, operands = '""', "&[]"
            print_expr, jit_expr, scalar_expr, transfer_expr = "PrintForm::Name", "Jit::Interpret", "None", "None"
        elif kind == "prefix":
            target = inst["target_opcode_set"]
            if prefixes.get(inst["symbol"]) != target:
                raise IsaError(f"prefix {inst['symbol']} does not match the opcode set table")
            name = inst["symbol"]
            kind_expr = f"InstructionKind::Prefix(OpcodeSet::{lookup(SETS, target, 'opcode set')})"
            encoding, operands = '""', "&[]"
            print_expr, jit_expr, scalar_expr, transfer_expr = "PrintForm::Name", "Jit::Interpret", "None", "None"
        else:
            raise IsaError(f"instruction {inst['symbol']}: unknown kind {kind!r}")
        emit("    Instruction {")
        emit(f"        id: Opcode::{inst['symbol']},")
        emit(f"        set: OpcodeSet::{SETS[set_id]},")
        emit(f"        opcode: 0x{inst['opcode']:02X},")
        emit(f"        symbol: {rust_str(inst['symbol'])},")
        emit(f"        name: {rust_str(name)},")
        emit(f"        kind: {kind_expr},")
        emit(f"        encoding: {encoding},")
        emit(f"        operands: {operands},")
        emit(f"        print: {print_expr},")
        emit(f"        scalar: {scalar_expr},")
        emit(f"        transfer: {transfer_expr},")
        emit(f"        jit: {jit_expr},")
        emit("    },")
    emit("];")
    emit("")
    emit("/// Marks an opcode with no instruction in the per-set index tables.")
    emit("pub const NONE: u16 = u16::MAX;")
    for set_id in sets:
        emit("")
        emit(f"/// Position in [`INSTRUCTIONS`] of each {SETS[set_id]} opcode, [`NONE`] where unassigned.")
        emit(f"pub static {set_id.upper()}_INDEX: [u16; 256] = [")
        row = index[set_id]
        for start in range(0, 256, 16):
            emit("    " + ", ".join(row[start:start + 16]) + ",")
        emit("];")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("isa_json", nargs="?", default=str(DEFAULT_JSON), help="path to iree-vm-isa.json")
    parser.add_argument("--check", action="store_true",
                        help="compare with the checked-in file instead of writing it")
    args = parser.parse_args()

    path = pathlib.Path(args.isa_json)
    try:
        isa = json.loads(path.read_text())
        text = generate(isa)
    except (OSError, ValueError, KeyError, IsaError) as error:
        print(f"gen-vm-isa.py: {path}: {error}", file=sys.stderr)
        return 2

    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"gen-vm-isa.py: {OUTPUT.relative_to(REPO)} is stale; run python3 scripts/regen/vm-isa.py",
                  file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
