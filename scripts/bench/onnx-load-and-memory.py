#!/usr/bin/env python3
"""First-call latency and peak memory of rtx against onnxruntime on the same ONNX models, rounds
alternating, one process per measurement.

    target/onnx-venv/bin/python scripts/bench/onnx-load-and-memory.py target/onnx-models [NAME...] \\
        [--rounds=3] [--calls=100] [--rtx=target/release/rtx]

First call: for rtx, the whole `rtx run --module=NAME.onnx --input=@NAME.input.npy` process (start,
import, load, one call, output written); for onnxruntime, `InferenceSession` creation plus its first
`run`, timed inside a process that has already imported onnxruntime and read the input — the
interpreter's own start is left out, in onnxruntime's favour.

Peak memory: the largest resident set (`ru_maxrss`, from `wait4`) of a process that loads the model
and runs it `--calls` times: `rtx bench --benchmark_min_time=Nx`, and a Python process running the
onnxruntime session. The Python process's floor (interpreter, numpy and onnxruntime imported, no
session) is printed beside it; the ratio is against the whole process, as a user's would be.
Prints medians over the rounds, in ms and MiB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def onnxruntime_worker(model: str, input_path: str, calls: int) -> None:
    """Prints the ms from session creation to the end of the first call, then runs `calls` more."""
    import numpy as np
    import onnxruntime

    feeds_value = np.load(input_path)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    start = time.perf_counter()
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = {session.get_inputs()[0].name: feeds_value}
    session.run(None, feeds)
    print(f"{(time.perf_counter() - start) * 1e3:.3f}", flush=True)
    for _ in range(calls):
        session.run(None, feeds)


def measured(command: list[str]) -> tuple[str, float, float]:
    """The command's stdout, wall ms and peak resident set in MiB."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stdout = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - start) * 1e3
    # Reaped here (for its usage), so Popen must not wait for it again.
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stdout.close()
    if process.returncode != 0:
        raise RuntimeError(f"exit status {process.returncode}: {' '.join(command)}")
    return stdout, wall, usage.ru_maxrss / 1024


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--onnxruntime-worker":
        onnxruntime_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("names", nargs="*", help="models (default: every NAME.onnx in DIR)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rtx", default=str(Path(__file__).resolve().parents[2] / "target/release/rtx"))
    args = parser.parse_args()
    names = args.names or sorted(path.stem for path in args.dir.glob("*.onnx"))
    _, _, floor = measured([sys.executable, "-c", "import numpy, onnxruntime"])
    print(f"onnxruntime's Python process floor (numpy and onnxruntime imported): {floor:.0f} MiB")
    for name in names:
        model, input_path = args.dir / f"{name}.onnx", args.dir / f"{name}.input.npy"
        rows = {key: [] for key in ("ort_first", "rtx_first", "ort_peak", "rtx_peak")}
        for _ in range(args.rounds):
            stdout, _, peak = measured([sys.executable, __file__, "--onnxruntime-worker", str(model),
                                        str(input_path), str(args.calls)])
            rows["ort_first"].append(float(stdout.split()[0]))
            rows["ort_peak"].append(peak)
            _, wall, _ = measured([args.rtx, "run", f"--module={model}", f"--input=@{input_path}"])
            rows["rtx_first"].append(wall)
            _, _, peak = measured([args.rtx, "bench", f"--module={model}", f"--input=@{input_path}",
                                   f"--benchmark_min_time={args.calls}x", "--no_iree"])
            rows["rtx_peak"].append(peak)
        m = {key: statistics.median(values) for key, values in rows.items()}
        print(f"{name:<14} first call: onnxruntime {m['ort_first']:8.1f} ms  rtx {m['rtx_first']:8.1f} ms  "
              f"rtx/onnxruntime {m['rtx_first'] / m['ort_first']:5.2f}   "
              f"peak over {args.calls} calls: onnxruntime {m['ort_peak']:7.0f} MiB  rtx {m['rtx_peak']:7.0f} MiB  "
              f"rtx/onnxruntime {m['rtx_peak'] / m['ort_peak']:5.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
