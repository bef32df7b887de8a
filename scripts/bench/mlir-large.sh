#!/usr/bin/env bash
# The MLIR tool on a large real file against iree-opt: ResNet-50 (the onnx package's light model
# with seeded weights, scripts/models/onnx-models.py) imported by iree-import-onnx, compiled by
# iree-compile 3.13 to `executable-targets`, printed generic with debug info by iree-opt (about
# 209 MB, the weights inside a `#util.composite` attribute's text); then, alternating, `rtx
# translate --mlir-to-mlirbc` and `iree-opt --emit-bytecode` on it: wall time and peak RSS of each
# run (GNU time), and the two outputs compared byte for byte.
# Usage: scripts/bench/mlir-large.sh [ROUNDS]   (default 3; needs a release `rtx` in target/release)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
rounds=${1:-3}
tools=$("$repo/scripts/setup/iree-tools.sh")
rtx=$target/release/rtx
[[ -x $rtx ]] || { echo "mlir-large.sh: build rtx first: cargo build --release" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "mlir-large.sh: GNU time is needed (apt-get install time)" >&2; exit 1; }
work=$target/mlir-large
mkdir -p "$work"
if [[ ! -f $work/resnet50.generic.mlir ]]; then
    "$tools/python" "$repo/scripts/models/onnx-models.py" --onnx-only --only resnet50 --out "$work"
    "$tools/iree-import-onnx" "$work/resnet50.onnx" --opset-version 17 -o "$work/resnet50.mlir"
    "$tools/iree-compile" --compile-to=executable-targets --iree-hal-target-device=local \
        --iree-hal-local-target-device-backends=llvm-cpu "$work/resnet50.mlir" -o "$work/resnet50.targets.mlir"
    "$tools/iree-opt" --mlir-print-op-generic --mlir-print-debuginfo "$work/resnet50.targets.mlir" \
        -o "$work/resnet50.generic.mlir"
fi
echo "input: $(stat -c %s "$work/resnet50.generic.mlir") bytes"
for ((round = 1; round <= rounds; round++)); do
    /usr/bin/time -f "round $round rtx      %e s, peak RSS %M KiB" \
        "$rtx" translate --mlir-to-mlirbc "$work/resnet50.generic.mlir" -o "$work/rtx.mlirbc"
    /usr/bin/time -f "round $round iree-opt %e s, peak RSS %M KiB" \
        "$tools/iree-opt" --emit-bytecode "$work/resnet50.generic.mlir" -o "$work/iree-opt.mlirbc"
done
echo "outputs: rtx $(stat -c %s "$work/rtx.mlirbc") bytes, iree-opt $(stat -c %s "$work/iree-opt.mlirbc") bytes"
