#!/usr/bin/env python3
"""ONNX's node suite on rtx and on onnxruntime, side by side: how many cases each passes, and per
operator (the table of docs/ONNX.md).

The cases are the ones the installed `onnx` package generates (`collect_testcases`), each run by
every backend on each of its data sets and compared as ONNX's own runner compares
(`Runner.assert_similar_outputs`: same shape and dtype, values within the case's rtol/atol).

    python3 -m venv target/onnx-venv && target/onnx-venv/bin/pip install onnx==1.23.2 onnxruntime==1.31.1 numpy
    target/onnx-venv/bin/pip install ./python       # rtx itself, with its library
    target/onnx-venv/bin/python scripts/check/onnx-node-suite.py [--table docs/ONNX.md.table] [-k SUBSTRING]

Prints the totals and, with --table, writes the per-operator table in Markdown.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import sys
import warnings

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


def operator(case) -> str:
    """The operator a case tests: its model's one node, or the first node of an expanded function."""
    nodes = case.model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else f"{nodes[0].op_type} (as a function)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", help="write the per-operator table (Markdown) to this file")
    parser.add_argument("-k", default="", help="only the cases whose name contains this")
    args = parser.parse_args()

    backends = {"rtx": importlib.import_module("rtx.backend")}
    try:
        backends = {"onnxruntime": importlib.import_module("onnxruntime.backend"), **backends}
    except ImportError:
        print("onnxruntime is not installed: rtx alone", file=sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [case for case in collect_testcases() if args.k in case.name]

    passed = {name: set() for name in backends}
    by_operator = collections.defaultdict(list)
    for case in cases:
        by_operator[operator(case)].append(case.name)
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
