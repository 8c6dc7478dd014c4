"""Covers: none (the nccl handlers' build in csrc/)

Slow tier: nvcc and the host compiler build the nccl handlers against jaxlib's FFI headers.

Needs nvcc (CUDA), a jaxlib whose FFI headers have the collectives extension (jax 0.12 line) and
nccl.h (the nvidia-nccl-cu13 wheel, or $NCCL_ROOT/include). Compiles the two translation units;
linking and running need a GPU machine (tests/gpu).
"""
import os
import shutil
import subprocess

import jax
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FFI = jax.ffi.include_dir()


def _nccl_include():
    root = os.environ.get("NCCL_ROOT")
    if root and os.path.exists(os.path.join(root, "include", "nccl.h")):
        return os.path.join(root, "include")
    try:
        import nvidia.nccl
        inc = os.path.join(list(nvidia.nccl.__path__)[0], "include")
        return inc if os.path.exists(os.path.join(inc, "nccl.h")) else None
    except ImportError:
        return None


def _why_not():
    if shutil.which("nvcc") is None:
        return "nvcc is not installed"
    if not os.path.exists(os.path.join(FFI, "xla", "ffi", "api", "collectives_api.h")):
        return f"the jaxlib headers in {FFI} have no collectives extension (jaxlib < 0.11.2)"
    if _nccl_include() is None:
        return "nccl.h not found (pip install nvidia-nccl-cu13, or set NCCL_ROOT)"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_why_not() is not None,
                                                    reason=str(_why_not()))]


def test_handlers_compile(tmp_path):
    csrc = os.path.join(ROOT, "csrc")
    cuda_inc = os.path.join(os.path.dirname(os.path.dirname(shutil.which("nvcc"))), "include")
    common = ["-std=c++17", "-O2", "-I", csrc, "-isystem", FFI, "-isystem", _nccl_include()]
    subprocess.run(["nvcc", *common, "-Xcompiler", "-fPIC", "-gencode",
                    "arch=compute_90,code=sm_90", "-c", os.path.join(csrc, "nccl_pack.cu"),
                    "-o", str(tmp_path / "pack.o")], check=True, capture_output=True)
    subprocess.run(["nvcc", *common, "-Xcompiler", "-fPIC,-Wall,-Werror", "-I", cuda_inc,
                    "-x", "cu", "-c", os.path.join(csrc, "nccl_ffi.cc"),
                    "-o", str(tmp_path / "ffi.o")], check=True, capture_output=True)
    assert (tmp_path / "pack.o").stat().st_size > 0 and (tmp_path / "ffi.o").stat().st_size > 0
