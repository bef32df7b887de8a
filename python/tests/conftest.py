"""Shared fixtures: the repository's compiled programs and iree.runtime as the reference; skips
said where the test command counts them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List, NoReturn

import iree.runtime as ireert
import numpy as np
import pytest

import rtx

REPO = Path(__file__).resolve().parents[2]
DIGITS = REPO / "models" / "digits"
FIXTURES = REPO / "tests" / "fixtures"


def skip(need: str, why: str) -> NoReturn:
    """Skips the running test because this machine lacks ``need`` (``vulkan-device``, say: the
    needs the Rust tests name). scripts/test.sh lists every skip of its run and decides whether
    it is allowed there."""
    pytest.skip(f"[{need}] {why}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Appends each skip to ``RTX_SKIP_LOG`` as ``SKIP [need] where: why``, the form of the Rust
    tests' skips (pytest's ``-rs`` prints them in its summary). Expected failures (the ONNX node
    suite's) ran, and are not skips."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    need, _, why = reason.partition("] ") if reason.startswith("[") else ("[unnamed", "", reason)
    log = os.environ.get("RTX_SKIP_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"SKIP {need}] python {report.nodeid}: {why}\n")


def digit(n: int) -> np.ndarray:
    """Sample digit ``n`` (1x64 float32) of the digits model."""
    return np.load(DIGITS / f"digit_{n}.npy")


class Reference:
    """One .vmfb loaded into iree.runtime 3.13, called the way its users call it."""

    def __init__(self, path: Path, device: str = "local-task") -> None:
        config = ireert.Config(device)
        self.device = config.device
        self.context = ireert.SystemContext(config=config)
        self.module = ireert.VmModule.mmap(config.vm_instance, str(path))
        self.context.add_vm_module(self.module)
        self.functions = self.context.modules[self.module.name]

    def invoke(self, function: str, *args: Any) -> List[Any]:
        """The results as a list of numpy arrays and Python numbers, like rtx's."""
        out = self.functions[function](*args)
        if out is None:
            return []
        results = list(out) if isinstance(out, tuple) else [out]
        return [np.asarray(r) if isinstance(r, ireert.DeviceArray) else r for r in results]

    def invoke_with_fences(self, function: str, *args: Any) -> List[Any]:
        """Calls a coarse-fences (``async``) function, which iree.runtime's function wrapper
        refuses, through its VM API: the arguments, a wait fence and a signal fence waited on."""
        arguments = ireert.VmVariantList(len(args) + 2)
        for arg in args:
            if isinstance(arg, np.ndarray):
                arguments.push_ref(ireert.asdevicearray(self.device, arg)._buffer_view)
            else:
                arguments.push_int(arg)
        signal = ireert.HalFence.create_at(self.device.create_semaphore(0), 1)
        arguments.push_ref(ireert.HalFence(0))
        arguments.push_ref(signal)
        results = ireert.VmVariantList(4)
        self.context.vm_context.invoke(self.module.lookup_function(function), arguments, results)
        signal.wait()
        return [
            ireert.DeviceArray(
                self.device, results.get_as_object(i, ireert.HalBufferView), implicit_host_transfer=True
            ).to_host()
            for i in range(len(results))
        ]


def load(path: Path, device: str = "local-task") -> rtx.Context:
    """An rtx context over ``path``, as a user would write it."""
    context = rtx.Context(device=device)
    context.add_module(rtx.Module.load(path))
    return context


def _bytes(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def assert_same(ours: List[Any], theirs: List[Any]) -> None:
    """Equal results: same count, types, dtypes, shapes and bits (NaNs equal)."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if isinstance(b, np.ndarray):
            assert isinstance(a, np.ndarray), f"{a!r} is not an array like {b!r}"
            assert a.dtype == b.dtype and a.shape == b.shape, f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
            np.testing.assert_array_equal(_bytes(a), _bytes(b))
        else:
            assert type(a) is type(b) and (a == b or (a != a and b != b)), f"{a!r} vs {b!r}"


@pytest.fixture(scope="session")
def digits() -> rtx.Context:
    return load(DIGITS / "mlp.vmfb")


@pytest.fixture(scope="session")
def digits_reference() -> Reference:
    return Reference(DIGITS / "mlp.vmfb")
