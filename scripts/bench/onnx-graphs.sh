#!/usr/bin/env bash
# Times models that scripts/models/onnx-models.py prepared as BEF kernel graphs (`rtx import-onnx`, then
# `rtx bench` on the `mstd` work queue) beside IREE's llvm-cpu module of the same model on
# `local-task` (iree-benchmark-module, through `rtx bench`), same input, rounds alternating, and
# prints the medians and their ratio per model.
#
#   scripts/bench/onnx-graphs.sh DIR [NAME...] [--rounds=3] [--benchmark_min_time=5]
#
# Needs a release build of rtx and the IREE tools (scripts/setup/iree-tools.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:?usage: bench-onnx-graphs.sh DIR [NAME...] [--rounds=N] [--benchmark_min_time=S]}
shift
rounds=3
min_time=5
names=()
for arg in "$@"; do
    case $arg in
        --rounds=*) rounds=${arg#--rounds=} ;;
        --benchmark_min_time=*) min_time=${arg#--benchmark_min_time=} ;;
        *) names+=("$arg") ;;
    esac
done
if [[ ${#names[@]} -eq 0 ]]; then
    for onnx in "$dir"/*.onnx; do names+=("$(basename "$onnx" .onnx)"); done
fi
rtx=$repo/target/release/rtx
RTX_IREE_TOOLS=$("$repo/scripts/setup/iree-tools.sh")
export RTX_IREE_TOOLS
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for name in "${names[@]}"; do
    input=$dir/$name.input.npy
    "$rtx" import-onnx "$dir/$name.onnx" -o "$scratch/$name.bef"
    function=$("$rtx" dump "$dir/$name.vmfb" | sed -n '/^Exported Functions:/,/^$/p' |
        sed -n 's/^ *\[ *[0-9]*\] \([A-Za-z0-9_.]*\)(.*/\1/p' | grep -v '^__init$' | head -n 1)
    ours=()
    theirs=()
    for _ in $(seq "$rounds"); do
        line=$("$rtx" bench --module="$scratch/$name.bef" --work_queue_type=mstd --input=@"$input" \
            --benchmark_min_time="$min_time" --rounds=1)
        ours+=("$(sed -n 's/.*: median \([0-9]*\) ns per call.*/\1/p' <<<"$line")")
        line=$("$rtx" bench --module="$dir/$name.vmfb" --device=local-task --function="$function" \
            --input=@"$input" --benchmark_min_time="$min_time" --rounds=1)
        theirs+=("$(sed -n 's/^iree-benchmark-module: median \([0-9]*\) ns.*/\1/p' <<<"$line")")
    done
    mine=$(printf '%s\n' "${ours[@]}" | median)
    iree=$(printf '%s\n' "${theirs[@]}" | median)
    awk -v n="$name" -v r="$mine" -v i="$iree" \
        'BEGIN {printf "%-14s BEF graph (mstd) %8.1f ms  IREE llvm-cpu (local-task) %8.1f ms  BEF/IREE %.2f\n", n, r / 1e6, i / 1e6, r / i}'
    rm -f "$scratch/$name.bef"
done
