"""Wrong shapes, dtypes, names and counts raise the right rtx.Error subclasses, with messages
that say what was wrong; a failing program's vm.fail text and location come through."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import re
import threading
from typing import Optional

import iree.runtime as ireert
import numpy as np
import pytest

import rtx
from conftest import DIGITS, FIXTURES, Reference, digit, load


def test_every_error_is_an_rtx_error_with_its_status_code() -> None:
    for cls in rtx.Error.__subclasses__():
        error = cls("what went wrong")
        assert isinstance(error, rtx.Error) and error.message == "what went wrong"
        assert str(error) == f"{error.code.name}: what went wrong"
    assert len({cls.code for cls in rtx.Error.__subclasses__()}) == len(rtx.StatusCode) - 1  # all but OK


def test_wrong_shape(digits: rtx.Context) -> None:
    with pytest.raises(rtx.InvalidArgumentError) as caught:
        digits.invoke("predict", np.ones((2, 64), np.float32))
    assert caught.value.code == rtx.StatusCode.INVALID_ARGUMENT
    assert "input0 shape dimension 0 mismatch; expected 1 but have 2" in caught.value.message
    with pytest.raises(rtx.InvalidArgumentError, match="expected shape `1x64`, actual shape `64`"):
        digits.invoke("predict", np.ones(64, np.float32))


def test_wrong_dtype_the_program_refuses(digits: rtx.Context) -> None:
    with pytest.raises(rtx.InvalidArgumentError, match=r"input0 element type mismatch; expected f32 .* but have f64"):
        digits.invoke("predict", np.ones((1, 64)))
    with pytest.raises(rtx.InvalidArgumentError, match="but have si32"):
        digits.invoke("predict", np.ones((1, 64), np.int32))


@pytest.mark.parametrize(
    "value",
    [
        np.array([["a"] * 64]),
        np.array([[object()] * 64]),
        np.full((1, 64), np.datetime64("2026-01-01")),
        np.full((1, 64), datetime.timedelta(1), "m8[s]"),
        np.ones((1, 64), np.longdouble),
        np.zeros((1, 64), [("x", np.float32)]),
    ],
)
def test_dtypes_without_an_element_type_are_refused_before_the_call(digits: rtx.Context, value: np.ndarray) -> None:
    with pytest.raises(rtx.InvalidArgumentError, match=r"predict argument 0: numpy dtype .* has no rtx element type"):
        digits.invoke("predict", value)


def test_unknown_function_names_the_functions_there_are(digits: rtx.Context) -> None:
    with pytest.raises(rtx.NotFoundError, match=r"no function 'predicts' .*module.predict"):
        digits.invoke("predicts", digit(0))
    with pytest.raises(rtx.NotFoundError):
        digits.invoke("other.predict", digit(0))


def test_wrong_argument_count(digits: rtx.Context) -> None:
    with pytest.raises(
        rtx.InvalidArgumentError, match=r"predict takes 1 argument .*tensor<1x64xf32>.*but 2 were given"
    ):
        digits.invoke("predict", digit(0), digit(1))


def test_scalar_arguments_are_checked() -> None:
    context = load(FIXTURES / "vm" / "integer_math.vmfb", device=None)
    with pytest.raises(rtx.InvalidArgumentError, match="argument 1 is a scalar i32: 2147483648 is out of range"):
        context.invoke("add_i32", 1, 2**31)
    with pytest.raises(rtx.InvalidArgumentError, match="argument 0 is a scalar i32: expected an int, got float"):
        context.invoke("add_i32", 1.5, 2)
    with pytest.raises(rtx.InvalidArgumentError, match=r"argument 0 is a scalar i64, not an array of shape \(2,\)"):
        context.invoke("add_i64", np.array([1, 2]), 2)
    assert context.invoke("add_i64", np.int64(2**40), np.array(1)) == [2**40 + 1]
    floats = load(FIXTURES / "vm" / "float_math.vmfb", device=None)
    assert floats.invoke("add_f32", np.float32(1.5), np.array(2)) == [3.5]
    with pytest.raises(rtx.InvalidArgumentError, match="argument 1 is a scalar f32: expected a float, got str"):
        floats.invoke("add_f32", 1.0, "2")


@pytest.mark.parametrize(
    "function, args, error, text",
    [
        ("assert_positive", (-3,), rtx.FailedPreconditionError, "x must be positive"),
        ("check_status", (5,), rtx.NotFoundError, "status check failed"),
        ("fail_in_loop", (3, 10), rtx.FailedPreconditionError, "loop hit the failing iteration"),
    ],
)
def test_vm_fail_gives_its_code_text_and_location_as_iree(function: str, args: tuple, error: type, text: str) -> None:
    path = FIXTURES / "vm" / "failures.vmfb"
    with pytest.raises(error) as ours:
        load(path, device=None).invoke(function, *args)
    # The failing location: the source line where the module has debug locations, else the
    # function and bytecode offset.
    assert re.search(rf"(failures\.mlir:\d+:\d+|module\.{function}\+0x[0-9a-f]+): {text}", ours.value.message)
    with pytest.raises((RuntimeError, ValueError)) as theirs:
        Reference(path, "local-sync").invoke(function, *args)
    assert f"{ours.value.code.name}; {text}" in str(theirs.value)


def test_async_paths_raise_the_same_errors(digits: rtx.Context) -> None:
    with pytest.raises(rtx.InvalidArgumentError, match="shape dimension 0 mismatch"):
        digits.invoke_async("predict", np.ones((3, 64), np.float32)).result(timeout=60)

    async def wrong_dtype() -> None:
        await digits.invoke_awaitable("predict", np.ones((1, 64), np.float16))

    import asyncio

    with pytest.raises(rtx.InvalidArgumentError, match="element type mismatch"):
        asyncio.run(wrong_dtype())


def test_loading_failures(tmp_path) -> None:
    with pytest.raises(rtx.NotFoundError, match="missing.vmfb"):
        rtx.Module.load(tmp_path / "missing.vmfb")
    with pytest.raises(rtx.Error) as caught:
        rtx.Module.from_bytes(b"not a module at all")
    assert caught.value.code in (rtx.StatusCode.INVALID_ARGUMENT, rtx.StatusCode.DATA_LOSS)
    truncated = (DIGITS / "mlp.vmfb").read_bytes()[:200]
    with pytest.raises((rtx.InvalidArgumentError, rtx.DataLossError)):
        rtx.Module.from_bytes(truncated)


def test_context_failures() -> None:
    with pytest.raises(rtx.NotFoundError, match="no-such-device"):
        rtx.Context(device="no-such-device")
    with pytest.raises(rtx.InvalidArgumentError, match="work queue 'many'"):
        rtx.Context(work_queue="many")
    with pytest.raises(rtx.FailedPreconditionError, match="hal"):
        rtx.Context(device=None).add_module(rtx.Module.load(DIGITS / "mlp.vmfb"))
    context = load(DIGITS / "mlp.vmfb")
    with pytest.raises(rtx.AlreadyExistsError):
        context.add_module(rtx.Module.load(DIGITS / "mlp.vmfb"))
    context.close()
    with pytest.raises(rtx.FailedPreconditionError, match="the context is closed"):
        context.invoke("predict", digit(0))


def test_a_function_without_results_reports_its_failure_every_way_it_is_called() -> None:
    context = load(FIXTURES / "hal_run" / "checks_embedded.vmfb")
    assert context.invoke("add_ok") == []
    assert context.invoke_async("add_ok").result(timeout=60) == []
    context = load(FIXTURES / "vm" / "failures.vmfb", device=None)
    assert context.invoke("require_positive", 3) == []
    with pytest.raises(rtx.FailedPreconditionError, match="x must be positive"):
        context.invoke("require_positive", -2)
    with pytest.raises(rtx.FailedPreconditionError, match="x must be positive"):
        context.invoke_async("require_positive", -2).result(timeout=60)

    async def awaited() -> None:
        assert await context.invoke_awaitable("require_positive", 5) == []
        with pytest.raises(rtx.FailedPreconditionError, match="x must be positive"):
            await context.invoke_awaitable("require_positive", 0)

    asyncio.run(awaited())


def test_async_calls_on_a_single_threaded_queue_are_refused() -> None:
    context = rtx.Context(device="local-sync", work_queue="s")
    context.add_module(rtx.Module.load(DIGITS / "mlp.vmfb"))
    with pytest.raises(rtx.FailedPreconditionError, match="multi-threaded work queue"):
        context.invoke_async("predict", digit(0))

    async def awaited() -> None:
        with pytest.raises(rtx.FailedPreconditionError, match="multi-threaded work queue"):
            await context.invoke_awaitable("predict", digit(0))

    asyncio.run(awaited())
    assert len(context.invoke("predict", digit(0))) == 1


def test_dtype_mapping_is_iree_runtimes() -> None:
    mapped = 0
    for name, code in vars(ireert.HalElementType).items():
        if not name.isupper() or not int(code):
            continue
        try:
            theirs = np.dtype(ireert.HalElementType.map_to_dtype(code))
        except (TypeError, ValueError, KeyError):
            with pytest.raises(rtx.UnimplementedError, match="has no numpy dtype"):
                rtx.dtype(int(code))
            continue
        mapped += 1
        assert rtx.dtype(int(code)) == theirs, name
        if name.startswith(("SINT", "UINT", "FLOAT", "BFLOAT", "BOOL", "COMPLEX")):
            assert rtx.element_type(theirs) == int(code), name
    assert mapped >= 18


def test_invoke_on_a_worker_thread_is_refused_rather_than_blocking_it(digits: rtx.Context) -> None:
    # A future's done-callback runs on the rtx worker that completes the future (or here, when
    # the future completed before the callback was added: then it is tried again), and a worker
    # must not wait for work it may have to run itself.
    for _ in range(1000):
        outcome: "concurrent.futures.Future[Optional[BaseException]]" = concurrent.futures.Future()

        def on_done(_: object) -> None:
            if threading.current_thread() is threading.main_thread():
                outcome.set_result(None)
                return
            try:
                digits.invoke("predict", digit(0))
                outcome.set_exception(AssertionError("invoke ran on a worker thread"))
            except rtx.Error as error:
                outcome.set_result(error)

        digits.invoke_async("predict", digit(1)).add_done_callback(on_done)
        error = outcome.result(timeout=60)
        if error is not None:
            break
    assert isinstance(error, rtx.FailedPreconditionError), error
    assert "called from a thread of work queue" in error.message
