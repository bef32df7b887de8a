#!/usr/bin/env bash
# Regenerates the CPU executable fixtures under tests/fixtures/hal from their sources, with the real
# IREE 3.13 compiler (found or installed by scripts/setup/iree-tools.sh):
#
#   src/<name>.mlir  ->  <name>.embedded-elf-x86_64.so   llvm-cpu, the default embedded ELF
#                    ->  <name>.system-elf-x86_64.so     llvm-cpu, --iree-llvmcpu-link-embedded=false
#
# Each is the raw executable binary the compiler puts inside the .vmfb, taken from
# --iree-hal-dump-executable-binaries-to; a source must compile to exactly one executable. The
# target CPU is `generic` (x86-64 baseline) so the fixtures run on any x86-64 machine.
#
# Sources are compiled from inside src/ with a bare file name, so the source locations the
# compiler embeds name no machine path and regenerating twice gives identical files.
#
# Usage: scripts/regen/hal-executable-fixtures.sh
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixtures=$repo/tests/fixtures/hal

die() {
    echo "regen/hal-executable-fixtures.sh: $*" >&2
    exit 1
}

tools=$("$repo/scripts/setup/iree-tools.sh")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Remove what a previous run generated, so a deleted source leaves nothing stale.
rm -f "$fixtures"/*.so

shopt -s nullglob
sources=("$fixtures"/src/*.mlir)
[[ ${#sources[@]} -gt 0 ]] || die "no sources in $fixtures/src"

for source in "${sources[@]}"; do
    name=$(basename "$source" .mlir)
    for format in embedded-elf-x86_64 system-elf-x86_64; do
        link_embedded=true
        [[ $format == system-elf-x86_64 ]] && link_embedded=false
        dump=$scratch/$name.$format
        mkdir -p "$dump"
        if ! (cd "$fixtures/src" && "$tools/iree-compile" \
            --iree-hal-target-device=local \
            --iree-hal-local-target-device-backends=llvm-cpu \
            --iree-llvmcpu-target-cpu=generic \
            --iree-llvmcpu-link-embedded=$link_embedded \
            --iree-hal-dump-executable-binaries-to="$dump" \
            "$name.mlir" -o "$scratch/$name.$format.vmfb"); then
            die "iree-compile failed on src/$name.mlir for $format"
        fi
        binaries=("$dump"/*.so)
        [[ ${#binaries[@]} -eq 1 ]] || die "src/$name.mlir gave ${#binaries[@]} $format executables; expected 1"
        cp "${binaries[0]}" "$fixtures/$name.$format.so"
    done
done
