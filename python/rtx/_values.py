"""Arguments and results across the C ABI: numpy arrays <-> buffer views, Python numbers <->
scalar async values. Every function here returns owned handles or Python objects; nothing
leaks when it raises."""

from __future__ import annotations

import ctypes
import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, cast

import numpy as np

from . import dtypes
from ._library import BufferViewInfo, handle_p, lib, raw, written
from .errors import InvalidArgumentError, check
from .module import ValueKind

Result = Union[np.ndarray, int, float, List[np.ndarray], None]

#: ``rtx_value_type_t`` of a sequence of tensors, of an empty optional, of a tensor of strings.
_SEQUENCE, _NONE, _STRINGS = 10, 11, 12


class TensorSequence(list):  # type: ignore[type-arg]
    """A sequence of tensors (an ONNX sequence) for a tensor argument: a list of arrays, passed
    as one value. (``None`` passes an empty optional.)"""

_INT_RANGES = {ValueKind.I32: (-(2**31), 2**31 - 1), ValueKind.I64: (-(2**63), 2**63 - 1)}
_NEW_SCALAR = {
    ValueKind.I32: lib.rtx_async_value_new_i32,
    ValueKind.I64: lib.rtx_async_value_new_i64,
    ValueKind.F32: lib.rtx_async_value_new_f32,
    ValueKind.F64: lib.rtx_async_value_new_f64,
}
_GET_SCALAR: Dict[ValueKind, Tuple[Any, Any]] = {
    ValueKind.I32: (lib.rtx_async_value_get_i32, ctypes.c_int32),
    ValueKind.I64: (lib.rtx_async_value_get_i64, ctypes.c_int64),
    ValueKind.F32: (lib.rtx_async_value_get_f32, ctypes.c_float),
    ValueKind.F64: (lib.rtx_async_value_get_f64, ctypes.c_double),
}


def argument(kind: ValueKind, value: Any, function: str, index: int) -> int:
    """A new async value for argument ``index`` of ``function``, of ``kind``."""
    if kind is ValueKind.REF and value is None:
        return lib.rtx_async_value_new_none()
    if kind is ValueKind.REF and isinstance(value, TensorSequence):
        views = (handle_p * len(value))()
        try:
            for k, element in enumerate(value):
                views[k] = buffer_view(element, function, index)
            return lib.rtx_async_value_new_sequence(views, len(value))
        finally:
            for view in views:
                lib.rtx_buffer_view_release(view)
    if kind is ValueKind.REF and holds_strings(value):
        return string_tensor(value, function, index)
    if kind is ValueKind.REF:
        view = buffer_view(value, function, index)
        try:
            return lib.rtx_async_value_new_buffer_view(view)
        finally:
            lib.rtx_buffer_view_release(view)
    where = f"{function} argument {index}"
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise InvalidArgumentError(f"{where} is a scalar {kind.name.lower()}, not an array of shape {value.shape}")
        value = value[()]  # a 0-d array is its one element
    if kind in _INT_RANGES:
        try:
            number = operator.index(value)
        except TypeError:
            raise InvalidArgumentError(
                f"{where} is a scalar {kind.name.lower()}: expected an int, got {type(value).__name__}"
            ) from None
        low, high = _INT_RANGES[kind]
        if not low <= number <= high:
            raise InvalidArgumentError(f"{where} is a scalar {kind.name.lower()}: {number} is out of range")
        return _NEW_SCALAR[kind](number)
    if isinstance(value, (str, bytes)) or not isinstance(value, (int, float, np.number)):
        raise InvalidArgumentError(
            f"{where} is a scalar {kind.name.lower()}: expected a float, got {type(value).__name__}"
        )
    return _NEW_SCALAR[kind](float(value))


def buffer_view(value: Any, function: str, index: int) -> int:
    """A new buffer view holding a copy of ``value`` (anything ``np.asarray`` takes).

    A C-contiguous, native-endian array is handed to rtx as it is (rtx makes the one copy the
    ABI needs); other layouts are made contiguous first. Runs on every call, so it passes the
    array's memory through the buffer protocol (``ctypes.c_char.from_buffer``), which costs a
    fraction of ``ndarray.ctypes``; arrays that it refuses (read-only ones, ml_dtypes' types)
    take ``ndarray.ctypes``.
    """
    array = value if type(value) is np.ndarray else _asarray(value, f"{function} argument {index}")
    code = _ELEMENT_TYPES.get(array.dtype)
    flags = array.flags
    nbytes = array.nbytes
    if code is not None and flags.c_contiguous and flags.writeable:
        data = _byref(_char_from_buffer(array)) if nbytes else None
    else:
        array, number = _contiguous(array, f"{function} argument {index}")
        code = ctypes.c_uint32(number)
        data = ctypes.c_void_p(array.ctypes.data)
    shape = array.shape
    rank = len(shape)
    out = handle_p()
    error = raw.rtx_buffer_view_new(
        code,
        (ctypes.c_int64 * rank)(*shape) if rank else None,
        _size(rank),
        data,
        _size(nbytes),
        _byref(out),
    )
    if error:
        check(error, f"{function} argument {index}")
    return out.value  # type: ignore[return-value]


#: Element type codes, as the C argument :data:`raw` takes, of the native-byte-order dtypes whose
#: arrays export their memory through the buffer protocol: numpy's own (ml_dtypes' cannot).
_ELEMENT_TYPES = {
    dtype: ctypes.c_uint32(code) for dtype, code in dtypes.NATIVE_ELEMENT_TYPES.items() if dtype.isbuiltin != 2
}
_char_from_buffer = ctypes.c_char.from_buffer
_byref = ctypes.byref
_size = ctypes.c_size_t


def _asarray(value: Any, where: str) -> np.ndarray:
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(f"{where} cannot be made a numpy array: {error}") from None


def _contiguous(array: np.ndarray, where: str) -> Tuple[np.ndarray, int]:
    """``array`` C-contiguous in native byte order, and its element type; raises for a dtype rtx
    cannot pass."""
    try:
        code = dtypes.element_type(array.dtype)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"{where}: {error.message}") from None
    # Not `np.ascontiguousarray`, which makes a 0-d array 1-d.
    return np.asarray(array, dtype=array.dtype.newbyteorder("="), order="C"), code


class _ViewMemory:
    """Keeps a buffer view alive for as long as a numpy array reads its memory (the array's base)."""

    __slots__ = ("_view", "__array_interface__")

    def __init__(self, view: int, address: int, shape: Tuple[int, ...], typestr: str) -> None:
        self._view = view
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": typestr,
            "data": (address, True),  # read-only: the view is immutable
            "strides": None,
        }

    def __del__(self) -> None:
        lib.rtx_buffer_view_release(self._view)


def array(view: int) -> np.ndarray:
    """A read-only numpy array over a buffer view's memory, without a copy; takes ``view``'s
    reference. Views whose memory the host cannot address (a GPU's) are copied out."""
    try:
        info = BufferViewInfo(_INFO_SIZE)
        error = raw.rtx_buffer_view_info(handle_p(view), _byref(info))
        if error:
            check(error)
        found = dtypes.ARRAY_TYPES.get(info.element_type)
        if found is None:
            raise dtypes.unsupported(info.element_type)
        dtype, typestr = found
        shape = tuple(info.shape[: info.rank])
        address = info.data
        if not address:
            out = np.empty(shape, dtype)
            check(lib.rtx_buffer_view_copy_data(view, out.ctypes.data, out.nbytes))
            lib.rtx_buffer_view_release(view)
            return out
    except BaseException:
        lib.rtx_buffer_view_release(view)
        raise
    out = np.asarray(_ViewMemory(view, address, shape, typestr))
    return out if out.dtype == dtype else out.view(dtype)


_INFO_SIZE = ctypes.sizeof(BufferViewInfo)


def arrays(views: Sequence[Optional[int]]) -> List[np.ndarray]:
    """:func:`array` of each view; takes every view's reference, also when one of them raises."""
    out = []
    try:
        for view in views:
            out.append(array(cast(int, view)))
    except BaseException:
        for view in views[len(out) + 1 :]:
            lib.rtx_buffer_view_release(view)
        raise
    return out


def _bind_native() -> Any:
    """The compiled ``rtx._native`` module (python/rtx/_native.c), given the loaded librtx's
    functions and the buffer formats of the dtypes rtx passes; ``None`` where the package was built
    without it (no C compiler or Python headers), and the ctypes path runs every op."""
    try:
        from . import _native  # type: ignore[attr-defined]
    except ImportError:
        return None
    element_types: Dict[str, int] = {}
    formats: Dict[int, Tuple[bytes, int]] = {}
    for char in np.typecodes["All"]:
        dtype = np.dtype(char)
        code = dtypes.NATIVE_ELEMENT_TYPES.get(dtype)
        if code is None or dtype.isbuiltin != 1:
            continue
        try:
            buffer_format = memoryview(np.empty(0, dtype)).format
        except (TypeError, ValueError):
            continue  # numpy exports no buffer of this dtype
        element_types[buffer_format] = code
        formats.setdefault(code, (buffer_format.encode(), dtype.itemsize))
    address = ctypes.cast
    _native.bind(
        *(address(getattr(lib, name), ctypes.c_void_p).value for name in _NATIVE_FUNCTIONS),
        np.ndarray,
        element_types,
        formats,
        np.asarray,
        array,
    )
    return _native


#: What ``rtx._native`` calls, in ``bind``'s order.
_NATIVE_FUNCTIONS = ("rtx_buffer_view_new", "rtx_buffer_view_release", "rtx_buffer_view_info", "rtx_context_call_op")

#: The compiled path of eager ops, or ``None``.
native = _bind_native()


def holds_strings(value: Any) -> bool:
    """Whether ``value`` is a numpy array of strings (str, bytes, or objects), which crosses as a
    tensor of strings."""
    return isinstance(value, np.ndarray) and value.dtype.kind in "USO"


def string_tensor(value: np.ndarray, function: str, index: int) -> int:
    """A new async value holding the strings of ``value`` (str, bytes or an object array of
    either), each as UTF-8."""
    where = f"{function} argument {index}"
    encoded = []
    for element in value.reshape(-1).tolist():
        if isinstance(element, str):
            encoded.append(element.encode("utf-8"))
        elif isinstance(element, bytes):
            encoded.append(element)
        else:
            raise InvalidArgumentError(f"{where} is a tensor of strings: found {type(element).__name__}")
    count = len(encoded)
    dims = (ctypes.c_int64 * max(value.ndim, 1))(*value.shape)
    strings = (ctypes.c_char_p * max(count, 1))(*encoded)
    lengths = (ctypes.c_size_t * max(count, 1))(*(len(e) for e in encoded))
    made = lib.rtx_async_value_new_string_tensor(dims, value.ndim, strings, lengths, count)
    if not made:
        raise InvalidArgumentError(f"{where}: its strings are not UTF-8")
    return made


def strings(value: int) -> np.ndarray:
    """The tensor of strings an async value holds (borrowed), as a numpy array of str objects."""
    rank = ctypes.c_size_t()
    check(lib.rtx_async_value_get_string_tensor_shape(value, ctypes.byref(rank), None, 0))
    dims = (ctypes.c_int64 * max(rank.value, 1))()
    check(lib.rtx_async_value_get_string_tensor_shape(value, ctypes.byref(rank), dims, rank.value))
    shape = tuple(dims[k] for k in range(rank.value))
    out = np.empty(shape, dtype=object)
    flat = out.reshape(-1)
    data, length = ctypes.c_void_p(), ctypes.c_size_t()
    for k in range(flat.size):
        check(lib.rtx_async_value_get_string_tensor_element(value, k, ctypes.byref(data), ctypes.byref(length)))
        flat[k] = ctypes.string_at(data, length.value).decode("utf-8") if length.value else ""
    return out


def result(kind: ValueKind, value: int) -> Result:
    """Reads one available result value (borrowed): a numpy array or a Python number. A value
    that is an error raises it (the getters return the value's own error)."""
    held = lib.rtx_async_value_type(value) if kind is ValueKind.REF else None
    if held == _NONE:
        return None
    if held == _STRINGS:
        return strings(value)
    if held == _SEQUENCE:
        length = ctypes.c_size_t()
        check(lib.rtx_async_value_get_sequence_length(value, ctypes.byref(length)))
        elements = []
        for k in range(length.value):
            view = handle_p()
            check(lib.rtx_async_value_get_sequence_element(value, k, ctypes.byref(view)))
            elements.append(array(written(view)))
        return elements
    if kind is ValueKind.REF:
        view = handle_p()
        error = lib.rtx_async_value_get_buffer_view(value, ctypes.byref(view))
        if error:
            check(error)
        return array(written(view))
    getter, c_type = _GET_SCALAR[kind]
    out = c_type()
    error = getter(value, ctypes.byref(out))
    if error:
        check(error)
    return out.value
