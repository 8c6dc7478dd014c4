#!/usr/bin/env bash
# One call on a lent GPU machine: build darray with its NCCL handlers there, run the GPU tier
# and the GPU benchmark (with the largest-N scan). Needs what that machine has: nvcc, cmake,
# jax with its CUDA plugin (jaxlib >= 0.11.2 for the FFI collectives extension), the
# nvidia-nccl-cu13 wheel (nccl.h; its libnccl is the one XLA loads), scikit-build-core and
# nanobind. No network, no MPI.
#
# Usage (repository root; the run tool's $OUT collects the logs):
#   bash tools/gpu_rig/run_nccl_tier.sh [OUT_DIR]
# BENCH_N (default "256 512"), BENCH_REPEATS (default 10), LARGEST=0 to skip the scan.
set -euo pipefail
OUT_DIR=${1:-${OUT:-/tmp/gpu_out}}
mkdir -p "$OUT_DIR"
export JAX_PLATFORMS=cuda
nvidia-smi -L || true
nvcc --version | tail -1
python3 - <<'PY' 2>&1 | tee "$OUT_DIR/versions.log"
import jax, jaxlib
print("jax", jax.__version__, "jaxlib", jaxlib.__version__, jax.devices())
import os
print("collectives header:", os.path.exists(os.path.join(jax.ffi.include_dir(), "xla/ffi/api/collectives_api.h")))
PY
# Build in place (about a minute); the CPU part always builds, the NCCL part needs nccl.h.
python3 -m pip install -q --no-build-isolation --no-deps -e . \
  -C cmake.define.DARRAY_ENABLE_CUDA=ON -C cmake.define.DARRAY_ENABLE_NCCL=ON \
  -C cmake.define.CMAKE_CUDA_ARCHITECTURES=native -C build-dir=/tmp/darray-nccl-build \
  2>&1 | tail -20 | tee "$OUT_DIR/build.log"
python3 -c "from darray._src import native; print(native.build_info())" | tee -a "$OUT_DIR/build.log"
set +e
python3 -m pytest -o addopts="" -m gpu -v -rs -p no:cacheprovider tests/gpu/test_nccl_gpu.py \
  tests/gpu/test_cudecomp_gpu.py 2>&1 | tee "$OUT_DIR/gpu_tests.log"
python3 -m pytest -o addopts="" -q -p no:cacheprovider tests/unit/test_local_fft.py \
  tests/unit/test_nccl_backend.py 2>&1 | tail -3 | tee -a "$OUT_DIR/gpu_tests.log"
largest=""
[ "${LARGEST:-1}" = "1" ] && largest="--largest"
PYTHONUNBUFFERED=1 python3 benchmarks/bench_gpu.py --n ${BENCH_N:-256 512} \
  --repeats ${BENCH_REPEATS:-10} $largest --json "$OUT_DIR/bench_gpu.json" 2>&1 \
  | grep -v '^\[bench_gpu\]' | tee "$OUT_DIR/bench_gpu.log"
# Particle-mesh rows (darray.particles vs one-device jax.numpy; JaxPM rows skip with their
# reason unless jaxpm/jaxdecomp are installed there). PM=0 skips them.
if [ "${PM:-1}" = "1" ]; then
  JAX_PLATFORMS=cuda PYTHONUNBUFFERED=1 python3 benchmarks/bench_pm.py --mesh "1,${NGPU:-1}" \
    --n 64 --n 128 --repeats ${BENCH_REPEATS:-10} --json "$OUT_DIR/bench_pm.json" 2>&1 \
    | grep -v '^\[' | tee "$OUT_DIR/bench_pm.log"
fi
