#!/usr/bin/env bash
# The virtual environment the Ray Serve checks run in: ray[serve] 2.60.0, numpy, the runtimes the
# checks compare rtx with (iree-base-runtime 3.13.0, onnxruntime 1.31.1) and onnx (to write
# models), and the rtx wheel that scripts/setup/python-package.sh built, in target/ray-venv (under
# CARGO_TARGET_DIR when set). Prints the environment's python on stdout:
#
#     python=$(scripts/setup/ray-venv.sh)
#
# Quiet on success; on failure it prints what went wrong on stderr.
set -euo pipefail

ray_version=2.60.0
iree_runtime_version=3.13.0
onnxruntime_version=1.31.1

die() {
    echo "ray-venv.sh: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
venv=$target/ray-venv
python=$venv/bin/python

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
sys.exit(m.version("ray") != sys.argv[1] or m.version("iree-base-runtime") != sys.argv[2]
         or m.version("onnxruntime") != sys.argv[3])' \
    "$ray_version" "$iree_runtime_version" "$onnxruntime_version" 2>/dev/null; then
    run "${pip[@]}" install "ray[serve]==$ray_version" numpy onnx "iree-base-runtime==$iree_runtime_version" \
        "onnxruntime==$onnxruntime_version"
fi
run "${pip[@]}" install --no-deps --force-reinstall "${wheels[0]}"
echo "$python"
