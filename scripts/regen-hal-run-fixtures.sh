#!/usr/bin/env bash
# Regenerates tests/fixtures/hal_run: tests/fixtures/hal_run/src/programs.mlir compiled by the real
# IREE 3.13 compiler (found or installed by scripts/iree-tools.sh) for every CPU executable format
# rtx loads:
#
#   programs_vmvx.vmfb      --iree-hal-local-target-device-backends=vmvx
#   programs_embedded.vmfb  llvm-cpu, embedded ELF (the default), generic x86-64 CPU
#   programs_system.vmfb    llvm-cpu, system ELF (--iree-llvmcpu-link-embedded=false)
#
# It compiles from inside src/ with relative names, so no machine path ends up in the output.
#
# Usage: scripts/regen-hal-run-fixtures.sh [--out DIR]   (default: tests/fixtures/hal_run)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fixtures=$repo/tests/fixtures/hal_run
out=$fixtures
if [[ $# -eq 2 && $1 == --out ]]; then
    out=$2
elif [[ $# -ne 0 ]]; then
    echo "regen-hal-run-fixtures.sh: usage: [--out DIR]" >&2
    exit 2
fi
tools=$("$repo/scripts/iree-tools.sh")
mkdir -p "$out"
out=$(cd "$out" && pwd)

compile() {
    local name=$1
    shift
    (cd "$fixtures/src" && "$tools/iree-compile" --iree-hal-target-device=local "$@" programs.mlir -o "$out/programs_$name.vmfb")
}
compile vmvx --iree-hal-local-target-device-backends=vmvx
compile embedded --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic
compile system --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic \
    --iree-llvmcpu-link-embedded=false
