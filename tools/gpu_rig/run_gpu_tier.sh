#!/usr/bin/env bash
# Run darray's GPU tier and GPU benchmark on a machine that has an NVIDIA GPU, CUDA 13, JAX with
# its CUDA plugin, and no network: everything else arrives pre-built in a rig folder (default
# .gpu/, git-ignored), made on a build machine by tools/gpu_rig/make_rig.sh:
#
#   .gpu/whl/     mpich, mpi4py, array-api-compat wheels (pure or manylinux)
#   .gpu/lib/     libcudecomp.so.0 (tools/build_cudecomp.sh) and libcutensor.so.2
#   .gpu/native/  darray/_native.cpython-3XX-x86_64-linux-gnu.so built with
#                 DARRAY_ENABLE_CUDA=ON DARRAY_ENABLE_CUDECOMP=ON against the GPU machine's jaxlib
#
# libcutensor.so.2 in the rig is the test stand-in tools/gpu_rig/cutensor_permute_shim.cu (the
# real library, 323 MB, exceeds what the rig can carry); a user's build links the real cuTENSOR.
#
# Usage (from the repository root):  bash tools/gpu_rig/run_gpu_tier.sh [OUT_DIR]
set -euo pipefail
RIG=${RIG:-.gpu}
OUT_DIR=${1:-${OUT:-/tmp/gpu_out}}
mkdir -p "$OUT_DIR" /tmp/rig_site /tmp/rig_mpich
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/rig_site \
  "$RIG"/whl/array_api_compat*.whl "$RIG"/whl/mpi4py*.whl
python3 -m zipfile -e "$RIG"/whl/mpich*.whl /tmp/rig_mpich
MPI_LIB=$(dirname "$(find /tmp/rig_mpich -name 'libmpi.so.12' | head -1)")
NCCL_LIB=$(dirname "$(find / -name 'libnccl.so.2' -not -path '/proc/*' -not -path '/tmp/*' 2>/dev/null | head -1)")
CUDART_LIB=$(dirname "$(find / -name 'libcudart.so.13' -not -path '/proc/*' 2>/dev/null | head -1)")
# System directories stay out of LD_LIBRARY_PATH: the loader searches them anyway, and naming
# them first would shadow the libraries the mpich wheel's libmpi carries (e.g. libfabric).
extra=""
for d in "$NCCL_LIB" "$CUDART_LIB"; do
  case "$d" in /usr/lib*|/lib*) ;; *) extra="$extra:$d" ;; esac
done
export LD_LIBRARY_PATH="$PWD/$RIG/lib:$MPI_LIB:$MPI_LIB/mpich$extra:${LD_LIBRARY_PATH:-}"
export PYTHONPATH="/tmp/rig_site:$PWD"
export JAX_PLATFORMS=cuda
cp "$RIG"/native/_native*.so darray/
echo "== libraries: MPI $MPI_LIB, NCCL $NCCL_LIB, cudart $CUDART_LIB"
nvidia-smi -L || true
python3 - <<'EOF'
import jax
import darray
from darray._src import native
print("jax", jax.__version__, jax.devices())
print("build_info", native.build_info())
EOF
set -o pipefail
python3 -m pytest -o addopts="" -m gpu -v -rs -p no:cacheprovider tests/gpu 2>&1 \
  | tee "$OUT_DIR/gpu_tests.log" || echo "GPU TIER FAILED (exit $?)"
PYTHONUNBUFFERED=1 python3 benchmarks/bench_gpu.py --n ${BENCH_N:-256 512} \
  --repeats ${BENCH_REPEATS:-10} --json "$OUT_DIR/bench_gpu.json" 2>&1 \
  | grep -v '^\[bench_gpu\]' | tee "$OUT_DIR/bench_gpu.log"
