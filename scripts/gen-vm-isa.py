#!/usr/bin/env python3
"""Generates crates/vm/src/bytecode/isa_table.rs from IREE's machine-readable VM instruction set.

The input is IREE's `runtime/src/iree/vm/bytecode/isa/isa.json` from iree-org/iree at commit
b48a5955 (Apache-2.0 WITH LLVM-exception), checked in unchanged as scripts/data/iree-vm-isa.json.
The output is a Rust table of every instruction (opcode set, opcode, symbol, mnemonic, encoding
name, and the operand fields of its encoding, expanded from the JSON's operation classes into the
operand vocabulary declared in crates/vm/src/bytecode/isa.rs) and the `Opcode` enum, one variant per
instruction named by its symbol, that decoding yields and everything else matches on.

Usage:
    scripts/gen-vm-isa.py [ISA_JSON]           write crates/vm/src/bytecode/isa_table.rs
    scripts/gen-vm-isa.py --check [ISA_JSON]   exit 1 if the checked-in file differs from the output

ISA_JSON defaults to scripts/data/iree-vm-isa.json. Every
field kind, register bank and value type in the JSON must map to an operand kind here; anything
unknown stops the script with an error rather than being dropped.
"""

import argparse
import json
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
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


class IsaError(Exception):
    pass


def lookup(mapping, key, what):
    if key not in mapping:
        raise IsaError(f"unknown {what} {key!r} in the ISA JSON; teach scripts/gen-vm-isa.py about it")
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

    used = sorted({i["encoding"] for i in instructions if "encoding" in i})
    unused = sorted(set(isa["encodings"]) - set(used))
    if unused:
        raise IsaError(f"encodings used by no instruction: {unused}")

    out = []
    emit = out.append
    emit("// Generated by scripts/gen-vm-isa.py from IREE's VM instruction set, isa.json")
    emit("// (iree-org/iree runtime/src/iree/vm/bytecode/isa/isa.json at commit b48a5955,")
    emit("// Apache-2.0 WITH LLVM-exception; checked in as scripts/data/iree-vm-isa.json).")
    emit("// DO NOT EDIT: change the generator or the JSON and run `python3 scripts/gen-vm-isa.py`.")
    emit("")
    emit("use super::isa::{")
    emit("    Access, ElementType, ImmediateType, Instruction, InstructionKind, OpcodeSet, Operand, OperandKind,")
    emit("    RegisterBank,")
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
        elif kind == "marker":
            name = inst["symbol"]
            kind_expr = "InstructionKind::BlockMarker"
            encoding, operands = '""', "&[]"
        elif kind == "prefix":
            target = inst["target_opcode_set"]
            if prefixes.get(inst["symbol"]) != target:
                raise IsaError(f"prefix {inst['symbol']} does not match the opcode set table")
            name = inst["symbol"]
            kind_expr = f"InstructionKind::Prefix(OpcodeSet::{lookup(SETS, target, 'opcode set')})"
            encoding, operands = '""', "&[]"
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
            print(f"gen-vm-isa.py: {OUTPUT.relative_to(REPO)} is stale; run python3 scripts/gen-vm-isa.py",
                  file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
