"""rtx: run IREE-compiled (``.vmfb``) and BEF programs from Python, numpy in and out.

    import numpy as np, rtx
    ctx = rtx.Context(device="local-task", work_queue="mstd")
    mod = rtx.Module.load("model.vmfb")
    ctx.add_module(mod)
    [y] = ctx.invoke("predict", np.ones((1, 64), np.float32))
    fut = ctx.invoke_async("predict", x)          # concurrent.futures.Future
    y = await ctx.invoke_awaitable("predict", x)  # asyncio, woken by the result's AsyncValue
    with rtx.tracing("trace.json"):               # Chrome trace-event JSON of what ran
        ctx.invoke("predict", x)

A thin layer over the C API of librtx (include/rtx.h) through ctypes; the wheel carries the
library. Every failure is an :class:`Error` subclass carrying the status code and message.
"""

from ._library import lib as _lib
from .context import Context, Function, MemoryStats
from .dtypes import dtype, element_type
from .errors import (
    AbortedError,
    AlreadyExistsError,
    CancelledError,
    DataLossError,
    DeadlineExceededError,
    DeferredError,
    Error,
    FailedPreconditionError,
    IncompatibleError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    OutOfRangeError,
    PanicError,
    PermissionDeniedError,
    ResourceExhaustedError,
    StatusCode,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    UnknownError,
)
from .module import Module, Signature, ValueKind
from .tracing import tracing

#: The version of the rtx library in use (``rtx_version()``).
__version__: str = _lib.rtx_version().decode()

__all__ = [
    "AbortedError",
    "AlreadyExistsError",
    "CancelledError",
    "Context",
    "DataLossError",
    "DeadlineExceededError",
    "DeferredError",
    "Error",
    "FailedPreconditionError",
    "Function",
    "IncompatibleError",
    "InternalError",
    "InvalidArgumentError",
    "MemoryStats",
    "Module",
    "NotFoundError",
    "OutOfRangeError",
    "PanicError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "Signature",
    "StatusCode",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "UnknownError",
    "ValueKind",
    "dtype",
    "element_type",
    "tracing",
]
