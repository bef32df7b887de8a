"""``rtx.tracing``: a trace of a call is Chrome trace-event JSON whose spans are what ran."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rtx
from conftest import DIGITS, digit, load


def test_a_traced_call_has_a_span_per_vm_call_and_dispatch(tmp_path: Path) -> None:
    context = load(DIGITS / "mlp.vmfb", device="local-task")
    trace = tmp_path / "trace.json"
    with rtx.tracing(trace):
        [y] = context.invoke("predict", digit(7))
    assert int(np.argmax(y)) == 7
    events = json.loads(trace.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    names = {e["name"] for e in spans if e["cat"] == "vm"}
    # The call, and the HAL call that runs the command buffer recorded when the module loaded.
    assert {"module.predict", "hal.device.queue.execute.indirect"} <= names, names
    # The MLP's three dispatches (two matmuls and the softmax), each once.
    dispatches = sorted(e["name"] for e in spans if e["cat"] == "dispatch")
    assert len(dispatches) == 3 and all(name.startswith("predict_dispatch_") for name in dispatches), dispatches
    for span in spans:
        assert span["dur"] >= 0 and span["ts"] >= 0 and isinstance(span["tid"], int), span


def test_one_session_at_a_time_and_an_unwritable_path_is_refused(tmp_path: Path) -> None:
    with rtx.tracing(tmp_path / "first.json"):
        with pytest.raises(rtx.FailedPreconditionError):
            with rtx.tracing(tmp_path / "second.json"):
                pass
    with pytest.raises(rtx.InvalidArgumentError, match="cannot write the trace"):
        with rtx.tracing(tmp_path / "no-such-folder" / "trace.json"):
            pass
