#!/usr/bin/env bash
# Regenerates tests/fixtures/bridge: every tests/fixtures/bridge/src/<name>.mlir compiled by the
# real IREE 3.13 compiler (scripts/setup/iree-tools.sh) for the CPU (llvm-cpu, embedded ELF, generic
# x86-64) as <name>.vmfb. It compiles from inside src/ with relative names, so no machine path
# ends up in the output.
#
# Usage: scripts/regen/bridge-fixtures.sh [--out DIR]   (default: tests/fixtures/bridge)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixtures=$repo/tests/fixtures/bridge
out=$fixtures
if [[ $# -eq 2 && $1 == --out ]]; then
    out=$2
elif [[ $# -ne 0 ]]; then
    echo "regen/bridge-fixtures.sh: usage: [--out DIR]" >&2
    exit 2
fi
tools=$("$repo/scripts/setup/iree-tools.sh")
mkdir -p "$out"
out=$(cd "$out" && pwd)
for source in "$fixtures"/src/*.mlir; do
    source=$(basename "$source" .mlir)
    (cd "$fixtures/src" && "$tools/iree-compile" --iree-hal-target-device=local \
        --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic "$source.mlir" \
        -o "$out/$source.vmfb")
done
