#!/usr/bin/env python3
"""Seeds for the `onnx_model` fuzz target: every case of ONNX's node suite (as the installed `onnx`
package generates it) whose inputs are plain tensors, with its first data set's inputs made
initializers, so that the model runs its kernels without arguments; plus the models of
tests/fixtures/onnx as they are. Writes fuzz/corpus/onnx_model/.

    target/onnx-venv/bin/python fuzz/onnx_seeds.py
"""

import shutil
import warnings
from pathlib import Path

import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases

HERE = Path(__file__).parent
OUT = HERE / "corpus" / "onnx_model"


def constant_inputs(case):
    """The case's model with its first data set's inputs as initializers, or None."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    inputs, _ = case.data_sets[0]
    graph = model.graph
    if len(inputs) != len(graph.input):
        return None
    for info, value in zip(list(graph.input), inputs):
        if not hasattr(value, "dtype") or value.dtype == object:
            return None
        graph.initializer.append(numpy_helper.from_array(value, info.name))
    del graph.input[:]
    return model


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    written = 0
    for case in cases:
        model = constant_inputs(case) if case.data_sets else None
        if model is not None and model.ByteSize() < 65536:
            (OUT / f"{case.name}.onnx").write_bytes(model.SerializeToString())
            written += 1
    for model in (HERE.parent / "tests" / "fixtures" / "onnx").glob("*/*.onnx"):
        shutil.copy(model, OUT / f"fixture_{model.name}")
        written += 1
    print(f"{written} seeds in {OUT}")


if __name__ == "__main__":
    main()
