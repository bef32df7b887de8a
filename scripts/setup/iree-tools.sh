#!/usr/bin/env bash
# Ensures the IREE 3.13 tools (iree-compile, iree-run-module, iree-dump-module, ...) are available and
# prints the directory that holds them on stdout, so callers write:
#
#     tools=$(scripts/setup/iree-tools.sh)
#
# If RTX_IREE_TOOLS names a directory that already has the tools, that directory is used as is.
# Otherwise the tools live in a virtual environment at target/iree-venv (under CARGO_TARGET_DIR when
# set), created on first use with exactly iree-base-compiler==3.13.0 and iree-base-runtime==3.13.0
# from PyPI (and onnx==1.23.2, which iree-import-onnx needs). Running it again is a no-op once those
# versions are installed. Quiet on success; on failure it prints what went wrong on stderr and exits
# non-zero.
set -euo pipefail

compiler_version=3.13.0
runtime_version=3.13.0
# iree-import-onnx (scripts/models/onnx-models.py) imports the `onnx` package from the same venv.
onnx_version=1.23.2
tools=(iree-compile iree-run-module iree-dump-module iree-benchmark-module)

die() {
    echo "iree-tools.sh: $*" >&2
    exit 1
}

has_tools() {
    local dir=$1 tool
    for tool in "${tools[@]}"; do
        [[ -x "$dir/$tool" ]] || return 1
    done
}

if [[ -n "${RTX_IREE_TOOLS:-}" ]]; then
    has_tools "$RTX_IREE_TOOLS" || die "RTX_IREE_TOOLS=$RTX_IREE_TOOLS lacks one of: ${tools[*]}"
    (cd "$RTX_IREE_TOOLS" && pwd)
    exit 0
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
venv=$target/iree-venv
bin=$venv/bin

installed_version() {
    # Prints the installed version of a distribution inside the venv, or nothing.
    "$bin/python" -c 'import importlib.metadata as m, sys
try:
    print(m.version(sys.argv[1]))
except m.PackageNotFoundError:
    pass' "$1" 2>/dev/null || true
}

up_to_date() {
    [[ -x "$bin/python" ]] && has_tools "$bin" &&
        [[ "$(installed_version iree-base-compiler)" == "$compiler_version" ]] &&
        [[ "$(installed_version iree-base-runtime)" == "$runtime_version" ]] &&
        [[ "$(installed_version onnx)" == "$onnx_version" ]]
}

if ! up_to_date; then
    command -v python3 >/dev/null || die "python3 is needed to create $venv (apt-get install python3 python3-venv)"
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    if [[ ! -x "$bin/python" ]]; then
        mkdir -p "$target"
        python3 -m venv "$venv" >"$log" 2>&1 ||
            die "python3 -m venv $venv failed (is python3-venv installed?):$(printf '\n')$(cat "$log")"
    fi
    "$bin/python" -m pip install --disable-pip-version-check --quiet \
        "iree-base-compiler==$compiler_version" "iree-base-runtime==$runtime_version" "onnx==$onnx_version" >"$log" 2>&1 ||
        die "pip install of the IREE $compiler_version tools into $venv failed:$(printf '\n')$(cat "$log")"
    up_to_date || die "$venv still lacks the IREE $compiler_version tools after pip install"
fi

echo "$bin"
