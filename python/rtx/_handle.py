"""The ownership every wrapper of a C handle shares: one reference, released once."""

from __future__ import annotations

from typing import Callable, ClassVar, Optional, TypeVar

from .errors import FailedPreconditionError

Self = TypeVar("Self", bound="Owned")


class Owned:
    """Owns one reference to a C handle, dropped by :meth:`close`, at the end of a ``with`` block
    or when the object is garbage-collected, whichever comes first."""

    _release: ClassVar[Callable[[int], None]]

    def __init__(self, handle: int) -> None:
        self._handle: Optional[int] = handle

    def _describe(self) -> str:
        """What the object is, for the error a closed one raises."""
        raise NotImplementedError

    @property
    def handle(self) -> int:
        """The C handle (borrowed); raises :class:`~rtx.FailedPreconditionError` once closed."""
        if self._handle is None:
            raise FailedPreconditionError(f"{self._describe()} is closed")
        return self._handle

    def close(self) -> None:
        """Drops this object's reference (what holds its own, like a context holding a module,
        keeps it); later use raises :class:`~rtx.FailedPreconditionError`."""
        handle, self._handle = self._handle, None
        if handle is not None:
            type(self)._release(handle)

    def __enter__(self: Self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self.close()
