#!/usr/bin/env bash
# Regenerates the VM fixtures under tests/fixtures/vm from their sources, with the real IREE 3.13
# tools (found or installed by scripts/setup/iree-tools.sh):
#
#   src/<name>.mlir   ->  <name>.vmfb        iree-compile, local device, vmvx backend
#                     ->  <name>.dump.txt    iree-dump-module (metadata + disassembly)
#   invocations.txt   ->  expected/<name>.<function>.<n>.txt
#                                            what iree-run-module --device=local-sync printed
#   loader/variants.txt + loader/src/*.mlir  ->  loader/<output>.vmfb
#                                            container/format variants for the loader tests
#
# A source may add compiler flags with a line `// iree-compile-flags: <flags>`.
#
# invocations.txt: one invocation per line, `<name> <function> [iree-run-module flags...]`, e.g.
# `integer_math add_i32 --input=5 --input=3`; blank lines and lines starting with `#` are ignored;
# flags are split on whitespace (no quoting). <n> counts the invocations of that function from 1 in
# file order. An expected file holds the command line, the exit status, then stdout and stderr
# verbatim:
#
#     $ iree-run-module --device=local-sync --module=<name>.vmfb --function=<function> <flags>
#     exit status: <code>
#     --- stdout
#     <stdout>
#     --- stderr
#     <stderr>
#
# Everything runs with relative file names from fixed directories, so no machine path or time ends up
# in the output and regenerating twice gives identical files.
#
# Usage: scripts/regen/vm-fixtures.sh [--out DIR]
#   --out DIR  write the generated files under DIR instead of tests/fixtures/vm (the sources and
#              invocations.txt are still read from tests/fixtures/vm); used by
#              crates/vm/tests/all/vm_fixtures.rs to check that the checked-in fixtures are fresh.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixtures=$repo/tests/fixtures/vm
out=$fixtures

while [[ $# -gt 0 ]]; do
    case $1 in
        --out)
            [[ $# -ge 2 ]] || { echo "regen/vm-fixtures.sh: --out needs a directory" >&2; exit 2; }
            out=$2
            shift 2
            ;;
        *)
            echo "regen/vm-fixtures.sh: unknown argument '$1' (usage: [--out DIR])" >&2
            exit 2
            ;;
    esac
done

tools=$("$repo/scripts/setup/iree-tools.sh")
mkdir -p "$out/expected" "$out/loader"
out=$(cd "$out" && pwd)

# Remove what a previous run generated, so a deleted source or invocation leaves nothing stale.
rm -f "$out"/*.vmfb "$out"/*.dump.txt "$out"/expected/*.txt "$out"/loader/*.vmfb

shopt -s nullglob
sources=("$fixtures"/src/*.mlir)
[[ ${#sources[@]} -gt 0 ]] || { echo "regen/vm-fixtures.sh: no sources in $fixtures/src" >&2; exit 1; }

for source in "${sources[@]}"; do
    name=$(basename "$source" .mlir)
    read -r -a extra_flags <<<"$(sed -n 's|^// iree-compile-flags: ||p' "$source" | tr '\n' ' ')"
    # Compile from inside src/ with a bare file name: the debug locations in the module name the file.
    if ! (cd "$fixtures/src" && "$tools/iree-compile" --iree-hal-target-device=local \
        --iree-hal-local-target-device-backends=vmvx ${extra_flags[@]+"${extra_flags[@]}"} \
        "$name.mlir" -o "$out/$name.vmfb"); then
        echo "regen/vm-fixtures.sh: iree-compile failed on src/$name.mlir" >&2
        exit 1
    fi
    (cd "$out" && "$tools/iree-dump-module" "$name.vmfb" >"$name.dump.txt")
done

# Calls `<handler> <line number> <fields...>` for each entry of a list file (blank lines and lines
# starting with `#` skipped; an entry needs at least two whitespace-separated fields).
for_each_entry() {
    local file=$1 handler=$2 line line_number=0 fields
    while IFS= read -r line || [[ -n "$line" ]]; do
        line_number=$((line_number + 1))
        [[ -z "${line//[[:space:]]/}" || "$line" =~ ^[[:space:]]*# ]] && continue
        read -r -a fields <<<"$line"
        if [[ ${#fields[@]} -lt 2 ]]; then
            echo "regen/vm-fixtures.sh: ${file#"$fixtures"/}:$line_number: expected at least two fields" >&2
            exit 1
        fi
        "$handler" "$line_number" "${fields[@]}"
    done <"$file"
}

# loader/variants.txt: one source compiled several ways (ZIP or bare FlatBuffer, vmvx or llvm-cpu).
compile_variant() {
    local line_number=$1 output=$2 source=$3
    shift 3
    if ! (cd "$fixtures/loader/src" && "$tools/iree-compile" --iree-hal-target-device=local "$@" "$source" \
        -o "$out/loader/$output.vmfb"); then
        echo "regen/vm-fixtures.sh: iree-compile failed on loader/variants.txt:$line_number" >&2
        exit 1
    fi
}
for_each_entry "$fixtures/loader/variants.txt" compile_variant

# invocations.txt: one iree-run-module call each, recorded verbatim.
declare -A counts=()
run_invocation() {
    local fields=("${@:2}")
    local name function flags key expected command status
    name=${fields[0]}
    function=${fields[1]}
    flags=("${fields[@]:2}")
    if [[ ! -f "$out/$name.vmfb" ]]; then
        echo "regen/vm-fixtures.sh: invocations.txt:$1: no module '$name' (src/$name.mlir)" >&2
        exit 1
    fi
    key=$name.$function
    counts[$key]=$((${counts[$key]:-0} + 1))
    expected=$out/expected/$key.${counts[$key]}.txt
    command=(iree-run-module --device=local-sync "--module=$name.vmfb" "--function=$function"
        ${flags[@]+"${flags[@]}"})
    status=0
    (cd "$out" && "$tools/${command[0]}" "${command[@]:1}" >"$expected.stdout" 2>"$expected.stderr") ||
        status=$?
    {
        echo "\$ ${command[*]}"
        echo "exit status: $status"
        echo "--- stdout"
        cat "$expected.stdout"
        echo "--- stderr"
        cat "$expected.stderr"
    } >"$expected"
    rm -f "$expected.stdout" "$expected.stderr"
}
for_each_entry "$fixtures/invocations.txt" run_invocation
