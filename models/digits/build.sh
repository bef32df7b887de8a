#!/usr/bin/env bash
# Regenerates the digit classifier: generate.py writes mlp.mlir, graphs.mlir (the same MLP as TFRT
# kernels, and a pipeline through the compiled model) and the sample digits, iree-compile
# 3.13 (scripts/setup/iree-tools.sh) compiles it for the CPU (llvm-cpu, embedded ELF, generic x86-64), and
# predictions.txt records what iree-run-module prints for each sample, one line per digit (the
# C++ example c-examples/digits.cpp checks rtx's results against it).
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
tools=$("$repo/scripts/setup/iree-tools.sh")
"$tools/python" "$here/generate.py" "$out"
# graphs.bef (the kernel graphs as BEF, which c-examples/allocator_faults.c runs) is written by
# rtx's own translator; tests/all/runtime_bef.rs checks it against graphs.mlir.
cargo run --quiet --release --manifest-path "$repo/Cargo.toml" --bin rtx -- \
    translate --mlir-to-bef "$out/graphs.mlir" -o "$out/graphs.bef"
(cd "$out" && "$tools/iree-compile" --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \
    --iree-llvmcpu-target-cpu=generic mlp.mlir -o mlp.vmfb)
(cd "$out" && for d in 0 1 2 3 4 5 6 7 8 9; do
    "$tools/iree-run-module" --device=local-sync --module=mlp.vmfb --function=predict --input="@digit_$d.npy" |
        grep '^1x10xf32='
done) >"$out/predictions.txt"
