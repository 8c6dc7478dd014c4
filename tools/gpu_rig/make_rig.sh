#!/usr/bin/env bash
# Assemble the rig folder that tools/gpu_rig/run_gpu_tier.sh uses on an offline GPU machine.
# Runs on a build machine with nvcc, g++, cmake, ninja, network to PyPI, and a cuDecomp build
# from tools/build_cudecomp.sh. Nothing it makes is committed (.gpu/ is git-ignored).
#
# Usage (repository root):
#   CUDECOMP_PREFIX=/tmp/cudecomp JAXLIB=0.11.2 PY=3.12 bash tools/gpu_rig/make_rig.sh
# JAXLIB and PY must match the GPU machine's jaxlib and Python: the FFI headers come from that
# jaxlib's wheel, so the handlers speak the XLA FFI version that will load them.
set -euo pipefail
RIG=${RIG:-.gpu}
PREFIX=${CUDECOMP_PREFIX:-/tmp/cudecomp}
JAXLIB=${JAXLIB:-0.11.2}
PY=${PY:-3.12}
PYTHON=${PYTHON:-python$PY}
ARCHS=${CUDA_ARCHS:-90}
WORK=${WORK:-/tmp/darray-rig-build}
TAG=cp${PY/./}
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
           --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64)
mkdir -p "$RIG/whl" "$RIG/lib" "$RIG/native" "$WORK/wheels"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" \
  --implementation cp "${PLATFORMS[@]}" -d "$WORK/wheels" \
  "jaxlib==$JAXLIB" mpich mpi4py array-api-compat
cp "$WORK"/wheels/mpich*.whl "$WORK"/wheels/mpi4py*"$TAG"*.whl \
  "$WORK"/wheels/array_api_compat*.whl "$RIG/whl/"
unzip -q -o "$WORK"/wheels/jaxlib-"$JAXLIB"-*.whl 'jaxlib/include/*' -d "$WORK/jaxlib"
cp -P "$PREFIX"/lib/libcudecomp.so* "$RIG/lib/"
# The cuTENSOR stand-in (tests only; see tools/gpu_rig/README.md).
nvcc -O2 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_${ARCHS},code=sm_${ARCHS} \
  -gencode arch=compute_${ARCHS},code=compute_${ARCHS} \
  -I"$PREFIX"/deps/cutensor/include -Xlinker -soname=libcutensor.so.2 \
  tools/gpu_rig/cutensor_permute_shim.cu -o "$RIG/lib/libcutensor.so.2"
cmake -S . -B "$WORK/build" -G Ninja -DPython_EXECUTABLE="$(command -v "$PYTHON")" \
  -DXLA_FFI_INCLUDE_DIR="$WORK/jaxlib/jaxlib/include" -DDARRAY_ENABLE_CUDA=ON \
  -DDARRAY_ENABLE_CUDECOMP=ON -DCUDECOMP_ROOT="$PREFIX" -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/build"
cp "$WORK"/build/_native*.so "$RIG/native/"
du -sh "$RIG"
