#!/usr/bin/env bash
# The prepared GPU run (benchmarks/gpu_run.py): versions and the device, the Warp device tests on
# the GPU, then every benchmarks.gpu part at 4,096 / 8,192 / 16,384 envs with 600 tools, with and
# without deterministic=True, each part in its own process with a time limit; the whole run within
# MJVEC_GPU_BUDGET_S (default 450 s). Everything goes under $OUT (default out/gpu_run).
#
#   bash benchmarks/gpu_run.sh                      (from the project root, on the GPU machine)
#   MJVEC_GPU_DEVICE=cpu MJVEC_GPU_SIZES="8 16" MJVEC_GPU_TOOLS=600 bash benchmarks/gpu_run.sh   (smoke test)
#
# Warp's kernel cache goes to WARP_CACHE_PATH (default: $TMPDIR/mjvec-warp-cache, outside $OUT so
# compiled kernels never travel back): a rerun while the machine stays warm skips the compiles.
# Extra arguments go to gpu_run.py (e.g. --fail-part tests, --limit tests=60).
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/out/gpu_run}
export WARP_CACHE_PATH=${WARP_CACHE_PATH:-${TMPDIR:-/tmp}/mjvec-warp-cache}
export PYTHONUNBUFFERED=1 MUJOCO_GL=${MUJOCO_GL:-egl}
# cuBLAS (torch's batched matmul in the task layer) repeats its results only with a fixed workspace.
export CUBLAS_WORKSPACE_CONFIG=${CUBLAS_WORKSPACE_CONFIG:-:4096:8}
py=${PYTHON:-$(command -v python3 || command -v python)}
mkdir -p "$OUT" "$WARP_CACHE_PATH"
echo "gpu_run.sh: python $py, OUT=$OUT, WARP_CACHE_PATH=$WARP_CACHE_PATH ($(ls "$WARP_CACHE_PATH" 2>/dev/null | wc -l) entries)"
# shellcheck disable=SC2086  # the sizes are a list
exec "$py" -m benchmarks.gpu_run --device "${MJVEC_GPU_DEVICE:-cuda:0}" --sizes ${MJVEC_GPU_SIZES:-4096 8192 16384} \
  --tools "${MJVEC_GPU_TOOLS:-600}" --budget-s "${MJVEC_GPU_BUDGET_S:-450}" --out "$OUT" "$@"
