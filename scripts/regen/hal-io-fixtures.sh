#!/usr/bin/env bash
# Regenerates the tensor I/O fixtures under tests/fixtures/hal_io with the real IREE 3.13 tools
# (found or installed by scripts/setup/iree-tools.sh):
#
#   data/*.npy, data/*.bin   input files, written by numpy (from the tools' virtual environment)
#   src/<name>.mlir       -> <name>.vmfb
#                            identity functions, compiled (local device, vmvx backend); the test
#                            runs them with `rtx run`
#   invocations.txt       -> expected/<name>.<function>.<n>.txt
#                            what iree-run-module --device=local-sync printed, and
#                            expected/<name>.<function>.<n>.<file> for every file the run wrote
#                            (its --output=@out*.npy / .bin files)
#
# A source may add compiler flags with a line `// iree-compile-flags: <flags>`.
#
# invocations.txt: one invocation per line, fields separated by `|` (inputs contain spaces):
# `<name> | <function> | <flag> | <flag> ...`; blank lines and lines starting with `#` are ignored
# and each field is trimmed. <n> counts the invocations of that function from 1 in file order. An
# expected file holds the command line (flags joined by single spaces), the exit status, then
# stdout and stderr verbatim:
#
#     $ iree-run-module --device=local-sync --module=<name>.vmfb --function=<function> <flags>
#     exit status: <code>
#     --- stdout
#     <stdout>
#     --- stderr
#     <stderr>
#
# Each run happens in a fresh copy of data/, so relative file names resolve there and no machine
# path ends up in the output; regenerating twice gives identical files.
#
# Usage: scripts/regen/hal-io-fixtures.sh [--out DIR]
#   --out DIR  write the generated files under DIR instead of tests/fixtures/hal_io (sources and
#              invocations.txt are still read from tests/fixtures/hal_io).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixtures=$repo/tests/fixtures/hal_io
out=$fixtures

while [[ $# -gt 0 ]]; do
    case $1 in
        --out)
            [[ $# -ge 2 ]] || { echo "regen/hal-io-fixtures.sh: --out needs a directory" >&2; exit 2; }
            out=$2
            shift 2
            ;;
        *)
            echo "regen/hal-io-fixtures.sh: unknown argument '$1' (usage: [--out DIR])" >&2
            exit 2
            ;;
    esac
done

tools=$("$repo/scripts/setup/iree-tools.sh")
mkdir -p "$out/expected" "$out/data"
out=$(cd "$out" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

rm -f "$out"/expected/* "$out"/data/* "$out"/*.vmfb

# Input files. numpy writes version 1 headers; the version 3 file is assembled by hand.
"$tools/python" - "$out/data" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
np.save(f"{d}/i32_2x2.npy", np.arange(4, dtype=np.int32).reshape(2, 2))
np.save(f"{d}/f64_2x2.npy", np.array([[0.5, -1.0], [1e300, 3.0]], dtype=np.float64))
np.save(f"{d}/u8_3.npy", np.array([0, 128, 255], dtype=np.uint8))
np.save(f"{d}/bool_4.npy", np.array([True, False, True, True]))
np.save(f"{d}/f16_4.npy", np.array([1.5, -2.0, 65504.0, 0.0], dtype=np.float16))
np.save(f"{d}/c64_2.npy", np.array([1 + 2j, -3.5j], dtype=np.complex64))
np.save(f"{d}/f32_scalar.npy", np.float32(2.5))
with open(f"{d}/pair.npy", "wb") as f:
    np.save(f, np.arange(4, dtype=np.int32).reshape(2, 2) + 10)
    np.save(f, np.float32(-1.25))
np.save(f"{d}/big_endian.npy", np.arange(4, dtype=">i4").reshape(2, 2))
np.save(f"{d}/fortran.npy", np.asfortranarray(np.arange(4, dtype=np.int32).reshape(2, 2)))
np.save(f"{d}/object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
np.save(f"{d}/unicode.npy", np.array(["ab"]))
with open(f"{d}/v3_i16.npy", "wb") as f:
    header = b"{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }"
    header += b" " * (64 - (12 + len(header) + 1) % 64) + b"\n"
    f.write(b"\x93NUMPY\x03\x00" + len(header).to_bytes(4, "little") + header)
    f.write(np.array([-1, 2, 300], dtype="<i2").tobytes())
with open(f"{d}/truncated.npy", "wb") as f:
    f.write(open(f"{d}/i32_2x2.npy", "rb").read()[:-3])
with open(f"{d}/not_npy.npy", "wb") as f:
    f.write(b"PK\x03\x04 definitely not numpy")
np.arange(8, dtype=np.int32).tofile(f"{d}/i32_8.bin")
np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=np.float32).tofile(f"{d}/f32_6.bin")
EOF

shopt -s nullglob
sources=("$fixtures"/src/*.mlir)
[[ ${#sources[@]} -gt 0 ]] || { echo "regen/hal-io-fixtures.sh: no sources in $fixtures/src" >&2; exit 1; }
for source in "${sources[@]}"; do
    name=$(basename "$source" .mlir)
    read -r -a extra_flags <<<"$(sed -n 's|^// iree-compile-flags: ||p' "$source" | tr '\n' ' ')"
    if ! (cd "$fixtures/src" && "$tools/iree-compile" --iree-hal-target-device=local \
        --iree-hal-local-target-device-backends=vmvx ${extra_flags[@]+"${extra_flags[@]}"} \
        "$name.mlir" -o "$out/$name.vmfb" 2>"$scratch/$name.log"); then
        cat "$scratch/$name.log" >&2
        echo "regen/hal-io-fixtures.sh: iree-compile failed on src/$name.mlir" >&2
        exit 1
    fi
done

trim() {
    local text=$1
    text=${text#"${text%%[![:space:]]*}"}
    printf '%s' "${text%"${text##*[![:space:]]}"}"
}

declare -A counts=()
line_number=0
while IFS= read -r line || [[ -n "$line" ]]; do
    line_number=$((line_number + 1))
    [[ -z "${line//[[:space:]]/}" || "$line" =~ ^[[:space:]]*# ]] && continue
    IFS='|' read -r -a raw <<<"$line"
    fields=()
    for field in "${raw[@]}"; do
        fields+=("$(trim "$field")")
    done
    if [[ ${#fields[@]} -lt 2 || ! -f "$out/${fields[0]}.vmfb" ]]; then
        echo "regen/hal-io-fixtures.sh: invocations.txt:$line_number: expected \`<module> | <function> | flags...\` naming a module in src/" >&2
        exit 1
    fi
    name=${fields[0]}
    function=${fields[1]}
    flags=("${fields[@]:2}")
    key=$name.$function
    counts[$key]=$((${counts[$key]:-0} + 1))
    expected=$out/expected/$key.${counts[$key]}
    run=$scratch/run
    rm -rf "$run"
    cp -r "$out/data" "$run"
    cp "$out/$name.vmfb" "$run/"
    command=(iree-run-module --device=local-sync "--module=$name.vmfb" "--function=$function"
        ${flags[@]+"${flags[@]}"})
    status=0
    (cd "$run" && timeout 60 "$tools/${command[0]}" "${command[@]:1}" >"$scratch/stdout" 2>"$scratch/stderr") ||
        status=$?
    {
        echo "\$ ${command[*]}"
        echo "exit status: $status"
        echo "--- stdout"
        cat "$scratch/stdout"
        echo "--- stderr"
        cat "$scratch/stderr"
    } >"$expected.txt"
    for written in "$run"/out*; do
        cp "$written" "$expected.$(basename "$written")"
    done
done <"$fixtures/invocations.txt"
