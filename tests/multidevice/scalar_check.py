"""The rule for 0-d results: darray returns them as 0-d DistArrays on the input's mesh (so
array-API code can mix them with arrays), whose data is a jax scalar replicated over every
device of that mesh; `r.to_jax()` is that jax scalar and `darray.grad` takes them as a loss."""
import jax
import numpy as np

from darray._src.array import DistArray


def assert_replicated_scalar(r, mesh, ref=None, rtol=0.0, atol=0.0):
    """`r` is a 0-d DistArray on `mesh` whose data is replicated over all of `mesh`'s devices
    and, when `ref` is given, equal to it (within rtol/atol; exactly by default)."""
    assert isinstance(r, DistArray), type(r)
    assert r.shape == () and r.ndim == 0, r.shape
    assert r.layout.split == () and not r.layout.has_halo, r.layout
    assert tuple(r.mesh.shape.items()) == tuple(mesh.shape.items()), (r.mesh, mesh)
    data = r.to_jax()
    assert isinstance(data, jax.Array) and not isinstance(data, DistArray), type(data)
    assert data.shape == (), data.shape
    assert data.sharding.is_fully_replicated, data.sharding
    assert data.sharding.device_set == set(mesh.devices.flat), data.sharding
    if ref is not None:
        assert np.ndim(ref) == 0, np.shape(ref)
        np.testing.assert_allclose(np.asarray(r), ref, rtol=rtol, atol=atol)
