#!/usr/bin/env python3
"""Compares a model's outputs from rtx's work queues with a reference output, within 1e-4 relative.

  compare-outputs.py NAME LABEL REFERENCE.npy [--note TEXT] QUEUE=OURS.npy...

LABEL names the reference in the report (ONNX, IREE); each QUEUE=OURS.npy is rtx's output on that
work queue. Prints one line: the worst max |rtx - reference| / max |reference| over the queues, and
exits 1 when a shape differs or the worst exceeds 1e-4 (scripts/check/onnx-light.sh and
scripts/check/onnx-models.sh use it).
"""
import sys

import numpy as np

TOLERANCE = 1e-4


def main(argv):
    name, label, reference_path, *rest = argv
    note = ""
    if rest[:1] == ["--note"]:
        note, rest = rest[1] + "  ", rest[2:]
    reference = np.load(reference_path)
    worst = 0.0
    queues = []
    for pair in rest:
        queue, path = pair.split("=", 1)
        ours = np.load(path)
        if ours.shape != reference.shape:
            print(f"{name}: {queue} output shape {ours.shape}, {label} {reference.shape}")
            return 1
        worst = max(worst, float(np.abs(ours - reference).max() / np.abs(reference).max()))
        queues.append(queue)
    verdict = "ok" if worst <= TOLERANCE else "FAILED"
    print(f"{name:14s} {note}output {'x'.join(map(str, reference.shape))}  "
          f"max |rtx - {label}| / max |{label}| = {worst:.1e} on {' and '.join(queues)}  {verdict}")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
