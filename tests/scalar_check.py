"""The rule for 0-d results: darray returns them as 0-d DistArrays (so array-API code can mix
them with arrays); `r.to_jax()` is a jax scalar and `darray.grad` takes them as a loss.

Where they live (docs/performance.md, "Small arrays"): an eager 0-d result is on one device,
JAX's default device, uncommitted (it moves to the mesh of any array it meets); with small
placement off (config small_array_cells=0, or a run of several processes) it is replicated over
every device of the input's mesh, as the results of a jitted function are (outputs of jit are
JAX's to place). tests/multidevice/api/test_small_arrays.py asserts the eager placement exactly."""
import jax
import numpy as np

from darray._src.distarray.array import DistArray
from darray._src.placement.placement import local_mesh, small_cells


def assert_replicated_scalar(r, mesh, ref=None, rtol=0.0, atol=0.0):
    """`r` is a 0-d DistArray where darray's rule puts 0-d results computed on `mesh` (see the
    module doc) and, when `ref` is given, equal to it (within rtol/atol; exactly by default)."""
    assert isinstance(r, DistArray), type(r)
    assert r.shape == () and r.ndim == 0, r.shape
    assert r.layout.split == () and not r.layout.has_halo, r.layout
    data = r.to_jax()
    assert isinstance(data, jax.Array) and not isinstance(data, DistArray), type(data)
    assert data.shape == (), data.shape
    if small_cells() and r.mesh is local_mesh():  # eager (results of jit keep the mesh)
        assert r.data.sharding.device_set == {jax.devices()[0]}, r.data.sharding
        assert not r.data._committed, "a 0-d result must be uncommitted"
    else:
        assert tuple(r.mesh.shape.items()) == tuple(mesh.shape.items()), (r.mesh, mesh)
        assert data.sharding.is_fully_replicated, data.sharding
        assert data.sharding.device_set == set(mesh.devices.flat), data.sharding
    if ref is not None:
        assert np.ndim(ref) == 0, np.shape(ref)
        np.testing.assert_allclose(np.asarray(r), ref, rtol=rtol, atol=atol)
