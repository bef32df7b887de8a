"""The API around invoke: reflection, zero-copy results, Function objects, releasing."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import numpy as np
import pytest

import rtx
from conftest import DIGITS, FIXTURES, REPO, digit, load


def test_function_reflection() -> None:
    module = rtx.Module.load(DIGITS / "mlp.vmfb")
    assert module.name == "module"
    assert list(module.functions) == ["predict", "__init"]
    predict = module.functions["predict"]
    assert predict.calling_convention == "0r_r"
    assert predict.arguments == (rtx.ValueKind.REF,) and predict.results == (rtx.ValueKind.REF,)
    assert predict.declaration == "sync func @predict(%input0: tensor<1x64xf32>) -> (%output0: tensor<1x10xf32>)"
    assert str(predict) == predict.declaration

    scalars = rtx.Module.load(FIXTURES / "vm" / "integer_math.vmfb").functions["cmp_i32"]
    assert scalars.arguments == (rtx.ValueKind.I32,) * 2 and scalars.results == (rtx.ValueKind.I32,) * 6

    fenced = rtx.Module.load(FIXTURES / "hal_run" / "async_embedded.vmfb").functions["scale"]
    assert fenced.fences == 2 and fenced.inputs == (rtx.ValueKind.REF, rtx.ValueKind.I32)
    assert len(fenced.arguments) == 4


def test_module_from_bytes_equals_load(digits: rtx.Context) -> None:
    module = rtx.Module.from_bytes((DIGITS / "mlp.vmfb").read_bytes())
    context = rtx.Context(device="local-sync", work_queue="s")
    context.add_module(module)
    np.testing.assert_array_equal(context.invoke("predict", digit(4))[0], digits.invoke("predict", digit(4))[0])
    # Qualified names and Function objects reach the same function.
    predict = context.function("module.predict")
    assert predict.signature.name == "predict"
    np.testing.assert_array_equal(predict(digit(4))[0], context.invoke("module.predict", digit(4))[0])


def test_results_share_rtx_memory_read_only_and_outlive_everything() -> None:
    context = load(DIGITS / "mlp.vmfb")
    [y] = context.invoke("predict", digit(7))
    assert not y.flags.owndata and not y.flags.writeable and y.base is not None
    with pytest.raises(ValueError):
        y[0, 0] = 1.0
    expected = y.copy()
    context.close()
    gc.collect()
    np.testing.assert_array_equal(y, expected)  # the view keeps its memory alive


def test_inputs_are_copied_so_later_changes_do_not_matter(digits: rtx.Context) -> None:
    x = digit(2).copy()
    future = digits.invoke_async("predict", x)
    x[:] = 0
    np.testing.assert_array_equal(future.result(timeout=60)[0], digits.invoke("predict", digit(2))[0])


def test_context_managers_release_and_refuse_later_use() -> None:
    with rtx.Module.load(DIGITS / "mlp.vmfb") as module, rtx.Context() as context:
        context.add_module(module)
        [y] = context.invoke("predict", digit(1))
    assert int(np.argmax(y)) == 1  # the module closed after the context took its reference
    with pytest.raises(rtx.FailedPreconditionError, match="closed"):
        _ = module.handle
    with pytest.raises(rtx.FailedPreconditionError, match="closed"):
        context.add_module(rtx.Module.load(DIGITS / "mlp.vmfb"))


def test_dropped_objects_are_collected() -> None:
    module = rtx.Module.load(DIGITS / "mlp.vmfb")
    context = rtx.Context()
    context.add_module(module)
    [y] = context.invoke("predict", digit(3))
    watched = [weakref.ref(context), weakref.ref(module), weakref.ref(y)]
    del context, module, y
    gc.collect()
    assert all(ref() is None for ref in watched)


def test_unsupported_result_types_are_refused_clearly() -> None:
    with pytest.raises(rtx.UnimplementedError, match=r"element type i4 \(0x10000004\) has no numpy dtype"):
        rtx.dtype(0x10000004)
    assert rtx.dtype(0x10000020) == np.int32  # signless integers read as signed


def test_exiting_with_calls_in_flight_is_clean(tmp_path) -> None:
    # Contexts left open, futures not waited for: the interpreter exits while rtx's workers
    # still call back into Python, which must neither abort nor hang.
    script = tmp_path / "exit_early.py"
    script.write_text(
        "import numpy as np, rtx\n"
        "ctx = rtx.Context(device='local-sync')\n"
        f"ctx.add_module(rtx.Module.load({str(DIGITS / 'mlp.vmfb')!r}))\n"
        "futures = [ctx.invoke_async('predict', np.ones((1, 64), np.float32)) for _ in range(300)]\n"
    )
    for _ in range(5):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "FATAL" not in done.stderr


def test_bef_modules_load_reflect_and_name_what_they_lack(tmp_path) -> None:
    # c-examples/bef_kernel.bef (from bef_kernel.mlir) calls the kernel `my.scale.i32`, which only
    # its C host registers.
    module = rtx.Module.load(REPO / "c-examples" / "bef_kernel.bef")
    signature = module.functions["scale_plus_two"]
    assert signature.arguments == (rtx.ValueKind.I32,) and signature.results == (rtx.ValueKind.I32,)
    with pytest.raises(rtx.NotFoundError, match="my.scale.i32"):
        rtx.Context(device=None).add_module(module)


def test_onnx_models_load_as_modules() -> None:
    # A model written with onnx.helper (tests/fixtures/onnx/generate.py) with the outputs ONNX's
    # reference evaluator gives; loaded from its file and from its bytes, imported in memory.
    folder = FIXTURES / "onnx" / "tiny"
    x, expected = np.load(folder / "arithmetic.input_0.npy"), np.load(folder / "arithmetic.output_0.npy")
    for module in (
        rtx.Module.load(folder / "arithmetic.onnx"),
        rtx.Module.from_bytes((folder / "arithmetic.onnx").read_bytes()),
    ):
        assert list(module.functions) == ["arithmetic"]
        context = rtx.Context(device=None, work_queue="s")
        context.add_module(module)
        [y] = context.invoke("arithmetic", x)
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(rtx.UnimplementedError, match=r"node `the_frobnicate` \(Frobnicate\)"):
        rtx.Module.load(FIXTURES / "onnx" / "errors" / "unsupported_operator.onnx")


@pytest.mark.parametrize("name", ["encoder", "unet", "mobilenet"])
def test_onnx_architectures_match_onnxruntime(name: str) -> None:
    # Architectures as users export them (tests/fixtures/onnx/architectures.py: int64 token ids
    # and a mask, symbolic batch and sequence dimensions) with the outputs onnxruntime computes.
    folder = FIXTURES / "onnx" / "architectures"
    inputs = [np.load(path) for path in sorted(folder.glob(f"{name}.input_*.npy"))]
    expected = [np.load(path) for path in sorted(folder.glob(f"{name}.output_*.npy"))]
    context = rtx.Context(device=None)
    context.add_module(rtx.Module.load(folder / f"{name}.onnx"))
    outputs = context.invoke(name, *inputs)
    assert len(outputs) == len(expected)
    for ours, theirs in zip(outputs, expected):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-4 * np.abs(theirs).max())


def test_memory_stats_count_a_models_memory_and_a_limit_holds_it() -> None:
    model = rtx.Module.load(FIXTURES / "onnx" / "architectures" / "mobilenet.onnx")
    image = np.load(FIXTURES / "onnx" / "architectures" / "mobilenet.input_0.npy")
    with rtx.Context(device=None, work_queue="s") as context:
        assert context.memory_stats() == rtx.MemoryStats(0, 0, 0)
        context.add_module(model)
        expected = context.invoke("mobilenet", image)[0]
        stats = context.memory_stats()
        assert stats.allocations > 0 and stats.peak_bytes >= stats.bytes_in_use > 0
    with rtx.Context(device=None, work_queue="s", memory_limit=stats.peak_bytes) as roomy:
        roomy.add_module(model)
        np.testing.assert_array_equal(roomy.invoke("mobilenet", image)[0], expected)
        assert roomy.memory_stats().peak_bytes <= stats.peak_bytes
    with rtx.Context(device=None, work_queue="s", memory_limit=stats.peak_bytes // 2) as tight:
        with pytest.raises(rtx.ResourceExhaustedError):
            tight.add_module(model)
            tight.invoke("mobilenet", image)
        assert tight.memory_stats().peak_bytes <= stats.peak_bytes // 2
    with pytest.raises(rtx.InvalidArgumentError):
        rtx.Context(device=None, memory_limit=0)
