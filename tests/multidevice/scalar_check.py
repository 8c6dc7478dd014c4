"""The rule for 0-d results: darray returns them as plain jax scalars (so `jax.grad` takes
`darray.sum(...)` as a loss), replicated over every device of the input's mesh."""
import jax
import numpy as np

from darray._src.array import DistArray


def assert_replicated_scalar(r, mesh, ref=None, rtol=0.0, atol=0.0):
    """`r` is a 0-d jax.Array (not a DistArray) replicated over all of `mesh`'s devices and,
    when `ref` is given, equal to it (within rtol/atol; exactly by default)."""
    assert isinstance(r, jax.Array) and not isinstance(r, DistArray), type(r)
    assert r.shape == (), r.shape
    assert r.sharding.is_fully_replicated, r.sharding
    assert len(r.sharding.device_set) == mesh.size, r.sharding
    assert r.sharding.device_set == set(mesh.devices.flat), r.sharding
    if ref is not None:
        assert np.ndim(ref) == 0, np.shape(ref)
        np.testing.assert_allclose(np.asarray(r), ref, rtol=rtol, atol=atol)
