"""``rtx.Module``: a loaded IREE VM bytecode (``.vmfb``) or BEF module, and its reflection."""

from __future__ import annotations

import ctypes
import enum
import os
from dataclasses import dataclass
from typing import Dict, Optional, Tuple, Union

from . import _library
from ._handle import Owned
from ._library import lib
from .errors import check, take


class ValueKind(enum.IntEnum):
    """``rtx_value_kind_t``: how the calling convention passes one argument or result."""

    I32 = 0
    I64 = 1
    F32 = 2
    F64 = 3
    #: A reference: a tensor (numpy array) for ``invoke``.
    REF = 4


@dataclass(frozen=True)
class Signature:
    """One exported function, as the module declares it (``rtx_function_signature_t``)."""

    name: str
    #: The calling convention string, e.g. ``"0r_r"``; ``""`` if the module declares none.
    calling_convention: str
    #: The ``iree.abi.declaration`` reflection text, e.g.
    #: ``"sync func @predict(%input0: tensor<1x64xf32>) -> (%output0: tensor<1x10xf32>)"``.
    declaration: Optional[str]
    #: Every argument the calling convention declares, fences included.
    arguments: Tuple[ValueKind, ...]
    results: Tuple[ValueKind, ...]

    @property
    def fences(self) -> int:
        """2 for an ``async`` (coarse-fences) function, whose last two arguments are the wait
        and signal fences that ``invoke`` may leave out (it then makes its own), else 0."""
        return 2 if self.declaration and self.declaration.startswith("async ") else 0

    @property
    def inputs(self) -> Tuple[ValueKind, ...]:
        """The arguments a caller passes: :attr:`arguments` without the fences."""
        return self.arguments[: len(self.arguments) - self.fences]

    def __str__(self) -> str:
        if self.declaration:
            return self.declaration
        args = ", ".join(kind.name.lower() for kind in self.arguments)
        results = ", ".join(kind.name.lower() for kind in self.results)
        return f"func @{self.name}({args}) -> ({results})"


def _kinds(pointer: "ctypes._Pointer[ctypes.c_uint32]", count: int) -> Tuple[ValueKind, ...]:
    return tuple(ValueKind(pointer[i]) for i in range(count))


class Module(Owned):
    """A verified module, immutable and safe to share between threads and contexts.

    Create one with :meth:`load` or :meth:`from_bytes`. The C handle is released when the object
    is garbage-collected or on :meth:`close` (``with`` works too); contexts it was added to keep
    their own reference.
    """

    _release = lib.rtx_module_release

    def __init__(self, handle: int) -> None:
        """Wraps an owned ``rtx_module_t*``; use :meth:`load` or :meth:`from_bytes` instead."""
        super().__init__(handle)
        self.name: str = lib.rtx_module_name(handle).decode()
        self.functions: Dict[str, Signature]
        """Every exported function by name, in export order: its :class:`Signature`."""
        self.unsupported: Dict[str, str]
        """Exported functions whose signature has values Python cannot pass (a BEF function taking
        a ``!tfrt.chain``), with the reason: they cannot be called from Python."""
        self.functions, self.unsupported = self._reflect(handle)

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "Module":
        """Loads and verifies the module file at ``path`` (memory-mapped; it must not change
        while the module lives). Raises :class:`~rtx.NotFoundError` for a missing file and
        :class:`~rtx.InvalidArgumentError`/:class:`~rtx.DataLossError` for a malformed one."""
        out = _library.handle_p()
        check(lib.rtx_module_load_file(os.fsencode(path), ctypes.byref(out)), f"loading {os.fspath(path)!r}")
        return cls(_library.written(out))

    @classmethod
    def from_bytes(cls, data: Union[bytes, bytearray, memoryview]) -> "Module":
        """Loads and verifies a module from a copy of ``data``."""
        raw = bytes(data)
        out = _library.handle_p()
        check(lib.rtx_module_load_memory(raw, len(raw), ctypes.byref(out)), "loading a module from bytes")
        return cls(_library.written(out))

    @staticmethod
    def _reflect(handle: int) -> Tuple[Dict[str, Signature], Dict[str, str]]:
        functions: Dict[str, Signature] = {}
        unsupported: Dict[str, str] = {}
        for index in range(lib.rtx_module_function_count(handle)):
            raw = _library.FunctionSignature()
            raw.struct_size = ctypes.sizeof(raw)
            failure = take(lib.rtx_module_function_signature(handle, index, ctypes.byref(raw)))
            if failure is not None:
                unsupported[lib.rtx_module_function_name(handle, index).decode()] = failure.message
                continue
            name = raw.name.decode()
            functions[name] = Signature(
                name=name,
                calling_convention=raw.calling_convention.decode(),
                declaration=raw.declaration.decode() if raw.declaration else None,
                arguments=_kinds(raw.argument_kinds, raw.num_arguments),
                results=_kinds(raw.result_kinds, raw.num_results),
            )
        return functions, unsupported

    def _describe(self) -> str:
        return f"module {self.name!r}"

    def __repr__(self) -> str:
        return f"<rtx.Module {self.name!r}: {', '.join(self.functions)}>"
