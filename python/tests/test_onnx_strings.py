"""String tensors where ONNX's node suite says little: strings in and out of a graph (str, bytes
and object arrays; empty and non-ASCII ones), string initializers and Constant nodes, a string
Identity at the boundary, LabelEncoder from strings to numbers and back, and a bad pattern as an
error naming the kernel."""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import rtx
import rtx.backend
import rtx.errors

_TENSOR = helper.make_tensor_value_info


def _run(
    nodes: List[Any], inputs: List[Any], outputs: List[Any], feeds: Sequence[Any], initializers: List[Any] = ()
) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("ai.onnx.ml", 4)]
    )
    return rtx.backend.BackendRep(model).run(list(feeds))


def test_strings_cross_the_graph_boundary_as_str_bytes_and_objects() -> None:
    node = helper.make_node("Identity", ["s"], ["out"])
    io = ([_TENSOR("s", TensorProto.STRING, None)], [_TENSOR("out", TensorProto.STRING, None)])
    for feed in (
        np.array([["a", "été"], ["", "z"]]),
        np.array([[b"a", "été".encode()], [b"", b"z"]]),
        np.array([["a", "été"], ["", "z"]], dtype=object),
    ):
        (out,) = _run([node], *io, [feed])
        assert out.dtype == object and out.shape == (2, 2)
        assert out.tolist() == [["a", "été"], ["", "z"]]
    (empty,) = _run([node], *io, [np.array([], dtype=object).reshape(0, 3)])
    assert empty.shape == (0, 3) and empty.dtype == object
    (scalar,) = _run([node], *io, [np.array("one", dtype=object)])
    assert scalar.shape == () and scalar[()] == "one"


def test_a_module_takes_strings_through_context_invoke() -> None:
    node = helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="[a-z]+@example\\.com")
    graph = helper.make_graph(
        [node], "matches", [_TENSOR("x", TensorProto.STRING, [3])], [_TENSOR("y", TensorProto.BOOL, [3])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    context = rtx.Context(device=None)
    context.add_module(rtx.Module.from_bytes(model.SerializeToString()))
    (matched,) = context.invoke("matches", np.array(["me@example.com", "Me@example.com", "me@example.org"]))
    np.testing.assert_array_equal(matched, [True, False, False])


def test_string_initializers_and_constants_feed_kernels() -> None:
    suffix = helper.make_tensor("suffix", TensorProto.STRING, [2], [b"!", b"?"])
    nodes = [
        helper.make_node("Constant", [], ["prefix"], value_strings=["<", ">"]),
        helper.make_node("StringConcat", ["prefix", "x"], ["t"]),
        helper.make_node("StringConcat", ["t", "suffix"], ["out"]),
        helper.make_node("Equal", ["out", "expected"], ["same"]),
    ]
    inputs = [_TENSOR("x", TensorProto.STRING, [2]), _TENSOR("expected", TensorProto.STRING, [2])]
    outputs = [_TENSOR("out", TensorProto.STRING, [2]), _TENSOR("same", TensorProto.BOOL, [2])]
    out, same = _run(nodes, inputs, outputs, [np.array(["a", "b"]), np.array(["<a!", "<b!"])], [suffix])
    assert out.tolist() == ["<a!", ">b?"]
    np.testing.assert_array_equal(same, [True, False])


def test_label_encoder_maps_strings_to_numbers_and_back() -> None:
    to_ints = helper.make_node(
        "LabelEncoder", ["x"], ["ids"], domain="ai.onnx.ml", keys_strings=["a", "b"], values_int64s=[1, 2],
        default_int64=-7,
    )
    keys = numpy_helper.from_array(np.array([1, 2], np.int64), "keys_tensor")
    values = helper.make_tensor("values_tensor", TensorProto.STRING, [2], [b"one", b"two"])
    default = helper.make_tensor("default_tensor", TensorProto.STRING, [1], [b"?"])
    back = helper.make_node(
        "LabelEncoder", ["ids"], ["names"], domain="ai.onnx.ml", keys_tensor=keys, values_tensor=values,
        default_tensor=default,
    )
    inputs = [_TENSOR("x", TensorProto.STRING, [3])]
    outputs = [_TENSOR("ids", TensorProto.INT64, [3]), _TENSOR("names", TensorProto.STRING, [3])]
    ids, names = _run([to_ints, back], inputs, outputs, [np.array(["b", "c", "a"])])
    np.testing.assert_array_equal(ids, np.array([2, -7, 1], np.int64))
    assert names.tolist() == ["two", "?", "one"]


def test_a_bad_pattern_is_an_error_naming_the_kernel() -> None:
    node = helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="(unclosed")
    with pytest.raises(rtx.errors.Error, match="onnx.RegexFullMatch"):
        _run([node], [_TENSOR("x", TensorProto.STRING, [1])], [_TENSOR("y", TensorProto.BOOL, [1])],
             [np.array(["x"])])


def test_a_string_input_of_another_shape_is_refused_naming_it() -> None:
    node = helper.make_node("Identity", ["s"], ["out"])
    io = ([_TENSOR("s", TensorProto.STRING, [3])], [_TENSOR("out", TensorProto.STRING, [3])])
    with pytest.raises(rtx.errors.InvalidArgumentError, match="input `s` has shape"):
        _run([node], *io, [np.array(["a", "b"])])
    (out,) = _run([node], *io, [np.array(["a", "b", "c"])])
    assert out.tolist() == ["a", "b", "c"]
