#!/usr/bin/env bash
# The main job: builds and installs rtx into target/rtx-prefix (as needed; cargo and cmake
# rebuild only what changed), builds the C examples against it, and runs vm_invoke, a C program
# that loads an IREE-compiled module (tests/fixtures/vm/control_flow.vmfb, built by iree-compile
# 3.13) through the C API and runs its functions on the CPU, then host_pipeline, which drives the
# host runtime end to end. Build output is hidden unless a step fails.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
target=${CARGO_TARGET_DIR:-$repo/target}
prefix=$target/rtx-prefix
build=$target/c-examples-shared
log=$target/run.log
mkdir -p "$target"

# Runs a build step with its output in $log, shown only if it fails.
quietly() {
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "run.sh: failed: $*" >&2
    exit 1
  fi
}

quietly env RTX_INSTALL_QUIET=1 scripts/install.sh "$prefix"
quietly cmake -S c-examples -B "$build" -DCMAKE_PREFIX_PATH="$prefix"
quietly cmake --build "$build" --target vm_invoke host_pipeline --parallel "$(nproc 2>/dev/null || echo 2)"
"$build/vm_invoke" "$repo/tests/fixtures/vm/control_flow.vmfb"
echo
exec "$build/host_pipeline"
