#!/usr/bin/env bash
# Regenerates tests/fixtures/hal_run: every tests/fixtures/hal_run/src/<name>.mlir compiled by the
# real IREE 3.13 compiler (found or installed by scripts/setup/iree-tools.sh) for every CPU executable
# format rtx loads:
#
#   <name>_vmvx.vmfb      --iree-hal-local-target-device-backends=vmvx
#   <name>_embedded.vmfb  llvm-cpu, embedded ELF (the default), generic x86-64 CPU
#   <name>_system.vmfb    llvm-cpu, system ELF (--iree-llvmcpu-link-embedded=false)
#
# A source whose first line is `// iree-compile flags: ...` gets those flags too (e.g. the
# `coarse-fences` model for async.mlir). It compiles from inside src/ with relative names, so no
# machine path ends up in the output.
#
# Usage: scripts/regen/hal-run-fixtures.sh [--out DIR]   (default: tests/fixtures/hal_run)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixtures=$repo/tests/fixtures/hal_run
out=$fixtures
if [[ $# -eq 2 && $1 == --out ]]; then
    out=$2
elif [[ $# -ne 0 ]]; then
    echo "regen/hal-run-fixtures.sh: usage: [--out DIR]" >&2
    exit 2
fi
tools=$("$repo/scripts/setup/iree-tools.sh")
mkdir -p "$out"
out=$(cd "$out" && pwd)

compile() {
    local source=$1 format=$2 flags
    shift 2
    flags=$(sed -n '1s|^// iree-compile flags: ||p' "$fixtures/src/$source.mlir")
    # shellcheck disable=SC2086 # the flags are words
    (cd "$fixtures/src" && "$tools/iree-compile" --iree-hal-target-device=local $flags "$@" "$source.mlir" \
        -o "$out/${source}_$format.vmfb")
}
for source in "$fixtures"/src/*.mlir; do
    source=$(basename "$source" .mlir)
    compile "$source" vmvx --iree-hal-local-target-device-backends=vmvx
    compile "$source" embedded --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic
    compile "$source" system --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=generic \
        --iree-llvmcpu-link-embedded=false
done
