#!/usr/bin/env bash
# Regenerates tests/fixtures/vmvx_ukernels/kernels.vmfb: tests/fixtures/vmvx_ukernels/src/kernels.mlir
# compiled by the real IREE 3.13 compiler (found or installed by scripts/setup/iree-tools.sh) for VMVX with
# microkernels and data tiling, so its dispatches call the `vmvx` module (elementwise kernels,
# copies, fills, pack/mmt4d/unpack, query_tile_sizes) instead of bytecode loops.
#
# It compiles from inside src/ with relative names, so no machine path ends up in the output.
#
# Usage: scripts/regen/vmvx-ukernel-fixtures.sh [--out DIR]   (default: tests/fixtures/vmvx_ukernels)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixtures=$repo/tests/fixtures/vmvx_ukernels
out=$fixtures
if [[ $# -eq 2 && $1 == --out ]]; then
    out=$2
elif [[ $# -ne 0 ]]; then
    echo "regen/vmvx-ukernel-fixtures.sh: usage: [--out DIR]" >&2
    exit 2
fi
tools=$("$repo/scripts/setup/iree-tools.sh")
mkdir -p "$out"
out=$(cd "$out" && pwd)

(cd "$fixtures/src" && "$tools/iree-compile" --iree-hal-target-device=local \
    --iree-hal-local-target-device-backends=vmvx --iree-vmvx-enable-microkernels --iree-opt-data-tiling \
    kernels.mlir -o "$out/kernels.vmfb")
