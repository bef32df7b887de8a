"""``Context.execute_op``: one op by name on numpy arrays, through the context's ``cpu`` op handler
(TFRT's cpu ops, then every kernel: ``onnx.<Op>`` at the latest opset), matching numpy and the
same op in an imported ONNX graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rtx


def test_ops_take_and_give_numpy_arrays() -> None:
    context = rtx.Context(device=None)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, dtype=np.float32)
    [total] = context.execute_op("tfrt_test.add", a, b)
    np.testing.assert_array_equal(total, a + b)
    [moved] = context.execute_op("onnx.Transpose", a, perm=[1, 0])
    np.testing.assert_array_equal(moved, a.T)
    # alpha is a float attribute, transB an integer one.
    x = np.array([[2, 4]], dtype=np.float32)
    w = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    [y] = context.execute_op("onnx.Gemm", x, w, alpha=0.5, transB=1)
    np.testing.assert_array_equal(y, 0.5 * x @ w.T)
    [cast] = context.execute_op("onnx.Cast", a, to=7)  # TensorProto.INT64
    assert cast.dtype == np.int64
    np.testing.assert_array_equal(cast, a.astype(np.int64))
    [parts_a, parts_b] = context.execute_op("onnx.Split", a, np.array([1, 2]), axis=1, num_results=2)
    np.testing.assert_array_equal(parts_a, a[:, :1])
    np.testing.assert_array_equal(parts_b, a[:, 1:])


def test_an_eager_op_gives_what_the_op_gives_in_an_onnx_graph(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    # Integers: the importer runs ONNX's Transpose kernel, the one the eager op runs.
    nodes = [helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1])]
    graph = helper.make_graph(
        nodes,
        "transpose",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [4, 2, 3])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "transpose.onnx")
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    in_graph = rtx.Context(device=None)
    in_graph.add_module(rtx.Module.load(tmp_path / "transpose.onnx"))
    [expected] = in_graph.invoke("transpose", x)
    [eager] = rtx.Context(device=None).execute_op("onnx.Transpose", x, perm=[2, 0, 1])
    np.testing.assert_array_equal(eager, expected)
    np.testing.assert_array_equal(eager, x.transpose(2, 0, 1))


def test_execute_op_async_completes_a_future() -> None:
    context = rtx.Context(device=None)
    x = np.array([1, -2, 3], dtype=np.float32)
    future = context.execute_op_async("onnx.Relu", x)
    [y] = future.result(timeout=60)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_errors_name_the_op() -> None:
    context = rtx.Context(device=None)
    with pytest.raises(rtx.UnimplementedError, match="my.nothing was not supported"):
        context.execute_op("my.nothing", np.zeros(2, np.float32))
    with pytest.raises(rtx.NotFoundError, match="op_handler not found: gpu"):
        context.execute_op("onnx.Relu", np.zeros(2, np.float32), op_handler="gpu")
    with pytest.raises(rtx.InvalidArgumentError, match="tfrt_test.add"):
        context.execute_op("tfrt_test.add", np.zeros(2, np.float32), np.zeros(3, np.float32))
    with pytest.raises(rtx.InvalidArgumentError, match="onnx.Transpose"):
        context.execute_op("onnx.Transpose", np.zeros((2, 2), np.float32), perm=[0, 7])
    with pytest.raises(rtx.InvalidArgumentError, match="attribute 'perm' is a dict"):
        context.execute_op("onnx.Transpose", np.zeros((2, 2), np.float32), perm={})


def test_a_bef_function_registered_as_an_op() -> None:
    from conftest import FIXTURES

    context = rtx.Context(device=None)
    context.add_module(rtx.Module.load(FIXTURES / "bef" / "composite_op.bef"))
    context.register_composite_op("my.scale_and_shift", "scale_and_shift")
    x = np.array([[1, -2], [0.5, 3]], dtype=np.float32)
    [y] = context.execute_op("my.scale_and_shift", x)
    np.testing.assert_array_equal(y, 2 * x + x * x)
    with pytest.raises(rtx.AlreadyExistsError, match="my.scale_and_shift"):
        context.register_composite_op("my.scale_and_shift", "scale_and_shift")
    with pytest.raises(rtx.InvalidArgumentError, match="not a !tfrt.chain"):
        context.register_composite_op("my.scalar", "scalar")
