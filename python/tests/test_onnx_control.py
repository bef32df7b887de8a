"""Sequences, optionals and control flow where ONNX's node suite says little: sequences in and out
of a graph (empty ones too), the sequence operators' corners (uneven splits, stacking, erasing,
positions out of range as errors that name the kernel), and a Loop whose condition stops it."""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np
import pytest
from onnx import TensorProto, helper

import rtx.backend
import rtx.errors

_SEQUENCE = helper.make_tensor_sequence_value_info
_TENSOR = helper.make_tensor_value_info


def _run(nodes: List[Any], inputs: List[Any], outputs: List[Any], feeds: Sequence[Any], opset: int = 17) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return rtx.backend.BackendRep(model).run(list(feeds))


def test_sequences_cross_the_graph_boundary_both_ways() -> None:
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((1, 3), np.float32)
    node = helper.make_node("SequenceInsert", ["s", "t"], ["out"])
    inputs = [_SEQUENCE("s", TensorProto.FLOAT, None), _TENSOR("t", TensorProto.FLOAT, None)]
    (out,) = _run([node], inputs, [_SEQUENCE("out", TensorProto.FLOAT, None)], [[a], b])
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_array_equal(out[0], a)
    np.testing.assert_array_equal(out[1], b)
    # An empty sequence in: the inserted tensor alone out.
    (alone,) = _run([node], inputs, [_SEQUENCE("out", TensorProto.FLOAT, None)], [[], b])
    assert len(alone) == 1


def test_sequence_operators_split_stack_and_erase() -> None:
    x = np.arange(10, dtype=np.int32).reshape(5, 2)
    nodes = [
        helper.make_node("SplitToSequence", ["x", "two"], ["parts"]),
        helper.make_node("SequenceErase", ["parts", "zero"], ["rest"]),
        helper.make_node("SequenceLength", ["rest"], ["n"]),
        helper.make_node("ConcatFromSequence", ["rest"], ["joined"], axis=0),
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["rows"], ["stacked"], axis=-1, new_axis=1),
    ]
    constants = [
        helper.make_node("Constant", [], ["two"], value=helper.make_tensor("v", TensorProto.INT64, [], [2])),
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("v", TensorProto.INT64, [], [0])),
    ]
    outputs = [_TENSOR("n", TensorProto.INT64, None), _TENSOR("joined", TensorProto.INT32, None),
               _TENSOR("stacked", TensorProto.INT32, None)]
    n, joined, stacked = _run(constants + nodes, [_TENSOR("x", TensorProto.INT32, [5, 2])], outputs, [x])
    # Parts of 2 rows, the last of 1; the first erased.
    assert int(n) == 2
    np.testing.assert_array_equal(joined, x[2:])
    # The rows stacked along a new last axis: the transpose.
    np.testing.assert_array_equal(stacked, x.T)


def test_a_position_out_of_range_is_an_error_naming_the_kernel() -> None:
    node = helper.make_node("SequenceAt", ["s", "i"], ["y"])
    inputs = [_SEQUENCE("s", TensorProto.FLOAT, None), _TENSOR("i", TensorProto.INT64, [])]
    with pytest.raises(rtx.errors.Error, match="onnx.SequenceAt: position 3 is outside a sequence of 1"):
        _run([node], inputs, [_TENSOR("y", TensorProto.FLOAT, None)], [[np.ones(2, np.float32)], np.array(3)])


def test_a_loop_stops_when_its_body_says_so() -> None:
    # y = y * 2 while y < 20, at most 100 times: 1 -> 32 after 5 iterations.
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["y_in", "two"], ["y_out"]),
            helper.make_node("Less", ["y_out", "limit"], ["go"]),
        ],
        "body",
        [
            _TENSOR("i", TensorProto.INT64, []),
            _TENSOR("c", TensorProto.BOOL, []),
            _TENSOR("y_in", TensorProto.INT64, []),
        ],
        [_TENSOR("go", TensorProto.BOOL, []), _TENSOR("y_out", TensorProto.INT64, []),
         _TENSOR("y_out", TensorProto.INT64, [])],
    )
    constants = [
        helper.make_node("Constant", [], [name], value=helper.make_tensor("v", TensorProto.INT64, [], [v]))
        for name, v in [("two", 2), ("limit", 20), ("trips", 100)]
    ]
    loop = helper.make_node("Loop", ["trips", "", "y"], ["last", "all"], body=body)
    last, every = _run(constants + [loop], [_TENSOR("y", TensorProto.INT64, [])],
                       [_TENSOR("last", TensorProto.INT64, None), _TENSOR("all", TensorProto.INT64, None)],
                       [np.array(1, np.int64)])
    assert int(last) == 32
    np.testing.assert_array_equal(every, np.array([2, 4, 8, 16, 32], np.int64))
