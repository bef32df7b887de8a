#!/usr/bin/env bash
# The main job: builds and installs rtx into target/rtx-prefix (as needed; cargo and cmake
# rebuild only what changed), builds the C examples against it, and runs host_pipeline, which
# drives the host runtime end to end and prints its report. Build output is hidden unless a
# step fails.
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
quietly cmake --build "$build" --target host_pipeline --parallel "$(nproc 2>/dev/null || echo 2)"
exec "$build/host_pipeline"
