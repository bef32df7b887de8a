#!/usr/bin/env python3
"""rtx's own kernels (`rtx bench --module=NAME.onnx`: the model imported to a BEF kernel graph, run on
the `mstd` work queue) against onnxruntime's CPU provider on the same model and input, one process
each, rounds alternating, and the outputs compared first (rtol 1e-4, atol 1e-4 as the repository's
architecture tests compare them).

    target/onnx-venv/bin/python scripts/models/onnx-models.py --onnx-only [--built]   # target/onnx-models
    target/onnx-venv/bin/python scripts/bench/onnx-vs-onnxruntime.py target/onnx-models [NAME...] \\
        [--rounds=3] [--seconds=3] [--rtx=target/release/rtx]

onnxruntime runs with `intra_op_num_threads` = the cores, as rtx's `mstd` queue has a worker per core.
Each round times each runtime for `--seconds` after a warm-up call: onnxruntime's mean time per call
in a process of its own (this script, run again with `--onnxruntime-worker`), rtx's as `rtx bench`
reports it. Prints a line per model (medians over the rounds, ms per call) and the median ratio.
Needs `onnxruntime` and `numpy` in the Python that runs it, and a release build of rtx.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def onnxruntime_worker(model: str, input_path: str, seconds: float) -> None:
    """Prints onnxruntime's mean ms per call of `model` on the input, after a warm-up call."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = {session.get_inputs()[0].name: np.load(input_path)}
    session.run(None, feeds)
    calls, start = 0, time.perf_counter()
    while True:
        session.run(None, feeds)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    print(f"{elapsed / calls * 1e3:.4f}")


def onnxruntime_outputs(model: Path, input_path: Path) -> list:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: np.load(input_path)})


def rtx_outputs(rtx: str, model: Path, input_path: Path, count: int) -> list:
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"output_{k}.npy" for k in range(count)]
        command = [rtx, "run", f"--module={model}", f"--input=@{input_path}"] + [f"--output=@{p}" for p in paths]
        subprocess.run(command, check=True, capture_output=True)
        return [np.load(p) for p in paths]


def time_onnxruntime(model: Path, input_path: Path, seconds: float) -> float:
    command = [sys.executable, __file__, "--onnxruntime-worker", str(model), str(input_path), str(seconds)]
    return float(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def time_rtx(rtx: str, model: Path, input_path: Path, seconds: float) -> float:
    command = [rtx, "bench", f"--module={model}", f"--input=@{input_path}", f"--benchmark_min_time={seconds}"]
    stdout = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    nanoseconds = re.findall(r": median (\d+) ns per call", stdout)
    if not nanoseconds:
        raise RuntimeError(f"rtx bench printed no median: {stdout}")
    return int(nanoseconds[-1]) / 1e6


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--onnxruntime-worker":
        onnxruntime_worker(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("names", nargs="*", help="models (default: every NAME.onnx in DIR)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rtx", default=str(Path(__file__).resolve().parents[2] / "target/release/rtx"))
    args = parser.parse_args()
    names = args.names or sorted(path.stem for path in args.dir.glob("*.onnx"))
    ratios, failed = [], False
    for name in names:
        model, input_path = args.dir / f"{name}.onnx", args.dir / f"{name}.input.npy"
        theirs = onnxruntime_outputs(model, input_path)
        ours = rtx_outputs(args.rtx, model, input_path, len(theirs))
        differing = [k for k, (a, b) in enumerate(zip(ours, theirs))
                     if a.shape != b.shape or not np.allclose(a, b, rtol=1e-4, atol=1e-4)]
        if differing:
            print(f"{name}: outputs {differing} differ from onnxruntime's; not timed", flush=True)
            failed = True
            continue
        times = {"onnxruntime": [], "rtx": []}
        for _ in range(args.rounds):
            times["onnxruntime"].append(time_onnxruntime(model, input_path, args.seconds))
            times["rtx"].append(time_rtx(args.rtx, model, input_path, args.seconds))
        theirs_ms, ours_ms = statistics.median(times["onnxruntime"]), statistics.median(times["rtx"])
        ratios.append(ours_ms / theirs_ms)
        print(f"{name:<14} onnxruntime {theirs_ms:9.2f} ms  rtx {ours_ms:9.2f} ms  rtx/onnxruntime {ours_ms / theirs_ms:5.2f}"
              "  (same outputs)", flush=True)
    if ratios:
        print(f"median rtx/onnxruntime over {len(ratios)} models: {statistics.median(ratios):.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
