#!/usr/bin/env python3
"""Prepares the real model architectures that the `onnx` package ships (`backend/test/data/light/`:
ResNet-50, DenseNet-121, Inception v1 and v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet, ZFNet-512) for
side-by-side runs of rtx and IREE.

The light models keep their architecture but not their trained weights, so each weight is replaced by
seeded random values scaled to its fan-in (He initialisation; batch-norm statistics near identity),
which keeps activations finite through every layer and outputs non-trivial. For each model it writes,
under --out:

  NAME.onnx         the model with those weights
  NAME.input.npy    a seeded random input of the model's input shape
  NAME.mlir         `iree-import-onnx NAME.onnx`
  NAME.vmfb         `iree-compile` for llvm-cpu (`--iree-llvmcpu-target-cpu`, host by default)

Needs `onnx` and `numpy` importable by the Python that runs it, and the IREE tools (iree-import-onnx,
iree-compile) in --iree-tools (or on PATH):

  python3 -m venv target/onnx-venv && target/onnx-venv/bin/pip install onnx numpy
  target/onnx-venv/bin/python scripts/onnx-models.py --iree-tools "$(scripts/iree-tools.sh)"
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper


def light_models():
    folder = Path(onnx.__file__).parent / "backend/test/data/light"
    return {path.stem.removeprefix("light_"): path for path in sorted(folder.glob("light_*.onnx"))}


def batch_norm_roles(graph):
    """Initializer name -> 'scale' / 'bias' / 'mean' / 'var' for BatchNormalization inputs; the
    scale of a batch norm that ends a residual branch (its output added to another) is
    'residual_scale', kept small so that the sum does not double the activations' variance at
    every block (outputs would saturate after ResNet-50's sixteen)."""
    added = {name for node in graph.node if node.op_type in ("Add", "Sum") for name in node.input}
    roles = {}
    for node in graph.node:
        if node.op_type == "BatchNormalization":
            for name, role in zip(node.input[1:5], ("scale", "bias", "mean", "var")):
                roles[name] = role
            if node.output[0] in added:
                roles[node.input[1]] = "residual_scale"
    return roles


def random_weight(shape, dtype, role, rng):
    if role == "scale":
        return rng.uniform(0.8, 1.2, shape).astype(dtype)
    if role == "residual_scale":
        return rng.uniform(0.1, 0.3, shape).astype(dtype)
    if role == "var":
        return rng.uniform(0.8, 1.2, shape).astype(dtype)
    if role in ("bias", "mean"):
        return rng.normal(0.0, 0.05, shape).astype(dtype)
    if len(shape) <= 1:
        return rng.normal(0.0, 0.05, shape).astype(dtype)
    fan_in = int(np.prod(shape[1:]))
    return rng.normal(0.0, np.sqrt(2.0 / fan_in), shape).astype(dtype)


def with_random_weights(model, seed):
    """The model with each weight — a float initializer, or a `ConstantOfShape` fill of a constant
    shape, which is how the light models keep their size — replaced by seeded random values."""
    rng = np.random.default_rng(seed)
    graph = model.graph
    roles = batch_norm_roles(graph)
    initializers = {i.name: i for i in graph.initializer}
    fills = [n for n in graph.node if n.op_type == "ConstantOfShape" and n.input and n.input[0] in initializers]
    shape_names = {n.input[0] for n in fills}
    weights = []
    for node in fills:
        shape = tuple(int(d) for d in numpy_helper.to_array(initializers[node.input[0]]))
        weights.append(numpy_helper.from_array(random_weight(shape, np.float32, roles.get(node.output[0]), rng),
                                               node.output[0]))
    for initializer in graph.initializer:
        array = numpy_helper.to_array(initializer)
        if initializer.name in shape_names or not np.issubdtype(array.dtype, np.floating):
            continue  # shapes, axes, indices: structure, not weights
        weights.append(numpy_helper.from_array(random_weight(array.shape, array.dtype, roles.get(initializer.name), rng),
                                               initializer.name))
    kept = [i for i in graph.initializer if i.name not in shape_names and i.name not in {w.name for w in weights}]
    del graph.initializer[:]
    graph.initializer.extend(kept + weights)
    nodes = [n for n in graph.node if n not in fills]
    del graph.node[:]
    graph.node.extend(nodes)
    # Old IR versions list initializers among the inputs too: the fills' shapes go with them.
    inputs = [i for i in graph.input if i.name not in shape_names]
    del graph.input[:]
    graph.input.extend(inputs)
    # From IR version 4 on, initializers need not be inputs (the new weights are not).
    model.ir_version = max(model.ir_version, 4)
    return model


def input_shape(model):
    initializers = {i.name for i in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in value.type.tensor_type.shape.dim]
        return value.name, dims
    raise ValueError("the model has no non-initializer input")


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"onnx-models.py: {' '.join(map(str, command))} failed:\n{done.stderr[-4000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="target/onnx-models")
    parser.add_argument("--iree-tools", default=os.environ.get("RTX_IREE_TOOLS", ""))
    parser.add_argument("--target-cpu", default="host", help="--iree-llvmcpu-target-cpu (host, generic, ...)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--opset", type=int, default=17, help="the ONNX opset the importer upgrades the models to")
    parser.add_argument("--only", nargs="*", help="model names (default: all)")
    args = parser.parse_args()
    tool = lambda name: str(Path(args.iree_tools) / name) if args.iree_tools else name
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, path in light_models().items():
        if args.only and name not in args.only:
            continue
        model = with_random_weights(onnx.load(str(path)), args.seed)
        onnx.save(model, str(out / f"{name}.onnx"))
        input_name, shape = input_shape(model)
        rng = np.random.default_rng(args.seed + 1)
        np.save(out / f"{name}.input.npy", rng.uniform(0.0, 1.0, shape).astype(np.float32))
        run([tool("iree-import-onnx"), f"--opset-version={args.opset}", str(out / f"{name}.onnx"), "-o",
             str(out / f"{name}.mlir")])
        run([tool("iree-compile"), "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
             f"--iree-llvmcpu-target-cpu={args.target_cpu}", str(out / f"{name}.mlir"), "-o", str(out / f"{name}.vmfb")])
        print(f"{name}: input {input_name} {'x'.join(map(str, shape))}xf32 -> {out / name}.vmfb", flush=True)


if __name__ == "__main__":
    main()
