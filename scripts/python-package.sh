#!/usr/bin/env bash
# Builds the Python package `rtx` as a wheel that carries librtx.so, and installs it into a
# virtual environment with what its tests need; prints the environment's python on stdout:
#
#     python=$(scripts/python-package.sh [LIBRTX])
#
# LIBRTX is the shared library to ship (default: target/release/librtx.so, built by
# `cargo build --release --lib`). The wheel goes to target/python/dist, the environment is
# target/python-venv (under CARGO_TARGET_DIR when set): numpy, pytest, and iree-base-runtime
# 3.13.0, the reference the tests compare rtx's results against. The package's version must be
# Cargo.toml's. Quiet on success; on failure it prints what went wrong on stderr.
set -euo pipefail

iree_runtime_version=3.13.0

die() {
    echo "python-package.sh: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
venv=$target/python-venv
python=$venv/bin/python
stage=$target/python/stage
dist=$target/python/dist

if [[ $# -ge 1 ]]; then
    library=$1
else
    (cd "$repo" && cargo build --release --lib --quiet) || die "cargo build --release --lib failed"
    library=$target/release/librtx.so
fi
[[ -f $library ]] || die "$library does not exist"

cargo_version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)
package_version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/python/pyproject.toml" | head -n 1)
[[ $cargo_version == "$package_version" ]] ||
    die "python/pyproject.toml has version $package_version but Cargo.toml $cargo_version"

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
if ! "$python" -c 'import numpy, pytest, setuptools, iree.runtime' 2>/dev/null; then
    run "${pip[@]}" install numpy pytest "setuptools>=70.1" "iree-base-runtime==$iree_runtime_version"
fi

# The wheel is built from a copy, so that neither the library nor build files land in python/.
rm -rf "$stage" "$dist"
mkdir -p "$stage" "$dist"
cp -r "$repo/python/rtx" "$repo/python/pyproject.toml" "$repo/python/setup.py" "$repo/python/README.md" "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
cp "$library" "$stage/rtx/librtx.so"
run "${pip[@]}" wheel --no-deps --no-build-isolation --wheel-dir "$dist" "$stage"
run "${pip[@]}" install --no-deps --force-reinstall "$dist"/rtx-*.whl
rm -rf "$stage"

echo "$python"
