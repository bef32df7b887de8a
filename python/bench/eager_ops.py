"""Per-op cost of an eager op from Python against numpy's own call for the same op, same run.

    python python/bench/eager_ops.py [--rounds 15] [--calls 20000] [--queue s] [--ctypes]

Each round times ``--calls`` calls of each on two 4-element float32 arrays, in alternating order
(rtx first in even rounds): numpy's ``np.add(a, b)`` (the anchor) and rtx's
``Context.execute_op(op, a, b)`` for TFRT's ``tfrt_test.add`` (the cpu handler's own op) and
ONNX's ``onnx.Add`` (a kernel run as a one-op function), each returning a numpy array. The
table gives the median per-call microseconds over the rounds and the median of the rounds'
ratios rtx / numpy. The results are checked equal first. ``--ctypes`` times the path a package
built without its compiled binding (``rtx._native``) takes. The cost from C is
``cargo bench --bench eager``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, Dict, List

import numpy as np

import rtx


def per_call_us(call: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--queue", default="s", help="the context's work queue (s, mstd)")
    parser.add_argument("--ctypes", action="store_true", help="without the compiled binding")
    options = parser.parse_args()
    if options.ctypes:
        from rtx import context as context_module

        context_module._native = None  # type: ignore[attr-defined]

    context = rtx.Context(device=None, work_queue=options.queue)
    a = np.array([1, 2, 3, 4], dtype=np.float32)
    b = np.array([0.5, -1, 2, 8], dtype=np.float32)
    runs: Dict[str, Callable[[], object]] = {
        "numpy np.add": lambda: np.add(a, b),
        "rtx tfrt_test.add": lambda: context.execute_op("tfrt_test.add", a, b),
        "rtx onnx.Add": lambda: context.execute_op("onnx.Add", a, b),
    }
    for name, run in runs.items():
        result = run()
        np.testing.assert_array_equal(result if isinstance(result, np.ndarray) else result[0], a + b, err_msg=name)
        per_call_us(run, options.calls // 10 + 1)  # warm up
    times: Dict[str, List[float]] = {name: [] for name in runs}
    ratios: Dict[str, List[float]] = {name: [] for name in runs if name != "numpy np.add"}
    for round_index in range(options.rounds):
        order = list(runs) if round_index % 2 else list(runs)[::-1]
        measured = {name: per_call_us(runs[name], options.calls) for name in order}
        for name, value in measured.items():
            times[name].append(value)
        for name in ratios:
            ratios[name].append(measured[name] / measured["numpy np.add"])
    path = "ctypes" if options.ctypes else "compiled binding" if rtx._values.native else "ctypes (no compiled binding)"
    print(
        f"eager op on two 4-element float32 arrays, {options.rounds} rounds of {options.calls} calls, "
        f"queue {options.queue}, {path}"
    )
    for name, values in times.items():
        ratio = f"   rtx/numpy {statistics.median(ratios[name]):.2f}" if name in ratios else ""
        print(f"  {name:<20} {statistics.median(values):8.2f} us{ratio}")


if __name__ == "__main__":
    main()
