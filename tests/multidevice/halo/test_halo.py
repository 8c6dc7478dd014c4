"""Covers: darray/_src/halo/api.py, darray/_src/plans/halo_plan.py, darray/_src/plans/halo_spec.py
Covers: darray/_src/backends/jax/halo_exchange.py

halo / halo_reduce / unhalo on 8 virtual devices, against np.pad on the global array."""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from halo_reference import check_filled, reduce_reference
from helpers import canonical_dtype, mesh_of, tol
from hypothesis import given, settings
from hypothesis import strategies as st

import darray
from darray._src.plans import halo_plan

RULES = ("periodic", "constant", "edge", "reflect")
MESHES = {(8,): ("d",), (2, 4): ("x", "y"), (4, 2): ("x", "y"), (1, 8): ("x", "y")}


def make(shape, mesh_shape, spec, seed=0, dtype=np.float64):
    # the dtype darray holds (float32 with x64 off), so that exact checks compare its values
    host = np.random.default_rng(seed).standard_normal(shape).astype(canonical_dtype(dtype))
    return host, darray.asarray(host, mesh=mesh_of(mesh_shape, MESHES[mesh_shape]), spec=spec)


# -- fill against np.pad ------------------------------------------------------------------------
@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("n", [16, 13, 7])
@pytest.mark.parametrize("width", [1, 2, 3])
def test_1d_mesh_all_rules(rule, n, width):
    host, x = make((n, 5), (8,), ("d",))
    y = x.halo(width, boundary=rule, fill_value=-7.5)
    assert y.layout.halo == ((width, width), (width, width))
    assert y.layout.split == (("d",), ())
    assert y.data.sharding.spec == x.data.sharding.spec
    assert y.shape == x.shape
    check_filled(y, host, rule, fill_value=-7.5)
    np.testing.assert_array_equal(np.asarray(y), host)  # logical values unchanged


@pytest.mark.parametrize("mesh_shape", [(2, 4), (4, 2), (1, 8)])
@pytest.mark.parametrize("shape", [(8, 16, 4), (7, 13, 3), (5, 9, 6)])
@pytest.mark.parametrize("rule", RULES)
def test_pencil_3d(mesh_shape, shape, rule):
    host, x = make(shape, mesh_shape, ("x", "y"))
    y = x.halo(((1, 2), 1, (0, 2)), boundary=rule, fill_value=3.0)
    assert y.layout.halo == ((1, 2), (1, 1), (0, 2))
    assert y.layout.split == (("x",), ("y",), ())
    assert y.data.sharding.spec == jax.sharding.PartitionSpec("x", "y")
    check_filled(y, host, rule, fill_value=3.0)


@settings(max_examples=15, deadline=None)
@given(mesh_shape=st.sampled_from([(8,), (2, 4), (4, 2)]),
       n0=st.integers(1, 19), n1=st.integers(1, 11),
       w0=st.tuples(st.integers(0, 3), st.integers(0, 3)),
       w1=st.tuples(st.integers(0, 3), st.integers(0, 3)),
       rule=st.sampled_from(RULES + ("symmetric",)))
def test_hypothesis_fill_and_reduce(mesh_shape, n0, n1, w0, w1, rule):
    spec = ("d",) if len(mesh_shape) == 1 else ("x", "y")
    host, x = make((n0, n1), mesh_shape, spec, seed=n0 * 31 + n1)
    y = x.halo((w0, w1), boundary=rule, fill_value=2.0)
    check_filled(y, host, rule, fill_value=2.0)
    r = y.halo_reduce(boundary=rule)
    assert r.layout == x.layout
    np.testing.assert_allclose(np.asarray(r), reduce_reference(y, rule), rtol=tol(r.dtype),
                               atol=tol(r.dtype))


def test_width_larger_than_neighbour_is_multi_hop():
    # 13 over 8: blocks own 2,2,2,2,2,2,1,0; width 5 spans three blocks.
    host, x = make((13,), (8,), ("d",))
    y = x.halo(5)
    check_filled(y, host, "periodic")
    plan = halo_plan.axis_plan(13, 8, 2, 5, 5, "periodic")
    assert len(plan.lo.rounds) >= 3 and len(plan.hi.rounds) >= 3
    # wider than the whole axis wraps around more than once, like np.pad(mode="wrap")
    check_filled(x.halo(15), host, "periodic")


def test_per_axis_boundary_and_dict_width():
    host, x = make((8, 6), (2, 4), ("x", "y"))
    y = x.halo({0: 2, -1: (1, 0)}, boundary=("periodic", "reflect"))
    assert y.layout.halo == ((2, 2), (1, 0))
    check_filled(y, host, ("periodic", "reflect"))


def test_axes_restricts_ghosts():
    host, x = make((16, 6), (8,), ("d",))
    y = x.halo(2, axes=(0,))
    assert y.layout.halo == ((2, 2), (0, 0))
    check_filled(y, host, "periodic")
    y = x.halo((1, (0, 3)), axes=(1, 0))
    assert y.layout.halo == ((0, 3), (1, 1))
    check_filled(y, host, "periodic")


def test_rehalo_and_unhalo():
    host, x = make((13, 4), (8,), ("d",))
    y = x.halo(1).halo(2, boundary="edge")   # an existing halo is replaced
    assert y.layout.halo == ((2, 2), (2, 2))
    check_filled(y, host, "edge")
    u = y.unhalo()
    assert u.layout == x.layout and not u.layout.has_halo
    assert u.data.sharding.spec == x.data.sharding.spec
    np.testing.assert_array_equal(np.asarray(u), host)
    assert x.unhalo() is x and x.halo_reduce() is x


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32, np.bool_])
def test_dtypes(dtype):
    host = (np.arange(24).reshape(12, 2) % 3).astype(dtype)
    x = darray.asarray(host, mesh=mesh_of((8,), ("d",)), spec=("d",))
    y = x.halo(1, boundary="constant", fill_value=1)
    assert y.dtype == host.dtype
    check_filled(y, host, "constant", fill_value=1)


def test_jit_and_traced_fill_value():
    host, x = make((16, 4), (2, 4), ("x", "y"))

    @jax.jit
    def f(x, v):
        return x.halo(1, boundary="constant", fill_value=v)
    y = f(x, 4.0)
    assert y.layout.halo == ((1, 1), (1, 1))
    check_filled(y, host, "constant", fill_value=4.0)


def test_explicit_mesh_input():
    mesh = mesh_of((2, 4), ("x", "y"), explicit=True)
    host = np.random.default_rng(3).standard_normal((8, 12)).astype(canonical_dtype(np.float64))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    y = jax.jit(lambda a: a.halo(1))(x)
    check_filled(y, host, "periodic")
    assert y.data.sharding.spec == jax.sharding.PartitionSpec("x", "y")


# -- reduce ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("mesh_shape,shape", [((8,), (13, 3)), ((2, 4), (6, 9, 2)),
                                              ((4, 2), (16, 8, 3))])
def test_reduce_matches_numpy(rule, mesh_shape, shape):
    spec = ("d",) if len(mesh_shape) == 1 else ("x", "y")
    _, x = make(shape, mesh_shape, spec)
    rng = np.random.default_rng(1)
    # arbitrary values in ghosts (a particle deposit), not a fill
    y0 = x.halo(2)
    y = darray.DistArray._new(jnp.asarray(rng.standard_normal(y0.data.shape)), y0.layout)
    y = darray.DistArray._new(jax.device_put(y.data, y0.data.sharding), y0.layout)
    r = y.halo_reduce(boundary=rule)
    assert r.layout == x.layout and not r.layout.has_halo
    assert r.data.sharding.spec == x.data.sharding.spec
    np.testing.assert_allclose(np.asarray(r), reduce_reference(y, rule), rtol=tol(r.dtype),
                               atol=tol(r.dtype))


def test_painting_conserves_mass():
    # Deposit 1 into every cell of every haloed block (ghosts included); after the reduce each
    # cell holds 1 + the number of blocks whose ghosts cover it.
    x = darray.zeros((16, 8), mesh=mesh_of((2, 4)), spec=("x", "y"))
    y = x.halo(1)
    y = darray.DistArray._new(jnp.ones_like(y.data), y.layout)
    r = y.halo_reduce()
    total = np.asarray(r).sum()
    assert total == 8 * (8 + 2) * (2 + 2)   # every block's full window, folded back


@pytest.mark.parametrize("rule", ["periodic", "edge", "reflect", "symmetric"])
def test_adjoint_dot_product(rule):
    """<fill(x), y> == <x, reduce(y)>, inner products over owned and ghost cells."""
    host, x = make((13, 6), (2, 4), ("x", "y"), seed=5)
    y0 = x.halo((2, 1), boundary=rule)
    yh = np.random.default_rng(6).standard_normal(y0.data.shape)
    y = darray.DistArray._new(jax.device_put(jnp.asarray(yh), y0.data.sharding), y0.layout)
    valid = np.zeros(y0.data.shape, bool)
    from halo_reference import block_windows
    for _, _, phys in block_windows(y0.layout):
        valid[phys] = True
    lhs = np.sum(np.where(valid, np.asarray(y0.data) * yh, 0.0))
    rhs = np.sum(host * np.asarray(y.halo_reduce(boundary=rule)))
    np.testing.assert_allclose(lhs, rhs, rtol=tol(y.dtype))


# -- HLO: neighbour exchange only -------------------------------------------------------------
def _permutes(text):
    return re.findall(r"= \w+\[([\d,]*)\][^ ]* collective-permute\(", text)


def test_hlo_face_sized_permutes_no_all_gather():
    x = darray.zeros((16, 32, 8), mesh=mesh_of((2, 4)), spec=("x", "y"))
    f = jax.jit(lambda d: darray.DistArray._new(d, x.layout).halo(1).data)
    text = f.lower(x.data).compile().as_text()
    assert "all-gather" not in text and "all-to-all" not in text
    shapes = sorted(_permutes(text))
    # block 8x8x8: axis-0 faces 1x8x8; axis-1 faces carry the axis-0 ghosts (corners): 10x1x8
    assert shapes == ["1,8,8", "1,8,8", "10,1,8", "10,1,8"], shapes
    g = jax.jit(lambda d: darray.DistArray._new(d, x.halo(1).layout).halo_reduce().data)
    text = g.lower(x.halo(1).data).compile().as_text()
    assert "all-gather" not in text
    assert sorted(_permutes(text)) == ["1,8,8", "1,8,8", "10,1,8", "10,1,8"]


def test_hlo_uneven_no_all_gather():
    x = darray.zeros((13, 6), mesh=mesh_of((8,), ("d",)), spec=("d",))
    f = jax.jit(lambda d: darray.DistArray._new(d, x.layout).halo(1).data)
    text = f.lower(x.data).compile().as_text()
    assert "all-gather" not in text
    assert sorted(_permutes(text)) == ["1,6", "1,6"]


# -- errors -----------------------------------------------------------------------------------
def test_errors():
    _, x = make((8, 4), (8,), ("d",))
    with pytest.raises(darray.LayoutError, match=r"width=-1 is negative"):
        x.halo(-1)
    with pytest.raises(TypeError, match=r"width=1.5 must be an int"):
        x.halo(1.5)
    with pytest.raises(TypeError, match=r"width=True is a bool"):
        x.halo(True)
    with pytest.raises(darray.LayoutError, match=r"width=\(1, 2, 3\) has 3 entries"):
        x.halo((1, 2, 3))
    with pytest.raises(darray.LayoutError, match=r"width\[0\]=\(1, 2, 3\) must be an int or"):
        x.halo(((1, 2, 3), 1))
    with pytest.raises(ValueError, match=r"boundary='mirror' is not a known boundary rule"):
        x.halo(1, boundary="mirror")
    with pytest.raises(TypeError, match=r"boundary=3 must be a string"):
        x.halo(1, boundary=3)
    with pytest.raises(darray.LayoutError, match=r"axes=2 is out of range"):
        x.halo(1, axes=(2,))
    with pytest.raises(darray.LayoutError, match=r"repeats an axis"):
        x.halo(1, axes=(0, -2))
    with pytest.raises(TypeError, match=r"is a dict, which already names the axes"):
        x.halo({0: 1}, axes=(0,))
    with pytest.raises(TypeError, match=r"fill_value=.* must be a scalar"):
        x.halo(1, fill_value=np.ones(2))
    with pytest.raises(TypeError, match=r"halo: x must be an array"):
        darray.halo([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"backend='nope' is not a registered halo backend"):
        darray.halo(x, backend="nope")
    empty = darray.zeros((0, 4), mesh=mesh_of((8,), ("d",)), spec=("d",))
    with pytest.raises(darray.LayoutError, match=r"axis 0 of length 0"):
        empty.halo(1)
