#!/usr/bin/env bash
# Per-call cost of a Python call through rtx against iree.runtime on the same .vmfb and device,
# same process, alternating rounds (python/bench/python_call.py; its --help lists the options):
#
#     scripts/bench/python-call.sh [--devices local-sync,local-task] [--queues s,mstd] [--rounds 7] ...
#
# Builds and installs the package first (scripts/setup/python-package.sh). Wall-clock: on a shared
# machine the ratio of one run is indicative only.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=$("$repo/scripts/setup/python-package.sh")
# numpy's BLAS threads spin between calls and would take cores from both runtimes.
OPENBLAS_NUM_THREADS=1 exec "$python" "$repo/python/bench/python_call.py" "$@"
