"""What a backend that cannot run raises, and how to get each native backend.

Below every executor and the registry (backends/registry.py), so an executor can refuse to run
without importing the registry that loads it.
"""
from __future__ import annotations

from darray._src.base import native
from darray._src.base.errors import BackendUnavailableError as BackendUnavailableError

# How to get each native backend; the only place that knows about the build.
HOW_TO_GET = {
    "cudecomp": "build cuDecomp, then reinstall darray against it on a machine with CUDA: "
                "`CUDECOMP_ROOT=/path/to/cudecomp CMAKE_ARGS=\"-DDARRAY_ENABLE_CUDA=ON "
                "-DDARRAY_ENABLE_CUDECOMP=ON\" python3 -m pip install -e .` (see "
                "docs/native.md); `darray.build_info()` shows what was compiled",
    "nccl": "build darray with its NCCL handlers on a machine with CUDA, against jaxlib >= "
            "0.11.2: `CMAKE_ARGS=\"-DDARRAY_ENABLE_CUDA=ON -DDARRAY_ENABLE_NCCL=ON\" python3 -m "
            "pip install -e .` (nccl.h from `pip install nvidia-nccl-cu13` or NCCL_ROOT; see "
            "docs/native.md)",
    "mpi": "install darray with its MPI extra, `pip install 'darray[mpi]'` (mpich and mpi4py; "
           "the handlers find the MPI library mpi4py loads at run time, no rebuild), and run "
           "under `mpiexec -n P` with one JAX device per process, after "
           "`darray.distributed.initialize()` (see docs/native.md)",
}


def how_to_get(name: str) -> str:
    """How to get native backend `name` in this install: a rebuild first where the install
    has no native module at all (installing the MPI extra alone would not help then)."""
    return native.rebuild_advice() + HOW_TO_GET[name]
