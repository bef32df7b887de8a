#!/usr/bin/env bash
# Builds librtx (release) and installs it under PREFIX:
#
#   PREFIX/lib/librtx.so.<ABI>          the shared library (its SONAME), and the librtx.so symlink
#   PREFIX/lib/librtx.a                 the static library
#   PREFIX/include/rtx.h, rtx.hpp      the C header and the header-only C++17 interface over it
#   PREFIX/lib/cmake/rtx/rtxConfig.cmake, rtxConfigVersion.cmake   (find_package(rtx CONFIG))
#   PREFIX/lib/pkgconfig/rtx.pc                                    (pkg-config rtx)
#
# Usage: [RTX_FEATURES=vulkan,tfrt,onnx] scripts/setup/install.sh PREFIX
# RTX_FEATURES lists the Cargo features to build with (all of them by default; empty: the VM and the
# CPU devices alone). The package records them (rtx_FEATURES in CMake, `features` in rtx.pc).
# Idempotent: run it again after changing the code; cargo rebuilds only what changed.
# The version comes from Cargo.toml, the ABI version from the built library's SONAME, and the
# static library's native dependencies from `rustc --print native-static-libs`: nothing is kept by
# hand. Needs cargo and cmake. CARGO_TARGET_DIR is honoured; RTX_INSTALL_QUIET=1 hides cargo's
# output unless the build fails.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 PREFIX" >&2
  exit 2
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
cd "$repo"

die() {
  echo "install.sh: $*" >&2
  exit 1
}

for tool in cargo cmake; do
  command -v "$tool" >/dev/null || die "'$tool' is not installed"
done

target_dir=${CARGO_TARGET_DIR:-$repo/target}
release_dir=$target_dir/release

# 1. Build. One rustc invocation makes both libraries, so librtx.so and librtx.a always come from the
#    same sources (two cargo commands could straddle an edit), and it is the only way to have rustc
#    print the static library's native dependencies; cargo replays that note when nothing changed.
#    python/setup.py runs the same command so that a wheel built after an install, or an install
#    after a wheel, links nothing again; the default features are therefore asked for as cargo's
#    default (naming them instead is another build for cargo).
build_log=$target_dir/rtx-install-build.log
mkdir -p "$target_dir"
if [ -n "${RTX_FEATURES+set}" ]; then
  features=$RTX_FEATURES
  feature_flags=(--no-default-features --features "$features")
else
  features=$(sed -n 's/^default = \[\(.*\)\]$/\1/p' "$repo/Cargo.toml" | tr -d '" ')
  [ -n "$features" ] || die "cannot read the default features from Cargo.toml"
  feature_flags=()
fi
build=(cargo rustc --release --lib --crate-type "cdylib,staticlib" "${feature_flags[@]}"
  -- --print native-static-libs)
if ! "${build[@]}" >"$build_log" 2>&1; then
  cat "$build_log" >&2
  die "the release build failed"
fi
if [ "${RTX_INSTALL_QUIET:-0}" != 1 ]; then
  grep -v -e '^note: ' -e '^$' "$build_log" >&2 || true
fi
native_static_libs=$(sed -n 's/^note: native-static-libs: //p' "$build_log" | tail -n 1)
[ -n "$native_static_libs" ] || die "rustc printed no native-static-libs line (see $build_log)"

# 2. Names and versions, all derived.
version=$(cargo pkgid | sed 's/.*[#@]//')
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || die "cannot read the package version from 'cargo pkgid' ($version)"
description=$(sed -n 's/^description *= *"\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$description" ] || description="rtx runtime"
abi_version=$(sed -n 's/^#define RTX_ABI_VERSION \([0-9][0-9]*\).*/\1/p' include/rtx.h)
[ -n "$abi_version" ] || die "include/rtx.h does not define RTX_ABI_VERSION"
soname=librtx.so.$abi_version
if command -v readelf >/dev/null; then
  built_soname=$(readelf -d "$release_dir/librtx.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$built_soname" = "$soname" ] ||
    die "$release_dir/librtx.so has SONAME '$built_soname', but include/rtx.h says ABI $abi_version ($soname)"
fi
pointer_size=$(($(rustc --print cfg | sed -n 's/^target_pointer_width="\([0-9]*\)"/\1/p') / 8))

# 3. Copy. `install` replaces files by unlink + create, so a process that has the old library
#    mapped keeps running.
install -d "$prefix/lib" "$prefix/include" "$prefix/lib/cmake/rtx" "$prefix/lib/pkgconfig"
install -m 0755 "$release_dir/librtx.so" "$prefix/lib/$soname"
ln -sfn "$soname" "$prefix/lib/librtx.so"
install -m 0644 "$release_dir/librtx.a" "$prefix/lib/librtx.a"
install -m 0644 include/rtx.h "$prefix/include/rtx.h"
install -m 0644 include/rtx.hpp "$prefix/include/rtx.hpp"

# 4. Package files (rtxConfig.cmake, rtxConfigVersion.cmake, rtx.pc).
cmake -DRTX_PREFIX="$prefix" -DRTX_VERSION="$version" -DRTX_ABI_VERSION="$abi_version" -DRTX_SONAME="$soname" \
  -DRTX_NATIVE_STATIC_LIBS="$native_static_libs" -DRTX_POINTER_SIZE="$pointer_size" \
  -DRTX_DESCRIPTION="$description" -DRTX_FEATURES="$features" -P cmake/install_package.cmake

echo "installed rtx $version (ABI $abi_version, features: ${features:-none}) into $prefix"
echo "  static library needs: $native_static_libs"
