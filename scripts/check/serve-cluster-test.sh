#!/usr/bin/env bash
# ResNet-50 served on a two-node Ray cluster (two raylets on this machine) through rtx and through
# onnxruntime, a replica killed in the middle of each load (python/examples/serve/cluster_test.py),
# in the environment scripts/setup/ray-venv.sh makes (Ray, onnxruntime 1.31.1, onnx and the rtx
# wheel, which scripts/setup/python-package.sh builds). Writes ResNet-50 with seeded weights
# (scripts/models/onnx-models.py) to target/onnx-models when it is not there. Arguments go to
# cluster_test.py (--help lists them). Fails when a request is lost or wrong, or Ray cannot run.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
models=$target/onnx-models
python=$("$repo/scripts/setup/ray-venv.sh")

if [[ ! -f $models/resnet50.onnx ]]; then
    "$python" "$repo/scripts/models/onnx-models.py" --onnx-only --only resnet50 --out "$models" >/dev/null
fi

# Token authentication would write a token under ~/.ray; this cluster lives only on 127.0.0.1.
export RAY_AUTH_MODE=disabled
exec "$python" "$repo/python/examples/serve/cluster_test.py" \
    --model "$models/resnet50.onnx" --input "$models/resnet50.input.npy" "$@"
