"""``rtx.Error`` and one subclass per status code, made from the C API's owned errors."""

from __future__ import annotations

import enum
from typing import Dict, Optional, Type

from ._library import lib


class StatusCode(enum.IntEnum):
    """``rtx_status_code_t``: the absl/IREE numbering."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16
    DEFERRED = 17
    INCOMPATIBLE = 18
    PANIC = 100


class Error(Exception):
    """A failure reported by rtx: ``code`` (a :class:`StatusCode`) and ``message``, which says
    what was wrong and where (for a failing program, the ``vm.fail`` text and its location)."""

    code: StatusCode = StatusCode.UNKNOWN

    def __init__(self, message: str, code: Optional[StatusCode] = None) -> None:
        if code is not None:
            self.code = code
        self.message = message
        super().__init__(f"{self.code.name}: {message}")


class CancelledError(Error):
    code = StatusCode.CANCELLED


class UnknownError(Error):
    code = StatusCode.UNKNOWN


class InvalidArgumentError(Error):
    """Wrong argument: a shape, dtype or count the function does not accept, a malformed module."""

    code = StatusCode.INVALID_ARGUMENT


class DeadlineExceededError(Error):
    code = StatusCode.DEADLINE_EXCEEDED


class NotFoundError(Error):
    """No such function, module, file or device."""

    code = StatusCode.NOT_FOUND


class AlreadyExistsError(Error):
    code = StatusCode.ALREADY_EXISTS


class PermissionDeniedError(Error):
    code = StatusCode.PERMISSION_DENIED


class ResourceExhaustedError(Error):
    code = StatusCode.RESOURCE_EXHAUSTED


class FailedPreconditionError(Error):
    """The call is not possible in the current state (a closed handle, a missing device)."""

    code = StatusCode.FAILED_PRECONDITION


class AbortedError(Error):
    code = StatusCode.ABORTED


class OutOfRangeError(Error):
    code = StatusCode.OUT_OF_RANGE


class UnimplementedError(Error):
    """Something rtx or this package does not support (e.g. an element type numpy has no dtype for)."""

    code = StatusCode.UNIMPLEMENTED


class InternalError(Error):
    code = StatusCode.INTERNAL


class UnavailableError(Error):
    code = StatusCode.UNAVAILABLE


class DataLossError(Error):
    code = StatusCode.DATA_LOSS


class UnauthenticatedError(Error):
    code = StatusCode.UNAUTHENTICATED


class DeferredError(Error):
    code = StatusCode.DEFERRED


class IncompatibleError(Error):
    code = StatusCode.INCOMPATIBLE


class PanicError(Error):
    """A Rust panic caught at the C boundary: a bug in rtx."""

    code = StatusCode.PANIC


_BY_CODE: Dict[int, Type[Error]] = {
    cls.code: cls
    for cls in Error.__subclasses__()  # every class above, one per code
}


def error_for(code: int, message: str) -> Error:
    """The :class:`Error` subclass of ``code`` carrying ``message``."""
    try:
        status = StatusCode(code)
    except ValueError:
        status = StatusCode.UNKNOWN
    return _BY_CODE.get(status, UnknownError)(message)


def take(error: Optional[int]) -> Optional[Error]:
    """Turns an owned ``rtx_error_t*`` into an :class:`Error` and frees it; ``None`` for NULL."""
    if not error:
        return None
    try:
        return error_for(lib.rtx_error_code(error), lib.rtx_error_message(error).decode(errors="replace"))
    finally:
        lib.rtx_error_delete(error)


def check(error: Optional[int], context: str = "") -> None:
    """Raises the error an rtx call returned (prefixing ``context``), if it returned one."""
    failure = take(error)
    if failure is not None:
        if context:
            failure = type(failure)(f"{context}: {failure.message}")
        raise failure
