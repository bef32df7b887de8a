"""numpy dtypes and the HAL element type codes of rtx buffer views (include/rtx.h).

Every dtype numpy has an element type for maps both ways, as ``iree.runtime`` maps them (signed
integers to ``si*``, unsigned to ``ui*``, ``bool`` to ``i1`` stored as bytes). The signless
``i*`` codes that programs return read as the signed dtype. bfloat16 and the float8 types map
when ``ml_dtypes`` (which ``iree.runtime`` uses for them) is installed. Anything else (``i4``,
``float128``, strings, objects, datetimes) is refused with an :class:`~rtx.errors.Error`.
"""

from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from .errors import InvalidArgumentError, UnimplementedError

_NUMPY: Dict[np.dtype, int] = {
    np.dtype(np.bool_): 0x13000008,
    np.dtype(np.int8): 0x11000008,
    np.dtype(np.uint8): 0x12000008,
    np.dtype(np.int16): 0x11000010,
    np.dtype(np.uint16): 0x12000010,
    np.dtype(np.int32): 0x11000020,
    np.dtype(np.uint32): 0x12000020,
    np.dtype(np.int64): 0x11000040,
    np.dtype(np.uint64): 0x12000040,
    np.dtype(np.float16): 0x21000010,
    np.dtype(np.float32): 0x21000020,
    np.dtype(np.float64): 0x21000040,
    np.dtype(np.complex64): 0x23000040,
    np.dtype(np.complex128): 0x23000080,
}

try:
    import ml_dtypes

    _ML = {
        np.dtype(getattr(ml_dtypes, name)): code
        for name, code in [
            ("bfloat16", 0x22000010),
            ("float8_e5m2", 0x24000008),
            ("float8_e4m3fn", 0x25000008),
            ("float8_e5m2fnuz", 0x26000008),
            ("float8_e4m3fnuz", 0x27000008),
            ("float8_e8m0fnu", 0x28000008),  # ml_dtypes 0.5 and later
        ]
        if hasattr(ml_dtypes, name)
    }
except ImportError:
    _ML = {}

_TO_ELEMENT_TYPE: Dict[np.dtype, int] = {**_NUMPY, **_ML}
_TO_DTYPE: Dict[int, np.dtype] = {code: dtype for dtype, code in _TO_ELEMENT_TYPE.items()}
# Signless integers (what `tensor<4xi32>` results carry) read as the signed dtype.
for _bits, _dtype in ((8, np.int8), (16, np.int16), (32, np.int32), (64, np.int64)):
    _TO_DTYPE[0x10000000 | _bits] = np.dtype(_dtype)

#: Element type codes by native-byte-order dtype: the per-call lookup (`element_type` handles the rest).
NATIVE_ELEMENT_TYPES: Dict[np.dtype, int] = {d.newbyteorder("="): code for d, code in _TO_ELEMENT_TYPE.items()}
#: Per element type code, its dtype and the ``__array_interface__`` type string results are read
#: with: ml_dtypes' types (user-defined, ``isbuiltin`` 2) as raw bytes of their size.
ARRAY_TYPES: Dict[int, Tuple[np.dtype, str]] = {
    code: (d, d.str if d.isbuiltin == 1 else f"|V{d.itemsize}") for code, d in _TO_DTYPE.items()
}

_PREFIXES = {0x10: "i", 0x11: "si", 0x12: "ui", 0x21: "f", 0x22: "bf", 0x23: "complex"}
_SPECIAL_NAMES = {
    0x13000008: "i1",
    0x24000008: "f8E5M2",
    0x25000008: "f8E4M3FN",
    0x26000008: "f8E5M2FNUZ",
    0x27000008: "f8E4M3FNUZ",
    0x28000008: "f8E8M0FNU",
}


def element_type_name(code: int) -> str:
    """A readable name for an element type code (``f32``, ``si8``, ``bf16``) and the code."""
    name = _SPECIAL_NAMES.get(code)
    if name is None:
        prefix = _PREFIXES.get(code >> 24)
        name = f"{prefix}{code & 0xFF}" if prefix else "unknown"
    return f"{name} (0x{code:08x})"


def element_type(dtype: np.dtype) -> int:
    """The element type code of ``dtype`` in native byte order; raises for dtypes rtx cannot pass."""
    code = _TO_ELEMENT_TYPE.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)
    if code is None:
        raise InvalidArgumentError(
            f"numpy dtype {dtype} has no rtx element type; supported: " + ", ".join(str(d) for d in _TO_ELEMENT_TYPE)
        )
    return code


def dtype(code: int) -> np.dtype:
    """The numpy dtype of element type ``code``; raises for types numpy has no dtype for."""
    found = _TO_DTYPE.get(code)
    if found is None:
        raise unsupported(code)
    return found


def unsupported(code: int) -> UnimplementedError:
    """The error for a result of element type ``code``, which numpy has no dtype for."""
    hint = " (install ml_dtypes for bfloat16 and float8)" if not _ML and code >> 24 in range(0x22, 0x29) else ""
    return UnimplementedError(f"element type {element_type_name(code)} has no numpy dtype{hint}")
