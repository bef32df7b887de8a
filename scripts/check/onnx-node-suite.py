#!/usr/bin/env python3
"""ONNX's node suite on rtx and on onnxruntime, side by side: how many cases each passes, and per
operator (the table of docs/ONNX.md).

The cases are the ones the installed `onnx` package generates (`collect_testcases`), each run by
every backend on each of its data sets and compared as ONNX's own runner compares
(`Runner.assert_similar_outputs`: same shape and dtype, values within the case's rtol/atol).

    python3 -m venv target/onnx-venv && target/onnx-venv/bin/pip install onnx==1.23.2 onnxruntime==1.31.1 numpy
    target/onnx-venv/bin/pip install ./python       # rtx itself, with its library
    target/onnx-venv/bin/python scripts/check/onnx-node-suite.py [--table FILE] [-k SUBSTRING] [--cli target/release/rtx]

Prints the totals and, with --table, writes the per-operator table in Markdown. With --cli, a third
column runs each case as a user runs a model from the command line: the model and its inputs
written to files, `rtx run --module=model.onnx --input=@input_K.npy ... --output=@output_K.npy`,
the outputs read back and compared the same way. Tensors of strings travel as numpy's `str`
arrays, sequences as `.npz` archives (`np.savez(path, *arrays)`), an empty optional as `(null)`.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from onnx.backend.test.case.node import collect_testcases
from onnx.backend.test.runner import Runner, _normalize_tensor


def passes(backend, case) -> bool:
    """Whether `backend` runs every data set of `case` as ONNX's runner expects."""
    try:
        rep = backend.prepare(case.model, "CPU")
        for inputs, expected in case.data_sets:
            # As ONNX's runner feeds them: data sets may hold TensorProtos.
            outputs = rep.run([_normalize_tensor(value) for value in inputs])
            expected = [_normalize_tensor(value) for value in expected]
            Runner.assert_similar_outputs(expected, outputs, rtol=case.rtol, atol=case.atol)
        return True
    except Exception:  # noqa: BLE001 - any failure is a failed case, as in ONNX's runner
        return False


class CommandLine:
    """An ONNX backend that runs each model with `rtx run --module=model.onnx` (files in, files out)."""

    def __init__(self, rtx: str) -> None:
        self.rtx = rtx

    def prepare(self, model, device="CPU"):
        return CommandLineRep(self.rtx, model)


class CommandLineRep:
    def __init__(self, rtx: str, model) -> None:
        self.rtx, self.model = rtx, model

    def run(self, inputs):
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            (folder / "model.onnx").write_bytes(self.model.SerializeToString())
            command = [self.rtx, "run", f"--module={folder / 'model.onnx'}"]
            for k, value in enumerate(inputs):
                command.append(f"--input={input_file(folder / f'input_{k}', value)}")
            outputs = [folder / f"output_{k}{output_suffix(output.type)}" for k, output in enumerate(self.model.graph.output)]
            command += [f"--output=@{path}" for path in outputs]
            subprocess.run(command, check=True, capture_output=True, timeout=120)
            return [read_output(path) for path in outputs]


def as_file_array(value: np.ndarray) -> np.ndarray:
    """An array `np.save` writes without pickling: ONNX's strings (objects) as numpy `str`."""
    if value.dtype != object:
        return value
    return np.vectorize(lambda s: s.decode() if isinstance(s, bytes) else s, otypes=[str])(value).astype(str)


def input_file(stem: Path, value) -> str:
    """The `--input` for one value: `(null)`, `@stem.npz` for a sequence, `@stem.npy`."""
    if value is None:
        return "(null)"
    if isinstance(value, list):
        np.savez(stem.with_suffix(".npz"), *[as_file_array(np.asarray(v)) for v in value])
        return f"@{stem.with_suffix('.npz')}"
    np.save(stem.with_suffix(".npy"), as_file_array(np.asarray(value)))
    return f"@{stem.with_suffix('.npy')}"


def output_suffix(type_proto) -> str:
    """`.npz` for a sequence (or an optional one), `.npy` for a tensor."""
    if type_proto.HasField("optional_type"):
        type_proto = type_proto.optional_type.elem_type
    return ".npz" if type_proto.HasField("sequence_type") else ".npy"


def read_output(path: Path):
    """An output file as ONNX's cases expect it: strings as objects, a sequence as a list."""
    if path.suffix == ".npz":
        with np.load(path) as archive:
            return [archive[name] for name in archive.files]
    array = np.load(path)
    return array.astype(object) if array.dtype.kind == "U" else array


def operators(cases) -> dict:
    """The operator each case tests, by case name: its model's one node; for a function's
    expansion (`test_celu_expanded`), the operator of the case it expands, marked "(expanded)"."""
    single = {case.name: case.model.graph.node[0].op_type for case in cases if len(case.model.graph.node) == 1}
    named = {}
    for case in cases:
        nodes = case.model.graph.node
        if len(nodes) == 1:
            named[case.name] = nodes[0].op_type
        else:
            base = case.name.replace("_expanded", "", 1)
            named[case.name] = f"{single.get(base, nodes[0].op_type if nodes else 'graph')} (expanded)"
    return named


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", help="write the per-operator table (Markdown) to this file")
    parser.add_argument("-k", default="", help="only the cases whose name contains this")
    parser.add_argument("--cli", help="also run each case with this `rtx` executable (`rtx run`)")
    args = parser.parse_args()

    backends = {"rtx": importlib.import_module("rtx.backend")}
    if args.cli:
        backends["rtx run"] = CommandLine(args.cli)
    try:
        backends = {"onnxruntime": importlib.import_module("onnxruntime.backend"), **backends}
    except ImportError:
        print("onnxruntime is not installed: rtx alone", file=sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [case for case in collect_testcases() if args.k in case.name]

    passed = {name: set() for name in backends}
    by_operator = collections.defaultdict(list)
    named = operators(cases)
    for case in cases:
        by_operator[named[case.name]].append(case.name)
        for name, backend in backends.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if passes(backend, case):
                    passed[name].add(case.name)

    print(f"{len(cases)} cases over {len(by_operator)} operators")
    for name in backends:
        print(f"{name:>12}: {len(passed[name])} passed")
    if "onnxruntime" in backends:
        both = passed["onnxruntime"] & passed["rtx"]
        print(f"rtx passes {len(both)} of the {len(passed['onnxruntime'])} cases onnxruntime passes")

    if args.table:
        names = list(backends)
        lines = ["| operator | cases | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
        for op in sorted(by_operator):
            cells = [str(sum(case in passed[name] for case in by_operator[op])) for name in names]
            lines.append(f"| {op} | {len(by_operator[op])} | " + " | ".join(cells) + " |")
        with open(args.table, "w") as out:
            out.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
