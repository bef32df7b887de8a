"""Traces of what rtx does in this process, for Perfetto, ``chrome://tracing`` or ``rtx profile``.

    with rtx.tracing("trace.json"):
        ctx.invoke("predict", x)

One session per process at a time (a second raises :class:`FailedPreconditionError`); the file,
Chrome trace-event JSON with a span per BEF kernel, VM function call and CPU dispatch, is written
when the ``with`` block ends, however it ends.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, Union

from ._library import lib
from .errors import check


@contextlib.contextmanager
def tracing(path: Union[str, os.PathLike]) -> Iterator[None]:
    """Records a trace while the block runs and writes it to ``path`` when the block ends."""
    check(lib.rtx_tracing_begin(os.fsencode(path)))
    try:
        yield
    finally:
        check(lib.rtx_tracing_end())
