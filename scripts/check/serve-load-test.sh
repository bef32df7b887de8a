#!/usr/bin/env bash
# The Ray Serve example (python/examples/serve): installs ray[serve] from PyPI, iree-base-runtime
# 3.13 and the rtx wheel (built by scripts/setup/python-package.sh) into target/ray-venv (under
# CARGO_TARGET_DIR when set), then runs the load test: the digit classifier served over HTTP on
# 127.0.0.1 through rtx and through iree.runtime, side by side, each load bounded in time and
# count. Arguments go to load_test.py (its defaults when none; --help lists them). Fails when an
# answer is wrong or Ray cannot run.
set -euo pipefail

ray_version=2.60.0
iree_runtime_version=3.13.0

die() {
    echo "serve-load-test.sh: $*" >&2
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
sys.exit(m.version("ray") != sys.argv[1] or m.version("iree-base-runtime") != sys.argv[2])' \
    "$ray_version" "$iree_runtime_version" 2>/dev/null; then
    run "${pip[@]}" install "ray[serve]==$ray_version" numpy "iree-base-runtime==$iree_runtime_version"
fi
run "${pip[@]}" install --no-deps --force-reinstall "${wheels[0]}"

# Token authentication would write a token under ~/.ray; this cluster lives only on 127.0.0.1.
export RAY_AUTH_MODE=disabled
exec "$python" "$repo/python/examples/serve/load_test.py" "$@"
