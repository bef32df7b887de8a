#!/usr/bin/env bash
# Times each model that scripts/models/onnx-models.py prepared (DIR/NAME.vmfb with DIR/NAME.input.npy) with
# `rtx bench`, alternating with iree-benchmark-module on the same module, input and device, checks
# first that both print the same output, and prints one line per model and the median ratio.
#
#   scripts/bench/onnx-models.sh target/onnx-models [--device=local-task] [--rounds=5] [--benchmark_min_time=10]
#
# Needs a release build of rtx (cargo build --release) and the IREE tools (scripts/setup/iree-tools.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:?usage: bench-onnx-models.sh DIR [rtx bench flags...]}
shift
flags=("--device=local-task" "--rounds=5" "--benchmark_min_time=10" "$@")
device=local-task
for flag in "${flags[@]}"; do
    case $flag in --device=*) device=${flag#--device=} ;; esac
done
rtx=$repo/target/release/rtx
tools=$("$repo/scripts/setup/iree-tools.sh")
export RTX_IREE_TOOLS=$tools
ratios=()
for vmfb in "$dir"/*.vmfb; do
    name=$(basename "$vmfb" .vmfb)
    input=$dir/$name.input.npy
    # The model's synchronous entry point: the export that is neither `$async` nor `__init`.
    function=$("$rtx" dump "$vmfb" | sed -n '/^Exported Functions:/,/^$/p' |
        sed -n 's/^ *\[ *[0-9]*\] \([A-Za-z0-9_.]*\)(.*/\1/p' | grep -v '^__init$' | head -n 1)
    ours=$("$rtx" run --device="$device" --module="$vmfb" --function="$function" --input=@"$input")
    theirs=$("$tools/iree-run-module" --device="$device" --module="$vmfb" --function="$function" --input=@"$input")
    if [[ "$ours" != "$theirs" ]]; then
        echo "$name: rtx run and iree-run-module print different outputs" >&2
        exit 1
    fi
    line=$("$rtx" bench --module="$vmfb" --function="$function" --input=@"$input" "${flags[@]}")
    ratio=$(sed -n 's/.*rtx\/IREE = \([0-9.]*\).*/\1/p' <<<"$line")
    iree=$(sed -n 's/^iree-benchmark-module: median \([0-9]*\) ns.*/\1/p' <<<"$line")
    mine=$(sed -n 's/.*: median \([0-9]*\) ns per call (.*/\1/p' <<<"$line" | tail -n 1)
    awk -v n="$name" -v r="$mine" -v i="$iree" -v q="$ratio" \
        'BEGIN {printf "%-14s rtx %8.1f ms  IREE %8.1f ms  rtx/IREE %s  (same output)\n", n, r / 1e6, i / 1e6, q}'
    ratios+=("$ratio")
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{r[NR]=$1} END {printf "median rtx/IREE over %d models: %s\n", NR, r[int((NR+1)/2)]}'
