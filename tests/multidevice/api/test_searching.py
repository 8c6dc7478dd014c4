"""Covers: darray/_src/api/searching.py, darray/_src/api/utility.py

Searching functions on 8 virtual CPU devices: argmax/argmin (ties, NaN, poisoned padding,
all-reduce only), count_nonzero, nonzero, searchsorted, where; plus all/any/diff."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import NamedSharding
from scalar_check import assert_replicated_scalar

import darray
from darray._src.distarray.array import DistArray
from darray._src.placement.physical import valid_mask

MESH_SHAPES = [(8,), (2, 4), (4, 2), (1, 8)]
RNG = np.random.default_rng(99)


def spec_for(mesh_shape, ndim):
    return ("x", "y")[: min(len(mesh_shape), ndim)]


def poisoned(host, mesh, spec, value):
    """Padding holds `value`, the answer a leaky argmax/argmin would return."""
    x = darray.asarray(host, mesh=mesh, spec=spec)
    mask = valid_mask(x.layout)
    data = jax.jit(lambda d: jnp.where(mask, d, jnp.asarray(value, d.dtype)))(x.data)
    return DistArray._new(data, x.layout)


def assert_sharded(y, mesh, split):
    if split == ():  # rank 0: a 0-d DistArray, data replicated over the mesh
        assert_replicated_scalar(y, mesh)
        return
    assert y.layout.split == split
    assert y.data.sharding.is_equivalent_to(NamedSharding(mesh, y.layout.spec), y.data.ndim)


@pytest.mark.x64
@pytest.mark.parametrize("mesh_shape", MESH_SHAPES)
def test_argmax_argmin_every_axis(mesh_shape):
    mesh = mesh_of(mesh_shape)
    host = RNG.integers(0, 5, (13, 10, 7)).astype(np.float64)  # many ties: first one wins
    spec = spec_for(mesh_shape, 3)
    # argmin shares the kernel: two axes suffice for it
    for name, poison, axes in (("argmax", 1e9, (None, 0, 1, 2)), ("argmin", -1e9, (None, 1))):
        x = poisoned(host, mesh, spec, poison)
        for axis in axes:
            y = getattr(darray, name)(x, axis=axis)
            ref = getattr(np, name)(host, axis=axis)
            np.testing.assert_array_equal(np.asarray(y), ref)
            assert y.dtype == darray.int64
            split = () if axis is None else tuple(s for a, s in enumerate(x.layout.split)
                                                  if a != axis)
            assert_sharded(y, mesh, split)
    y = darray.argmin(x, axis=1, keepdims=True)
    np.testing.assert_array_equal(np.asarray(y), np.argmin(host, axis=1, keepdims=True))


def test_arg_nan_and_dtypes():
    mesh = mesh_of((8,))
    host = RNG.standard_normal(29)
    host[[5, 20]] = np.nan
    x = darray.asarray(host, mesh=mesh)
    assert int(darray.argmax(x)) == 5 and int(darray.argmin(x)) == 5
    i = darray.asarray(np.array([3, -7, 9, 9, -7], np.int8), mesh=mesh)
    assert int(darray.argmax(i)) == 2 and int(darray.argmin(i)) == 1
    u = darray.asarray(np.array([0, 200, 255, 255], np.uint8), mesh=mesh)
    assert int(darray.argmax(u)) == 2
    with pytest.raises(ValueError,
                       match=r"argmax of an empty axis has no identity \(x has shape \(0,\)"):
        darray.argmax(darray.zeros((0,), mesh=mesh))
    with pytest.raises(TypeError, match="argmin: axis=\\(0, 1\\) must be an int or None"):
        darray.argmin(x, axis=(0, 1))


def test_hlo_argmax_along_split_axis_has_no_gather():
    mesh = mesh_of((2, 4))
    x = darray.asarray(RNG.standard_normal((13, 10, 7)), mesh=mesh, spec=("x", "y"))
    for fn in (lambda x: darray.argmax(x, axis=0), lambda x: darray.argmin(x)):
        text = jax.jit(fn).lower(x).compile().as_text()
        assert " all-reduce(" in text or " all-reduce-start(" in text
        assert "all-gather" not in text


@pytest.mark.x64
def test_count_nonzero_and_nonzero():
    mesh = mesh_of((2, 4))
    host = RNG.integers(0, 3, (13, 10)) * (RNG.random((13, 10)) > 0.5)
    x = poisoned(host, mesh, ("x", "y"), 1)
    for axis in (None, 0, 1):
        y = darray.count_nonzero(x, axis=axis)
        np.testing.assert_array_equal(np.asarray(y), np.count_nonzero(host, axis=axis))
    assert darray.count_nonzero(x, axis=1, keepdims=True).shape == (13, 1)
    got = darray.nonzero(x)
    for g, r in zip(got, np.nonzero(host)):
        assert g.dtype == darray.int64 and g.mesh == mesh
        np.testing.assert_array_equal(np.asarray(g), r)
    with pytest.raises(ValueError, match="nonzero needs an array of rank >= 1"):
        darray.nonzero(darray.sum(x))


@pytest.mark.x64
def test_where_and_searchsorted():
    mesh = mesh_of((2, 4))
    a, b = RNG.standard_normal((13, 10)), RNG.standard_normal((13, 10))
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    y = darray.asarray(b, mesh=mesh, spec=("x", "y"))
    for got, ref in ((darray.where(x > y, x, y), np.where(a > b, a, b)),
                     (darray.where(x > 0, x, 0.0), np.where(a > 0, a, 0.0)),
                     (darray.where(x > 0, 1.0, np.zeros(10)), np.where(a > 0, 1.0, 0.0))):
        np.testing.assert_array_equal(np.asarray(got), ref)
        assert got.layout == x.layout
    with pytest.raises(TypeError, match="where: condition must be a boolean array"):
        darray.where(x, x, y)
    table = np.sort(RNG.standard_normal(29))
    t = darray.asarray(table, mesh=mesh)
    for side in ("left", "right"):
        got = darray.searchsorted(t, x, side=side)
        np.testing.assert_array_equal(np.asarray(got), np.searchsorted(table, a, side=side))
        assert got.layout == x.layout and got.dtype == darray.int64
    order = RNG.permutation(29)
    shuffled = darray.asarray(table[order], mesh=mesh)
    sorter = darray.asarray(np.argsort(table[order]), mesh=mesh)
    np.testing.assert_array_equal(np.asarray(darray.searchsorted(shuffled, x, sorter=sorter)),
                                  np.searchsorted(table, a))
    with pytest.raises(ValueError, match="side='middle'; use 'left' or 'right'"):
        darray.searchsorted(t, x, side="middle")


@pytest.mark.x64
@pytest.mark.parametrize("mesh_shape", [(8,), (4, 2)])
def test_all_any_diff(mesh_shape):
    mesh = mesh_of(mesh_shape)
    host = RNG.random((13, 10)) > 0.1
    spec = spec_for(mesh_shape, 2)
    x = poisoned(host, mesh, spec, False)  # False padding would break `all`
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(np.asarray(darray.all(x, axis=axis)), host.all(axis=axis))
    x = poisoned(host & False, mesh, spec, True)  # True padding would break `any`
    assert not bool(darray.any(x))
    np.testing.assert_array_equal(np.asarray(darray.any(x, axis=0)), np.zeros(10, bool))
    f = RNG.standard_normal((13, 10))
    xf = darray.asarray(f, mesh=mesh, spec=spec)
    for axis, n in ((0, 1), (1, 2), (-1, 0)):
        got = darray.diff(xf, axis=axis, n=n)
        np.testing.assert_allclose(np.asarray(got), np.diff(f, axis=axis, n=n), rtol=1e-12)
        assert got.layout.split == xf.layout.split
    pre = darray.asarray(np.zeros((1, 10)), mesh=mesh)
    got = darray.diff(xf, axis=0, prepend=pre, append=np.ones((2, 10)))
    np.testing.assert_allclose(np.asarray(got), np.diff(f, axis=0, prepend=np.zeros((1, 10)),
                                                        append=np.ones((2, 10))), rtol=1e-12)
    with pytest.raises(ValueError, match="n=-1 must be >= 0"):
        darray.diff(xf, n=-1)
