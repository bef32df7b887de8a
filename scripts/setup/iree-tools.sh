#!/usr/bin/env bash
# Ensures the IREE 3.13 tools (iree-compile, iree-run-module, iree-dump-module, ...) are available and
# prints the directory that holds them on stdout, so callers write:
#
#     tools=$(scripts/setup/iree-tools.sh)
#
# If RTX_IREE_TOOLS names a directory that already has the tools, that directory is used as is.
# Otherwise the tools come from a virtual environment at target/iree-venv (under CARGO_TARGET_DIR when
# set), created on first use with exactly iree-base-compiler==3.13.0 and iree-base-runtime==3.13.0
# from PyPI (and onnx==1.23.2, which iree-import-onnx needs), and the printed directory is
# target/iree-tools: links to the native executables the packages ship. The venv's own bin/iree-*
# are Python scripts that start an interpreter and import iree before running the same executable,
# 0.3 s per run against 0.02 s, and the tests run iree-opt and iree-run-module hundreds of times.
# target/iree-tools also holds `python` (the venv's interpreter, for scripts that import onnx or
# iree) and iree-import-onnx, which is Python. Running it again is a no-op once those versions are
# installed. Quiet on success; on failure it prints what went wrong on stderr and exits non-zero.
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

# The native executables, found as the packages' own launchers find them.
links=$target/iree-tools
if ! has_tools "$links" || [[ ! -x "$links/iree-opt" || ! -x "$links/python" ]]; then
    rm -rf "$links"
    mkdir -p "$links"
    "$bin/python" - "$links" <<'EOF' || die "cannot link the IREE executables into $links"
import os, sys
from iree._runtime import libs
from iree.compiler.tools import binaries

links = sys.argv[1]
natives = [binaries.find_tool(name) for name in ("iree-compile", "iree-opt")]
natives += [os.path.join(libs.library_path, name) for name in sorted(os.listdir(libs.library_path))
            if name.startswith("iree-")]
for native in natives:
    if os.path.isfile(native) and os.access(native, os.X_OK):
        os.symlink(os.path.realpath(native), os.path.join(links, os.path.basename(native)))
EOF
    ln -s "$bin/iree-import-onnx" "$links/iree-import-onnx"
    # A link to the venv's interpreter would not find the venv (it looks for pyvenv.cfg beside the
    # path it was started by), so `python` is a script that starts it by its own path.
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$bin/python" >"$links/python"
    chmod +x "$links/python"
    has_tools "$links" || die "$links lacks one of: ${tools[*]}"
fi

echo "$links"
