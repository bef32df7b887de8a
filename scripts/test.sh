#!/usr/bin/env bash
# Runs every test of rtx; this is what CI runs (.ci/run). Works on a fresh Debian 12 with only
# Rust (rustup) installed: scripts/setup/prereqs.sh installs what is missing as root (cmake, make, g++,
# valgrind, pkg-config, python3, python3-venv, binutils, mesa-vulkan-drivers,
# vulkan-validationlayers; rustfmt, clippy); otherwise it names what to install.
#
#    1. system packages and rustup components
#    2. cargo fmt --check
#    3. cargo clippy --workspace --all-targets -D warnings
#    4. the IREE 3.13 tools in target/iree-venv (pip), linked into target/iree-tools, used by the fixture checks
#    5. cargo test --workspace (unit and integration tests, including the include/rtx.h freshness check, the ISA
#       table's freshness against isa.json, and the VM fixtures against a fresh regeneration), and
#       a model run (models/digits/graphs.mlir through the debug `rtx`) under valgrind
#    6. miri on the unsafe host core, the interpreter and the worker pool (a skip if nightly/miri cannot be had)
#    7. loom model checks of the AsyncValue state machine (--cfg loom, its own target dir)
#    8. release build + scripts/setup/install.sh into target/rtx-prefix
# 9-10. c-examples built against the installed package, linked shared and then static: ctest, and
#       against the shared library every example binary under valgrind (0 errors, 0 leaks)
#  10b. the library without default features (the VM and the CPU devices) installed into
#       target/rtx-prefix-minimal, its stripped size printed beside the default one, and the C
#       examples that apply run against it, with left_out (the parts left out say UNIMPLEMENTED)
#   11. pkg-config: compile, link (shared; static through Libs.private) and run a C program, and a C++
#       one through rtx.hpp
#   12. relocatability: a copy of the install tree, used through CMake and pkg-config
#   13. the Python package: a wheel carrying the installed librtx.so, installed into
#       target/python-venv with iree-base-runtime 3.13 (scripts/setup/python-package.sh), and its
#       tests (python/tests, pytest) against iree.runtime on the same .vmfb files; then
#       `pip install ./python` (which builds librtx with cargo) into a fresh target/python-fresh-venv,
#       which must import rtx from the bundled library and classify a digit
#   14. Ray Serve: ray[serve] in target/ray-venv, the digit classifier served through rtx and through
#       iree.runtime with two replicas each, a short load test on 127.0.0.1 (scripts/check/serve-load-test.sh)
#   15. cargo build --workspace --benches: the benchmarks still compile and link (in the dev profile,
#       reusing step 5's build; a release build links each benchmark with whole-program LTO, which took
#       9 minutes here)
#
# Skips: a test that cannot check what it is for on this machine (no Vulkan device, no IREE tools,
# no miri...) says so in a line `SKIP [need] where: why` — the Rust tests through
# rtx_test_support::skip, the Python tests through conftest.py's `skip`, the C examples on their
# stdout (collected from ctest's log), this script through `skip` — appended to target/skips.log
# (RTX_SKIP_LOG). The run ends with the list of them ("N skipped: ..."). Under CI=true every skip is
# a failure, unless RTX_ALLOWED_SKIPS='need=why[;need=why...]' says up front why that need cannot
# be met on this machine (the run prints it first).
#
# Everything it builds goes under target/. Fails at the first failing step.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
target=${CARGO_TARGET_DIR:-$repo/target}
prefix=$target/rtx-prefix
jobs=$(nproc 2>/dev/null || echo 2)
started=$SECONDS
step_started=$SECONDS
step_number=0

# A fresh clone (CI) builds everything once: incremental compilation only costs there, and full
# debug info makes the debug build a quarter slower than line tables (which backtraces need).
# Elsewhere these stay as they are, so that this script and a plain `cargo test` share one build.
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
fi

step() {
  check_skips
  if [ "$step_number" -gt 0 ]; then
    echo "   (step took $((SECONDS - step_started)) s)"
  fi
  step_number=$((step_number + 1))
  step_started=$SECONDS
  echo
  echo "==> [$step_number] $*"
}

die() {
  echo "test.sh: $*" >&2
  exit 1
}

skip_log=$target/skips.log
mkdir -p "$target"
: >"$skip_log"
export RTX_SKIP_LOG=$skip_log
declare -A allowed_skips=()
if [ -n "${RTX_ALLOWED_SKIPS:-}" ]; then
  IFS=';' read -ra entries <<<"$RTX_ALLOWED_SKIPS"
  for entry in "${entries[@]}"; do
    need=${entry%%=*} why=${entry#*=}
    [ "$need" != "$entry" ] && [ -n "$need" ] && [ -n "$why" ] ||
      die "RTX_ALLOWED_SKIPS: '$entry' is not need=why (why the need cannot be met on this machine)"
    allowed_skips[$need]=$why
    echo "skips of [$need] allowed on this machine: $why"
  done
fi
skips_checked=0

# Runs a `cargo test` with a name filter and fails when the filter matched no test: a test renamed
# must not leave a step that passes having run nothing.
run_tests() {
  local log=$target/filtered-tests.log ran
  "$@" 2>&1 | tee "$log"
  ran=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed.*/\1/p' "$log" | awk '{ n += $1 } END { print n + 0 }')
  [ "$ran" -gt 0 ] || die "'$*' ran no test: its filter matches none"
}

# Records a skip of this script's own: `skip NEED WHY`.
skip() {
  echo "SKIP [$1] scripts/test.sh step $step_number: $2" | tee -a "$skip_log"
  check_skips
}

# Under CI=true, fails on a skip recorded since the last check whose need RTX_ALLOWED_SKIPS does
# not allow.
check_skips() {
  local lines refused=() line need
  mapfile -t lines < <(tail -n +"$((skips_checked + 1))" "$skip_log")
  skips_checked=$((skips_checked + ${#lines[@]}))
  [ "${CI:-}" = true ] || return 0
  for line in "${lines[@]}"; do
    need=${line#SKIP [} need=${need%%]*}
    [ -n "${allowed_skips[$need]+set}" ] || refused+=("$line")
  done
  [ ${#refused[@]} -eq 0 ] ||
    die "under CI=true a skip is a failure (RTX_ALLOWED_SKIPS='need=why' allows one where the machine cannot meet the need):$(printf '\n   %s' "${refused[@]}")"
}

# The run's last lines: every skip, however the run ended.
report_skips() {
  local count
  count=$(grep -c '^SKIP \[' "$skip_log" || true)
  echo
  if [ "$count" -eq 0 ]; then
    echo "0 skipped"
  else
    echo "$count skipped:"
    sort "$skip_log" | uniq -c | awk '{ n = $1; sub(/^ *[0-9]+ /, ""); print "   " $0 (n > 1 ? " (x" n ")" : "") }'
  fi
}
trap report_skips EXIT

step "system packages and rustup components (scripts/setup/prereqs.sh test)"
scripts/setup/prereqs.sh test
echo "cmake $(cmake --version | head -n 1 | awk '{print $3}'), $(valgrind --version), $(c++ --version | head -n 1)," \
  "$(python3 --version), $(cargo --version)"

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "cargo clippy --workspace --all-targets -- -D warnings (and the build without default features)"
cargo clippy --workspace --all-targets -- -D warnings
# The library and the tool with the VM and the CPU devices alone: the feature gates compile clean.
cargo clippy -p rtx --no-default-features --lib --bins -- -D warnings
cargo clippy -p rtx-runtime --no-default-features --all-targets -- -D warnings

step "IREE 3.13 tools (iree-compile, iree-run-module) in a virtualenv under target/"
RTX_IREE_TOOLS=$(scripts/setup/iree-tools.sh)
export RTX_IREE_TOOLS
# With the tools at hand, crates/vm/tests/all/vm_fixtures.rs also regenerates every VM fixture and
# fails if a checked-in .vmfb or expected output is not exactly what iree-compile/iree-run-module
# produce.
export RTX_CHECK_FIXTURES=1
echo "   $("$RTX_IREE_TOOLS/iree-compile" --version | head -n 1)"

step "cargo test (unit, integration, header freshness, VM fixtures)"
# Every Vulkan test runs under the Khronos validation layers; what they report fails the test (and
# where they are not installed, opening a device is an error that says so).
export RTX_VULKAN_VALIDATION="${RTX_VULKAN_VALIDATION:-1}"
cargo test --workspace
# The runtime without its features: the parts left out answer UNIMPLEMENTED, naming the feature.
cargo test -p rtx-runtime --no-default-features
# A model run leaks nothing: the digit classifier as BEF kernel graphs, and the pipeline whose
# tensors cross into the compiled model and back (models/digits/graphs.mlir), under valgrind.
(cd models/digits && valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
  --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=9 \
  "$target/debug/rtx" bef-exec --work_queue_type=mstd --vm_module=mlp.vmfb graphs.mlir >/dev/null) ||
  die "rtx bef-exec of models/digits/graphs.mlir is not clean under valgrind"
echo "   valgrind: rtx bef-exec models/digits/graphs.mlir: 0 errors, no leaks"

step "miri: the unsafe host core, the interpreter's unchecked accesses and the worker pool (cargo +nightly miri test -p ... --lib)"
miri_skip=""
miri_log=$target/miri-setup.log
mkdir -p "$target"
if ! command -v rustup >/dev/null; then
  miri_skip="rustup is not installed, so the nightly toolchain cannot be added"
elif ! rustup toolchain list | grep -q '^nightly'; then
  echo "installing the nightly toolchain with miri and rust-src"
  rustup toolchain install nightly --profile minimal --component miri,rust-src ||
    miri_skip="'rustup toolchain install nightly --component miri,rust-src' failed"
elif ! rustup component list --toolchain nightly --installed | grep -q '^miri' ||
  ! rustup component list --toolchain nightly --installed | grep -q '^rust-src'; then
  echo "adding miri and rust-src to nightly"
  rustup component add --toolchain nightly miri rust-src ||
    miri_skip="'rustup component add --toolchain nightly miri rust-src' failed (miri may be missing from this nightly)"
fi
if [ -z "$miri_skip" ] && ! cargo +nightly miri setup >"$miri_log" 2>&1; then
  tail -n 20 "$miri_log"
  miri_skip="'cargo +nightly miri setup' failed (log: $miri_log)"
fi
if [ -n "$miri_skip" ]; then
  skip miri "$miri_skip"
else
  run_tests cargo +nightly miri test -p rtx-host --lib
  # The BEF executor's registers and ready counts (raw reference handoff between kernels) and plans.
  run_tests cargo +nightly miri test -p rtx-bef --lib executor::
  # Real compiled programs through the interpreter (embedded fixtures; the libm-calling scalar
  # unit tests are left out because Miri cannot call foreign functions).
  run_tests cargo +nightly miri test -p rtx-vm --lib interpreter::tests::
  # local-task's worker pool (workers::): a workgroup closure's lifetime erased, jobs published to
  # the workers as raw pointers and set up anew once nobody holds them. Groups of commands laid
  # out in the pool's arena, which keeps its memory between groups (the fills' tests move
  # megabytes, which takes Miri a quarter of an hour: left out). One run: each costs Miri seconds
  # to start.
  run_tests cargo +nightly miri test -p rtx-hal-cpu --lib -- workers:: command_buffer::tests::dispatches_without \
    command_buffer::tests::a_group_runs
fi

step "loom: every interleaving of and_then/set/forward/drop (RUSTFLAGS=--cfg loom)"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR="$target/loom" run_tests cargo test --release -p rtx-host --lib loom

step "release build and install into ${prefix#"$repo"/}"
scripts/setup/install.sh "$prefix"
version=$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/rtx.pc")
find "$prefix" -type f -o -type l | sed "s|^$prefix/|   |" | sort

# The skip lines the examples printed in the last ctest run of `$1` (ctest keeps what each printed).
collect_example_skips() {
  grep -h '^SKIP \[' "$1/Testing/Temporary/LastTest.log" >>"$skip_log" || true
}

# Both linkages build and run every example; valgrind runs them against the shared library only,
# since the static one links the same objects (a second valgrind pass took 90 s and found what the
# first one does).
for linkage in shared static; do
  step "c-examples against the $linkage library: build, ctest$([ "$linkage" = shared ] && echo ', valgrind')"
  build=$target/c-examples-$linkage
  if [ "$linkage" = static ]; then static_flag=ON valgrind=OFF; else static_flag=OFF valgrind=ON; fi
  cmake -S c-examples -B "$build" -DCMAKE_PREFIX_PATH="$prefix" -DRTX_LINK_STATIC=$static_flag -DRTX_VALGRIND=$valgrind \
    -DRTX_EXPECTED_VERSION="$version" --log-level=WARNING >/dev/null
  cmake --build "$build" --parallel "$jobs" -- --no-print-directory
  ctest --no-tests=error --test-dir "$build" --output-on-failure --parallel "$jobs" --label-exclude valgrind
  collect_example_skips "$build"
  [ "$valgrind" = ON ] || continue
  # Under valgrind the Vulkan validation layers (checked by the runs above) would only triple the
  # time; valgrind checks the host memory.
  RTX_VULKAN_VALIDATION=0 ctest --no-tests=error --test-dir "$build" --output-on-failure --parallel "$jobs" --label-regex valgrind
  # Each valgrind run's verdict, from ctest's log of the run.
  grep -E '^[0-9]+/[0-9]+ Testing: |ERROR SUMMARY|in use at exit|definitely lost|indirectly lost|possibly lost|All heap blocks' \
    "$build/Testing/Temporary/LastTest.log" | sed -e 's/^==[0-9]*== /     /' -e 's/^[0-9]*\/[0-9]* Testing: /   /'
done

step "the VM and the CPU devices alone (no default features): install, size, C examples"
minimal=$target/rtx-prefix-minimal
RTX_FEATURES= RTX_INSTALL_QUIET=1 scripts/setup/install.sh "$minimal"
strip -o "$target/librtx-minimal.stripped.so" "$minimal/lib/librtx.so"
strip -o "$target/librtx-default.stripped.so" "$prefix/lib/librtx.so"
echo "   stripped librtx.so: $(stat -c %s "$target/librtx-minimal.stripped.so") bytes without default features," \
  "$(stat -c %s "$target/librtx-default.stripped.so") bytes with them"
minimal_build=$target/c-examples-minimal
cmake -S c-examples -B "$minimal_build" -DCMAKE_PREFIX_PATH="$minimal" -DRTX_EXPECTED_VERSION="$version" \
  --log-level=WARNING >/dev/null
cmake --build "$minimal_build" --parallel "$jobs" -- --no-print-directory
ctest --no-tests=error --test-dir "$minimal_build" --output-on-failure --parallel "$jobs"
collect_example_skips "$minimal_build"
grep -q '^left_out' <(ctest --test-dir "$minimal_build" -N | sed -n 's/^ *Test *#[0-9]*: //p') ||
  die "the C examples against the build without default features did not include left_out"

step "pkg-config: compile and link a C program (shared, then static with Libs.private) and a C++ one"
check_dir=$target/pkg-config-check
mkdir -p "$check_dir"
cat >"$check_dir/main.c" <<'EOF'
#include <rtx.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  rtx_async_value_t* value = rtx_async_value_new_i64(-5);
  int64_t out = 0;
  rtx_error_t* error = rtx_async_value_get_i64(value, &out);
  int ok = error == NULL && out == -5 && strcmp(rtx_version(), RTX_VERSION) == 0;
  rtx_error_delete(error);
  rtx_async_value_release(value);
  printf("   pkg-config build: rtx %s, %s\n", rtx_version(), ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
EOF
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
echo "   cflags: $(pkg-config --cflags rtx)"
echo "   libs:   $(pkg-config --libs rtx)"
echo "   static: $(pkg-config --static --libs rtx)"
[ "$(pkg-config --modversion rtx)" = "$version" ] || die "pkg-config --modversion rtx is not $version"
# shellcheck disable=SC2046  # word splitting of pkg-config output is intended
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$check_dir/main.c" -o "$check_dir/shared" $(pkg-config --cflags --libs rtx)
LD_LIBRARY_PATH=$prefix/lib "$check_dir/shared"
# -l:librtx.a picks the archive although librtx.so sits beside it; the rest is Libs.private.
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$check_dir/main.c" -o "$check_dir/static" \
  $(pkg-config --cflags rtx) $(pkg-config --static --libs rtx | sed 's/-lrtx\b/-l:librtx.a/')
"$check_dir/static"
if command -v readelf >/dev/null && readelf -d "$check_dir/static" | grep -q 'librtx\.so'; then
  die "$check_dir/static was meant to link librtx.a but needs librtx.so"
fi
# The C++ header through the same flags.
cat >"$check_dir/main.cpp" <<'EOF'
#include <rtx.hpp>
#include <cstdio>
int main() {
  rtx::AsyncValue value = rtx::AsyncValue::of<std::int64_t>(-5);
  const bool ok = value.get<std::int64_t>() == -5 && rtx::version() == RTX_VERSION;
  std::printf("   pkg-config build (C++ rtx.hpp): rtx %s, %s\n", rtx::version().c_str(), ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
EOF
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Wpedantic -Werror "$check_dir/main.cpp" -o "$check_dir/shared-cpp" $(pkg-config --cflags --libs rtx)
LD_LIBRARY_PATH=$prefix/lib "$check_dir/shared-cpp"

step "relocated install: a copy of the tree works through CMake and pkg-config"
moved=$target/rtx-prefix-moved
rm -rf "$moved"
cp -a "$prefix" "$moved"
moved_build=$target/c-examples-moved
cmake -S c-examples -B "$moved_build" -DCMAKE_PREFIX_PATH="$moved" -DRTX_EXPECTED_VERSION="$version" \
  --log-level=WARNING >/dev/null
grep -q "^rtx_DIR:PATH=$moved/lib/cmake/rtx\$" "$moved_build/CMakeCache.txt" || die "CMake did not pick up the moved copy"
cmake --build "$moved_build" --target host_pipeline --parallel "$jobs" -- --no-print-directory >/dev/null
if readelf -d "$moved_build/host_pipeline" | grep -q "$prefix/"; then
  die "host_pipeline built against the moved copy still points at $prefix"
fi
"$moved_build/host_pipeline" >/dev/null
echo "   host_pipeline built and run against $moved"
[ "$(PKG_CONFIG_PATH=$moved/lib/pkgconfig pkg-config --variable=includedir rtx)" = "$moved/lib/pkgconfig/../../include" ] ||
  die "rtx.pc in the moved copy does not point into it"
echo "   pkg-config: includedir follows the moved rtx.pc"

step "Python package: wheel with librtx.so, virtualenv, pytest python/tests (against iree.runtime)"
python=$(scripts/setup/python-package.sh "$(readlink -f "$prefix/lib/librtx.so")")
ls "$target"/python/dist/*.whl | sed "s|^$repo/|   |"
PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -q -rs python/tests
# The plain install a user does: pip builds the wheel (cargo build --release --lib) and installs
# it with numpy; the package must work with nothing but what the wheel carries.
fresh=$target/python-fresh-venv
rm -rf "$fresh"
python3 -m venv "$fresh"
pip_log=$target/python-fresh-venv.log
env -u RTX_PREBUILT_LIBRARY "$fresh/bin/python" -m pip --disable-pip-version-check install ./python >"$pip_log" 2>&1 ||
  die "pip install ./python into a fresh virtualenv failed (log: $pip_log):$(printf '\n')$(tail -n 40 "$pip_log")"
(cd "$fresh" && env -u RTX_LIBRARY -u PYTHONPATH "$fresh/bin/python" - "$repo/models/digits" "$version") <<'EOF'
import sys
from pathlib import Path

import numpy as np

import rtx

digits, version = Path(sys.argv[1]), sys.argv[2]
package = Path(rtx.__file__).parent
assert package.is_relative_to(sys.prefix), f"rtx imported from {package}, not from the virtualenv"
assert (package / "librtx.so").is_file(), "the wheel did not bundle librtx.so"
assert rtx.__version__ == version, f"rtx {rtx.__version__}, expected {version}"
context = rtx.Context(device="local-sync", work_queue="s")
context.add_module(rtx.Module.load(digits / "mlp.vmfb"))
[y] = context.invoke("predict", np.load(digits / "digit_7.npy"))
assert y.shape == (1, 10) and int(np.argmax(y)) == 7, y
print(f"   pip install ./python: rtx {rtx.__version__} from {package}, the digits model says 7")
EOF

step "Ray Serve: the digit classifier through rtx and iree.runtime, load-tested on 127.0.0.1 (bounded)"
scripts/check/serve-load-test.sh --replicas 2 --concurrency 8 --seconds 5 --requests 5000 --rounds 2

step "cargo build --benches (the benchmarks keep compiling and linking; dev profile, reusing step 5's build)"
cargo build --workspace --benches

echo "   (step took $((SECONDS - step_started)) s)"
check_skips
echo
echo "==> all tests passed in $((SECONDS - started)) s"
