#!/usr/bin/env bash
# Regenerates the fixtures of other dialects' own attribute/type encodings (stablehlo, chlo,
# quant, llvm, vhlo) from the text sources in tests/fixtures/mlir/dialects/src with upstream MLIR (iree-opt
# from IREE 3.13, found through scripts/setup/iree-tools.sh):
#
#   tests/fixtures/mlir/dialects/<name>.v<N>.mlirbc    iree-opt --emit-bytecode --emit-bytecode-version=N
#   tests/fixtures/mlir/dialects/<name>.v<N>.refused   upstream's error when it cannot write version N
#   tests/fixtures/mlir/dialects/<name>.generic.mlir   iree-opt's generic print of the source, without
#                                                      locations or aliases (--mlir-print-local-scope),
#                                                      what rtx's generic print of every version must equal
#
# crates/mlir/tests/all/mlir_dialect_encodings.rs reads every .mlirbc with rtx and compares; with
# RTX_CHECK_FIXTURES=1 it also checks rtx's text and bytecode against iree-opt live.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=$("$repo/scripts/setup/iree-tools.sh")
opt="$tools/iree-opt"
[[ -x "$opt" ]] || { echo "regen/mlir-dialect-fixtures.sh: no iree-opt in $tools" >&2; exit 1; }
cd "$repo"
out=tests/fixtures/mlir/dialects
rm -f "$out"/*.mlirbc "$out"/*.refused "$out"/*.generic.mlir
flags=(--allow-unregistered-dialect)
print=(--allow-unregistered-dialect --mlir-print-op-generic --mlir-print-local-scope)
for src in "$out"/src/*.mlir; do
    name=$(basename "$src" .mlir)
    "$opt" "${print[@]}" "$src" -o "$out/$name.generic.mlir"
    for version in 0 1 2 3 4 5 6; do
        bc="$out/$name.v$version.mlirbc"
        if ! "$opt" "${flags[@]}" --emit-bytecode --emit-bytecode-version="$version" "$src" -o "$bc" 2>"$out/$name.v$version.refused"; then
            rm -f "$bc"
            continue
        fi
        rm -f "$out/$name.v$version.refused"
        # Every version must print the same module.
        "$opt" "${print[@]}" "$bc" | cmp -s - "$out/$name.generic.mlir" ||
            { echo "regen/mlir-dialect-fixtures.sh: $bc prints differently from $src" >&2; exit 1; }
    done
done
echo "regenerated $(ls "$out"/*.mlirbc | wc -l) bytecode fixtures in $out"
