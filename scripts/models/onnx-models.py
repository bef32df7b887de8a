#!/usr/bin/env python3
"""Prepares the real model architectures that the `onnx` package ships (`backend/test/data/light/`:
ResNet-50, DenseNet-121, Inception v1 and v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet, ZFNet-512) for
side-by-side runs of rtx and IREE; with --built, architectures the package lacks instead, built here
layer by layer: MobileNetV2 (inverted residual blocks of depthwise convolutions), a BERT-style
transformer encoder (4 layers, 128 tokens, width 256, 4 heads), EfficientNet-B0 (squeeze-and-excite
blocks, SiLU), a U-Net (transposed convolutions, skip concatenations), a ViT (16x16 patches, 4 layers),
a TCN (dilated 1-D convolutions over 4000 samples), and GRU and LSTM sequence taggers (ONNX's recurrent
ops, which IREE's compiler makes a loop that records and runs a command buffer per time step).

The light models keep their architecture but not their trained weights, so each weight is replaced by
seeded random values scaled to its fan-in (He initialisation; batch-norm statistics near identity),
which keeps activations finite through every layer and outputs non-trivial. For each model it writes,
under --out:

  NAME.onnx         the model with those weights
  NAME.input.npy    a seeded random input of the model's input shape
  NAME.mlir         `iree-import-onnx NAME.onnx`
  NAME.vmfb         `iree-compile` for llvm-cpu (`--iree-llvmcpu-target-cpu`, host by default) with the
                    flags that make IREE's CPU code fast (FAST_FLAGS: convolutions as im2col GEMMs, data
                    tiling, IREE's microkernels; 1.2-7x faster modules than without), or without them
                    under --plain-flags

Needs `onnx` and `numpy` importable by the Python that runs it, and the IREE tools (iree-import-onnx,
iree-compile) in --iree-tools (or on PATH):

  python3 -m venv target/onnx-venv && target/onnx-venv/bin/pip install onnx numpy
  target/onnx-venv/bin/python scripts/models/onnx-models.py --iree-tools "$(scripts/setup/iree-tools.sh)"
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


# What makes IREE's CPU modules fast: convolutions lowered to GEMMs over im2col, operands tiled into
# the layouts the target's GEMM wants, and IREE's hand-written microkernels for those GEMMs.
FAST_FLAGS = ["--iree-global-opt-use-im2col-for-convs", "--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=all"]


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
    x = transformer_layers(b, rng, "input", layers, tokens, width, heads, hidden)
    return b.model("encoder", [1, tokens, width], x, [1, tokens, width], 20)


def transformer_layers(b, rng, x, layers, tokens, width, heads, hidden):
    """`layers` pre-norm transformer layers over `x` ([1, tokens, width]), added to builder `b`."""
    split = b.constant(np.array([1, tokens, heads, width // heads], np.int64))
    merge = b.constant(np.array([1, tokens, width], np.int64))
    scale = b.constant(np.float32(1 / np.sqrt(width // heads)))

    def norm(x):
        return b.node("LayerNormalization", [x, b.weight([width], "scale"), b.weight([width], "bias")], axis=-1)

    def dense(x, cin, cout):
        # Drawn as [cout, cin] so that the scale follows the fan-in; MatMul takes it as [cin, cout].
        weight = b.constant(random_weight((cout, cin), np.float32, None, rng).T.copy())
        return b.node("Add", [b.node("MatMul", [x, weight]), b.weight([cout], "bias")])

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
    return x


def efficientnet_b0(rng):
    """EfficientNet-B0 at 224x224 with batch norms folded: MobileNetV2's inverted residual blocks
    with 3x3 and 5x5 depthwise convolutions, SiLU (x * sigmoid(x)) and a squeeze-and-excite gate
    in each block."""
    b = GraphBuilder(rng)

    def conv(x, cin, cout, kernel=1, stride=1, group=1, silu=True):
        pad = kernel // 2
        y = b.node("Conv", [x, b.weight([cout, cin // group, kernel, kernel]), b.weight([cout], "bias")],
                   group=group, strides=[stride, stride], pads=[pad] * 4)
        return b.node("Mul", [y, b.node("Sigmoid", [y])]) if silu else y

    def squeeze_excite(x, channels, reduced):
        gate = conv(b.node("GlobalAveragePool", [x]), channels, reduced)
        return b.node("Mul", [x, b.node("Sigmoid", [conv(gate, reduced, channels, silu=False)])])

    x, cin = conv("input", 3, 32, 3, 2), 32
    for expansion, kernel, cout, blocks, first_stride in [(1, 3, 16, 1, 1), (6, 3, 24, 2, 2), (6, 5, 40, 2, 2),
                                                          (6, 3, 80, 3, 2), (6, 5, 112, 3, 1), (6, 5, 192, 4, 2),
                                                          (6, 3, 320, 1, 1)]:
        for index in range(blocks):
            stride, hidden = first_stride if index == 0 else 1, cin * expansion
            y = conv(x, cin, hidden) if expansion != 1 else x
            y = squeeze_excite(conv(y, hidden, hidden, kernel, stride, group=hidden), hidden, max(1, cin // 4))
            y = conv(y, hidden, cout, silu=False)
            x, cin = (b.node("Add", [x, y]) if stride == 1 and cin == cout else y), cout
    x = b.node("Flatten", [b.node("GlobalAveragePool", [conv(x, cin, 1280)])])
    logits = b.node("Gemm", [x, b.weight([1000, 1280]), b.weight([1000], "bias")], transB=1)
    return b.model("efficientnet_b0", [1, 3, 224, 224], logits, [1, 1000], 17)


def unet(rng, base=16, depth=4, size=128):
    """A U-Net for two-class segmentation of a 128x128 image: two 3x3 convolutions per level, max
    pooling down, 2x2 transposed convolutions up, each joined to its level's features by Concat."""
    b = GraphBuilder(rng)

    def conv(x, cin, cout):
        return b.node("Relu", [b.node("Conv", [x, b.weight([cout, cin, 3, 3]), b.weight([cout], "bias")], pads=[1] * 4)])

    skips, x, cin = [], "input", 3
    for level in range(depth):
        cout = base << level
        x = conv(conv(x, cin, cout), cout, cout)
        skips.append((x, cout))
        x, cin = b.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2]), cout
    x, cin = conv(conv(x, cin, 2 * cin), 2 * cin, 2 * cin), 2 * cin
    for skip, channels in reversed(skips):
        up = b.node("ConvTranspose", [x, b.weight([cin, channels, 2, 2]), b.weight([channels], "bias")], strides=[2, 2])
        x, cin = conv(conv(b.node("Concat", [up, skip], axis=1), 2 * channels, channels), channels, channels), channels
    out = b.node("Conv", [x, b.weight([2, cin, 1, 1]), b.weight([2], "bias")])
    return b.model("unet", [1, 3, size, size], out, [1, 2, size, size], 17)


def vit(rng, layers=4, width=192, heads=3, hidden=768, patch=16, size=224):
    """A ViT: 16x16 patches embedded by a strided convolution, then the encoder's pre-norm layers
    over the 196 patch tokens, normalized and mean-pooled into 1000 logits."""
    b = GraphBuilder(rng)
    tokens = (size // patch) ** 2
    x = b.node("Conv", ["input", b.weight([width, 3, patch, patch]), b.weight([width], "bias")], strides=[patch, patch])
    x = b.node("Transpose", [b.node("Reshape", [x, b.constant(np.array([1, width, tokens], np.int64))])], perm=[0, 2, 1])
    x = transformer_layers(b, rng, x, layers, tokens, width, heads, hidden)
    x = b.node("LayerNormalization", [x, b.weight([width], "scale"), b.weight([width], "bias")], axis=-1)
    pooled = b.node("ReduceMean", [x, b.constant(np.array([1], np.int64))], keepdims=0)
    logits = b.node("Gemm", [pooled, b.weight([1000, width]), b.weight([1000], "bias")], transB=1)
    return b.model("vit", [1, 3, size, size], logits, [1, 1000], 20)


def tcn(rng, channels=64, length=4000, layers=8):
    """A temporal convolutional network over 4000 samples of one channel: residual layers of
    3-tap convolutions dilated 1, 2, 4, 8, twice over, then 8 outputs per sample."""
    b = GraphBuilder(rng)
    x = b.node("Relu", [b.node("Conv", ["input", b.weight([channels, 1, 3]), b.weight([channels], "bias")], pads=[1, 1])])
    for layer in range(layers):
        dilation = 2 ** (layer % 4)
        y = b.node("Conv", [x, b.weight([channels, channels, 3]), b.weight([channels], "bias")],
                   dilations=[dilation], pads=[dilation, dilation])
        x = b.node("Add", [x, b.node("Relu", [y])])
    out = b.node("Conv", [x, b.weight([8, channels, 1]), b.weight([8], "bias")])
    return b.model("tcn", [1, 1, length], out, [1, 8, length], 17)


def recurrent_tagger(rng, op, gates, name, steps, features, hidden, classes=16, **attributes):
    """A tagger over `steps` time steps of `features`: one ONNX GRU or LSTM layer (`gates` weight
    blocks per step), then logits for each step."""
    b = GraphBuilder(rng)
    weights = [b.weight([1, gates * hidden, features]), b.weight([1, gates * hidden, hidden]),
               b.weight([1, 2 * gates * hidden], "bias")]
    y = b.node(op, ["input", *weights], hidden_size=hidden, **attributes)
    y = b.node("Squeeze", [y, b.constant(np.array([1], np.int64))])
    weight = b.constant(random_weight((classes, hidden), np.float32, None, rng).T.copy())
    return b.model(name, [steps, 1, features], b.node("MatMul", [y, weight]), [steps, 1, classes], 17)


def built_models(seed):
    """Name -> a function that builds the model, with weights drawn from its own seeded stream."""
    rng = lambda offset: np.random.default_rng(seed + offset)
    return {"mobilenet_v2": lambda: mobilenet_v2(rng(0)),
            "encoder": lambda: encoder(rng(1)),
            "efficientnet_b0": lambda: efficientnet_b0(rng(2)),
            "unet": lambda: unet(rng(3)),
            "vit": lambda: vit(rng(4)),
            "tcn": lambda: tcn(rng(5)),
            "gru_tagger": lambda: recurrent_tagger(rng(6), "GRU", 3, "gru_tagger", 64, 64, 128, linear_before_reset=1),
            "lstm_tagger": lambda: recurrent_tagger(rng(7), "LSTM", 4, "lstm_tagger", 32, 40, 96)}


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
    parser.add_argument("--plain-flags", action="store_true", help="compile without FAST_FLAGS (iree-compile's defaults)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--opset", type=int, default=17, help="the ONNX opset the importer upgrades the models to")
    parser.add_argument("--only", nargs="*", help="model names (default: all)")
    parser.add_argument("--built", action="store_true", help="the architectures built here, not the light models")
    parser.add_argument("--onnx-only", action="store_true",
                        help="NAME.onnx and NAME.input.npy alone (what scripts/bench/onnx-vs-onnxruntime.py needs)")
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
        if args.onnx_only:
            print(f"{name}: input {input_name} {'x'.join(map(str, shape))}xf32 -> {out / name}.onnx", flush=True)
            continue
        run([tool("iree-import-onnx"), f"--opset-version={args.opset}", str(out / f"{name}.onnx"), "-o",
             str(out / f"{name}.mlir")])
        run([tool("iree-compile"), "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
             f"--iree-llvmcpu-target-cpu={args.target_cpu}", *([] if args.plain_flags else FAST_FLAGS),
             str(out / f"{name}.mlir"), "-o", str(out / f"{name}.vmfb")])
        print(f"{name}: input {input_name} {'x'.join(map(str, shape))}xf32 -> {out / name}.vmfb", flush=True)


if __name__ == "__main__":
    main()
