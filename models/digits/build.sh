#!/usr/bin/env bash
# Regenerates the digit classifier: generate.py writes mlp.mlir and the sample digits, iree-compile
# 3.13 (scripts/iree-tools.sh) compiles it for the CPU (llvm-cpu, embedded ELF, generic x86-64).
# Usage: models/digits/build.sh [--out DIR]   (default: models/digits)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$here
if [[ $# -eq 2 && $1 == --out ]]; then
    out=$2
elif [[ $# -ne 0 ]]; then
    echo "build.sh: usage: [--out DIR]" >&2
    exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
tools=$("$repo/scripts/iree-tools.sh")
"$tools/python" "$here/generate.py" "$out"
(cd "$out" && "$tools/iree-compile" --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \
    --iree-llvmcpu-target-cpu=generic mlp.mlir -o mlp.vmfb)
