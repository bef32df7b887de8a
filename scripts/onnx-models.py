#!/usr/bin/env python3
"""Prepares the real model architectures that the `onnx` package ships (`backend/test/data/light/`:
ResNet-50, DenseNet-121, Inception v1 and v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet, ZFNet-512) for
side-by-side runs of rtx and IREE; with --built, two architectures the package lacks instead, built
here layer by layer: MobileNetV2 (inverted residual blocks of depthwise convolutions) and a BERT-style
transformer encoder (4 layers, 128 tokens, width 256, 4 heads).

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
from onnx import TensorProto, helper, numpy_helper


def light_models():
    folder = Path(onnx.__file__).parent / "backend/test/data/light"
    return {path.stem.removeprefix("light_"): path for path in sorted(folder.glob("light_*.onnx"))}


class GraphBuilder:
    """Nodes and seeded weights of a graph being built, with fresh value names."""

    def __init__(self, rng):
        self.rng, self.nodes, self.weights, self.count = rng, [], [], 0

    def constant(self, array):
        self.count += 1
        name = f"c{self.count}"
        self.weights.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape, role=None):
        return self.constant(random_weight(tuple(shape), np.float32, role, self.rng))

    def node(self, op, inputs, **attributes):
        self.count += 1
        name = f"v{self.count}"
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attributes))
        return name

    def model(self, name, input_shape, output, output_shape, opset):
        graph = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape)],
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, output_shape)], self.weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def mobilenet_v2(rng):
    """MobileNetV2 at 224x224 as exported for inference (batch norms folded into the convolutions):
    (expansion, channels, blocks, stride) as in the paper, ReLU6 as Clip, a residual add wherever a
    block keeps its shape."""
    b = GraphBuilder(rng)
    zero, six = b.constant(np.float32(0)), b.constant(np.float32(6))

    def conv(x, cin, cout, kernel=1, stride=1, group=1, relu6=True):
        pad = kernel // 2
        y = b.node("Conv", [x, b.weight([cout, cin // group, kernel, kernel]), b.weight([cout], "bias")],
                   group=group, strides=[stride, stride], pads=[pad] * 4)
        return b.node("Clip", [y, zero, six]) if relu6 else y

    x, cin = conv("input", 3, 32, 3, 2), 32
    for expansion, cout, blocks, first_stride in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                                                  (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for index in range(blocks):
            stride, hidden = first_stride if index == 0 else 1, cin * expansion
            y = conv(x, cin, hidden) if expansion != 1 else x
            y = conv(y, hidden, hidden, 3, stride, group=hidden)
            y = conv(y, hidden, cout, relu6=False)
            x, cin = (b.node("Add", [x, y]) if stride == 1 and cin == cout else y), cout
    x = b.node("Flatten", [b.node("GlobalAveragePool", [conv(x, cin, 1280)])])
    logits = b.node("Gemm", [x, b.weight([1000, 1280]), b.weight([1000], "bias")], transB=1)
    return b.model("mobilenet_v2", [1, 3, 224, 224], logits, [1, 1000], 17)


def encoder(rng, layers=4, tokens=128, width=256, heads=4, hidden=1024):
    """A BERT-style transformer encoder over token embeddings: pre-norm layers of multi-head
    self-attention and a GELU feed-forward block, each with a residual add."""
    b = GraphBuilder(rng)
    split = b.constant(np.array([1, tokens, heads, width // heads], np.int64))
    merge = b.constant(np.array([1, tokens, width], np.int64))
    scale = b.constant(np.float32(1 / np.sqrt(width // heads)))

    def norm(x):
        return b.node("LayerNormalization", [x, b.weight([width], "scale"), b.weight([width], "bias")], axis=-1)

    def dense(x, cin, cout):
        # Drawn as [cout, cin] so that the scale follows the fan-in; MatMul takes it as [cin, cout].
        weight = b.constant(random_weight((cout, cin), np.float32, None, rng).T.copy())
        return b.node("Add", [b.node("MatMul", [x, weight]), b.weight([cout], "bias")])

    x = "input"
    for _ in range(layers):
        y = norm(x)
        q, k, v = (b.node("Reshape", [dense(y, width, width), split]) for _ in range(3))
        q, v = (b.node("Transpose", [t], perm=[0, 2, 1, 3]) for t in (q, v))
        k = b.node("Transpose", [k], perm=[0, 2, 3, 1])
        attention = b.node("Softmax", [b.node("Mul", [b.node("MatMul", [q, k]), scale])], axis=-1)
        y = b.node("Reshape", [b.node("Transpose", [b.node("MatMul", [attention, v])], perm=[0, 2, 1, 3]), merge])
        x = b.node("Add", [x, dense(y, width, width)])
        y = dense(b.node("Gelu", [dense(norm(x), width, hidden)]), hidden, width)
        x = b.node("Add", [x, y])
    return b.model("encoder", [1, tokens, width], x, [1, tokens, width], 20)


def built_models(seed):
    """Name -> a function that builds the model, with weights drawn from its own seeded stream."""
    return {"mobilenet_v2": lambda: mobilenet_v2(np.random.default_rng(seed)),
            "encoder": lambda: encoder(np.random.default_rng(seed + 1))}


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
    parser.add_argument("--built", action="store_true", help="the architectures built here, not the light models")
    args = parser.parse_args()
    tool = lambda name: str(Path(args.iree_tools) / name) if args.iree_tools else name
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.built:
        models = built_models(args.seed)
    else:
        models = {name: lambda path=path: with_random_weights(onnx.load(str(path)), args.seed)
                  for name, path in light_models().items()}
    for name, build in models.items():
        if args.only and name not in args.only:
            continue
        model = build()
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
