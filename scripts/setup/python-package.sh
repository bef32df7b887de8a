#!/usr/bin/env bash
# Builds the Python package `rtx` as a wheel that carries librtx.so, and installs it into a
# virtual environment with what its tests need; prints the environment's python on stdout:
#
#     python=$(scripts/setup/python-package.sh [LIBRTX])
#
# The wheel is the standard build of python/ (`pip wheel ./python`, python/setup.py): it compiles
# librtx with `cargo rustc --release --lib --crate-type cdylib`, or, given LIBRTX, bundles that shared library
# instead (RTX_PREBUILT_LIBRARY). The wheel goes to target/python/dist, the environment is
# target/python-venv (under CARGO_TARGET_DIR when set): numpy, pytest, onnx 1.23.2 (its node suite) and iree-base-runtime
# 3.13.0, the reference the tests compare rtx's results against. Quiet on success; on failure it
# prints what went wrong on stderr.
set -euo pipefail

iree_runtime_version=3.13.0
# ONNX's node suite (python/tests/test_onnx_node_suite.py) is the one this version generates.
onnx_version=1.23.2

die() {
    echo "python-package.sh: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
venv=$target/python-venv
python=$venv/bin/python
dist=$target/python/dist

if [[ $# -ge 1 ]]; then
    [[ -f $1 ]] || die "$1 does not exist"
    RTX_PREBUILT_LIBRARY=$(readlink -f "$1")
    export RTX_PREBUILT_LIBRARY
else
    unset RTX_PREBUILT_LIBRARY
fi

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
# setuptools >= 70.1 (python/pyproject.toml): pip wheel --no-build-isolation uses this one.
if ! "$python" -c 'import numpy, pytest, setuptools, iree.runtime, onnx, sys
sys.exit(tuple(map(int, setuptools.__version__.split(".")[:2])) < (70, 1) or onnx.__version__ != sys.argv[1])' \
    "$onnx_version" 2>/dev/null; then
    run "${pip[@]}" install numpy pytest "setuptools>=70.1" "iree-base-runtime==$iree_runtime_version" "onnx==$onnx_version"
fi

rm -rf "$dist"
run "${pip[@]}" wheel --no-deps --no-build-isolation --wheel-dir "$dist" "$repo/python"
run "${pip[@]}" install --no-deps --force-reinstall "$dist"/rtx-*.whl

echo "$python"
