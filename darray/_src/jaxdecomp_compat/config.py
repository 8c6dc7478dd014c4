"""jaxDecomp's configuration object and backend constants, mapped onto darray's backends.

jaxDecomp's constants come from its compiled extension (enums of cuDecomp). Here they are Python
enums with the same names, so code that passes `jaxdecomp.TRANSPOSE_COMM_NCCL` or sets
`jaxdecomp.config.update("halo_comm_backend", jaxdecomp.HALO_COMM_MPI)` runs unchanged. They
matter only where jaxDecomp itself uses them: with ``backend="cudecomp"`` they become darray's
`cudecomp_transpose_comm` / `cudecomp_halo_comm` options for that call.
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum

from darray._src.base import config as darray_config


class TransposeCommBackend(enum.Enum):
    TRANSPOSE_COMM_MPI_P2P = "MPI_P2P"
    TRANSPOSE_COMM_MPI_P2P_PL = "MPI_P2P_PL"
    TRANSPOSE_COMM_MPI_A2A = "MPI_A2A"
    TRANSPOSE_COMM_NCCL = "NCCL"
    TRANSPOSE_COMM_NCCL_PL = "NCCL_PL"
    TRANSPOSE_COMM_NVSHMEM = "NVSHMEM"
    TRANSPOSE_COMM_NVSHMEM_PL = "NVSHMEM_PL"


class HaloCommBackend(enum.Enum):
    HALO_COMM_MPI = "MPI"
    HALO_COMM_MPI_BLOCKING = "MPI_BLOCKING"
    HALO_COMM_NCCL = "NCCL"
    HALO_COMM_NVSHMEM = "NVSHMEM"
    HALO_COMM_NVSHMEM_BLOCKING = "NVSHMEM_BLOCKING"


class TransposeType(enum.Enum):
    TRANSPOSE_XY = "xy"
    TRANSPOSE_YZ = "yz"
    TRANSPOSE_ZY = "zy"
    TRANSPOSE_YX = "yx"


class Decomposition(enum.Enum):
    """jaxDecomp's decomposition of a 3-D array on a 2-D mesh of shape (p0, p1)."""
    NO_DECOMP = "no_decomp"  # (1, 1)
    SLAB_XY = "slab_xy"      # (p, 1): the first array axis split
    SLAB_YZ = "slab_yz"      # (1, p): the second array axis split
    PENCILS = "pencils"      # (p0, p1), both > 1


@dataclasses.dataclass
class JAXDecompConfig:
    """jaxDecomp's global options (same fields and `update` as jaxDecomp 0.3).

    transpose_axis_contiguous: True (jaxDecomp's default) returns the spectrum of `pfft3d` with
    its axes rotated, ``(X, Y, Z) -> (Y, Z, X)``; False keeps numpy's axis order.
    """
    halo_comm_backend: HaloCommBackend = HaloCommBackend.HALO_COMM_NCCL
    transpose_comm_backend: TransposeCommBackend = TransposeCommBackend.TRANSPOSE_COMM_NCCL
    transpose_axis_contiguous: bool = True

    def update(self, key, value):
        if not hasattr(self, key):
            raise ValueError(f"key {key!r} is not a valid configuration key; use one of "
                             f"{[f.name for f in dataclasses.fields(self)]}")
        setattr(self, key, value)


config = JAXDecompConfig()

BACKENDS = {"jax": "jax", "cudecomp": "cudecomp"}


def darray_backend(backend, fname: str) -> str:
    """jaxDecomp's `backend=` ("JAX" or "cudecomp", any case) as a darray backend name."""
    name = BACKENDS.get(str(backend).lower()) if isinstance(backend, str) else None
    if name is None:
        raise ValueError(f"{fname}: backend={backend!r} is not accepted; use 'jax' (darray's "
                         f"shard_map collectives) or 'cudecomp' (darray's cuDecomp backend)")
    return name


@contextlib.contextmanager
def comm_options(backend: str):
    """jaxDecomp's comm-backend settings as darray's cuDecomp options, for one call."""
    if backend != "cudecomp":
        yield
        return
    with darray_config.config_context(
            cudecomp_transpose_comm=TransposeCommBackend(config.transpose_comm_backend).value,
            cudecomp_halo_comm=HaloCommBackend(config.halo_comm_backend).value):
        yield


def init():
    """jaxDecomp initialises cuDecomp here; darray needs nothing (kept for compatibility)."""


def finalize():
    """jaxDecomp releases cuDecomp here; darray needs nothing (kept for compatibility)."""


def _cudecomp_handle(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(
            f"{name}: jaxDecomp's handle on cuDecomp's grid descriptors; darray plans its "
            f"decompositions itself (darray.fft.fft_plan shows a plan) and selects cuDecomp "
            f"with backend='cudecomp' (docs/native.md), so it has no such handle")
    refuse.__name__ = name
    refuse.__doc__ = (f"jaxDecomp's `{name}` (a cuDecomp grid-descriptor call): not available "
                      f"on darray; raises NotImplementedError saying what to use instead.")
    return refuse


make_config = _cudecomp_handle("make_config")
get_pencil_info = _cudecomp_handle("get_pencil_info")
get_autotuned_config = _cudecomp_handle("get_autotuned_config")
