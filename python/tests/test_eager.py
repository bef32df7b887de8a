"""``Context.execute_op``: one op by name on numpy arrays, through the context's ``cpu`` op handler
(TFRT's cpu ops, then every kernel: ``onnx.<Op>`` at the latest opset), matching numpy and the
same op in an imported ONNX graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def _general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes ``execute_op`` take the ctypes path, as where ``rtx._native`` was not built."""
    import rtx.context

    monkeypatch.setattr(rtx.context, "_native", None)


def test_the_compiled_binding_is_built_and_used() -> None:
    # A package built here has it: python/setup.py compiles it, scripts/setup/prereqs.sh installs
    # the Python headers it needs.
    from rtx import _values

    assert _values.native is not None, "rtx._native was not built (python3-dev missing when the wheel was made?)"
    x = np.array([1, 2], dtype=np.float32)
    [y] = rtx.Context(device=None).execute_op("onnx.Relu", x)
    assert y.base is not None and type(y.base).__name__ == "memoryview", "a view of the result, not a copy"


@pytest.mark.parametrize(
    "dtype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
    + [np.longlong, np.float16, np.float32, np.float64, np.complex64, np.complex128],
)
def test_both_paths_give_the_same_arrays_for_every_element_type(dtype: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    context = rtx.Context(device=None)
    shapes = [(), (0,), (5,), (2, 3, 4), (1,) * 8, (1,) * 9 + (2,)]  # rank 9 or more: the general path
    cases = [np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dtype) for shape in shapes]
    fast = [context.execute_op("tfrt_test.identity", x)[0] for x in cases]
    _general_path(monkeypatch)
    general = [context.execute_op("tfrt_test.identity", x)[0] for x in cases]
    for x, a, b in zip(cases, fast, general):
        assert (a.dtype, a.shape) == (b.dtype, b.shape) == (x.dtype, x.shape)
        np.testing.assert_array_equal(a, x)
        np.testing.assert_array_equal(b, x)
        assert not a.flags.writeable


def test_arrays_the_binding_does_not_take_go_the_general_way() -> None:
    context = rtx.Context(device=None)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((4, 3), dtype=">f4")  # big-endian: no native buffer format
    for x in [a.T, a[:, ::2], [[1.0, 2.0], [3.0, 4.0]], np.float32(3), b, np.ones((2, 2), np.float32)[None]]:
        expected = np.asarray(x)
        [y] = context.execute_op("onnx.Identity", x)
        np.testing.assert_array_equal(y, expected)
        assert y.shape == expected.shape
    [y] = context.execute_op("tfrt_test.add", a, np.ascontiguousarray(a.T.T))
    np.testing.assert_array_equal(y, 2 * a)


def test_results_outlive_the_context_and_the_arguments() -> None:
    context = rtx.Context(device=None)
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    [y, z] = context.execute_op("onnx.Split", x, np.array([1, 2]), axis=1, num_results=2)
    x[:] = -1  # the op read a copy
    context.close()
    del context
    np.testing.assert_array_equal(y, [[0], [3]])
    np.testing.assert_array_equal(z, [[1, 2], [4, 5]])
    with pytest.raises(ValueError, match="read-only"):
        y[0, 0] = 7


def test_errors_come_back_the_same_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    for general in [False, True]:
        if general:
            _general_path(monkeypatch)
        context = rtx.Context(device=None)
        with pytest.raises(rtx.UnimplementedError, match="my.nothing was not supported"):
            context.execute_op("my.nothing", np.zeros(2, np.float32))
        with pytest.raises(rtx.InvalidArgumentError, match="tfrt_test.add"):
            context.execute_op("tfrt_test.add", np.zeros(2, np.float32), np.zeros(3, np.float32))
        with pytest.raises(rtx.InvalidArgumentError, match="onnx.Transpose") as raised:
            context.execute_op("onnx.Transpose", np.zeros((2, 2), np.float32), perm=[0, 7])
        # The op is named; the one-op function it runs as is not a place to point at.
        assert str(raised.value).startswith("INVALID_ARGUMENT: op `onnx.Transpose`: "), str(raised.value)
        context.close()
        with pytest.raises(rtx.FailedPreconditionError):
            context.execute_op("onnx.Relu", np.zeros(2, np.float32))
