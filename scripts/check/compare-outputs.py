#!/usr/bin/env python3
"""Compares a model's outputs from rtx's work queues with a reference output, within 1e-4 relative.

  compare-outputs.py NAME LABEL REFERENCE.npy [--note TEXT] QUEUE=OURS.npy...

LABEL names the reference in the report (ONNX, IREE); each QUEUE=OURS.npy is rtx's output on that
work queue. Prints one line: the worst max |rtx - reference| / max |reference| over the queues (the
absolute difference where the reference is all zeros), and exits 1 when a shape differs, a NaN of
one side is not a NaN of the other, or the worst exceeds 1e-4; 2 without a QUEUE=OURS.npy
(scripts/check/onnx-light.sh and scripts/check/onnx-models.sh use it).
"""
import sys

import numpy as np

TOLERANCE = 1e-4


def main(argv):
    name, label, reference_path, *rest = argv
    note = ""
    if rest[:1] == ["--note"]:
        note, rest = rest[1] + "  ", rest[2:]
    if not rest:
        print(f"{name}: no QUEUE=OURS.npy to compare with {label}'s output")
        return 2
    reference = np.load(reference_path)
    nans = np.isnan(reference)
    scale = float(np.abs(np.where(nans, 0, reference)).max(initial=0))
    worst = 0.0
    queues = []
    for pair in rest:
        queue, path = pair.split("=", 1)
        ours = np.load(path)
        if ours.shape != reference.shape:
            print(f"{name}: {queue} output shape {ours.shape}, {label} {reference.shape}")
            return 1
        if (np.isnan(ours) != nans).any():
            print(f"{name}: {queue} output has NaNs where {label}'s has none, or the other way round")
            return 1
        difference = float(np.abs(np.where(nans, 0, ours - reference)).max(initial=0))
        worst = max(worst, difference / scale if scale > 0 else difference)
        queues.append(queue)
    verdict = "ok" if worst <= TOLERANCE else "FAILED"
    print(f"{name:14s} {note}output {'x'.join(map(str, reference.shape))}  "
          f"max |rtx - {label}| / max |{label}| = {worst:.1e} on {' and '.join(queues)}  {verdict}")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
