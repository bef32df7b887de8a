"""The reductions, normalizations and losses where ONNX's node suite says nothing: opset 11's
flattening Softmax on a shape known only at run time, shapes with no elements (some of them
hostile), element types other than f32, and errors that name the kernel."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import numpy as np
import pytest
from onnx import helper

import rtx.errors
import rtx.backend


def _run(op: str, inputs: Sequence[np.ndarray], opset: int, outputs: int = 1, **attributes: Any) -> List[np.ndarray]:
    names = [f"x{i}" for i in range(len(inputs))]
    graph_inputs = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(x.dtype), [None] * x.ndim)
        for name, x in zip(names, inputs)
    ]
    graph_outputs = [helper.make_empty_tensor_value_info(f"y{i}") for i in range(outputs)]
    node = helper.make_node(op, names, [f"y{i}" for i in range(outputs)], **attributes)
    graph = helper.make_graph([node], op, graph_inputs, graph_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    # BackendRep, not run_model: ONNX's checker wants the outputs' types, which these leave to rtx.
    return list(rtx.backend.BackendRep(model).run(list(inputs)))


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_opset_11_softmax_flattens_a_shape_known_only_at_run_time() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    (y,) = _run("Softmax", [x], 11, axis=1)
    np.testing.assert_allclose(y, _softmax(x.reshape(2, 12), 1).reshape(2, 3, 4), rtol=1e-5)
    (hard,) = _run("Hardmax", [x.astype(np.float64)], 11, axis=1)
    flat = x.reshape(2, 12)
    np.testing.assert_array_equal(hard.reshape(2, 12), (np.arange(12) == flat.argmax(1)[:, None]).astype(np.float64))


def test_integers_reduce_exactly_and_floats_keep_their_type() -> None:
    big = np.array([[2**62, 2**62 - 1], [5, -7]], dtype=np.int64)
    (total,) = _run("ReduceSum", [big, np.array([1], np.int64)], 13, keepdims=0)
    np.testing.assert_array_equal(total, np.array([2**63 - 1, -2], np.int64))
    half = np.array([[1, 2], [3, 5]], np.float16)
    (mean,) = _run("ReduceMean", [half], 13, axes=[0])
    assert mean.dtype == np.float16
    np.testing.assert_array_equal(mean, np.array([[2, 3.5]], np.float16))
    (last,) = _run("ArgMax", [np.array([3, 9, 9, 1], np.uint8)], 13, select_last_index=1)
    np.testing.assert_array_equal(last, np.array([2], np.int64))


def test_layer_normalization_statistics_are_of_the_stash_type() -> None:
    x = np.array([[1, 3], [2, 6]], np.float16)
    y, mean, inverse = _run("LayerNormalization", [x, np.ones(2, np.float16)], 17, outputs=3)
    assert (y.dtype, mean.dtype, inverse.dtype) == (np.float16, np.float32, np.float32)
    np.testing.assert_allclose(mean, [[2], [4]])
    np.testing.assert_allclose(y, [[-1, 1], [-1, 1]], atol=1e-2)


def test_l1_normalization_divides_by_absolute_values() -> None:
    (y,) = _run("LpNormalization", [np.array([[3.0, -1.0]])], 22, p=1)
    np.testing.assert_allclose(y, [[0.75, -0.25]])


def test_tensors_with_no_elements_give_empty_or_identity_results() -> None:
    empty = np.empty((3, 0), np.float32)
    (total,) = _run("ReduceSum", [empty, np.array([1], np.int64)], 13)
    np.testing.assert_array_equal(total, np.zeros((3, 1), np.float32))
    (top,) = _run("ReduceMax", [empty.astype(np.int32)], 18)
    np.testing.assert_array_equal(top, np.full((1, 1), np.iinfo(np.int32).min))
    wide = np.empty((2**40, 0), np.float32)
    for op in ["Softmax", "LogSoftmax"]:
        (y,) = _run(op, [wide], 13, axis=1)
        assert y.shape == wide.shape
    (scan,) = _run("CumSum", [wide, np.array(0, np.int64)], 14)
    assert scan.shape == wide.shape


@pytest.mark.parametrize(
    "op, inputs, attributes, message",
    [
        ("ReduceSum", [np.empty((2**40, 0), np.float32), np.array([1], np.int64)], {}, "do not fit in memory"),
        ("ReduceSum", [np.ones((2, 3), np.float32), np.array([5], np.int64)], {}, "axis 5 is outside a rank of 2"),
        ("ArgMax", [np.empty((2, 0), np.float32)], {"axis": 1}, "has no elements"),
        ("CumSum", [np.ones(3, np.float32), np.array([0, 0], np.int64)], {}, "2 elements where one is expected"),
        ("GroupNormalization", [np.ones((1, 4, 2), np.float32)] + [np.ones(4, np.float32)] * 2,
         {"num_groups": 3}, "4 channels do not divide into 3 groups"),
        ("NegativeLogLikelihoodLoss", [np.zeros((2, 3), np.float32), np.array([0, 3], np.int64)], {},
         "target class 3 is outside [0, 3)"),
    ],
)
def test_bad_inputs_are_errors_naming_the_kernel(
    op: str, inputs: List[np.ndarray], attributes: Dict[str, Any], message: str
) -> None:
    with pytest.raises(rtx.errors.Error) as error:
        _run(op, inputs, 21, **attributes)
    assert f"onnx.{op}: " in str(error.value) and message in str(error.value)
