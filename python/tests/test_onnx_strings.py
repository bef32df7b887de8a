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


def test_operators_that_move_elements_move_strings() -> None:
    """Each operator against numpy's own indexing on the same array of str."""
    x = np.array([["a", "bb", "ccc"], ["dé", "", "f"]])
    i64 = lambda name, values: numpy_helper.from_array(np.array(values, np.int64), name)  # noqa: E731
    cases = [
        ("Reshape", ["x", "shape"], {}, [i64("shape", [3, 2])], x.reshape(3, 2)),
        ("Transpose", ["x"], {}, [], x.T),
        ("Gather", ["x", "idx"], {"axis": 1}, [i64("idx", [2, 0, 2])], x[:, [2, 0, 2]]),
        ("Slice", ["x", "starts", "ends"], {}, [i64("starts", [0, 1]), i64("ends", [1, 3])], x[0:1, 1:3]),
        ("Unsqueeze", ["x", "axes"], {}, [i64("axes", [0])], x[None]),
        ("Expand", ["x", "shape"], {}, [i64("shape", [2, 2, 3])], np.broadcast_to(x, (2, 2, 3))),
        ("Tile", ["x", "repeats"], {}, [i64("repeats", [1, 2])], np.tile(x, (1, 2))),
        ("Flatten", ["x"], {"axis": 0}, [], x.reshape(1, 6)),
    ]
    for op, inputs, attributes, initializers, expected in cases:
        node = helper.make_node(op, inputs, ["y"], **attributes)
        (y,) = _run([node], [_TENSOR("x", TensorProto.STRING, [2, 3])], [_TENSOR("y", TensorProto.STRING, None)],
                    [x], initializers)
        assert y.dtype == object and y.tolist() == expected.tolist(), op

    node = helper.make_node("Concat", ["x", "z"], ["y"], axis=0)
    z = np.array([["z1", "z2", "z3"]])
    (y,) = _run([node], [_TENSOR("x", TensorProto.STRING, [2, 3]), _TENSOR("z", TensorProto.STRING, [1, 3])],
                [_TENSOR("y", TensorProto.STRING, None)], [x, z])
    assert y.tolist() == np.concatenate([x, z]).tolist()
    node = helper.make_node("Where", ["c", "x", "z"], ["y"])
    c = np.array([[True, False, True], [False, False, True]])
    (y,) = _run([node], [_TENSOR("c", TensorProto.BOOL, [2, 3]), _TENSOR("x", TensorProto.STRING, [2, 3]),
                         _TENSOR("z", TensorProto.STRING, [1, 3])], [_TENSOR("y", TensorProto.STRING, None)], [c, x, z])
    assert y.tolist() == np.where(c, x, z).tolist()
    node = helper.make_node("Split", ["x"], ["p", "q"], axis=1, num_outputs=2)
    p, q = _run([node], [_TENSOR("x", TensorProto.STRING, [2, 3])],
                [_TENSOR("p", TensorProto.STRING, None), _TENSOR("q", TensorProto.STRING, None)], [x])
    assert p.tolist() == x[:, :2].tolist() and q.tolist() == x[:, 2:].tolist()
    node = helper.make_node("Shape", ["x"], ["y"])
    (shape,) = _run([node], [_TENSOR("x", TensorProto.STRING, [2, 3])], [_TENSOR("y", TensorProto.INT64, None)], [x])
    np.testing.assert_array_equal(shape, [2, 3])
    # Strings and numbers together are refused, naming the kernel.
    node = helper.make_node("Where", ["c", "x", "n"], ["y"])
    with pytest.raises(rtx.errors.Error, match="onnx.Where: it takes tensors of strings and of numbers together"):
        _run([node], [_TENSOR("c", TensorProto.BOOL, [2, 3]), _TENSOR("x", TensorProto.STRING, [2, 3]),
                      _TENSOR("n", TensorProto.FLOAT, [2, 3])], [_TENSOR("y", TensorProto.STRING, None)],
             [c, x, np.zeros((2, 3), np.float32)])


def test_cast_parses_and_prints_numbers_as_numpy_does() -> None:
    texts = np.array(["1.5", "-INF", "1E8", "nan", " 42 ", "9007199254740993"])
    for to, dtype in [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64), (TensorProto.INT64, None)]:
        node = helper.make_node("Cast", ["x"], ["y"], to=to)
        feeds = texts if dtype is not None else np.array([" 42 ", "9007199254740993", "-7"])
        (y,) = _run([node], [_TENSOR("x", TensorProto.STRING, None)], [_TENSOR("y", to, None)], [feeds])
        if dtype is None:
            assert y.dtype == np.int64 and y.tolist() == [42, 9007199254740993, -7]
        else:
            np.testing.assert_array_equal(y, np.array([float(t) for t in texts], dtype))
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)
    with pytest.raises(rtx.errors.Error, match="element 1 \\(`two`\\) is not a number"):
        _run([node], [_TENSOR("x", TensorProto.STRING, None)], [_TENSOR("y", TensorProto.FLOAT, None)],
             [np.array(["1", "two"])])
    numbers = {
        TensorProto.FLOAT: np.array([0.1, 1e6, 999999.0, -0.0, np.inf, 1e-5, 3.14159265], np.float32),
        TensorProto.DOUBLE: np.array([0.1, 1e15, 1e16, np.nan], np.float64),
        TensorProto.FLOAT16: np.array([0.1, 1024, 65504], np.float16),
        TensorProto.INT32: np.array([-3, 2**31 - 1], np.int32),
        TensorProto.BOOL: np.array([True, False]),
    }
    for kind, values in numbers.items():
        node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.STRING)
        (y,) = _run([node], [_TENSOR("x", kind, None)], [_TENSOR("y", TensorProto.STRING, None)], [values])
        assert y.tolist() == [str(v) for v in values], kind
