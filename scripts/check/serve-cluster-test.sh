#!/usr/bin/env bash
# ResNet-50 served on a two-node Ray cluster (two raylets on this machine) through rtx and through
# onnxruntime, a replica killed in the middle of each load (python/examples/serve/cluster_test.py).
# Installs ray[serve], onnxruntime 1.31.1, onnx and the rtx wheel (built by
# scripts/setup/python-package.sh) into target/ray-venv (under CARGO_TARGET_DIR when set), writes
# ResNet-50 with seeded weights (scripts/models/onnx-models.py) to target/onnx-models when it is not
# there, then runs the test. Arguments go to cluster_test.py (--help lists them). Fails when a
# request is lost or wrong, or Ray cannot run.
set -euo pipefail

ray_version=2.60.0
onnxruntime_version=1.31.1

die() {
    echo "serve-cluster-test.sh: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
venv=$target/ray-venv
python=$venv/bin/python
models=$target/onnx-models

wheels=("$target"/python/dist/rtx-*.whl)
[[ -f ${wheels[0]} ]] || die "no rtx wheel in $target/python/dist: run scripts/setup/python-package.sh first"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() {
    "$@" >"$log" 2>&1 || die "'$*' failed:$(printf '\n')$(cat "$log")"
}

if [[ ! -x $python ]]; then
    command -v python3 >/dev/null || die "python3 is needed (apt-get install python3 python3-venv)"
    run python3 -m venv "$venv"
fi
pip=("$python" -m pip --disable-pip-version-check --quiet)
if ! "$python" -c 'import importlib.metadata as m, sys
sys.exit(m.version("ray") != sys.argv[1] or m.version("onnxruntime") != sys.argv[2])' \
    "$ray_version" "$onnxruntime_version" 2>/dev/null; then
    run "${pip[@]}" install "ray[serve]==$ray_version" numpy onnx "onnxruntime==$onnxruntime_version"
fi
run "${pip[@]}" install --no-deps --force-reinstall "${wheels[0]}"
if [[ ! -f $models/resnet50.onnx ]]; then
    run "$python" "$repo/scripts/models/onnx-models.py" --onnx-only --only resnet50 --out "$models"
fi

# Token authentication would write a token under ~/.ray; this cluster lives only on 127.0.0.1.
export RAY_AUTH_MODE=disabled
exec "$python" "$repo/python/examples/serve/cluster_test.py" \
    --model "$models/resnet50.onnx" --input "$models/resnet50.input.npy" "$@"
