"""Recurrent layers, detection and the ``ai.onnx.ml`` operators where ONNX's node suite says
nothing: LSTM and GRU with named activations (a STRINGS attribute) and their alpha/beta, clip,
input_forget, linear_before_reset, both directions over sequences of their own lengths in
either layout with every output; the ``ai.onnx.ml`` domain beside the default one; Clip with
bounds known only at run time, BitCast, Dropout's mask, and errors that name the kernel."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

import numpy as np
import pytest
from onnx import helper

import rtx.backend
import rtx.errors


def _model(nodes: List[Any], inputs: Sequence[np.ndarray], outputs: int, opsets: Dict[str, int]) -> Any:
    graph_inputs = [
        helper.make_tensor_value_info(f"x{i}", helper.np_dtype_to_tensor_dtype(x.dtype), [None] * x.ndim)
        for i, x in enumerate(inputs)
    ]
    graph_outputs = [helper.make_empty_tensor_value_info(f"y{i}") for i in range(outputs)]
    graph = helper.make_graph(nodes, "test", graph_inputs, graph_outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])


def _run(
    op: str, inputs: Sequence[np.ndarray | None], opset: int = 22, outputs: int = 1, **attributes: Any
) -> List[np.ndarray]:
    names = ["" if x is None else f"x{i}" for i, x in enumerate(inputs)]
    present = [x for x in inputs if x is not None]
    # Inputs renumbered over those present.
    k = iter(range(len(present)))
    names = [name and f"x{next(k)}" for name in names]
    node = helper.make_node(op, names, [f"y{i}" for i in range(outputs)], **attributes)
    model = _model([node], present, outputs, {"": opset})
    # BackendRep, not run_model: ONNX's checker wants the outputs' types, which these leave to rtx.
    return list(rtx.backend.BackendRep(model).run(present))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _lstm(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: np.ndarray,
    lens: np.ndarray,
    h0: np.ndarray,
    c0: np.ndarray,
    p: np.ndarray,
    acts: List[Callable[[np.ndarray], np.ndarray]],
    clip: float,
    input_forget: bool,
) -> List[np.ndarray]:
    """ONNX's LSTM, layout 0, both directions (acts: f, g, h of each), written out."""
    seq, batch, _ = x.shape
    hidden = r.shape[-1]
    y = np.zeros((seq, 2, batch, hidden))
    y_h, y_c = h0.astype(np.float64).copy(), c0.astype(np.float64).copy()
    for d in range(2):
        f, g, h = acts[3 * d : 3 * d + 3]
        for n in range(batch):
            hs, cs = y_h[d, n].copy(), y_c[d, n].copy()
            steps = range(lens[n]) if d == 0 else reversed(range(lens[n]))
            for t in steps:
                gates = w[d] @ x[t, n] + r[d] @ hs + b[d, : 4 * hidden] + b[d, 4 * hidden :]
                i_, o_, f_, c_ = np.split(gates, 4)
                i = f(np.clip(i_ + p[d, :hidden] * cs, -clip, clip))
                forget = 1 - i if input_forget else f(np.clip(f_ + p[d, 2 * hidden :] * cs, -clip, clip))
                cs = forget * cs + i * g(np.clip(c_, -clip, clip))
                o = f(np.clip(o_ + p[d, hidden : 2 * hidden] * cs, -clip, clip))
                hs = o * h(cs)
                y[t, d, n] = hs
            y_h[d, n], y_c[d, n] = hs, cs
    return [y, y_h, y_c]


@pytest.mark.parametrize("input_forget", [0, 1])
def test_lstm_with_named_activations_both_ways_batch_first(input_forget: int) -> None:
    rng = np.random.default_rng(1)
    seq, batch, size, hidden = 4, 3, 2, 3
    x = rng.standard_normal((seq, batch, size)).astype(np.float32)
    w = rng.standard_normal((2, 4 * hidden, size)).astype(np.float32)
    r = rng.standard_normal((2, 4 * hidden, hidden)).astype(np.float32)
    b = rng.standard_normal((2, 8 * hidden)).astype(np.float32)
    lens = np.array([4, 2, 0], np.int32)
    h0 = rng.standard_normal((2, batch, hidden)).astype(np.float32)
    c0 = rng.standard_normal((2, batch, hidden)).astype(np.float32)
    p = rng.standard_normal((2, 3 * hidden)).astype(np.float32)
    # HardSigmoid takes alpha 0.3 and beta 0.4, LeakyRelu alpha 0.2, ScaledTanh alpha 1.5 and beta 0.5.
    acts = [
        lambda v: np.clip(0.3 * v + 0.4, 0, 1),
        np.tanh,
        lambda v: np.where(v < 0, 0.2 * v, v),
        _sigmoid,
        lambda v: 1.5 * np.tanh(0.5 * v),
        np.tanh,
    ]
    expected = _lstm(x, w, r, b, lens, h0, c0, p, acts, 2.0, bool(input_forget))
    batch_first = lambda v: np.swapaxes(v, 0, 1)  # noqa: E731
    y, y_h, y_c = _run(
        "LSTM",
        [batch_first(x), w, r, b, lens, batch_first(h0), batch_first(c0), p],
        outputs=3,
        hidden_size=hidden,
        direction="bidirectional",
        layout=1,
        clip=2.0,
        input_forget=input_forget,
        activations=["HardSigmoid", "Tanh", "LeakyRelu", "Sigmoid", "ScaledTanh", "Tanh"],
        activation_alpha=[0.3, 0.2, 1.5],
        activation_beta=[0.4, 0.5],
    )
    assert y.dtype == np.float32 and y.shape == (batch, seq, 2, hidden)
    np.testing.assert_allclose(y, np.transpose(expected[0], (2, 0, 1, 3)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y_h, batch_first(expected[1]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y_c, batch_first(expected[2]), rtol=1e-5, atol=1e-6)
    # An entry of length 0 keeps its initial state and outputs zeros.
    np.testing.assert_array_equal(y[2], 0)
    np.testing.assert_allclose(y_c[2], c0[:, 2], rtol=1e-6)


def test_gru_resets_after_the_recurrent_product_in_f64() -> None:
    rng = np.random.default_rng(2)
    seq, batch, size, hidden = 3, 2, 4, 2
    x = rng.standard_normal((seq, batch, size))
    w = rng.standard_normal((1, 3 * hidden, size))
    r = rng.standard_normal((1, 3 * hidden, hidden))
    b = rng.standard_normal((1, 6 * hidden))
    y, y_h = _run("GRU", [x, w, r, b], outputs=2, hidden_size=hidden, linear_before_reset=1, direction="reverse")
    hs = np.zeros((batch, hidden))
    expected = np.zeros((seq, 1, batch, hidden))
    wb, rb = np.split(b[0], 2)
    for t in reversed(range(seq)):
        xw = x[t] @ w[0].T + wb
        hr = hs @ r[0].T + rb
        z = _sigmoid(xw[:, :hidden] + hr[:, :hidden])
        reset = _sigmoid(xw[:, hidden : 2 * hidden] + hr[:, hidden : 2 * hidden])
        candidate = np.tanh(xw[:, 2 * hidden :] + reset * hr[:, 2 * hidden :])
        hs = (1 - z) * candidate + z * hs
        expected[t, 0] = hs
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, expected, rtol=1e-12)
    np.testing.assert_allclose(y_h[0], hs, rtol=1e-12)


def test_ml_operators_run_beside_the_default_domain() -> None:
    x = np.array([[-1, 2, 5], [3, 0, 7]], np.int32)
    nodes = [
        helper.make_node("Binarizer", ["x0"], ["t"], domain="ai.onnx.ml", threshold=2.5),
        helper.make_node("ArrayFeatureExtractor", ["t", "x1"], ["u"], domain="ai.onnx.ml"),
        helper.make_node("Neg", ["u"], ["y0"]),
    ]
    indices = np.array([2, 0], np.int64)
    model = _model(nodes, [x, indices], 1, {"": 17, "ai.onnx.ml": 3})
    (y,) = rtx.backend.BackendRep(model).run([x, indices])
    np.testing.assert_array_equal(y, np.array([[-1, 0], [-1, -1]], np.int32))
    unknown = _model([helper.make_node("Normalizer", ["x0"], ["y0"], domain="ai.onnx.ml")], [x], 1, {"ai.onnx.ml": 3})
    with pytest.raises(rtx.errors.Error, match="ai.onnx.ml.Normalizer"):
        rtx.backend.BackendRep(unknown)


def test_clip_bounds_known_only_at_run_time_bitcast_and_dropout_mask() -> None:
    x = np.array([-5, 0, 9], np.int16)
    (y,) = _run("Clip", [x, np.array(-2, np.int16), np.array(4, np.int16)], 13)
    np.testing.assert_array_equal(y, np.array([-2, 0, 4], np.int16))
    (y,) = _run("Clip", [np.array([1.5, -3.0], np.float32), None, np.array(1.0, np.float32)], 13)
    np.testing.assert_array_equal(y, np.array([1.0, -3.0], np.float32))
    (bits,) = _run("BitCast", [np.array([1.0, -2.0], np.float32)], 26, to=6)
    np.testing.assert_array_equal(bits, np.array([1.0, -2.0], np.float32).view(np.int32))
    data = np.arange(1, 201, dtype=np.float32)
    y, mask = _run("Dropout", [data, np.array(0.5, np.float32), np.array(True)], 13, outputs=2, seed=3)
    assert mask.dtype == np.bool_ and 0 < mask.sum() < 200
    np.testing.assert_array_equal(y, np.where(mask, data * 2, 0))
    y, mask = _run("Dropout", [data.astype(np.int64)], 13, outputs=2)
    np.testing.assert_array_equal(y, data.astype(np.int64))
    assert mask.all()


@pytest.mark.parametrize(
    ("op", "inputs", "attributes", "message"),
    [
        ("LSTM", [np.zeros((1, 1, 2), np.float32), np.zeros((1, 8, 3), np.float32), np.zeros((1, 8, 2), np.float32)],
         {"hidden_size": 2}, "W has the shape [1, 8, 3], not [1, 8, 2]"),
        ("RNN", [np.zeros((2, 1, 1), np.float32), np.ones((1, 1, 1), np.float32), np.ones((1, 1, 1), np.float32),
                 None, np.array([3], np.int32)], {}, "sequence_lens [3] is outside 0 to 2"),
        ("GRU", [np.zeros((1, 1, 1), np.float32), np.ones((1, 3, 1), np.float32), np.ones((1, 3, 1), np.float32)],
         {"activations": ["Sigmoid", "Gelu"]}, "the activation `Gelu` is not supported"),
        ("NonMaxSuppression", [np.zeros((1, 2, 4), np.float32), np.zeros((1, 1, 3), np.float32)], {},
         "are not [b, n, 4] and [b, c, n]"),
        ("Det", [np.zeros((2, 3), np.float32)], {}, "is not a stack of square matrices"),
        ("BitCast", [np.zeros(2, np.float32)], {"to": 7}, "cannot reinterpret"),
    ],
)
def test_errors_name_the_kernel(op: str, inputs: List[Any], attributes: Dict[str, Any], message: str) -> None:
    with pytest.raises(rtx.errors.Error) as error:
        _run(op, inputs, 26 if op == "BitCast" else 22, **attributes)
    assert f"onnx.{op}: " in str(error.value) and message in str(error.value), str(error.value)
