#!/usr/bin/env bash
# Regenerates the fixtures of registered ops' native properties (the op schemas of
# crates/mlir/src/ods/schemas.rs) from the text sources in tests/fixtures/mlir/schemas/src with upstream
# MLIR (iree-opt from IREE 3.13, found through scripts/setup/iree-tools.sh):
#
#   tests/fixtures/mlir/schemas/<name>.v<N>.mlirbc   iree-opt --emit-bytecode --emit-bytecode-version=N, N = 5, 6
#                                                    (the versions with native properties)
#   tests/fixtures/mlir/schemas/<name>.generic.mlir  iree-opt's generic print (with locations) of the source,
#                                                    what rtx's generic print of each version must equal
#
# The sources were picked from upstream tests by tests/fixtures/mlir/tools/pick-schema-sources.py
# (run it to refresh them: stablehlo, chlo, iree_linalg_ext, iree_misc, torch), or written by hand
# (name_order, llvm_props: non-attribute properties, upstream_misc: ub, bufferization, quant and
# ml_program ops, spirv and spirv_more: the spirv ops with inherent attributes, emitc, pdl_interp,
# arm_misc: arm_sve and arm_sme, nvgpu). crates/mlir/tests/all/mlir_op_schemas.rs reads every
# .mlirbc with rtx and compares; with RTX_CHECK_FIXTURES=1 it also checks rtx's text and bytecode
# against iree-opt live. Paths in locations are relative to the repository root.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=$("$repo/scripts/setup/iree-tools.sh")
opt="$tools/iree-opt"
[[ -x "$opt" ]] || { echo "regen/mlir-schema-fixtures.sh: no iree-opt in $tools" >&2; exit 1; }
cd "$repo"
out=tests/fixtures/mlir/schemas
rm -f "$out"/*.mlirbc "$out"/*.generic.mlir
print=(--allow-unregistered-dialect --mlir-print-op-generic --mlir-print-debuginfo)
for src in "$out"/src/*.mlir; do
    name=$(basename "$src" .mlir)
    "$opt" "${print[@]}" "$src" -o "$out/$name.generic.mlir"
    for version in 5 6; do
        bc="$out/$name.v$version.mlirbc"
        "$opt" --allow-unregistered-dialect --emit-bytecode --emit-bytecode-version="$version" "$src" -o "$bc"
        # Every version must print the same module.
        "$opt" "${print[@]}" "$bc" | cmp -s - "$out/$name.generic.mlir" ||
            { echo "regen/mlir-schema-fixtures.sh: $bc prints differently from $src" >&2; exit 1; }
    done
done
echo "regenerated $(ls "$out"/*.mlirbc | wc -l) bytecode fixtures in $out"
