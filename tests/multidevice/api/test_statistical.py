"""Covers: darray/_src/api/statistical.py

Reductions and scans on 8 virtual CPU devices: exact over uneven split axes (the padding is
poisoned to prove it never leaks), output layouts, dtype rules, and no all-gather in the HLO."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import collectives, compiled_hlo, mesh_of
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from scalar_check import assert_replicated_scalar

import darray
from darray._src.distarray.array import DistArray
from darray._src.placement.physical import valid_mask

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

MESH_SHAPES = [(8,), (2, 4), (4, 2), (1, 8)]
RNG = np.random.default_rng(7)


def spec_for(mesh_shape, ndim):
    return ("x", "y")[: min(len(mesh_shape), ndim)]


def poisoned(host, mesh, spec, value):
    """A DistArray whose padding holds `value` (asarray pads with zeros, which would hide a
    sum that reads the padding)."""
    x = darray.asarray(host, mesh=mesh, spec=spec)
    mask = valid_mask(x.layout)
    assert mask is not None, "test needs an uneven split"
    data = jax.jit(lambda d: jnp.where(mask, d, jnp.asarray(value, d.dtype)))(x.data)
    return DistArray._new(data, x.layout)


def assert_layout(y, shape, split, mesh):
    assert y.shape == shape
    if shape == ():  # a full reduction is a 0-d DistArray, data replicated over the mesh
        assert split == ()
        assert_replicated_scalar(y, mesh)
        return
    assert y.layout.split == split
    assert y.data.sharding.is_equivalent_to(NamedSharding(mesh, y.layout.spec), y.data.ndim)


def expected_split(split, axes, keepdims):
    if keepdims:
        return tuple(() if a in axes else s for a, s in enumerate(split))
    return tuple(s for a, s in enumerate(split) if a not in axes)


AXES = [None, 0, 1, 2, (0, 2), (-1, 0)]


@pytest.mark.parametrize("mesh_shape", MESH_SHAPES)
def test_sum_is_exact_over_uneven_split_axes(mesh_shape):
    mesh = mesh_of(mesh_shape)
    host = RNG.integers(-1000, 1000, (13, 10, 7))
    x = poisoned(host, mesh, spec_for(mesh_shape, 3), 10**9)
    for axis in AXES:
        for keepdims in (False, True):
            if keepdims and axis not in (None, 1):
                continue
            y = darray.sum(x, axis=axis, keepdims=keepdims)
            ref = np.sum(host, axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(np.asarray(y), ref)
            axes = tuple(range(3)) if axis is None else tuple(
                a % 3 for a in (axis if isinstance(axis, tuple) else (axis,)))
            assert_layout(y, ref.shape, expected_split(x.layout.split, axes, keepdims), mesh)


@pytest.mark.parametrize("name", ["prod", "mean", "var", "std", "min", "max"])
def test_other_reductions_ignore_poisoned_padding(name):
    mesh = mesh_of((2, 4))
    host = RNG.uniform(0.5, 1.5, (13, 10, 7))
    x = poisoned(host, mesh, ("x", "y"), np.nan)
    for axis in (None, 0, (1, 2)):
        y = getattr(darray, name)(x, axis=axis)
        ref = getattr(np, name)(host, axis=axis)
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-12)
        axes = (0, 1, 2) if axis is None else ((axis,) if isinstance(axis, int) else axis)
        assert_layout(y, ref.shape, expected_split(x.layout.split, axes, False), mesh)


@pytest.mark.parametrize("mesh_shape,shape", [((8,), (7,)), ((1, 8), (5, 13)),
                                              ((4, 2), (29, 3))])
def test_mean_var_std_with_correction(mesh_shape, shape):
    mesh = mesh_of(mesh_shape)
    host = RNG.standard_normal(shape)
    x = poisoned(host, mesh, spec_for(mesh_shape, len(shape)), 1e30)
    np.testing.assert_allclose(np.asarray(darray.mean(x)), host.mean(), rtol=1e-12)
    for correction in (0, 1, 0.5):
        np.testing.assert_allclose(np.asarray(darray.var(x, axis=0, correction=correction)),
                                   host.var(axis=0, ddof=correction), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(darray.std(x, correction=1, keepdims=True)),
                               host.std(ddof=1, keepdims=True), rtol=1e-12)


@pytest.mark.distributed_placement
def test_full_reduction_is_replicated_0d():
    mesh = mesh_of((2, 4))
    x = darray.asarray(RNG.standard_normal((13, 10)), mesh=mesh, spec=("x", "y"))
    y = darray.sum(x)
    assert_replicated_scalar(y, mesh, np.asarray(x).sum(), rtol=1e-12)
    assert y.sharding.is_equivalent_to(NamedSharding(mesh, P()), 0)
    assert float(y) == pytest.approx(float(np.asarray(x).sum()), rel=1e-12)


def test_dtype_rules():
    mesh = mesh_of((8,))
    i32 = darray.asarray(np.arange(13, dtype=np.int32), mesh=mesh)
    u8 = darray.asarray(np.arange(13, dtype=np.uint8), mesh=mesh)
    f32 = darray.asarray(np.arange(13, dtype=np.float32), mesh=mesh)
    b = darray.asarray(np.arange(13) % 2 == 0, mesh=mesh)
    c64 = darray.asarray(np.arange(13) * (1 + 2j), dtype=darray.complex64, mesh=mesh)
    assert darray.sum(i32).dtype == darray.int64
    assert darray.prod(u8).dtype == darray.uint64
    assert darray.sum(f32).dtype == darray.float32
    assert darray.sum(b).dtype == darray.int64 and int(darray.sum(b)) == 7
    assert darray.sum(i32, dtype=darray.float32).dtype == darray.float32
    assert darray.mean(f32).dtype == darray.float32
    assert darray.var(c64).dtype == darray.float32
    np.testing.assert_allclose(float(darray.var(c64)), np.var(np.arange(13) * (1 + 2j)), rtol=1e-5)
    assert darray.max(i32).dtype == darray.int32 and int(darray.max(i32)) == 12
    assert darray.cumulative_sum(i32).dtype == darray.int64


def test_errors_name_the_problem():
    mesh = mesh_of((8,))
    x = darray.asarray(np.ones((13, 4)), mesh=mesh)
    with pytest.raises(ValueError, match="axis=2 is out of range for an array of rank 2"):
        darray.sum(x, axis=2)
    with pytest.raises(ValueError, match="repeats an axis"):
        darray.sum(x, axis=(0, -2))
    with pytest.raises(ValueError, match=r"max of an empty axis has no identity .*\(0, 4\)"):
        darray.max(darray.zeros((0, 4), mesh=mesh), axis=0)
    with pytest.raises(ValueError, match="correction=-1 must be a real number >= 0"):
        darray.var(x, correction=-1)
    with pytest.raises(TypeError, match="max: x has dtype complex128, but max accepts real "
                                        "numeric dtypes only"):
        darray.max(darray.asarray(np.ones(3) * 1j, mesh=mesh))
    with pytest.raises(ValueError, match="axis must be given for a 2-D array"):
        darray.cumulative_sum(x)
    with pytest.raises(TypeError, match="sum: x must be an array"):
        darray.sum([1.0, 2.0, 3.0])


def test_hlo_sum_over_split_axis_all_reduces_never_gathers():
    mesh = mesh_of((2, 4))
    x = darray.asarray(RNG.standard_normal((13, 10, 7)), mesh=mesh, spec=("x", "y"))
    for fn in (lambda x: darray.sum(x, axis=0), lambda x: darray.sum(x),
               lambda x: darray.var(x, axis=(0, 1)), lambda x: darray.max(x, axis=1)):
        assert set(collectives(compiled_hlo(fn, x))) == {"all-reduce"}
    # the scan combines block totals with an all-reduce and a neighbour shift, no gather
    scan = compiled_hlo(lambda x: darray.cumulative_sum(x, axis=0), x)
    assert "all-gather" not in collectives(scan)


@pytest.mark.parametrize("mesh_shape", [(2, 4), (8,)])
def test_cumulative_sum_and_prod(mesh_shape):
    mesh = mesh_of(mesh_shape)
    host = RNG.uniform(0.9, 1.1, (13, 10))
    x = poisoned(host, mesh, spec_for(mesh_shape, 2), np.nan)
    for axis in (0, -1):
        for name, ref_fn in (("cumulative_sum", np.cumsum), ("cumulative_prod", np.cumprod)):
            y = getattr(darray, name)(x, axis=axis)
            np.testing.assert_allclose(np.asarray(y), ref_fn(host, axis=axis), rtol=1e-12)
            assert y.layout == x.layout
    y = darray.cumulative_sum(x, axis=0, include_initial=True)
    ref = np.concatenate([np.zeros((1, 10)), np.cumsum(host, axis=0)])
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-12)
    assert y.shape == (14, 10) and y.layout.split == x.layout.split
    v = darray.asarray(np.arange(1, 8), mesh=mesh, spec=("x",))
    np.testing.assert_array_equal(np.asarray(darray.cumulative_prod(v, include_initial=True)),
                                  [1, 1, 2, 6, 24, 120, 720, 5040])


def test_reductions_under_jit_and_grad():
    mesh = mesh_of((2, 4))
    host = RNG.standard_normal((13, 10))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    y = jax.jit(lambda x: darray.mean(x, axis=1))(x)
    np.testing.assert_allclose(np.asarray(y), host.mean(axis=1), rtol=1e-12)
    assert y.layout.split == (("x",),)
    g = darray.grad(lambda x: darray.sum(x * x))(x)  # the 0-d DistArray result is the loss
    assert g.layout == x.layout
    np.testing.assert_allclose(np.asarray(g), 2 * host, rtol=1e-12)


def test_nan_propagates_across_devices():
    mesh = mesh_of((8,))
    host = RNG.standard_normal(29)
    host[20] = np.nan  # on one device only: the cross-device combine must keep it
    x = darray.asarray(host, mesh=mesh)
    for name in ("max", "min", "sum", "mean"):
        assert np.isnan(float(getattr(darray, name)(x))), name
    host2 = RNG.standard_normal((13, 10))
    host2[11, 3] = np.nan
    y = darray.max(darray.asarray(host2, mesh=mesh_of((2, 4)), spec=("x", "y")), axis=0)
    np.testing.assert_array_equal(np.asarray(y), np.max(host2, axis=0))


def test_vmap_over_a_batch_axis():
    mesh = mesh_of((2, 4))
    host = RNG.standard_normal((4, 13, 10))
    x = darray.asarray(host, mesh=mesh, spec=(None, "x", "y"))
    s = jax.vmap(lambda v: darray.sum(darray.sin(v), axis=0))(x)
    np.testing.assert_allclose(np.asarray(s), np.sin(host).sum(axis=1), rtol=1e-12)
    assert s.layout.split == ((), ("y",))
    m = jax.vmap(lambda v: darray.argmax(v))(x)
    np.testing.assert_array_equal(np.asarray(m), host.reshape(4, -1).argmax(axis=1))


@settings(max_examples=8, deadline=None)
@given(mesh_shape=st.sampled_from(MESH_SHAPES),
       shape=st.lists(st.integers(1, 11), min_size=1, max_size=3).map(tuple),
       data=st.data())
def test_sum_and_argmax_match_numpy_for_any_shape(mesh_shape, shape, data):
    mesh = mesh_of(mesh_shape)
    axis = data.draw(st.sampled_from([None] + list(range(len(shape)))), label="axis")
    host = RNG.integers(-50, 50, shape)
    x = darray.asarray(host, mesh=mesh, spec=spec_for(mesh_shape, len(shape)))
    np.testing.assert_array_equal(np.asarray(darray.sum(x, axis=axis)), host.sum(axis=axis))
    np.testing.assert_array_equal(np.asarray(darray.argmax(x, axis=axis)),
                                  host.argmax(axis=axis))
    expected = () if axis is None else tuple(s for a, s in enumerate(x.layout.split) if a != axis)
    for y in (darray.sum(x, axis=axis), darray.argmax(x, axis=axis)):
        if expected == ():  # rank 0 result: a 0-d DistArray, data replicated
            assert_replicated_scalar(y, mesh)
        else:
            assert y.layout.split == expected


@pytest.mark.distributed_placement
def test_scalar_results_feed_back_on_their_own_mesh():
    """A 0-d result (a 0-d DistArray) goes back into darray functions and stays on its mesh."""
    mesh = mesh_of((2, 4))
    host = RNG.standard_normal((13, 10))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    s = darray.sum(x)
    assert_replicated_scalar(darray.sqrt(darray.abs(s)), mesh, np.sqrt(abs(host.sum())),
                             rtol=1e-12)
    # zeros_like *creates* an array: a 0-d DistArray on the scalar's mesh
    z = darray.zeros_like(s)
    assert isinstance(z, darray.DistArray) and z.shape == () and z.mesh == x.mesh
    assert float(z) == 0.0 and z.dtype == s.dtype
    y = x + s
    np.testing.assert_allclose(np.asarray(y), host + host.sum(), rtol=1e-12)
    assert y.layout == x.layout
    r = darray.reshape(s, (1,))
    np.testing.assert_allclose(np.asarray(r), [host.sum()], rtol=1e-12)
    assert r.mesh == x.mesh and r.layout.split == ((),)
    f = darray.full((5,), darray.max(x), mesh=mesh)
    np.testing.assert_array_equal(np.asarray(f), np.full(5, host.max()))
    assert f.mesh == x.mesh
