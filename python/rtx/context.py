"""``rtx.Context``: a device, a work queue and the modules added to it; calls their functions."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import ctypes
import itertools
import threading
import weakref
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, cast

import numpy as np

from . import _values, dtypes
from ._handle import Owned
from ._library import READY_FN, ContextOptions, handle_p, lib, raw, written
from ._library import MemoryStats as _CMemoryStats
from ._values import native as _native
from .errors import FailedPreconditionError, InvalidArgumentError, NotFoundError, UnimplementedError, check
from .module import Module, Signature, ValueKind

# Callbacks waiting for AsyncValues, by the token passed to C as `user_data`: one ctypes thunk
# serves every call, so no per-call thunk has to be kept alive while C holds it.
_waiting: Dict[int, Callable[[], None]] = {}
_waiting_lock = threading.Lock()
_tokens = itertools.count(1)


# Every open context, released before the interpreter finalizes (below).
_open: "weakref.WeakSet[Context]" = weakref.WeakSet()


@atexit.register
def _close_open_contexts() -> None:
    # Releasing a context waits for its work in flight, whose callbacks enter Python; one that
    # entered a finalizing interpreter would have its thread killed under rtx's frames, which
    # aborts the process. So every context is released while the interpreter still runs them.
    for context in list(_open):
        context.close()


@READY_FN
def _on_ready(token: int) -> None:
    # Runs on an rtx worker thread (ctypes takes the GIL) or at once on the caller's thread.
    with _waiting_lock:
        callback = _waiting.pop(token)
    callback()


class _Call:
    """One started invocation: its result values (owned) until :meth:`release`. A function
    without results is waited for through the call's ``done`` value instead, which becomes its
    error if it fails."""

    __slots__ = ("signature", "results", "waited")

    def __init__(self, signature: Signature) -> None:
        self.signature = signature
        self.results = (handle_p * len(signature.results))()
        # The values that say the call is over: the results, or the call's `done` value.
        self.waited = self.results if signature.results else (handle_p * 1)()

    def read(self) -> List[_values.Result]:
        """The results (every one is set: the call started); raises the call's error."""
        if not self.signature.results:
            check(lib.rtx_async_value_get_error(self.waited[0]))
            return []
        return [_values.result(kind, cast(int, value)) for kind, value in zip(self.signature.results, self.results)]

    def when_ready(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` once the call is over (it must not raise)."""
        token = next(_tokens)
        with _waiting_lock:
            _waiting[token] = callback
        lib.rtx_async_value_run_when_ready(self.waited, len(self.waited), _on_ready, token)

    def release(self) -> None:
        for value in self.waited:
            lib.rtx_async_value_release(value)
        if self.waited is not self.results:
            for value in self.results:
                lib.rtx_async_value_release(value)


#: How a kernel graph (BEF) declares a tensor argument.
_HOST_TENSOR_TYPES = ("!tfrt_tensor.tensor", "!t.tensor")


class _Plan:
    """What every call of one function needs, worked out on its first: the qualified name (as C
    bytes too), the signature, the kinds of the arguments the caller passes, and whether the
    arguments and results are all tensors, so that :meth:`Context.invoke` can make the call in
    one crossing (``rtx_context_call``) with the ctypes array types of its buffer views ready."""

    __slots__ = (
        "name", "c_name", "signature", "kinds", "tensors_only", "takes_strings", "views", "results", "c_counts"
    )

    def __init__(self, name: str, signature: Signature) -> None:
        self.name = name
        self.c_name = name.encode()
        self.signature = signature
        self.kinds = signature.inputs
        self.tensors_only = all(kind is ValueKind.REF for kind in self.kinds + signature.results)
        #: Whether the function is a kernel graph (its tensors are host tensors), which takes
        #: tensors of strings too: those cross as async values, not buffer views.
        self.takes_strings = any(kind in (signature.declaration or "") for kind in _HOST_TENSOR_TYPES)
        self.views = handle_p * len(self.kinds)
        self.results = handle_p * len(signature.results)
        self.c_counts = (ctypes.c_size_t(len(self.kinds)), ctypes.c_size_t(len(signature.results)))

    def count_error(self, given: int) -> InvalidArgumentError:
        """The error for a call that passes ``given`` arguments, not one per argument."""
        count = len(self.kinds)
        return InvalidArgumentError(
            f"{self.name} takes {count} argument{'s' if count != 1 else ''} ({self.signature}), "
            f"but {given} were given"
        )


class Function:
    """A function of a context, resolved once: call it like :meth:`Context.invoke` without the name."""

    def __init__(self, context: "Context", name: str) -> None:
        self.context = context
        self.name, self.signature = context._resolve(name)

    def __call__(self, *args: Any) -> List[_values.Result]:
        return self.context.invoke(self.name, *args)

    def invoke_async(self, *args: Any) -> "concurrent.futures.Future[List[_values.Result]]":
        return self.context.invoke_async(self.name, *args)

    def invoke_awaitable(self, *args: Any) -> "asyncio.Future[List[_values.Result]]":
        return self.context.invoke_awaitable(self.name, *args)

    def __repr__(self) -> str:
        return f"<rtx.Function {self.signature}>"


class MemoryStats(NamedTuple):
    """What a context's allocator has handed out for it (:meth:`Context.memory_stats`)."""

    bytes_in_use: int
    """Bytes held now: tensors, device buffers, transients, VM buffers, and the freed blocks
    kept for reuse."""
    peak_bytes: int
    """The most bytes held at once."""
    allocations: int
    """Blocks handed out since the context was made."""


class Context(Owned):
    """A runtime context: a work queue, optionally a device, and the modules added to it.

    ``device`` is ``"local-task"`` (the CPU, dispatches spread over worker threads),
    ``"local-sync"`` (the CPU, inline on the calling worker), ``"vulkan"``/``"vulkan://N"``, or
    ``None`` for modules without tensors. ``work_queue`` is ``"mstd"`` (one worker per core),
    ``"mstd:N"`` or ``"s"`` (single-threaded). ``memory_limit``, when given, is the most bytes
    the context may hold at once: past it an allocation fails with
    :class:`~rtx.ResourceExhaustedError`. Every method is thread-safe. The context is released on
    :meth:`close`, at the end of a ``with`` block or when garbage-collected; release waits for its
    work in flight.
    """

    _release = lib.rtx_context_release

    def __init__(
        self, device: Optional[str] = "local-task", work_queue: str = "mstd", memory_limit: Optional[int] = None
    ) -> None:
        options = ContextOptions()
        lib.rtx_context_options_init(ctypes.byref(options))
        options.work_queue = work_queue.encode()
        if memory_limit is not None:
            if memory_limit <= 0:
                raise InvalidArgumentError(f"memory_limit must be positive, not {memory_limit}")
            options.memory_limit = memory_limit
        out = handle_p()
        check(lib.rtx_context_new(ctypes.byref(options), ctypes.byref(out)), f"work queue {work_queue!r}")
        super().__init__(written(out))
        _open.add(self)
        self.device = device
        self.work_queue = work_queue
        self._modules: List[Module] = []
        self._functions: Dict[str, Tuple[str, Signature]] = {}
        self._plans: Dict[str, _Plan] = {}
        if device is not None:
            try:
                check(lib.rtx_context_add_device(self.handle, device.encode()), f"device {device!r}")
            except BaseException:
                self.close()
                raise

    def memory_stats(self) -> MemoryStats:
        """What the context's allocator has handed out for it."""
        stats = _CMemoryStats(struct_size=ctypes.sizeof(_CMemoryStats))
        check(lib.rtx_context_memory_stats(self.handle, ctypes.byref(stats)), "memory stats")
        return MemoryStats(stats.bytes_in_use, stats.peak_bytes, stats.allocations)

    @property
    def modules(self) -> Tuple[Module, ...]:
        """The modules added so far, oldest first."""
        return tuple(self._modules)

    def add_module(self, module: Module) -> None:
        """Adds ``module``: resolves its imports against the modules added before and runs its
        initializer. Raises :class:`~rtx.AlreadyExistsError` for a second module of the same
        name, :class:`~rtx.NotFoundError` for a missing import."""
        check(lib.rtx_context_add_module(self.handle, module.handle), f"adding module {module.name!r}")
        self._modules.append(module)
        self._functions.clear()
        self._plans.clear()

    def function(self, name: str) -> Function:
        """``name`` (``"function"`` or ``"module.function"``) as a callable :class:`Function`."""
        return Function(self, name)

    def invoke(self, function: str, *args: Any) -> List[_values.Result]:
        """Calls ``function`` and waits for it: numpy arrays (or array-likes) for tensor
        arguments, Python numbers for scalars; returns the results as a list of numpy arrays
        (read-only, sharing rtx's memory) and Python ``int``/``float``. A kernel graph (an
        imported ONNX model) also takes numpy arrays of strings (``str``, ``bytes`` or objects)
        as tensors of strings, and returns them as object arrays of ``str`` where the call goes
        through async values: when it passes strings, or through :meth:`invoke_async` (a call of
        tensors alone reads only tensors of numbers).

        Raises :class:`~rtx.NotFoundError` for an unknown function,
        :class:`~rtx.InvalidArgumentError` for a wrong argument count, dtype or shape, and the
        program's own error (``vm.fail`` text and location) when it fails. The GIL is released
        while waiting. A function whose arguments and results are all tensors runs on the
        calling thread, as ``iree.runtime`` runs it, whatever the work queue.
        """
        plan = self._plans.get(function) or self._plan(function)
        # Strings are no buffer views: a kernel graph's call that passes them goes through async
        # values.
        if plan.tensors_only and not (plan.takes_strings and any(_values.holds_strings(arg) for arg in args)):
            return self._call_tensors(plan, args)
        return self._invoke_with_values(plan, args)

    def _invoke_with_values(self, plan: _Plan, args: Sequence[Any]) -> List[_values.Result]:
        """:meth:`invoke` through async values: for functions that take or return scalars."""
        return self._await_call(self._start(plan, args))

    def _await_call(self, call: _Call) -> List[_values.Result]:
        """Waits for a started call (the GIL released) and reads its results; releases it."""
        try:
            error = lib.rtx_async_value_await(self.handle, call.waited, len(call.waited))
            if error:
                check(error)
            return call.read()
        finally:
            call.release()

    def invoke_async(self, function: str, *args: Any) -> "concurrent.futures.Future[List[_values.Result]]":
        """Starts ``function`` and returns at once a :class:`concurrent.futures.Future` of what
        :meth:`invoke` returns (or raises). The future completes on an rtx worker thread, so its
        done-callbacks run there."""
        self._check_queue_runs_alone("invoke_async")
        return _future_of(self._start(self._plan(function), args))

    def invoke_awaitable(self, function: str, *args: Any) -> "asyncio.Future[List[_values.Result]]":
        """Starts ``function`` and returns an :mod:`asyncio` future of the running loop, which
        the AsyncValues of the results wake (through ``call_soon_threadsafe``) when they become
        available: no thread waits or polls. Call it from a coroutine: ``await ctx.invoke_awaitable(...)``."""
        loop = asyncio.get_running_loop()
        self._check_queue_runs_alone("invoke_awaitable")
        call = self._start(self._plan(function), args)
        future: "asyncio.Future[List[_values.Result]]" = loop.create_future()

        def settle() -> None:
            try:
                outcome: Tuple[Optional[List[_values.Result]], Optional[BaseException]] = (call.read(), None)
            except BaseException as error:
                outcome = (None, error)
            finally:
                call.release()
            try:
                loop.call_soon_threadsafe(_settle_asyncio, future, *outcome)
            except RuntimeError:
                pass  # the loop was closed: nobody is waiting any more

        call.when_ready(settle)
        return future


    def execute_op(
        self, op: str, *args: Any, num_results: int = 1, op_handler: str = "cpu", **attrs: Any
    ) -> List[_values.Result]:
        """Runs op ``op`` eagerly through the op handler ``op_handler`` and waits for it: numpy
        arrays (or array-likes) in, numpy arrays out, one per result. The ``cpu`` handler runs
        TFRT's cpu ops and every kernel of the context — ``onnx.<Op>`` (ONNX's operators, at the
        latest opset), the ``nn.*`` layers, the tensor kernels — so
        ``ctx.execute_op("onnx.Transpose", x, perm=[1, 0])`` is ONNX's Transpose. Attributes are
        keyword arguments: ``bool``, ``int`` (64-bit), ``float`` (32-bit, as ONNX's float
        attributes are; a ``numpy.float64`` stays 64-bit), ``str``, lists or tuples of ints or
        of floats, and numpy dtypes.

        Raises :class:`~rtx.UnimplementedError` naming an op no handler has,
        :class:`~rtx.NotFoundError` for an unknown handler, and the op's own error (naming the
        op) when it fails. The GIL is released while waiting. Numpy arrays in native byte order
        take the compiled binding (``rtx._native``): one call into C for the whole op. Other
        arrays cross through ctypes (``rtx_context_call_op``), and arrays of strings through
        async values.
        """
        handle = self._handle
        if handle is None:
            handle = self.handle  # raises: the context is closed
        built = _op_attrs(op, attrs) if attrs else None
        try:
            if _native is not None:
                attrs_address = built.value if built is not None else 0
                out = _native.call_op(handle, op_handler.encode(), op.encode(), args, attrs_address, num_results)
                if out.__class__ is list:
                    return out  # type: ignore[no-any-return]
                if out is not None:
                    check(out)
            if any(_values.holds_strings(arg) for arg in args):
                return self._await_call(self._start_op(op, args, num_results, op_handler, attrs))
            return self._call_op(handle, op, args, num_results, op_handler, built)
        finally:
            if built is not None:
                lib.rtx_op_attrs_release(built)

    def _call_op(
        self, handle: int, op: str, args: Sequence[Any], num_results: int, op_handler: str, built: Any
    ) -> List[_values.Result]:
        """:meth:`execute_op` through ctypes: one ``rtx_context_call_op`` on buffer views."""
        views = (handle_p * len(args))()
        results = (handle_p * num_results)()
        try:
            for i, value in enumerate(args):
                views[i] = _values.buffer_view(value, op, i)
            error = raw.rtx_context_call_op(
                handle_p(handle),
                op_handler.encode(),
                op.encode(),
                views,
                ctypes.c_size_t(len(args)),
                built,
                results,
                ctypes.c_size_t(num_results),
            )
        finally:
            for view in views:
                lib.rtx_buffer_view_release(view)
        if error:
            check(error)
        return _values.arrays(results)  # type: ignore[return-value]

    def register_composite_op(self, op: str, function: str) -> None:
        """Makes the BEF function ``function`` (a chain and tensor handles in and out, in a
        module added to this context) the op ``op`` of the ``cpu`` handler, for
        :meth:`execute_op` and BEF programs' ``corert.executeop``."""
        check(lib.rtx_context_register_composite_op(self.handle, op.encode(), function.encode()))

    def execute_op_async(
        self, op: str, *args: Any, num_results: int = 1, op_handler: str = "cpu", **attrs: Any
    ) -> "concurrent.futures.Future[List[_values.Result]]":
        """Starts :meth:`execute_op` and returns at once a :class:`concurrent.futures.Future` of
        its results, completed on an rtx worker thread."""
        self._check_queue_runs_alone("execute_op_async")
        return _future_of(self._start_op(op, args, num_results, op_handler, attrs))

    def _start_op(self, op: str, args: Sequence[Any], num_results: int, op_handler: str, attrs: Dict[str, Any]) -> _Call:
        """Starts an eager op with async values in and out."""
        signature = Signature(op, "", None, (ValueKind.REF,) * len(args), (ValueKind.REF,) * num_results)
        handles = (handle_p * len(args))()
        built = _op_attrs(op, attrs)
        try:
            for i, value in enumerate(args):
                handles[i] = _values.argument(ValueKind.REF, value, op, i)
            call = _Call(signature)
            error = lib.rtx_context_execute_op(
                self.handle, op_handler.encode(), op.encode(), handles, len(args), built, call.results, num_results
            )
            if error:
                check(error)
            return call
        finally:
            for value in handles:
                lib.rtx_async_value_release(value)
            lib.rtx_op_attrs_release(built)

    def _check_queue_runs_alone(self, method: str) -> None:
        # A single-threaded queue runs work only inside a blocking wait: nothing would ever
        # complete the future.
        if self.work_queue == "s":
            raise FailedPreconditionError(
                f"{method} needs a multi-threaded work queue (\"mstd\"): on \"s\" work runs only inside "
                "a blocking wait such as invoke(), so the future would never complete"
            )

    def _resolve(self, function: str) -> Tuple[str, Signature]:
        """``(qualified name, signature)`` of ``function``: ``"module.function"``, or a bare name
        looked up in the modules added, newest first."""
        found = self._functions.get(function)
        if found is not None:
            return found
        module_name, dot, bare = function.partition(".")
        candidates = [m for m in self._modules if dot and m.name == module_name]
        if not candidates:
            module_name, bare, candidates = "", function, self._modules[::-1]
        for module in candidates:
            signature = module.functions.get(bare)
            if signature is not None:
                found = (f"{module.name}.{bare}", signature)
                self._functions[function] = found
                return found
            if bare in module.unsupported:
                raise UnimplementedError(
                    f"{module.name}.{bare} cannot be called from Python: {module.unsupported[bare]}"
                )
        known = ", ".join(f"{m.name}.{f}" for m in self._modules for f in m.functions) or "none"
        raise NotFoundError(f"no function {function!r} in this context's modules (functions: {known})")

    def _plan(self, function: str) -> _Plan:
        """The :class:`_Plan` of ``function``, made on its first call."""
        plan = self._plans.get(function)
        if plan is None:
            plan = self._plans[function] = _Plan(*self._resolve(function))
        return plan

    def _call_tensors(self, plan: _Plan, args: Sequence[Any]) -> List[_values.Result]:
        """A call with tensors in and out: buffer views made, the call, the results wrapped."""
        handle = self._handle
        if handle is None:
            handle = self.handle  # raises: the context is closed
        if len(args) != len(plan.kinds):
            raise plan.count_error(len(args))
        views = plan.views()
        try:
            for i, value in enumerate(args):
                views[i] = _values.buffer_view(value, plan.name, i)
            results = plan.results()
            num_args, num_results = plan.c_counts
            error = raw.rtx_context_call(handle_p(handle), plan.c_name, views, num_args, results, num_results)
        finally:
            for view in views:
                lib.rtx_buffer_view_release(view)
        if error:
            check(error)
        return _values.arrays(results)  # type: ignore[return-value]

    def _start(self, plan: _Plan, args: Sequence[Any]) -> _Call:
        """Starts a call with async values in and out."""
        name, kinds, signature = plan.name, plan.kinds, plan.signature
        if len(args) != len(kinds):
            raise plan.count_error(len(args))
        handles = (handle_p * len(args))()
        try:
            for i, (kind, value) in enumerate(zip(kinds, args)):
                handles[i] = _values.argument(kind, value, name, i)
            call = _Call(signature)
            if signature.results:
                error = lib.rtx_context_invoke(
                    self.handle, plan.c_name, handles, len(args), call.results, len(call.results)
                )
            else:
                error = lib.rtx_context_invoke_with_done(
                    self.handle, plan.c_name, handles, len(args), None, 0, call.waited
                )
            if error:
                check(error, name)
            return call
        finally:
            for value in handles:
                lib.rtx_async_value_release(value)

    def _describe(self) -> str:
        return "the context"

    def __repr__(self) -> str:
        modules = ", ".join(m.name for m in self._modules)
        return f"<rtx.Context device={self.device!r} work_queue={self.work_queue!r} modules=[{modules}]>"


def _future_of(call: _Call) -> "concurrent.futures.Future[List[_values.Result]]":
    """A future of ``call``'s results (or error), completed on the rtx worker thread that makes
    them available; the call is released then."""
    future: "concurrent.futures.Future[List[_values.Result]]" = concurrent.futures.Future()
    future.set_running_or_notify_cancel()

    def settle() -> None:
        try:
            future.set_result(call.read())
        except BaseException as error:  # the caller sees it through the future
            future.set_exception(error)
        finally:
            call.release()

    call.when_ready(settle)
    return future


def _op_attrs(op: str, attrs: Dict[str, Any]) -> Any:
    """A new ``rtx_op_attrs_t`` holding ``attrs`` (the caller releases it)."""
    built = handle_p()
    check(lib.rtx_op_attrs_new(ctypes.byref(built)))
    try:
        for name, value in attrs.items():
            key = name.encode()
            if isinstance(value, (bool, np.bool_)):
                error = lib.rtx_op_attrs_set_bool(built, key, bool(value))
            elif isinstance(value, (int, np.integer)):
                error = lib.rtx_op_attrs_set_i64(built, key, int(value))
            elif isinstance(value, np.float64):
                error = lib.rtx_op_attrs_set_f64(built, key, float(value))
            elif isinstance(value, (float, np.floating)):
                error = lib.rtx_op_attrs_set_f32(built, key, float(value))
            elif isinstance(value, str):
                error = lib.rtx_op_attrs_set_string(built, key, value.encode())
            elif isinstance(value, (np.dtype, type)) and value is not bool:
                error = lib.rtx_op_attrs_set_dtype(built, key, dtypes.element_type(np.dtype(value)))
            elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, np.integer)) for v in value):
                ints = (ctypes.c_int64 * len(value))(*value)
                error = lib.rtx_op_attrs_set_i64_array(built, key, ints, len(value))
            elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, np.number)) for v in value):
                floats = (ctypes.c_float * len(value))(*value)
                error = lib.rtx_op_attrs_set_f32_array(built, key, floats, len(value))
            else:
                raise InvalidArgumentError(
                    f"{op}: attribute {name!r} is a {type(value).__name__}; attributes are bools, ints, floats, "
                    "strings, numpy dtypes and lists of ints or of floats"
                )
            check(error, op)
    except BaseException:
        lib.rtx_op_attrs_release(built)
        raise
    return built


def _settle_asyncio(
    future: "asyncio.Future[List[_values.Result]]",
    result: Optional[List[_values.Result]],
    error: Optional[BaseException],
) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]
