"""Covers: darray/_src/backends/nccl.py, darray/_src/backends/jax/fft_exec.py

The nccl backend's pack/unpack descriptors through whole FFT plans, on 8 CPU devices.

`nccl.emulated_move` runs exactly the descriptors the GPU handler receives (a jnp gather, XLA's
all-to-all, a jnp scatter) in place of each Transpose/Merge stage; registered here as a test
backend, darray.fft on it must equal numpy and keep the layouts of the "jax" backend.
"""
import numpy as np
import pytest
from helpers import FFT_MESHES as MESHES
from helpers import assert_layout, close, mesh_of, rand
from helpers import fft_spec as spec_of

import darray
import darray.fft as dfft
from darray._src.backends import nccl
from darray._src.backends.jax import fft_exec
from darray._src.backends.registry import FFT_EXECUTORS
from darray._src.base import compat


def _emulated(plan, data, norm, standalone):
    del standalone  # its reorders are jnp.transpose either way
    if not plan.stages:
        return data
    body = compat.shard_map(
        lambda b: fft_exec.run_stages(b, plan, norm, move=nccl.emulated_move),
        mesh=plan.in_layout.mesh, in_specs=(plan.in_layout.spec,),
        out_specs=plan.out_layout.spec)
    return body(data)


@pytest.fixture(scope="module", autouse=True)
def emulated_backend():
    FFT_EXECUTORS.register("nccl_emulated", _emulated)
    yield
    FFT_EXECUTORS.unregister("nccl_emulated")


@pytest.mark.parametrize("mesh", ["slab8", "pencil2x4", "pencil4x2"])
@pytest.mark.parametrize("shape", [(16, 16, 16), (7, 13, 10)])
@pytest.mark.parametrize("decomposition", ["auto", "pencil"])
def test_fftn_roundtrip_matches_numpy(mesh, shape, decomposition):
    a = rand(shape, np.complex128)
    x = darray.asarray(a, mesh=mesh_of(*MESHES[mesh]), spec=spec_of(mesh))
    with darray.config_context(fft_backend="nccl_emulated"):
        y = dfft.fftn(x, decomposition=decomposition)
        z = dfft.ifftn(y, decomposition=decomposition)
    ref = dfft.fftn(x, decomposition=decomposition)  # the "jax" backend
    close(y, np.fft.fftn(a), np.complex128)
    assert y.layout == ref.layout
    assert_layout(y, ref.layout)
    close(z, a, np.complex128)
    assert z.layout == x.layout


@pytest.mark.parametrize("mesh", ["slab8", "pencil2x4"])
def test_rfftn_uneven_matches_numpy(mesh):
    shape = (9, 13, 7)
    a = rand(shape, np.float64)
    x = darray.asarray(a, mesh=mesh_of(*MESHES[mesh]), spec=spec_of(mesh))
    with darray.config_context(fft_backend="nccl_emulated"):
        y = dfft.rfftn(x)
        z = dfft.irfftn(y, s=shape)
    close(y, np.fft.rfftn(a), np.float64)
    assert_layout(y, split=y.layout.split)
    close(z, a, np.float64)
    assert z.layout == x.layout
