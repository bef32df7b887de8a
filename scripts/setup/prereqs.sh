#!/usr/bin/env bash
# Makes sure the system tools a README command needs are present, so that scripts/run.sh and
# scripts/test.sh each work on a fresh Debian/Ubuntu machine that has only Rust (rustup), in
# either order.
#
# Usage: scripts/setup/prereqs.sh run|test
#
#   run   what scripts/run.sh needs: a C toolchain (cargo links with cc; the C examples are C and
#         C++), make and cmake (scripts/setup/install.sh and the C examples' build), python3 (the C
#         examples' CMake project asks for it)
#   test  all of the above plus what scripts/test.sh adds: valgrind, pkg-config, readelf
#         (binutils), python3-venv (the IREE tools' virtual environment), python3-dev (the headers
#         the Python package's compiled binding, python/rtx/_native.c, builds with), LLVM 15's FileCheck
#         and not (llvm-15-tools; the lit-style tests under tests/lit), lavapipe and the Vulkan
#         validation layers (mesa-vulkan-drivers, vulkan-validationlayers;
#         crates/hal-vulkan/tests/all/vulkan_device.rs) and the rustfmt and clippy components
#
# As root on a system with apt-get it runs `apt-get update` once and installs the missing
# packages; otherwise it names them and exits non-zero. Quiet when nothing is missing.
set -euo pipefail

die() {
  echo "prereqs.sh: $*" >&2
  exit 1
}

[ $# -eq 1 ] && { [ "$1" = run ] || [ "$1" = test ]; } || die "usage: $0 run|test"
profile=$1

command -v cargo >/dev/null || die "cargo is not installed; install Rust with rustup (https://rustup.rs)"

# Command -> the Debian package that provides it.
declare -A package_for=([cc]=gcc [c++]=g++ [make]=make [cmake]=cmake [python3]=python3)
if [ "$profile" = test ]; then
  package_for+=([valgrind]=valgrind [pkg-config]=pkg-config [readelf]=binutils)
fi

missing=()
for tool in "${!package_for[@]}"; do
  command -v "$tool" >/dev/null || missing+=("${package_for[$tool]}")
done
# Debian splits venv's pip bootstrap (ensurepip) out of python3; without it `python3 -m venv` fails.
if [ "$profile" = test ] && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
# The Python package compiles rtx._native against python3's headers (python/setup.py).
if [ "$profile" = test ] && ! python3 -c 'import os, sysconfig; assert os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' >/dev/null 2>&1; then
  missing+=(python3-dev)
fi
# Vulkan tests run on lavapipe (Mesa's CPU Vulkan driver) with the Khronos validation layers.
if [ "$profile" = test ] && ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
  missing+=(mesa-vulkan-drivers)
fi
if [ "$profile" = test ] && ! ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >/dev/null 2>&1; then
  missing+=(vulkan-validationlayers)
fi
# FileCheck is not on PATH: Debian keeps it under /usr/lib/llvm-15/bin (tests/all/lit.rs looks there).
if [ "$profile" = test ] && [ ! -x /usr/lib/llvm-15/bin/FileCheck ]; then
  missing+=(llvm-15-tools)
fi

if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "prereqs.sh: installing the missing Debian packages: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      die "apt-get could not install: ${missing[*]}"
    fi
  else
    die "missing tools; install the Debian packages (as root: apt-get install ${missing[*]})"
  fi
fi

if [ "$profile" = test ]; then
  for component in rustfmt clippy; do
    subcommand=${component/rustfmt/fmt}
    if ! cargo "$subcommand" --version >/dev/null 2>&1; then
      command -v rustup >/dev/null || die "cargo $subcommand is missing and there is no rustup to add $component"
      rustup component add "$component"
    fi
  done
fi
