#!/usr/bin/env bash
# Regenerates the corpus of real IREE compiler output in tests/fixtures/mlir/corpus from the
# sources in tests/fixtures/mlir/corpus/src (each names where it came from in its first line) with
# IREE 3.13's iree-compile and iree-opt, found through scripts/setup/iree-tools.sh:
#
#   1. Each corpus entry below is a source taken to one stage: `source` is the file as written
#      (raw stablehlo, util, linalg ...); a phase name is `iree-compile --compile-to=<phase>` with a
#      local device on the named backend (llvm-cpu for generic x86-64, or vmvx), or the vulkan device
#      for vulkan-spirv (its executables are spirv.module ops); `codegen` is
#      `--compile-to=executable-configurations` followed by the backend's
#      lower-executable-target pass inside each executable (vector, scf, memref, iree_codegen).
#      The stage stays bytecode (iree-compile --emit-mlir-bytecode, iree-opt --emit-bytecode), so
#      every location is the one the compiler made, pointing into the source.
#   2. tests/fixtures/mlir/corpus/<entry>.v<N>.mlirbc
#        iree-opt --emit-bytecode --emit-bytecode-version=N of the stage, for the entry's versions
#        (every version 0..6 for the small entries; 6 and a few older ones for the big ones).
#   3. tests/fixtures/mlir/corpus/<entry>.generic.mlir
#        iree-opt --allow-unregistered-dialect --mlir-print-op-generic --mlir-print-debuginfo of the
#        stage: the text every version of the entry must print as (checked below: a version whose
#        print differs gets <entry>.v<N>.generic.mlir, as in scripts/regen/mlir-fixtures.sh).
#
# crates/mlir/tests/all/mlir_corpus.rs reads every file with rtx and compares rtx's print with
# upstream's; with RTX_CHECK_FIXTURES=1 and the tools, iree-opt reads rtx's text and rtx's bytecode
# of every version.
# Run from anywhere: paths in locations are relative to the repository root.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=$("$repo/scripts/setup/iree-tools.sh")
compile="$tools/iree-compile"
opt="$tools/iree-opt"
[[ -x "$compile" && -x "$opt" ]] || { echo "regen/mlir-corpus.sh: no iree-compile/iree-opt in $tools" >&2; exit 1; }
cd "$repo"
out=tests/fixtures/mlir/corpus
src=$out/src
stage_dir=$out/stage
rm -rf "$stage_dir"
mkdir -p "$stage_dir"
trap 'rm -rf "$stage_dir"' EXIT
rm -f "$out"/*.mlirbc "$out"/*.refused "$out"/*.generic.mlir

all="0 1 2 3 4 5 6"
# entry source stage backend versions
entries=(
    "collatz.source collatz source - $all"
    "collatz.input collatz input llvm-cpu $all"
    "collatz.global-optimization collatz global-optimization llvm-cpu $all"
    "collatz.flow collatz flow llvm-cpu $all"
    "collatz.stream collatz stream llvm-cpu $all"
    "collatz.executable-sources collatz executable-sources llvm-cpu $all"
    "collatz.executable-targets.llvm-cpu collatz executable-targets llvm-cpu 0 4 5 6"
    "collatz.executable-targets.vmvx collatz executable-targets vmvx $all"
    "collatz.hal.llvm-cpu collatz hal llvm-cpu 0 5 6"
    "collatz.vm.vmvx collatz vm vmvx $all"
    "unidirectional_lstm.source unidirectional_lstm source - $all"
    "unidirectional_lstm.dispatch-creation unidirectional_lstm dispatch-creation llvm-cpu 0 4 6"
    "unidirectional_lstm.vm.llvm-cpu unidirectional_lstm vm llvm-cpu 0 6"
    "mnist_fake_weights.source mnist_fake_weights source - $all"
    "mnist_fake_weights.flow mnist_fake_weights flow llvm-cpu 1 5 6"
    "mnist_fake_weights.hal.vmvx mnist_fake_weights hal vmvx 2 6"
    "mnist.input mnist input llvm-cpu 0 6"
    "softmax.input softmax input llvm-cpu $all"
    "softmax.codegen.llvm-cpu softmax codegen llvm-cpu 3 6"
    "softmax.vm.vmvx softmax vm vmvx 6"
    "argmax.global-optimization argmax global-optimization llvm-cpu 2 6"
    "argmax.codegen.vmvx argmax codegen vmvx 5 6"
    "mlp.input mlp input llvm-cpu $all"
    "mlp.codegen.llvm-cpu mlp codegen llvm-cpu 4 6"
    "mlp.executable-targets.llvm-cpu mlp executable-targets llvm-cpu 6"
    "mlp.executable-targets.vulkan-spirv mlp executable-targets vulkan-spirv 5 6"
    "softmax.executable-targets.vulkan-spirv softmax executable-targets vulkan-spirv 0 5 6"
    "hal_programs.stream hal_programs stream llvm-cpu 3 6"
    "hal_programs.executable-configurations.vmvx hal_programs executable-configurations vmvx 6"
    "hal_programs.vm.llvm-cpu hal_programs vm llvm-cpu 0 6"
    "resources.source resources source - $all"
    "resources.flow resources flow llvm-cpu $all"
    "big_constants.source big_constants source - $all"
    "big_constants.vm.llvm-cpu big_constants vm llvm-cpu 6"
)

print=(--allow-unregistered-dialect --mlir-print-op-generic --mlir-print-debuginfo)

# stage SOURCE PHASE BACKEND OUTPUT: the source taken to PHASE, as bytecode.
stage() {
    local source=$1 phase=$2 backend=$3 output=$4
    if [[ $phase == source ]]; then
        "$opt" --allow-unregistered-dialect --emit-bytecode "$source" -o "$output"
        return
    fi
    local device=(--iree-hal-target-device=local "--iree-hal-local-target-device-backends=$backend")
    if [[ $backend == vulkan-spirv ]]; then
        device=(--iree-hal-target-device=vulkan)
    elif [[ $backend == llvm-cpu ]]; then
        device+=(--iree-llvmcpu-target-triple=x86_64-unknown-linux-gnu --iree-llvmcpu-target-cpu=generic)
    fi
    if [[ $phase == codegen ]]; then
        "$compile" "${device[@]}" --compile-to=executable-configurations --emit-mlir-bytecode "$source" \
            -o "$output.configured.mlirbc"
        local lower=iree-llvmcpu-lower-executable-target
        [[ $backend == vmvx ]] && lower=iree-vmvx-lower-executable-target
        "$opt" --emit-bytecode \
            "--pass-pipeline=builtin.module(hal.executable(hal.executable.variant(builtin.module(func.func($lower)))))" \
            "$output.configured.mlirbc" -o "$output"
        return
    fi
    "$compile" "${device[@]}" --compile-to="$phase" --emit-mlir-bytecode "$source" -o "$output"
}

for line in "${entries[@]}"; do
    read -r name source phase backend versions <<<"$line"
    staged="$stage_dir/$name.mlirbc"
    stage "$src/$source.mlir" "$phase" "$backend" "$staged"
    "$opt" "${print[@]}" "$staged" -o "$out/$name.generic.mlir"
    for version in $versions; do
        bc="$out/$name.v$version.mlirbc"
        if ! "$opt" --allow-unregistered-dialect --emit-bytecode --emit-bytecode-version="$version" "$staged" \
            -o "$bc" 2>"$out/$name.v$version.refused"; then
            rm -f "$bc"
            continue
        fi
        rm -f "$out/$name.v$version.refused"
        "$opt" "${print[@]}" "$bc" -o "$out/$name.v$version.generic.mlir"
        if cmp -s "$out/$name.v$version.generic.mlir" "$out/$name.generic.mlir"; then
            rm "$out/$name.v$version.generic.mlir"
        fi
    done
done
echo "regenerated ${#entries[@]} corpus entries, $(ls "$out"/*.mlirbc | wc -l) bytecode files," \
    "$(du -cb "$out"/*.mlirbc "$out"/*.mlir "$src"/*.mlir | tail -1 | cut -f1) bytes in $out"
