"""Covers: darray/_src/engine/placing.py

darray.asarray of a sharded jax.Array keeps its sharding (#28.3): with no mesh/spec/device,
the array's NamedSharding (same mesh, axis names and split) and no data movement; with a
placement given, the array is resharded there, with a clear error where the spec cannot be."""
import jax
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import darray
from darray._src.base import compat

A = np.arange(8 * 16, dtype=np.float64).reshape(8, 16)


def _check(x, ref, mesh, split):
    np.testing.assert_array_equal(np.asarray(x), ref)
    assert compat.auto_twin(x.device) == compat.auto_twin(mesh), (x.device, mesh)
    assert x.layout.split == split, x.layout
    assert x.data.sharding.is_equivalent_to(NamedSharding(compat.auto_twin(mesh), x.layout.spec),
                                            x.ndim)


@pytest.mark.parametrize("explicit", [False, True], ids=["auto-mesh", "make_mesh"])
def test_sharding_is_kept_without_placement(explicit):
    mesh = (mesh_of((2, 4), ("row", "col"), explicit=True) if explicit
            else mesh_of((2, 4), ("row", "col")))
    a = jax.device_put(A, NamedSharding(mesh, P("row", "col")))
    x = darray.asarray(a)
    _check(x, A, mesh, (("row",), ("col",)))
    if not explicit:  # same buffers: no data movement at all
        assert x.data is a
    # partly replicated, and an axis split over two mesh axes
    b = jax.device_put(A, NamedSharding(mesh, P(None, ("row", "col"))))
    _check(darray.asarray(b), A, mesh, ((), ("row", "col")))
    # and the result computes with numpy's values in that layout
    y = darray.asarray(a) * 2 + 1
    _check(y, A * 2 + 1, mesh, (("row",), ("col",)))


def test_a_sub_mesh_is_kept():
    sub = mesh_of((4,), ("d",), devices=jax.devices()[4:])
    a = jax.device_put(A, NamedSharding(sub, P("d")))
    x = darray.asarray(a)
    _check(x, A, sub, (("d",), ()))
    assert x.data.sharding.device_set == set(jax.devices()[4:])


def test_placement_given_reshards():
    mesh = mesh_of((2, 4), ("row", "col"))
    a = jax.device_put(A, NamedSharding(mesh, P("row", "col")))
    x = darray.asarray(a, mesh=(8,))
    np.testing.assert_array_equal(np.asarray(x), A)
    assert x.layout.split == (("x",), ())
    y = darray.asarray(a, mesh=mesh, spec=("col", "row"))
    _check(y, A, mesh, (("col",), ("row",)))
    sub = mesh_of((4,), ("d",), devices=jax.devices()[4:])
    z = darray.asarray(a, mesh=sub)  # to other devices: asked for, so done
    np.testing.assert_array_equal(np.asarray(z), A)
    assert z.data.sharding.device_set == set(jax.devices()[4:])
    odd = jax.device_put(np.arange(13.0), NamedSharding(mesh, P()))
    w = darray.asarray(odd, mesh=mesh, spec=(("row", "col"),))  # padded: 13 over 8
    np.testing.assert_array_equal(np.asarray(w), np.arange(13.0))
    assert w.layout.split == (("row", "col"),)
    with pytest.raises(ValueError, match="'q'.*known axes"):
        darray.asarray(a, mesh=mesh, spec=("q", None))


@pytest.mark.distributed_placement
def test_unsharded_jax_arrays_still_take_the_default_placement():
    x = darray.asarray(jax.numpy.asarray(np.arange(64.0)))
    assert x.mesh is darray.default_mesh() and x.layout.split == (("d",),)
    np.testing.assert_array_equal(np.asarray(x), np.arange(64.0))
