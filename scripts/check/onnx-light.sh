#!/usr/bin/env bash
# Checks every light model of the onnx package (backend/test/data/light: their weights are the
# package's constants) against ONNX's own reference outputs (light_NAME_output_0.pb): `rtx
# import-onnx`, then `rtx run` on both work queues (`s` and `mstd`) with the input ONNX's backend
# tests feed them (arange(n).reshape(shape) / n), within 1e-4 of the output's largest magnitude.
#
#   scripts/check/onnx-light.sh PYTHON [NAME...]     PYTHON: one that can `import onnx` (and numpy)
#
# Needs a release build of rtx. crates/runtime/tests/all/onnx_import.rs checks SqueezeNet and
# ShuffleNet this way in CI.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${1:?usage: check-onnx-light.sh PYTHON [NAME...]}
shift
rtx=$repo/target/release/rtx
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
light=$("$python" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light"))')
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    for onnx in "$light"/light_*.onnx; do names+=("$(basename "$onnx" .onnx | sed 's/^light_//')"); done
fi
failed=0
for name in "${names[@]}"; do
    # The input and the expected output as .npy files.
    "$python" - "$light" "$name" "$scratch" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
light, name, scratch = sys.argv[1:]
model = onnx.load(f"{light}/light_{name}.onnx", load_external_data=False)
inits = {i.name for i in model.graph.initializer}
x = next(i for i in model.graph.input if i.name not in inits)
shape = [d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim]
n = int(np.prod(shape))
np.save(f"{scratch}/input.npy", (np.arange(n).reshape(shape) / n).astype(np.float32))
np.save(f"{scratch}/expected.npy", numpy_helper.to_array(onnx.load_tensor(f"{light}/light_{name}_output_0.pb")))
PY
    "$rtx" import-onnx "$light/light_$name.onnx" -o "$scratch/$name.bef"
    for queue in s mstd; do
        "$rtx" run --work_queue_type=$queue --module="$scratch/$name.bef" --input=@"$scratch/input.npy" \
            --output=@"$scratch/$queue.npy" >/dev/null
    done
    if ! "$python" "$repo/scripts/check/compare-outputs.py" "$name" ONNX "$scratch/expected.npy" \
        s="$scratch/s.npy" mstd="$scratch/mstd.npy"; then
        failed=1
    fi
    rm -f "$scratch/$name.bef"
done
exit $failed
