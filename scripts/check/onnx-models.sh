#!/usr/bin/env bash
# Checks every model that scripts/models/onnx-models.py prepared (DIR/NAME.onnx, NAME.vmfb, NAME.input.npy):
# `rtx import-onnx` turns NAME.onnx into a BEF kernel graph, `rtx run` runs it on both work queues
# (`s` and `mstd`), and each output must match iree-run-module's on NAME.vmfb (llvm-cpu,
# local-task) within 1e-4 relative to the output's largest magnitude. One line per model.
#
#   scripts/check/onnx-models.sh DIR [NAME...]
#
# Needs a release build of rtx and the IREE tools (scripts/setup/iree-tools.sh), whose Python has numpy.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:?usage: check-onnx-models.sh DIR [NAME...]}
shift
rtx=$repo/target/release/rtx
tools=$("$repo/scripts/setup/iree-tools.sh")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    for onnx in "$dir"/*.onnx; do names+=("$(basename "$onnx" .onnx)"); done
fi
failed=0
for name in "${names[@]}"; do
    input=$dir/$name.input.npy
    start=$(date +%s.%N)
    "$rtx" import-onnx "$dir/$name.onnx" -o "$scratch/$name.bef"
    imported=$(date +%s.%N)
    "$tools/iree-run-module" --device=local-task --module="$dir/$name.vmfb" --input=@"$input" \
        --output=@"$scratch/iree.npy" >/dev/null
    for queue in s mstd; do
        "$rtx" run --work_queue_type=$queue --module="$scratch/$name.bef" --input=@"$input" \
            --output=@"$scratch/$queue.npy" >/dev/null
    done
    note=$(awk -v a="$start" -v b="$imported" 'BEGIN {printf "import %5.1f s", b - a}')
    if ! "$tools/python" "$repo/scripts/check/compare-outputs.py" "$name" IREE "$scratch/iree.npy" --note "$note" \
        s="$scratch/s.npy" mstd="$scratch/mstd.npy"; then
        failed=1
    fi
done
exit $failed
