#!/usr/bin/env bash
# Build NVIDIA cuDecomp from a source checkout WITHOUT the NVIDIA HPC SDK.
#
# cuDecomp's own CMakeLists insists on nvc++ and find_package(NVHPC); everything
# it really needs is nvcc, a host C++17 compiler, NCCL, cuTENSOR 2.x, an MPI and
# the NVML header.  This script compiles its sources directly with nvcc + g++,
# taking NCCL / cuTENSOR / the NVML header from their PyPI wheels unless told
# where they live.  The Fortran bindings and NVSHMEM are not built.
#
# Usage:  tools/build_cudecomp.sh SRC_DIR PREFIX
#   SRC_DIR  a cuDecomp checkout (has src/cudecomp.cc, include/cudecomp.h)
#   PREFIX   install prefix: PREFIX/include/cudecomp.h, PREFIX/lib/libcudecomp.so
#
# Environment overrides (all optional):
#   CUDA_ARCHS     ";"- or ","-separated compute capabilities (default "80;90");
#                  SASS for each, plus PTX of the highest for newer GPUs
#   NVCC           nvcc to use (default: $CUDA_HOME/bin/nvcc, else nvcc on PATH)
#   CXX            host C++ compiler (default g++)
#   NCCL_ROOT      dir with include/nccl.h and lib/libnccl.so*      (default: wheel)
#   CUTENSOR_ROOT  dir with include/cutensor.h and lib/libcutensor.so* (default: wheel)
#   NVML_INCLUDE   dir with nvml.h (default: CUDA's include dir, else wheel)
#   MPI_ROOT       dir with include/mpi.h and lib/libmpi.so* (default: from
#                  `mpicxx -show` / `mpicxx --showme` of the mpicxx on PATH)
#   PYTHON         interpreter whose pip fetches the wheels (default python3)
#   CUDART         static (default) or shared: how the CUDA runtime is linked.
#                  static keeps libcudecomp.so free of a libcudart.so dependency.
#   NVTX           auto (default: on when CUDA's header-only nvtx3 is present), 1, 0
#   STRIP          1 (default) strips the installed library; 0 keeps symbols
#   JOBS           parallel compile jobs (default: nproc)
#
# Wheels fetched when a root is not given (into PREFIX/deps with pip --target):
#   CUDA 13: nvidia-nccl-cu13, cutensor-cu13, nvidia-nvml-dev
#   CUDA 12: nvidia-nccl-cu12, cutensor-cu12, nvidia-nvml-dev-cu12
# libcudecomp.so gets an RPATH to the NCCL, cuTENSOR and MPI library dirs used.
set -euo pipefail

die() { echo "build_cudecomp.sh: error: $*" >&2; exit 1; }
note() { echo "build_cudecomp.sh: $*"; }

if [[ $# -ne 2 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && exit 0 || exit 2
fi

SRC_DIR=$(cd "$1" 2>/dev/null && pwd) || die "SRC_DIR '$1' is not a directory"
mkdir -p "$2" || die "cannot create PREFIX '$2'"
PREFIX=$(cd "$2" && pwd)
[[ -f "$SRC_DIR/src/cudecomp.cc" && -f "$SRC_DIR/include/cudecomp.h" ]] ||
  die "SRC_DIR '$SRC_DIR' is not a cuDecomp checkout (no src/cudecomp.cc or include/cudecomp.h)"

CUDA_ARCHS=${CUDA_ARCHS:-"80;90"}
CUDART=${CUDART:-static}
NVTX=${NVTX:-auto}
STRIP=${STRIP:-1}
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
[[ "$CUDART" == static || "$CUDART" == shared ]] || die "CUDART='$CUDART'; accepted: static, shared"
[[ "$NVTX" == auto || "$NVTX" == 0 || "$NVTX" == 1 ]] || die "NVTX='$NVTX'; accepted: auto, 0, 1"

# ---------------------------------------------------------------- toolchain
if [[ -z "${NVCC:-}" ]]; then
  if [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/nvcc" ]]; then NVCC="$CUDA_HOME/bin/nvcc"
  else NVCC=$(command -v nvcc || true); fi
fi
[[ -n "$NVCC" && -x "$NVCC" ]] ||
  die "nvcc not found: install the CUDA toolkit (or the nvidia-cuda-nvcc wheel) and put nvcc on PATH, or set NVCC / CUDA_HOME"
NVCC=$(readlink -f "$NVCC")
if [[ -z "${CUDA_HOME:-}" ]]; then
  # nvcc may be a wrapper script; its dry run names the real toolkit bin dir.
  here=$(cd /tmp && "$NVCC" --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ _HERE_=//p' | head -n 1)
  CUDA_HOME=$(dirname "${here:-$(dirname "$NVCC")}")
fi
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null || die "host C++ compiler '$CXX' not found: install g++ (apt-get install g++) or set CXX"
CUDA_VERSION=$("$NVCC" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
CUDA_MAJOR=${CUDA_VERSION%%.*}
[[ -n "$CUDA_MAJOR" ]] || die "could not read the CUDA version from '$NVCC --version'"
(( CUDA_MAJOR >= 12 )) || die "CUDA $CUDA_VERSION found; cuDecomp with cuTENSOR 2.x from PyPI needs CUDA >= 12"

CUDA_INC="$CUDA_HOME/include"
[[ -f "$CUDA_INC/cuda_runtime.h" ]] || CUDA_INC="$CUDA_HOME/targets/x86_64-linux/include"
[[ -f "$CUDA_INC/cuda_runtime.h" ]] || die "cuda_runtime.h not found under $CUDA_HOME (set CUDA_HOME)"
CUDA_LIB="$CUDA_HOME/lib64"
[[ -d "$CUDA_LIB" ]] || CUDA_LIB="$CUDA_HOME/targets/x86_64-linux/lib"
CCCL_INC=""
[[ -d "$CUDA_INC/cccl" ]] && CCCL_INC="$CUDA_INC/cccl"   # cuda/std/complex for host-only TUs

# ---------------------------------------------------------------- wheels
if [[ $CUDA_MAJOR -ge 13 ]]; then
  NCCL_WHEEL=nvidia-nccl-cu13; CUTENSOR_WHEEL=cutensor-cu13; NVML_WHEEL=nvidia-nvml-dev
else
  NCCL_WHEEL=nvidia-nccl-cu12; CUTENSOR_WHEEL=cutensor-cu12; NVML_WHEEL=nvidia-nvml-dev-cu12
fi
DEPS="$PREFIX/deps"
WANT_WHEELS=()
find_in_deps() { [[ -d "$DEPS" ]] && find "$DEPS" -name "$1" -path "*$2*" -print -quit 2>/dev/null || true; }

if [[ -z "${NCCL_ROOT:-}" ]]; then
  h=$(find_in_deps nccl.h /include/)
  if [[ -n "$h" ]]; then NCCL_ROOT=$(dirname "$(dirname "$h")"); else WANT_WHEELS+=("$NCCL_WHEEL"); fi
fi
if [[ -z "${CUTENSOR_ROOT:-}" ]]; then
  h=$(find_in_deps cutensor.h /include/)
  if [[ -n "$h" ]]; then CUTENSOR_ROOT=$(dirname "$(dirname "$h")"); else WANT_WHEELS+=("$CUTENSOR_WHEEL"); fi
fi
if [[ -z "${NVML_INCLUDE:-}" ]]; then
  if [[ -f "$CUDA_INC/nvml.h" ]]; then NVML_INCLUDE="$CUDA_INC"
  else
    h=$(find_in_deps nvml.h /include)
    if [[ -n "$h" ]]; then NVML_INCLUDE=$(dirname "$h"); else WANT_WHEELS+=("$NVML_WHEEL"); fi
  fi
fi
if [[ ${#WANT_WHEELS[@]} -gt 0 ]]; then
  command -v "$PYTHON" >/dev/null || die "'$PYTHON' not found; it is needed to pip-install ${WANT_WHEELS[*]} (or set NCCL_ROOT / CUTENSOR_ROOT / NVML_INCLUDE)"
  note "pip-installing ${WANT_WHEELS[*]} into $DEPS (the NCCL and cuTENSOR wheels are about 300 MB each)"
  "$PYTHON" -m pip install --quiet --no-deps --upgrade --target "$DEPS" "${WANT_WHEELS[@]}" ||
    die "pip install of ${WANT_WHEELS[*]} failed; set NCCL_ROOT / CUTENSOR_ROOT / NVML_INCLUDE to existing installs instead"
  [[ -n "${NCCL_ROOT:-}" ]] || { h=$(find_in_deps nccl.h /include/); [[ -n "$h" ]] && NCCL_ROOT=$(dirname "$(dirname "$h")"); }
  [[ -n "${CUTENSOR_ROOT:-}" ]] || { h=$(find_in_deps cutensor.h /include/); [[ -n "$h" ]] && CUTENSOR_ROOT=$(dirname "$(dirname "$h")"); }
  [[ -n "${NVML_INCLUDE:-}" ]] || { h=$(find_in_deps nvml.h /include); [[ -n "$h" ]] && NVML_INCLUDE=$(dirname "$h"); }
fi

# Library file in ROOT/lib or ROOT/lib64 for NAME (libNAME.so, else the versioned one).
find_lib() {
  local root=$1 name=$2 d f
  for d in "$root/lib" "$root/lib64"; do
    [[ -f "$d/lib$name.so" ]] && { echo "$d/lib$name.so"; return; }
    f=$(ls "$d/lib$name.so."* 2>/dev/null | sort -V | head -n 1 || true)
    [[ -n "$f" ]] && { echo "$f"; return; }
  done
}

[[ -n "${NCCL_ROOT:-}" && -f "$NCCL_ROOT/include/nccl.h" ]] || die "nccl.h not found (NCCL_ROOT='${NCCL_ROOT:-}')"
NCCL_LIB=$(find_lib "$NCCL_ROOT" nccl)
[[ -n "$NCCL_LIB" ]] || die "libnccl.so* not found under $NCCL_ROOT/lib"
[[ -n "${CUTENSOR_ROOT:-}" && -f "$CUTENSOR_ROOT/include/cutensor.h" ]] || die "cutensor.h not found (CUTENSOR_ROOT='${CUTENSOR_ROOT:-}')"
CUTENSOR_LIB=$(find_lib "$CUTENSOR_ROOT" cutensor)
[[ -n "$CUTENSOR_LIB" ]] || die "libcutensor.so* not found under $CUTENSOR_ROOT/lib"
grep -q "CUTENSOR_MAJOR 2" "$CUTENSOR_ROOT/include/cutensor.h" "$CUTENSOR_ROOT"/include/cutensor/types.h 2>/dev/null ||
  note "warning: could not confirm cuTENSOR 2.x in $CUTENSOR_ROOT/include"
[[ -n "${NVML_INCLUDE:-}" && -f "$NVML_INCLUDE/nvml.h" ]] || die "nvml.h not found (NVML_INCLUDE='${NVML_INCLUDE:-}')"

# ---------------------------------------------------------------- MPI
MPI_CFLAGS=(); MPI_LDFLAGS=(); MPI_LIBDIRS=()
if [[ -n "${MPI_ROOT:-}" ]]; then
  [[ -f "$MPI_ROOT/include/mpi.h" ]] || die "MPI_ROOT='$MPI_ROOT' has no include/mpi.h"
  MPI_LIB=$(find_lib "$MPI_ROOT" mpi)
  [[ -n "$MPI_LIB" ]] || die "libmpi.so* not found under $MPI_ROOT/lib"
  MPI_CFLAGS=(-I"$MPI_ROOT/include"); MPI_LDFLAGS=("$MPI_LIB"); MPI_LIBDIRS=("$(dirname "$MPI_LIB")")
  MPI_DESC="$MPI_LIB"
else
  MPICXX=$(command -v mpicxx || command -v mpic++ || true)
  [[ -n "$MPICXX" ]] ||
    die "no MPI found: put mpicxx on PATH (e.g. 'pip install mpich' or apt-get install libopenmpi-dev) or set MPI_ROOT"
  # MPICH / Intel MPI answer -show, Open MPI answers --showme.
  show=$("$MPICXX" -show 2>/dev/null || "$MPICXX" --showme 2>/dev/null || true)
  [[ -n "$show" ]] || die "'$MPICXX -show' and '--showme' both failed; set MPI_ROOT instead"
  read -r -a toks <<<"$show"
  for t in "${toks[@]:1}"; do
    case "$t" in
      -I*) MPI_CFLAGS+=("$t") ;;
      -L*) MPI_LDFLAGS+=("$t"); MPI_LIBDIRS+=("${t#-L}") ;;
      -l*|-pthread) MPI_LDFLAGS+=("$t") ;;
    esac
  done
  [[ ${#MPI_CFLAGS[@]} -gt 0 ]] || MPI_CFLAGS=(-I"$(dirname "$(dirname "$(readlink -f "$MPICXX")")")/include")
  MPI_DESC="$MPICXX -> ${MPI_CFLAGS[*]} ${MPI_LDFLAGS[*]}"
fi

# ---------------------------------------------------------------- flags
IFS=';, ' read -r -a ARCHS <<<"$CUDA_ARCHS"
[[ ${#ARCHS[@]} -gt 0 ]] || die "CUDA_ARCHS is empty"
GENCODE=()
for a in "${ARCHS[@]}"; do
  [[ "$a" =~ ^[0-9]+[a-z]?$ ]] || die "CUDA_ARCHS entry '$a' is not a compute capability like 90"
  GENCODE+=("-gencode=arch=compute_$a,code=sm_$a")
done
last=${ARCHS[${#ARCHS[@]}-1]}
GENCODE+=("-gencode=arch=compute_$last,code=compute_$last")   # PTX: JIT on newer GPUs

BUILD="$PREFIX/build"
rm -rf "$BUILD"; mkdir -p "$BUILD/stub-include" "$PREFIX/include" "$PREFIX/lib"

# checks.h includes <cufft.h> only for a macro cuDecomp's library never expands;
# a toolkit without cuFFT gets an empty stand-in so no cuFFT wheel is needed.
CUFFT_NOTE="real ($CUDA_INC/cufft.h)"
if [[ ! -f "$CUDA_INC/cufft.h" ]]; then
  echo "/* empty: cuDecomp's library code does not use cuFFT (build_cudecomp.sh) */" >"$BUILD/stub-include/cufft.h"
  CUFFT_NOTE="empty stand-in (no cufft.h in the toolkit; not used by the library)"
fi

DEFS=()
NVTX_ON=0
if [[ "$NVTX" == 1 || ( "$NVTX" == auto && -f "$CUDA_INC/nvtx3/nvToolsExt.h" ) ]]; then
  [[ -f "$CUDA_INC/nvtx3/nvToolsExt.h" ]] || die "NVTX=1 but $CUDA_INC/nvtx3/nvToolsExt.h is missing"
  DEFS+=(-DENABLE_NVTX); NVTX_ON=1
fi

INCS=(-I"$SRC_DIR/include" -I"$CUDA_INC" -I"$CUTENSOR_ROOT/include" -I"$NCCL_ROOT/include"
      -I"$NVML_INCLUDE" "${MPI_CFLAGS[@]}" -I"$BUILD/stub-include")
[[ -n "$CCCL_INC" ]] && INCS+=(-I"$CCCL_INC")
CXXFLAGS=(-std=c++17 -O2 -DNDEBUG -fPIC "${DEFS[@]}" "${INCS[@]}")
NVCCFLAGS=(-std=c++17 -O2 -DNDEBUG -Xcompiler -fPIC -ccbin "$(command -v "$CXX")"
           -Wno-deprecated-gpu-targets "${GENCODE[@]}" "${DEFS[@]}" "${INCS[@]}")

# Every source in src/ except the Fortran module; fail loudly if upstream adds a kind we don't know.
mapfile -t SRCS < <(cd "$SRC_DIR/src" && ls)
CC_SRCS=(); CU_SRCS=(); RDC_SRCS=()
for s in "${SRCS[@]}"; do
  case "$s" in
    *_rdc.cu) RDC_SRCS+=("$s") ;;
    *.cu) CU_SRCS+=("$s") ;;
    *.cc|*.cpp) CC_SRCS+=("$s") ;;
    *.cuf|*.f90|*.F90) ;;   # Fortran bindings: not built
    *) die "unexpected file src/$s in the cuDecomp tree; this script does not know how to build it" ;;
  esac
done

note "cuDecomp source : $SRC_DIR ($(sed -n 's/^#define CUDECOMP_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$SRC_DIR/include/cudecomp_version.h" | paste -sd.))"
note "nvcc           : $NVCC (CUDA $CUDA_VERSION), archs ${ARCHS[*]} + PTX $last"
note "host compiler  : $(command -v "$CXX") ($("$CXX" -dumpfullversion 2>/dev/null || echo '?'))"
note "NCCL           : $NCCL_LIB"
note "cuTENSOR       : $CUTENSOR_LIB"
note "nvml.h         : $NVML_INCLUDE (libnvidia-ml.so.1 is dlopen'ed by cuDecomp at run time)"
note "MPI            : $MPI_DESC"
note "cudart         : $CUDART; NVTX ranges: $NVTX_ON; cufft.h: $CUFFT_NOTE"
note "compiling ${#CC_SRCS[@]} C++ + ${#CU_SRCS[@]} CUDA + ${#RDC_SRCS[@]} CUDA-rdc sources with $JOBS jobs"

# ---------------------------------------------------------------- compile
pids=(); logs=()
run_bg() {  # LOG CMD...: run in background, keep at most JOBS running
  local log=$1; shift
  ( "$@" >"$log" 2>&1 ) & pids+=($!); logs+=("$log")
  while (( $(jobs -rp | wc -l) >= JOBS )); do sleep 0.5; done
}
for s in "${CC_SRCS[@]}"; do
  run_bg "$BUILD/${s%.*}.log" "$CXX" "${CXXFLAGS[@]}" -c "$SRC_DIR/src/$s" -o "$BUILD/${s%.*}.o"
done
for s in "${CU_SRCS[@]}"; do
  run_bg "$BUILD/${s%.*}.log" "$NVCC" "${NVCCFLAGS[@]}" -c "$SRC_DIR/src/$s" -o "$BUILD/${s%.*}.o"
done
for s in "${RDC_SRCS[@]}"; do
  run_bg "$BUILD/${s%.*}.log" "$NVCC" "${NVCCFLAGS[@]}" -rdc=true -c "$SRC_DIR/src/$s" -o "$BUILD/${s%.*}.o"
done
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed=1; echo "---- failed: ${logs[$i]}" >&2; tail -n 40 "${logs[$i]}" >&2
  fi
done
(( failed == 0 )) || die "compilation failed (logs in $BUILD)"

OBJS=()
for s in "${CC_SRCS[@]}" "${CU_SRCS[@]}" "${RDC_SRCS[@]}"; do OBJS+=("$BUILD/${s%.*}.o"); done
if [[ ${#RDC_SRCS[@]} -gt 0 ]]; then
  # Relocatable device code needs a device-link step before the host link.
  RDC_OBJS=(); for s in "${RDC_SRCS[@]}"; do RDC_OBJS+=("$BUILD/${s%.*}.o"); done
  "$NVCC" -dlink -Xcompiler -fPIC -Wno-deprecated-gpu-targets "${GENCODE[@]}" "${RDC_OBJS[@]}" \
    -o "$BUILD/device_link.o" || die "nvcc device link failed"
  OBJS+=("$BUILD/device_link.o")
fi

# ---------------------------------------------------------------- link
VERSION=$(sed -n 's/^#define CUDECOMP_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$SRC_DIR/include/cudecomp_version.h" | paste -sd.)
SONAME=libcudecomp.so.0   # upstream's SOVERSION
RPATHS=("$(dirname "$NCCL_LIB")" "$(dirname "$CUTENSOR_LIB")" "${MPI_LIBDIRS[@]}")
[[ "$CUDART" == shared ]] && RPATHS+=("$CUDA_LIB")
RPATH_FLAGS=(); for d in "${RPATHS[@]}"; do RPATH_FLAGS+=("-Wl,-rpath,$(readlink -f "$d")"); done
if [[ "$CUDART" == static ]]; then CUDART_LIBS=(-lcudart_static -lrt -lpthread -ldl)
else CUDART_LIBS=(-lcudart); fi

"$CXX" -shared -o "$PREFIX/lib/$SONAME" -Wl,-soname,"$SONAME" -Wl,--no-undefined "${OBJS[@]}" \
  "$NCCL_LIB" "$CUTENSOR_LIB" "${MPI_LDFLAGS[@]}" -L"$CUDA_LIB" -lcudadevrt "${CUDART_LIBS[@]}" \
  -ldl "${RPATH_FLAGS[@]}" || die "link of libcudecomp.so failed"
(( STRIP == 1 )) && strip --strip-unneeded "$PREFIX/lib/$SONAME"
ln -sf "$SONAME" "$PREFIX/lib/libcudecomp.so"
cp "$SRC_DIR/include/cudecomp.h" "$SRC_DIR/include/cudecomp_version.h" "$PREFIX/include/"

cat >"$PREFIX/cudecomp-build-info.txt" <<EOF
cudecomp_version=$VERSION
source=$SRC_DIR
nvcc=$NVCC
cuda_version=$CUDA_VERSION
cuda_archs=${ARCHS[*]} ptx=$last
cudart=$CUDART
nvtx=$NVTX_ON
nccl=$NCCL_LIB
cutensor=$CUTENSOR_LIB
mpi=$MPI_DESC
EOF

note "installed $PREFIX/lib/$SONAME ($(du -h "$PREFIX/lib/$SONAME" | cut -f1)), symlink libcudecomp.so, headers in $PREFIX/include"
note "run-time libraries (DT_NEEDED): $(readelf -d "$PREFIX/lib/$SONAME" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | paste -sd' ')"
note "RUNPATH: $(readelf -d "$PREFIX/lib/$SONAME" | sed -n 's/.*\(RPATH\|RUNPATH\).*\[\(.*\)\]/\2/p')"
# The real cuTENSOR needs cuBLASLt at run time; say so now rather than at the first transpose.
unresolved=$(ldd "$CUTENSOR_LIB" 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | paste -sd' ')
if [[ -n "$unresolved" ]]; then
  note "warning: $CUTENSOR_LIB needs $unresolved, not found on this machine's library path."
  note "  The cuTENSOR wheel's run path finds it when the nvidia-cublas wheel (which jax[cuda] installs) sits in"
  note "  the same site-packages or --target dir: e.g. $PYTHON -m pip install --no-deps --target $DEPS nvidia-cublas,"
  note "  or CUTENSOR_ROOT=<venv site-packages>/cutensor after pip-installing cutensor-cu$CUDA_MAJOR into jax's venv."
fi
note "build darray against it: CUDECOMP_ROOT=$PREFIX python3 -m pip install -e . -C cmake.define.DARRAY_ENABLE_CUDA=ON -C cmake.define.DARRAY_ENABLE_CUDECOMP=ON -C cmake.define.DARRAY_ENABLE_MPI=ON"
