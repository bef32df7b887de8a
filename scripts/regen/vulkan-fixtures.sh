#!/usr/bin/env bash
# Regenerates the Vulkan fixtures under tests/fixtures/vulkan from their sources, with the real IREE
# 3.13 tools (found or installed by scripts/setup/iree-tools.sh) and a Vulkan device (lavapipe will do):
#
#   src/<name>.mlir   ->  <name>.vmfb             iree-compile --iree-hal-target-device=vulkan
#                     ->  <name>.executables.txt  the SPIR-V binaries the compiler dumped for that
#                                                 compilation (--iree-hal-dump-executable-binaries-to),
#                                                 one `<file name> <bytes>` line each, sorted: an
#                                                 independent record of each executable's entry point
#                                                 and SPIR-V size
#   invocations.txt   ->  expected/<name>.<function>.<n>.txt
#                                                 what iree-run-module --device=vulkan printed
#
# invocations.txt: one invocation per line, `<name> <function> [iree-run-module flags...]`; blank
# lines and lines starting with `#` are ignored; flags are split on whitespace. <n> counts the
# invocations of that function from 1 in file order. An expected file holds the command line, the
# exit status, then stdout and stderr verbatim (the layout of tests/fixtures/vm/expected).
#
# Sources compile from inside src/ with a bare file name, so the source locations the compiler
# embeds name no machine path and regenerating twice gives identical files.
#
# Usage: scripts/regen/vulkan-fixtures.sh [--out DIR]   (default: tests/fixtures/vulkan)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixtures=$repo/tests/fixtures/vulkan
out=$fixtures
if [[ $# -eq 2 && $1 == --out ]]; then
    out=$2
elif [[ $# -ne 0 ]]; then
    echo "regen/vulkan-fixtures.sh: usage: [--out DIR]" >&2
    exit 2
fi

die() {
    echo "regen/vulkan-fixtures.sh: $*" >&2
    exit 1
}

tools=$("$repo/scripts/setup/iree-tools.sh")
mkdir -p "$out/expected"
out=$(cd "$out" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Remove what a previous run generated, so a deleted source or invocation leaves nothing stale.
rm -f "$out"/*.vmfb "$out"/*.executables.txt "$out"/expected/*.txt

shopt -s nullglob
sources=("$fixtures"/src/*.mlir)
[[ ${#sources[@]} -gt 0 ]] || die "no sources in $fixtures/src"

for source in "${sources[@]}"; do
    name=$(basename "$source" .mlir)
    dump=$scratch/$name
    mkdir -p "$dump"
    (cd "$fixtures/src" && "$tools/iree-compile" --iree-hal-target-device=vulkan \
        --iree-hal-dump-executable-binaries-to="$dump" "$name.mlir" -o "$out/$name.vmfb") ||
        die "iree-compile failed on src/$name.mlir"
    binaries=("$dump"/*.spv)
    [[ ${#binaries[@]} -gt 0 ]] || die "src/$name.mlir gave no SPIR-V executables"
    (cd "$dump" && for binary in *.spv; do echo "$binary $(wc -c <"$binary")"; done) | LC_ALL=C sort \
        >"$out/$name.executables.txt"
done

declare -A counts=()
line_number=0
while IFS= read -r line || [[ -n "$line" ]]; do
    line_number=$((line_number + 1))
    [[ -z "${line//[[:space:]]/}" || "$line" =~ ^[[:space:]]*# ]] && continue
    read -r -a fields <<<"$line"
    [[ ${#fields[@]} -ge 2 ]] || die "invocations.txt:$line_number: expected at least two fields"
    name=${fields[0]}
    function=${fields[1]}
    [[ -f "$out/$name.vmfb" ]] || die "invocations.txt:$line_number: no module '$name' (src/$name.mlir)"
    key=$name.$function
    counts[$key]=$((${counts[$key]:-0} + 1))
    expected=$out/expected/$key.${counts[$key]}.txt
    command=(iree-run-module --device=vulkan "--module=$name.vmfb" "--function=$function" "${fields[@]:2}")
    status=0
    (cd "$out" && "$tools/${command[0]}" "${command[@]:1}" >"$expected.stdout" 2>"$expected.stderr") || status=$?
    {
        echo "\$ ${command[*]}"
        echo "exit status: $status"
        echo "--- stdout"
        cat "$expected.stdout"
        echo "--- stderr"
        cat "$expected.stderr"
    } >"$expected"
    rm -f "$expected.stdout" "$expected.stderr"
done <"$fixtures/invocations.txt"
