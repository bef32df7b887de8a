#!/usr/bin/env python3
"""ctypes_check: librtx from Python through ctypes, the way a language binding would load it.

usage: ctypes_check.py /path/to/librtx.so EXPECTED_VERSION

Checks the version, creates/reads/releases values, runs a Python callback as a task on an
"mstd:2" context (ctypes takes the GIL on the worker thread), awaits, and reads an error's code
and message. Exits 0 only if every check holds.
"""
import ctypes
import sys

# Fixed numbers of rtx_status_code_t (include/rtx.h).
STATUS_OK = 0
STATUS_CANCELLED = 1
STATUS_INVALID_ARGUMENT = 3
STATUS_NOT_FOUND = 5
STATUS_FAILED_PRECONDITION = 9

WORK_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class ContextOptions(ctypes.Structure):
    """rtx_context_options_t."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("work_queue", ctypes.c_char_p),
        ("custom_work_queue", ctypes.c_void_p),
        ("allocator", ctypes.c_void_p),
        ("memory_limit", ctypes.c_uint64),
    ]


def declare(lib):
    p = ctypes.c_void_p
    signatures = {
        "rtx_version": (ctypes.c_char_p, []),
        "rtx_abi_version": (ctypes.c_uint32, []),
        "rtx_status_code_name": (ctypes.c_char_p, [ctypes.c_uint32]),
        "rtx_error_code": (ctypes.c_uint32, [p]),
        "rtx_error_message": (ctypes.c_char_p, [p]),
        "rtx_error_delete": (None, [p]),
        "rtx_context_options_init": (None, [ctypes.POINTER(ContextOptions)]),
        "rtx_context_new": (p, [ctypes.POINTER(ContextOptions), ctypes.POINTER(p)]),
        "rtx_context_release": (None, [p]),
        "rtx_context_parallelism": (ctypes.c_uint32, [p]),
        "rtx_context_quiesce": (None, [p]),
        "rtx_context_enqueue": (p, [p, WORK_FN, p]),
        "rtx_async_value_new_i32": (p, [ctypes.c_int32]),
        "rtx_async_value_new_f64": (p, [ctypes.c_double]),
        "rtx_async_value_new_unavailable": (p, []),
        "rtx_async_value_new_error": (p, [ctypes.c_uint32, ctypes.c_char_p]),
        "rtx_async_value_set_i32": (p, [p, ctypes.c_int32]),
        "rtx_async_value_get_i32": (p, [p, ctypes.POINTER(ctypes.c_int32)]),
        "rtx_async_value_get_f64": (p, [p, ctypes.POINTER(ctypes.c_double)]),
        "rtx_async_value_get_error": (p, [p]),
        "rtx_async_value_is_available": (ctypes.c_bool, [p]),
        "rtx_async_value_is_error": (ctypes.c_bool, [p]),
        "rtx_async_value_await": (p, [p, ctypes.POINTER(p), ctypes.c_size_t]),
        "rtx_async_value_release": (None, [p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


class Checker:
    def __init__(self):
        self.failures = 0

    def check(self, ok, what):
        print(f"  {what:<70} {'ok' if ok else 'FAILED'}")
        if not ok:
            self.failures += 1


def take_error(lib, error):
    """(code, message) of an owned rtx_error_t*, which is freed; (OK, '') for NULL."""
    if not error:
        return STATUS_OK, ""
    code, message = lib.rtx_error_code(error), lib.rtx_error_message(error).decode()
    lib.rtx_error_delete(error)
    return code, message


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    library_path, expected_version = sys.argv[1], sys.argv[2]
    lib = ctypes.CDLL(library_path)
    declare(lib)
    c = Checker()
    print(f"ctypes: loaded {library_path}")

    version = lib.rtx_version().decode()
    c.check(version == expected_version, f"rtx_version() = {version!r} (Cargo.toml: {expected_version!r})")
    c.check(lib.rtx_status_code_name(STATUS_INVALID_ARGUMENT) == b"INVALID_ARGUMENT", "status code names")

    value = lib.rtx_async_value_new_i32(-7)
    out = ctypes.c_int32(0)
    code, _ = take_error(lib, lib.rtx_async_value_get_i32(value, ctypes.byref(out)))
    c.check(code == STATUS_OK and out.value == -7, "new_i32(-7) reads back -7")
    wrong = ctypes.c_double(0)
    code, message = take_error(lib, lib.rtx_async_value_get_f64(value, ctypes.byref(wrong)))
    c.check(code == STATUS_INVALID_ARGUMENT and message, f"reading it as f64: INVALID_ARGUMENT ({message})")
    lib.rtx_async_value_release(value)

    pending = lib.rtx_async_value_new_unavailable()
    code, _ = take_error(lib, lib.rtx_async_value_get_i32(pending, ctypes.byref(out)))
    c.check(code == STATUS_FAILED_PRECONDITION, "reading an unavailable value: FAILED_PRECONDITION")

    options = ContextOptions()
    lib.rtx_context_options_init(ctypes.byref(options))
    c.check(options.struct_size == ctypes.sizeof(ContextOptions), "rtx_context_options_t layout matches")
    options.work_queue = b"mstd:2"
    context = ctypes.c_void_p()
    code, message = take_error(lib, lib.rtx_context_new(ctypes.byref(options), ctypes.byref(context)))
    c.check(code == STATUS_OK and context.value, f"context 'mstd:2' created {message}")
    c.check(lib.rtx_context_parallelism(context) == 2, "parallelism 2")

    calls = []

    def work(_user_data):
        calls.append("ran")
        take_error(lib, lib.rtx_async_value_set_i32(pending, 42))

    callback = WORK_FN(work)  # kept alive until the context is quiesced
    code, message = take_error(lib, lib.rtx_context_enqueue(context, callback, None))
    c.check(code == STATUS_OK, f"enqueue a Python callback {message}")
    values = (ctypes.c_void_p * 1)(pending)
    code, message = take_error(lib, lib.rtx_async_value_await(context, values, 1))
    lib.rtx_context_quiesce(context)
    code2, _ = take_error(lib, lib.rtx_async_value_get_i32(pending, ctypes.byref(out)))
    c.check(code == STATUS_OK and code2 == STATUS_OK and out.value == 42 and calls == ["ran"],
            "the callback ran once on a worker and set 42; await returned")

    code, message = take_error(lib, lib.rtx_context_new(ctypes.byref(options), None))
    c.check(code == STATUS_INVALID_ARGUMENT and "out_context" in message,
            "rtx_context_new(options, NULL): INVALID_ARGUMENT naming the argument")

    failed = lib.rtx_async_value_new_error(STATUS_NOT_FOUND, b"no module named 'mnist'")
    c.check(lib.rtx_async_value_is_available(failed) and lib.rtx_async_value_is_error(failed), "error values are available")
    code, message = take_error(lib, lib.rtx_async_value_get_error(failed))
    c.check(code == STATUS_NOT_FOUND and "no module named 'mnist'" in message,
            f"error code NOT_FOUND and message {message!r}")
    lib.rtx_async_value_release(failed)

    lib.rtx_context_release(context)
    lib.rtx_async_value_release(pending)
    del callback

    if c.failures:
        print(f"{c.failures} check(s) FAILED")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
