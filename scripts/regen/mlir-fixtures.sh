#!/usr/bin/env bash
# Regenerates the MLIR bytecode fixtures from the text sources in tests/fixtures/mlir/src with
# upstream MLIR (iree-opt from IREE 3.13, found through scripts/setup/iree-tools.sh):
#
#   tests/fixtures/mlir/<name>.v<N>.mlirbc       iree-opt --emit-bytecode --emit-bytecode-version=N, N = 0..6
#   tests/fixtures/mlir/<name>.v<N>.refused      upstream's error when it cannot write version N
#   tests/fixtures/mlir/<name>.generic.mlir      iree-opt's generic print (with locations) of the source
#   tests/fixtures/mlir/<name>.v<N>.generic.mlir iree-opt's generic print of the v<N> file, only where it
#                                                differs from <name>.generic.mlir (old versions drop
#                                                unregistered properties and use-list orders)
#
# crates/mlir/tests/all/mlir_read.rs reads every .mlirbc with rtx and, with RTX_CHECK_FIXTURES=1,
# checks that iree-opt parses rtx's generic text to the same module. Run from anywhere; paths in
# locations are relative to the repository root, so the output does not depend on where the
# checkout lives.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=$("$repo/scripts/setup/iree-tools.sh")
opt="$tools/iree-opt"
[[ -x "$opt" ]] || { echo "regen/mlir-fixtures.sh: no iree-opt in $tools" >&2; exit 1; }
cd "$repo"
out=tests/fixtures/mlir
rm -f "$out"/*.mlirbc "$out"/*.refused "$out"/*.generic.mlir
flags=(--allow-unregistered-dialect)
print=(--allow-unregistered-dialect --mlir-print-op-generic --mlir-print-debuginfo)
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
        "$opt" "${print[@]}" "$bc" -o "$out/$name.v$version.generic.mlir"
        if cmp -s "$out/$name.v$version.generic.mlir" "$out/$name.generic.mlir"; then
            rm "$out/$name.v$version.generic.mlir"
        fi
    done
done
# A module whose use-lists are not in the default order (relinked through the Python bindings,
# which text cannot express).
python=$(dirname "$(readlink -f "$opt")")/python
[[ -x "$python" ]] || python="$tools/python"
if [[ -x "$python" ]]; then
    "$python" "$out/tools/make-uselist-fixture.py" "$out" "$opt"
fi
echo "regenerated $(ls "$out"/*.mlirbc | wc -l) bytecode fixtures in $out"
