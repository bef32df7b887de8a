"""ONNX's node suite through ``rtx.backend``, run by ONNX's own backend-test runner.

The cases are the ones the ``onnx`` package generates (``collect_testcases``: every operator's
examples with their reference outputs), compared as ONNX's runner compares them. The cases rtx
passes are listed in ``onnx_node_passing.txt``; every other one is an expected failure, and an
expected failure that passes fails the run ("unexpected success") until it is added to the list,
so the count only goes up. ``RTX_ONNX_NODE_SUITE=all`` runs every case as a plain test instead,
to see which pass (``pytest -rA``).
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import onnx.backend.test
from onnx.backend.test.case.node import collect_testcases

import rtx.backend

PASSING = Path(__file__).with_name("onnx_node_passing.txt")


def _passing() -> set[str]:
    lines = (line.strip() for line in PASSING.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("#")}


with warnings.catch_warnings():
    # Generating the cases casts out-of-range floats on purpose (the Cast examples).
    warnings.simplefilter("ignore", RuntimeWarning)
    # The runner generates the node cases itself (the wheel ships no data for them).
    _suite = onnx.backend.test.BackendTest(rtx.backend, __name__)
    _cases = collect_testcases()

_names = {case.name for case in _cases}
_listed = _passing()
assert _listed <= _names, f"onnx_node_passing.txt names cases the suite lacks: {sorted(_listed - _names)[:5]}"
if os.environ.get("RTX_ONNX_NODE_SUITE") != "all":
    for _name in sorted(_names - _listed):
        _suite.xfail(f"^{re.escape(_name)}_cpu$")

# Only the generated node cases: the runner also offers the real models of onnx's data folder,
# which it would download. rtx.backend runs on the CPU: the runner's CUDA variant of each case,
# which it would skip, is taken out.
OnnxBackendNodeModelTest = _suite.test_cases["OnnxBackendNodeModelTest"]
for _attribute in [name for name in vars(OnnxBackendNodeModelTest) if name.endswith("_cuda")]:
    delattr(OnnxBackendNodeModelTest, _attribute)


def test_the_passing_list_is_not_empty() -> None:
    assert len(_listed) > 100, f"{PASSING} lists {len(_listed)} cases"
