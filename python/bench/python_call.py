"""Per-call cost of one Python call through rtx and through ``iree.runtime``, same run.

    python python/bench/python_call.py [--devices local-sync,local-task] [--queues s,mstd]
                                       [--rounds 7] [--calls 5000] [--model M --function F --input X.npy]

Both runtimes load the same ``.vmfb`` on the same device in this process; each round times
``--calls`` calls of each, in alternating order (rtx first in even rounds), so that a machine's
drift reaches both alike. rtx is ``Context.invoke`` (numpy in, numpy out); ``iree.runtime`` is
its function object called as its users call it, once as it returns (a ``DeviceArray``, mapped
only when read) and once read as numpy (``np.asarray``), which is what ``invoke`` returns. The
table gives the median and best per-call microseconds over the rounds, and the median of the
rounds' ratios rtx / iree.runtime. The results of both are checked equal first.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Callable, Dict, List

import iree.runtime as ireert
import numpy as np

import rtx

DIGITS = Path(__file__).resolve().parents[2] / "models" / "digits"


def per_call_us(call: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e6


def iree_function(model: Path, function: str, device: str) -> Callable[..., object]:
    config = ireert.Config(device)
    context = ireert.SystemContext(config=config)
    module = ireert.VmModule.mmap(config.vm_instance, str(model))
    context.add_vm_module(module)
    return context.modules[module.name][function]


def measure(
    model: Path, function: str, x: np.ndarray, device: str, queue: str, rounds: int, calls: int
) -> Dict[str, List[float]]:
    context = rtx.Context(device=device, work_queue=queue)
    context.add_module(rtx.Module.load(model))
    theirs = iree_function(model, function, device)
    [ours] = context.invoke(function, x)
    np.testing.assert_array_equal(ours, np.asarray(theirs(x)))
    runs: Dict[str, Callable[[], object]] = {
        "rtx": lambda: context.invoke(function, x),
        "iree": lambda: theirs(x),
        "iree+numpy": lambda: np.asarray(theirs(x)),
    }
    for run in runs.values():  # warm up
        per_call_us(run, calls // 10 + 1)
    times: Dict[str, List[float]] = {name: [] for name in runs}
    for index in range(rounds):
        order = list(runs) if index % 2 == 0 else list(runs)[::-1]
        for name in order:
            times[name].append(per_call_us(runs[name], calls))
    context.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DIGITS / "mlp.vmfb")
    parser.add_argument("--function", default="predict")
    parser.add_argument("--input", type=Path, default=DIGITS / "digit_3.npy")
    parser.add_argument("--devices", default="local-sync,local-task")
    parser.add_argument("--queues", default="s,mstd", help="rtx work queues to measure")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    x = np.load(args.input)
    print(f"{args.model.name} {args.function}{x.shape} {x.dtype}: per-call µs, median (best) of {args.rounds} rounds "
          f"of {args.calls} calls, alternating; ratio = median of the rounds' rtx / iree.runtime")
    print("| device | rtx queue | rtx invoke | iree.runtime call | iree.runtime + np.asarray | ratio to call | ratio to + np.asarray |")
    print("|---|---|---|---|---|---|---|")
    for device in args.devices.split(","):
        for queue in args.queues.split(","):
            t = measure(args.model, args.function, x, device, queue, args.rounds, args.calls)
            cell = {name: f"{statistics.median(v):.1f} ({min(v):.1f})" for name, v in t.items()}
            ratio = {
                name: statistics.median(r / i for r, i in zip(t["rtx"], t[name])) for name in ("iree", "iree+numpy")
            }
            print(f"| {device} | {queue} | {cell['rtx']} | {cell['iree']} | {cell['iree+numpy']} | "
                  f"{ratio['iree']:.2f} | {ratio['iree+numpy']:.2f} |")


if __name__ == "__main__":
    main()
