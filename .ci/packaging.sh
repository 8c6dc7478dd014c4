#!/usr/bin/env bash
# The packages a user installs (issue 51), tested as a user meets them. Usage (from .ci/run):
#     bash .ci/packaging.sh WORKDIR
# 1. Build an sdist and a wheel of the checkout (python -m build; the wheel with the compiler).
# 2. Install the wheel in a fresh venv with no compiler reachable (cc, c++, gcc, g++ on PATH
#    fail, CC and CXX point at them), outside the checkout; run the demo and
#    `python -m darray.info --check` on 8 virtual devices; the native module must be there.
# 3. The same from the sdist: the install must succeed without the native part, say so in
#    `darray.info`, and refuse transpose_backend="mpi" with the rebuild named.
# 4. Where nvcc exists: configure and compile the CUDA handlers (with the NCCL ones, against a
#    jaxlib new enough for them), compile only: no GPU runs here. Skipped, saying so, without.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mkdir -p "$1" && cd "$1" && pwd)"
dist="$work/dist" nocc="$work/no-compiler"
mkdir -p "$nocc"
for tool in cc c++ gcc g++ clang clang++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++; do
  printf '#!/bin/sh\necho "no compiler on this machine (darray CI): $0" >&2\nexit 1\n' \
    > "$nocc/$tool"
  chmod +x "$nocc/$tool"
done

step() { echo "=== [packaging] $*"; }

step "1. sdist and wheel"
python3 -m venv "$work/venv-build"
"$work/venv-build/bin/python3" -m pip install -q build
(cd "$repo" && "$work/venv-build/bin/python3" -m build --sdist --wheel --outdir "$dist" . \
  > "$work/build.log" 2>&1) || { tail -40 "$work/build.log"; exit 1; }
ls -l "$dist"

for kind in wheel sdist; do
  if [ "$kind" = wheel ]; then target=$(ls "$dist"/darray-*.whl); else
    target=$(ls "$dist"/darray-*.tar.gz); fi
  step "$([ "$kind" = wheel ] && echo 2 || echo 3). install the $kind with no compiler: $target"
  python3 -m venv "$work/venv-$kind"
  py="$work/venv-$kind/bin/python3"
  cd "$work"  # outside the checkout: `import darray` finds only the installed package
  PATH="$nocc:$PATH" CC="$nocc/cc" CXX="$nocc/c++" "$py" -m pip install -q "$target"
  PATH="$nocc:$PATH" "$py" -m darray.demo --n 16 | tail -2
  PATH="$nocc:$PATH" XLA_FLAGS=--xla_force_host_platform_device_count=8 \
    "$py" -m darray.info --check | tee "$work/info-$kind.txt"
  if [ "$kind" = wheel ]; then
    grep -q "native module *built" "$work/info-$kind.txt"
  else
    grep -q "native module *not built: darray was installed without its native part" \
      "$work/info-$kind.txt"
    XLA_FLAGS=--xla_force_host_platform_device_count=8 "$py" - <<'PY'
import jax
import numpy as np

import darray
from darray.errors import BackendUnavailableError

x = darray.asarray(np.ones((8, 8)), mesh=jax.make_mesh((8,), ("d",)), spec=("d", None))
try:
    with darray.config_context(transpose_backend="mpi"):
        darray.fft.fftn(x)
except BackendUnavailableError as err:
    assert "reinstall darray with a C++17 compiler" in str(err), err
    print("transpose_backend='mpi' without the native part refuses:", str(err)[:150], "...")
else:
    raise SystemExit("transpose_backend='mpi' ran without the native part")
PY
  fi
  cd "$repo"
done

if ! command -v nvcc >/dev/null 2>&1; then
  step "4. nvcc not found: the CUDA build is not compiled on this machine (skipped)"
  exit 0
fi
# The NCCL handlers need jaxlib >= 0.11.2's FFI headers: Python 3.12's jax where it exists.
if PYENV_VERSION=3.12.1 python3.12 --version >/dev/null 2>&1; then
  PYENV_VERSION=3.12.1 python3.12 -m venv "$work/venv-cuda"
else
  python3 -m venv "$work/venv-cuda"
fi
cpy="$work/venv-cuda/bin/python3"
step "4. nvcc $(nvcc --version | tail -1): compiling the CUDA handlers with $($cpy --version)"
"$cpy" -m pip install -q nanobind jax cmake ninja nvidia-nccl-cu13
PATH="$work/venv-cuda/bin:$PATH" cmake -S "$repo" -B "$work/build-cuda" -G Ninja \
  -DPython_EXECUTABLE="$cpy" -DDARRAY_ENABLE_CUDA=ON -DDARRAY_ENABLE_NCCL=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release > "$work/cuda-configure.log" 2>&1 \
  || { tail -30 "$work/cuda-configure.log"; exit 1; }
grep -E "darray: |skipping" "$work/cuda-configure.log" || true
grep -q "darray: NCCL backend enabled" "$work/cuda-configure.log"
step "cuDecomp is packaged nowhere (tools/build_cudecomp.sh builds it): its handlers are not compiled here"
PATH="$work/venv-cuda/bin:$PATH" cmake --build "$work/build-cuda" > "$work/cuda-build.log" 2>&1 \
  || { tail -40 "$work/cuda-build.log"; exit 1; }
ls -l "$work"/build-cuda/_native*.so
step "done"
