#!/usr/bin/env bash
# The main job: builds rtx, then classifies the sample digits of models/digits with a small MLP
# compiled by iree-compile 3.13 for the CPU (llvm-cpu, run by `rtx run` on local-sync: the VM runs
# the host program, our ELF loader the compiled dispatches); then classifies them again in one
# `rtx bef-exec` run of models/digits/graphs.mlir, with the same MLP as a BEF kernel graph and with a
# pipeline of kernels around the compiled model (rtx.vm.call); then installs rtx into
# target/rtx-prefix, builds the C examples against it and runs vm_invoke, a C program that loads an
# IREE-compiled module (tests/fixtures/vm/control_flow.vmfb) through the C API and runs its
# functions, tensor_invoke, which calls tensor programs (matmul, a dense layer) with buffer views
# through the C API, digits, the same classifier from C++ (<rtx.hpp>) on local-task checked against
# iree-run-module's output, and host_pipeline, which drives the host runtime end to end. Cargo and
# cmake rebuild only what changed; build output is hidden unless a step fails. Missing system tools
# are installed first (scripts/setup/prereqs.sh: as root with apt-get; otherwise it names the packages).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
target=${CARGO_TARGET_DIR:-$repo/target}
prefix=$target/rtx-prefix
build=$target/c-examples-shared
log=$target/run.log
mkdir -p "$target"

scripts/setup/prereqs.sh run

# Runs a build step with its output in $log, shown only if it fails.
quietly() {
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "run.sh: failed: $*" >&2
    exit 1
  fi
}

quietly cargo build --release --bin rtx
echo "Classifying models/digits/digit_*.npy (8x8 images) with models/digits/mlp.vmfb on the CPU:"
correct=0
for d in 0 1 2 3 4 5 6 7 8 9; do
  printed=$(cd models/digits && "$target/release/rtx" run --device=local-sync --module=mlp.vmfb \
    --function=predict "--input=@digit_$d.npy")
  # The result line is `1x10xf32=[p0 p1 ... p9]`: the class is the index of the largest.
  read -r class probability < <(sed -n 's/^1x10xf32=\[\(.*\)\]$/\1/p' <<<"$printed" |
    awk '{ best = 1; for (i = 2; i <= NF; i++) if ($i + 0 > $best + 0) best = i; print best - 1, $best }')
  echo "  digit_$d.npy -> $class (p = $probability)"
  [ "$class" = "$d" ] && correct=$((correct + 1))
done
echo "$correct of 10 sample digits classified as the digit they show"
[ "$correct" = 10 ] || { echo "run.sh: the model misclassified a sample" >&2; exit 1; }
echo

echo "The same, in one \`rtx bef-exec\` run of models/digits/graphs.mlir: the MLP as a BEF kernel graph, and a"
echo "pipeline in which kernels normalise the image, mlp.vmfb classifies it (rtx.vm.call), a kernel takes the arg-max:"
printed=$(cd models/digits && "$target/release/rtx" bef-exec --work_queue_type=mstd --vm_module=mlp.vmfb graphs.mlir)
# Each digit prints four tensors: the graph's probabilities and class, the pipeline's probabilities and class.
agreed=0
for d in 0 1 2 3 4 5 6 7 8 9; do
  read -r graph pipeline < <(sed -n "/^--- Running 'digit_$d':/,/^---/p" <<<"$printed" |
    sed -n 's/^DenseHostTensor dtype = i64, shape = \[1\], values = \[\([0-9]*\)\]$/\1/p' | paste -sd' ')
  echo "  digit_$d: kernel graph -> $graph, pipeline through the compiled model -> $pipeline"
  [ "$graph" = "$d" ] && [ "$pipeline" = "$d" ] && agreed=$((agreed + 1))
done
echo "$agreed of 10 sample digits classified as the digit they show by both graphs"
[ "$agreed" = 10 ] || { echo "run.sh: a graph misclassified a sample" >&2; exit 1; }
echo

quietly env RTX_INSTALL_QUIET=1 scripts/setup/install.sh "$prefix"
quietly cmake -S c-examples -B "$build" -DCMAKE_PREFIX_PATH="$prefix"
quietly cmake --build "$build" --target vm_invoke tensor_invoke digits host_pipeline --parallel "$(nproc 2>/dev/null || echo 2)"
"$build/vm_invoke" "$repo/tests/fixtures/vm/control_flow.vmfb"
echo
"$build/tensor_invoke" "$repo/tests/fixtures/hal_run/programs_embedded.vmfb" "$repo/tests/fixtures/hal_run/programs_vmvx.vmfb"
echo
"$build/digits" "$repo/models/digits"
echo
exec "$build/host_pipeline"
