"""Loads librtx and declares the C functions the package calls (include/rtx.h).

The library is looked up next to this file (the wheel carries it there); ``RTX_LIBRARY`` names
another copy, e.g. a fresh ``target/release/librtx.so`` while developing. ``CDLL`` (not
``PyDLL``) releases the GIL during every call, so threads blocked in ``rtx_async_value_await``
let the runtime's workers run Python callbacks.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any, cast

#: The ABI this package was written against (``RTX_ABI_VERSION`` of include/rtx.h).
ABI_VERSION = 0

handle_p = ctypes.c_void_p


def written(out: handle_p) -> int:
    """The handle a successful call wrote to ``out`` (never NULL then, by the C API's contract)."""
    return cast(int, out.value)


#: ``void (*)(void* user_data)``: the callback type of ``rtx_async_value_and_then``.
READY_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class FunctionSignature(ctypes.Structure):
    """``rtx_function_signature_t``."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("name", ctypes.c_char_p),
        ("calling_convention", ctypes.c_char_p),
        ("declaration", ctypes.c_char_p),
        ("num_arguments", ctypes.c_size_t),
        ("argument_kinds", ctypes.POINTER(ctypes.c_uint32)),
        ("num_results", ctypes.c_size_t),
        ("result_kinds", ctypes.POINTER(ctypes.c_uint32)),
    ]


class BufferViewInfo(ctypes.Structure):
    """``rtx_buffer_view_info_t``."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("element_type", ctypes.c_uint32),
        ("rank", ctypes.c_size_t),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("data", ctypes.c_void_p),
        ("byte_length", ctypes.c_size_t),
    ]


class ContextOptions(ctypes.Structure):
    """``rtx_context_options_t``."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("work_queue", ctypes.c_char_p),
        ("custom_work_queue", ctypes.c_void_p),
        ("allocator", ctypes.c_void_p),
        ("memory_limit", ctypes.c_uint64),
    ]


class MemoryStats(ctypes.Structure):
    """``rtx_memory_stats_t``."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("bytes_in_use", ctypes.c_uint64),
        ("peak_bytes", ctypes.c_uint64),
        ("allocations", ctypes.c_uint64),
    ]


_p = handle_p
_pp = ctypes.POINTER(handle_p)
_u32 = ctypes.c_uint32
_size = ctypes.c_size_t
_SIGNATURES = {
    "rtx_version": (ctypes.c_char_p, []),
    "rtx_tracing_begin": (_p, [ctypes.c_char_p]),
    "rtx_tracing_end": (_p, []),
    "rtx_abi_version": (_u32, []),
    "rtx_status_code_name": (ctypes.c_char_p, [_u32]),
    "rtx_error_code": (_u32, [_p]),
    "rtx_error_message": (ctypes.c_char_p, [_p]),
    "rtx_error_delete": (None, [_p]),
    "rtx_context_options_init": (None, [ctypes.POINTER(ContextOptions)]),
    "rtx_context_new": (_p, [ctypes.POINTER(ContextOptions), _pp]),
    "rtx_context_release": (None, [_p]),
    "rtx_context_memory_stats": (_p, [_p, ctypes.POINTER(MemoryStats)]),
    "rtx_context_add_device": (_p, [_p, ctypes.c_char_p]),
    "rtx_context_add_module": (_p, [_p, _p]),
    "rtx_context_invoke": (_p, [_p, ctypes.c_char_p, _pp, _size, _pp, _size]),
    "rtx_context_invoke_with_done": (_p, [_p, ctypes.c_char_p, _pp, _size, _pp, _size, _pp]),
    "rtx_context_call": (_p, [_p, ctypes.c_char_p, _pp, _size, _pp, _size]),
    "rtx_context_execute_op": (_p, [_p, ctypes.c_char_p, ctypes.c_char_p, _pp, _size, _p, _pp, _size]),
    "rtx_context_call_op": (_p, [_p, ctypes.c_char_p, ctypes.c_char_p, _pp, _size, _p, _pp, _size]),
    "rtx_context_register_composite_op": (_p, [_p, ctypes.c_char_p, ctypes.c_char_p]),
    "rtx_op_attrs_new": (_p, [_pp]),
    "rtx_op_attrs_release": (None, [_p]),
    "rtx_op_attrs_set_i64": (_p, [_p, ctypes.c_char_p, ctypes.c_int64]),
    "rtx_op_attrs_set_f32": (_p, [_p, ctypes.c_char_p, ctypes.c_float]),
    "rtx_op_attrs_set_f64": (_p, [_p, ctypes.c_char_p, ctypes.c_double]),
    "rtx_op_attrs_set_bool": (_p, [_p, ctypes.c_char_p, ctypes.c_bool]),
    "rtx_op_attrs_set_string": (_p, [_p, ctypes.c_char_p, ctypes.c_char_p]),
    "rtx_op_attrs_set_dtype": (_p, [_p, ctypes.c_char_p, _u32]),
    "rtx_op_attrs_set_i64_array": (_p, [_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), _size]),
    "rtx_op_attrs_set_f32_array": (_p, [_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_float), _size]),
    "rtx_context_parallelism": (_u32, [_p]),
    "rtx_context_quiesce": (None, [_p]),
    "rtx_module_load_file": (_p, [ctypes.c_char_p, _pp]),
    "rtx_module_load_memory": (_p, [ctypes.c_char_p, _size, _pp]),
    "rtx_module_release": (None, [_p]),
    "rtx_module_name": (ctypes.c_char_p, [_p]),
    "rtx_module_function_count": (_size, [_p]),
    "rtx_module_function_name": (ctypes.c_char_p, [_p, _size]),
    "rtx_module_function_signature": (_p, [_p, _size, ctypes.POINTER(FunctionSignature)]),
    "rtx_async_value_new_i32": (_p, [ctypes.c_int32]),
    "rtx_async_value_new_i64": (_p, [ctypes.c_int64]),
    "rtx_async_value_new_f32": (_p, [ctypes.c_float]),
    "rtx_async_value_new_f64": (_p, [ctypes.c_double]),
    "rtx_async_value_new_buffer_view": (_p, [_p]),
    "rtx_async_value_get_i32": (_p, [_p, ctypes.POINTER(ctypes.c_int32)]),
    "rtx_async_value_get_i64": (_p, [_p, ctypes.POINTER(ctypes.c_int64)]),
    "rtx_async_value_get_f32": (_p, [_p, ctypes.POINTER(ctypes.c_float)]),
    "rtx_async_value_get_f64": (_p, [_p, ctypes.POINTER(ctypes.c_double)]),
    "rtx_async_value_get_buffer_view": (_p, [_p, _pp]),
    "rtx_async_value_new_sequence": (_p, [_pp, _size]),
    "rtx_async_value_new_none": (_p, []),
    "rtx_async_value_type": (_u32, [_p]),
    "rtx_async_value_get_sequence_length": (_p, [_p, ctypes.POINTER(_size)]),
    "rtx_async_value_get_sequence_element": (_p, [_p, _size, _pp]),
    "rtx_async_value_new_string_tensor": (
        _p,
        [ctypes.POINTER(ctypes.c_int64), _size, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_size), _size],
    ),
    "rtx_async_value_get_string_tensor_shape": (
        _p,
        [_p, ctypes.POINTER(_size), ctypes.POINTER(ctypes.c_int64), _size],
    ),
    "rtx_async_value_get_string_tensor_element": (
        _p,
        [_p, _size, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_size)],
    ),
    "rtx_async_value_get_error": (_p, [_p]),
    "rtx_async_value_and_then": (None, [_p, READY_FN, _p]),
    "rtx_async_value_run_when_ready": (None, [_pp, _size, READY_FN, _p]),
    "rtx_async_value_await": (_p, [_p, _pp, _size]),
    "rtx_async_value_release": (None, [_p]),
    "rtx_buffer_view_new": (_p, [_u32, ctypes.POINTER(ctypes.c_int64), _size, _p, _size, _pp]),
    "rtx_buffer_view_release": (None, [_p]),
    "rtx_buffer_view_element_type": (_u32, [_p]),
    "rtx_buffer_view_rank": (_size, [_p]),
    "rtx_buffer_view_dim": (ctypes.c_int64, [_p, _size]),
    "rtx_buffer_view_byte_length": (_size, [_p]),
    "rtx_buffer_view_data": (_p, [_p]),
    "rtx_buffer_view_copy_data": (_p, [_p, _p, _size]),
    "rtx_buffer_view_info": (_p, [_p, ctypes.POINTER(BufferViewInfo)]),
}


#: The functions every call of a tensor function goes through, declared a second time without
#: ``argtypes`` (see :data:`raw`).
_RAW_SIGNATURES = {
    "rtx_context_call": _p,
    "rtx_context_call_op": _p,
    "rtx_buffer_view_new": _p,
    "rtx_buffer_view_info": _p,
}


class _Raw:
    """Prototypes without ``argtypes``: ctypes passes each argument as it is, without the
    ``from_param`` conversion per argument and call that costs more than the C function itself
    here. Callers pass ctypes objects of the exact C types (``c_void_p`` handles, ``c_size_t``,
    ``c_uint32``, arrays, ``byref``), bytes for strings and None for NULL — never a bare int,
    which ctypes would pass as a C ``int``."""

    def __init__(self, library: ctypes.CDLL) -> None:
        for name, restype in _RAW_SIGNATURES.items():
            function = library._FuncPtr((name, library))  # a second object: `lib`'s keeps its argtypes
            function.restype = restype
            setattr(self, name, function)


def _library_path() -> str:
    override = os.environ.get("RTX_LIBRARY")
    if override:
        return override
    return str(Path(__file__).with_name("librtx.so"))


def _load() -> ctypes.CDLL:
    path = _library_path()
    try:
        library = ctypes.CDLL(path)
    except OSError as error:
        raise ImportError(
            f"rtx: cannot load the rtx library {path!r} ({error}); the wheel carries it next to "
            "rtx/__init__.py, or set RTX_LIBRARY to a librtx.so"
        ) from error
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(library, name)
        function.restype = restype
        function.argtypes = argtypes
    found = library.rtx_abi_version()
    if found != ABI_VERSION:
        raise ImportError(
            f"rtx: {path} has ABI version {found}, this package needs {ABI_VERSION}; install the matching wheel"
        )
    return library


lib = _load()
raw: Any = _Raw(lib)
