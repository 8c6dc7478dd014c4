#!/usr/bin/env bash
# GPU test rig: build the cuTENSOR permute shim and cuDecomp ON the GPU machine,
# and optionally self-test both there.  See tools/gpu_rig/README.md.
#
# Usage (repo root, on the GPU machine):
#   tools/gpu_rig/device_setup.sh build    PREFIX   # shim + cuDecomp into PREFIX (~1 min)
#   tools/gpu_rig/device_setup.sh selftest PREFIX   # shim test + cuDecomp's own transpose tests
#
# Needs RIG_DIR (default build/cudecomp-rig, carried to the machine) holding:
#   RIG_DIR/cudecomp-src/{src,include,tests/cc}   a cuDecomp checkout (git archive)
#   RIG_DIR/cutensor-include/                     the real cuTENSOR headers (from the wheel)
# MPI is whatever mpicxx is on PATH there (it must be the MPI mpi4py uses);
# NCCL is the nvidia-nccl wheel of the python3 on PATH unless NCCL_ROOT is set.
set -euo pipefail

die() { echo "device_setup.sh: error: $*" >&2; exit 1; }
[[ $# -eq 2 ]] || die "usage: $0 build|selftest PREFIX"
ACTION=$1
PREFIX=$(mkdir -p "$2" && cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
RIG_DIR=${RIG_DIR:-$REPO/build/cudecomp-rig}
CUDA_ARCHS=${CUDA_ARCHS:-90}
SHIM_ROOT="$PREFIX/cutensor-shim"   # laid out like a cuTENSOR install: include/, lib/
command -v nvcc >/dev/null || die "nvcc not on PATH"

find_nccl() {
  if [[ -z "${NCCL_ROOT:-}" ]]; then
    NCCL_ROOT=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])" 2>/dev/null) ||
      die "no NCCL: set NCCL_ROOT or install the nvidia-nccl wheel for python3"
  fi
}

build() {
  [[ -d "$RIG_DIR/cudecomp-src/src" ]] || die "$RIG_DIR/cudecomp-src missing (carry build/cudecomp-rig)"
  [[ -f "$RIG_DIR/cutensor-include/cutensor.h" ]] || die "$RIG_DIR/cutensor-include/cutensor.h missing"
  mkdir -p "$SHIM_ROOT/lib"
  rm -rf "$SHIM_ROOT/include" && cp -r "$RIG_DIR/cutensor-include" "$SHIM_ROOT/include"
  nvcc -shared -O2 -std=c++17 -Xcompiler -fPIC -Wno-deprecated-gpu-targets \
    -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    -I"$SHIM_ROOT/include" -Xlinker --version-script="$HERE/cutensor_shim.map" \
    -Xlinker -soname=libcutensor.so.2 -o "$SHIM_ROOT/lib/libcutensor.so.2" "$HERE/cutensor_permute_shim.cu"
  find_nccl
  CUDA_ARCHS=$CUDA_ARCHS CUTENSOR_ROOT=$SHIM_ROOT NCCL_ROOT=$NCCL_ROOT JOBS=${JOBS:-16} \
    "$REPO/tools/build_cudecomp.sh" "$RIG_DIR/cudecomp-src" "$PREFIX"
}

selftest() {
  [[ -f "$PREFIX/lib/libcudecomp.so" ]] || die "run '$0 build $PREFIX' first"
  local bin="$PREFIX/rig-tests"
  mkdir -p "$bin"
  nvcc -std=c++17 -O2 -Wno-deprecated-gpu-targets -gencode arch=compute_90,code=sm_90 \
    -I"$SHIM_ROOT/include" "$HERE/cutensor_shim_test.cu" -L"$SHIM_ROOT/lib" -l:libcutensor.so.2 \
    -Xlinker -rpath,"$SHIM_ROOT/lib" -o "$bin/cutensor_shim_test"
  local rc=0
  echo "== cutensor shim test"
  "$bin/cutensor_shim_test" | tail -n 25 || rc=1

  # cuDecomp's own transpose test, one rank on the one GPU: every transpose is
  # then local, i.e. exactly cuDecomp's cuTENSOR permute path through the shim.
  local mpi_flags
  find_nccl
  mpi_flags=$(mpicxx -show | cut -d' ' -f2-)
  for t in R32 R64 C32 C64; do
    # shellcheck disable=SC2086
    g++ -std=c++17 -O2 -D$t -I"$RIG_DIR/cudecomp-src/include" -I"$SHIM_ROOT/include" -I"$NCCL_ROOT/include" \
      -I/usr/local/cuda/include \
      "$RIG_DIR/cudecomp-src/tests/cc/transpose_test.cc" -o "$bin/transpose_test_$t" \
      -L"$PREFIX/lib" -lcudecomp -Wl,-rpath,"$PREFIX/lib" -L/usr/local/cuda/lib64 -lcudart $mpi_flags
  done
  python3 - "$bin/cases.txt" <<'EOF'
import itertools, sys
orders = [" ".join(p) for p in itertools.permutations("012")]
lines = []
for backend in (1, 4):                     # MPI_P2P and NCCL
    for ac in ("0 0 0", "1 1 1", "1 0 1"):
        acx, acy, acz = ac.split()
        for oop in ("", " -o"):
            lines.append(f"--backend {backend} --gx 37 --gy 19 --gz 23 --pr 1 --pc 1 "
                         f"--acx {acx} --acy {acy} --acz {acz}{oop}")
        for extra in ("--hex 1 1 1 --hey 1 1 1 --hez 1 1 1",       # halos: strided permutes
                      "--pdx 1 2 3 --pdy 2 0 1 --pdz 0 3 2",       # padding: strided permutes
                      "--gd 3 0 5"):                                # gdims_dist smaller than gdims
            lines.append(f"--backend {backend} --gx 37 --gy 19 --gz 23 --pr 1 --pc 1 "
                         f"--acx {acx} --acy {acy} --acz {acz} {extra}")
    for x, y in itertools.product(orders, orders):   # memory orders: x-pencil, y-pencil, z=x
        lines.append(f"--backend {backend} --gx 37 --gy 19 --gz 23 --pr 1 --pc 1 --mem_order {x} {y} {x}")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
EOF
  for t in R32 R64 C32 C64; do
    echo "== cuDecomp transpose_test $t ($(wc -l <"$bin/cases.txt") cases, 1 rank)"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -s KILL 300 \
      mpirun -np 1 "$bin/transpose_test_$t" -f "$bin/cases.txt" 2>&1 | tail -n 6 || rc=1
  done
  return $rc
}

case "$ACTION" in
  build) build ;;
  selftest) selftest ;;
  *) die "unknown action '$ACTION'; accepted: build, selftest" ;;
esac
