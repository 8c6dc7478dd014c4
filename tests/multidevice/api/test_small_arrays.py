"""Covers: darray/_src/placement/placement.py, darray/_src/api/statistical.py

Small arrays live where they are cheap (config small_array_cells; docs/performance.md, "Small
arrays"): arrays under the threshold created with no placement, and eager 0-d results, sit on
JAX's default device, uncommitted; combined with a distributed array they move to its mesh and
the result keeps the distributed layout. The rest of the suite runs with the option at 0
(tests/conftest.py); here it is on."""
import array_api_compat
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.distarray.array import DistArray
from darray._src.placement.placement import default_mesh, local_mesh

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

RNG = np.random.default_rng(11)
MESH = mesh_of((2, 4), ("x", "y"))
CELLS = 4096
DEVICE0 = jax.devices()[0]


@pytest.fixture(autouse=True)
def small_placement():
    with darray.config_context(small_array_cells=CELLS):
        yield


def assert_small(r, ref=None, rtol=1e-12):
    """`r` lives on one device (JAX's default device), uncommitted, and equals `ref`."""
    assert isinstance(r, DistArray), type(r)
    assert r.mesh is local_mesh() and r.mesh.devices.size == 1, r.layout
    assert r.layout.split == ((),) * r.ndim, r.layout
    assert r.data.sharding.device_set == {DEVICE0}, r.data.sharding
    assert not r.data._committed, "small arrays must be uncommitted"
    if ref is not None:
        np.testing.assert_allclose(np.asarray(r), ref, rtol=rtol)
        assert r.shape == np.shape(ref)


def assert_on(r, layout, ref, rtol=1e-12, atol=0.0):
    assert r.layout == layout, (r.layout, layout)
    assert r.data.sharding.is_equivalent_to(jax.sharding.NamedSharding(layout.mesh, layout.spec),
                                            r.ndim)
    np.testing.assert_allclose(np.asarray(r), ref, rtol=rtol, atol=atol)


def test_creation_below_the_threshold_is_small_and_above_is_distributed():
    h = np.arange(16.0)
    assert_small(darray.asarray(h), h)
    assert_small(darray.zeros((4, 5)), np.zeros((4, 5)))
    assert_small(darray.arange(10), np.arange(10))
    assert_small(darray.linspace(0.0, 1.0, 7), np.linspace(0.0, 1.0, 7))
    assert_small(darray.asarray(2.5), 2.5)
    assert_small(darray.asarray(jnp.arange(6.0)), np.arange(6.0))
    big = darray.zeros((CELLS,))
    assert big.mesh is default_mesh() and big.layout.split == (("d",),)
    # a placement given is kept, however small
    x = darray.asarray(h, mesh=MESH, spec=("x",))
    assert x.mesh == MESH and x.layout.split == (("x",),)
    y = darray.zeros((16,), mesh=(8,))
    assert y.layout.split == (("x",),)
    with darray.config_context(small_array_cells=8):
        assert darray.asarray(h).mesh is default_mesh()
    with darray.config_context(small_array_cells=0):
        assert darray.asarray(np.arange(3.0)).mesh is default_mesh()
        assert darray.sum(darray.asarray(h)).mesh is default_mesh()


def test_the_threshold_option_is_checked():
    for bad in (-1, 2.5, True, "64"):
        with pytest.raises(ValueError, match="small_array_cells"):
            darray.set_config(small_array_cells=bad)


def test_ops_on_small_arrays_stay_small():
    h = RNG.standard_normal(16)
    t = darray.asarray(h)
    assert_small(t + 1, h + 1)
    assert_small(darray.exp(t) * t, np.exp(h) * h)
    assert_small(t[3], h[3])
    assert_small(t[2:9], h[2:9])
    assert_small(darray.sum(t), h.sum())
    assert_small(darray.mean(t), h.mean())
    assert_small(darray.max(t), h.max())
    assert_small(darray.sum(darray.reshape(t, (4, 4)), axis=0), h.reshape(4, 4).sum(axis=0))
    a, b = darray.sum(t), t[5]
    assert_small(a - b, h.sum() - h[5])
    assert bool(a <= b) == bool(h.sum() <= h[5])
    assert float(a * 2) == pytest.approx(2 * h.sum(), rel=1e-12)
    assert_small(darray.where(t > 0, t, 0.0), np.where(h > 0, h, 0.0))
    # numpy operands are placed beside the small array
    assert_small(t * np.arange(16.0), h * np.arange(16.0))


@pytest.mark.parametrize("mesh", [None, MESH], ids=["default-mesh", "committed-2x4"])
def test_zero_d_results_of_distributed_arrays_live_on_one_device(mesh):
    a = RNG.standard_normal((64, 80))
    x = darray.asarray(a, mesh=mesh, spec=("x", "y") if mesh is not None else None)
    assert x.mesh.devices.size == 8
    assert_small(darray.sum(x), a.sum())
    assert_small(darray.mean(x), a.mean())
    assert_small(darray.std(x), a.std(), rtol=1e-10)
    assert_small(darray.max(x), a.max())
    assert_small(x[3, 7], a[3, 7])
    assert_small(darray.vecdot(x[0], x[1]), a[0] @ a[1])
    assert array_api_compat.array_namespace(x, darray.sum(x)) is darray
    # host conversions of a 0-d result
    assert float(darray.sum(x)) == pytest.approx(a.sum(), rel=1e-12)
    assert int(darray.argmax(x)) == a.argmax()


@pytest.mark.parametrize("mesh", [None, MESH], ids=["default-mesh", "committed-2x4"])
def test_reductions_feed_distributed_arithmetic_in_its_layout(mesh):
    a = RNG.standard_normal((64, 80))
    x = darray.asarray(a, mesh=mesh, spec=("x", "y") if mesh is not None else None)
    z = (x - darray.mean(x)) / darray.std(x)
    assert_on(z, x.layout, (a - a.mean()) / a.std(), rtol=1e-10)
    w = darray.where(x > darray.mean(x), x, darray.min(x))
    assert_on(w, x.layout, np.where(a > a.mean(), a, a.min()))
    s = darray.sum(x)
    assert_on(s * x, x.layout, a.sum() * a)
    # functions beyond elementwise take 0-d results next to distributed arrays too
    flat = darray.reshape(x, (64 * 80,))
    srt = darray.sort(flat)
    k = darray.searchsorted(srt, darray.mean(x))
    assert int(k) == np.searchsorted(np.sort(a.reshape(-1)), a.mean())
    assert_on(darray.clip(x, darray.mean(x), None), x.layout, np.clip(a, a.mean(), None))
    both = darray.stack([darray.min(x), darray.max(x)])
    assert_small(both, [a.min(), a.max()])
    assert_on(darray.maximum(x, s / 1000), x.layout, np.maximum(a, a.sum() / 1000))


@pytest.mark.parametrize("mesh", [None, MESH], ids=["default-mesh", "committed-2x4"])
def test_small_arrays_move_to_the_distributed_mesh(mesh):
    a = RNG.standard_normal((64, 16))
    h = RNG.standard_normal(16)
    x = darray.asarray(a, mesh=mesh, spec=("x", "y") if mesh is not None else None)
    t = darray.asarray(h)
    assert_small(t)
    assert_on(x + t, x.layout, a + h)
    assert_on(t * x, x.layout, h * a)
    big1 = darray.asarray(RNG.standard_normal(64 * 80), mesh=mesh,
                          spec=("x",) if mesh is not None else None)
    assert_on(big1 + darray.sum(t), big1.layout, np.asarray(big1) + h.sum(), atol=1e-14)
    # index arrays: a small x indexed by a distributed key goes to the key's mesh
    idx = darray.asarray(np.array([3, 1, 4]), mesh=MESH, spec=(("x", "y"),))
    got = t[idx]
    np.testing.assert_array_equal(np.asarray(got), h[[3, 1, 4]])
    assert got.mesh == MESH
    # a small array concatenated with a distributed one takes the distributed mesh
    cat = darray.concat([t, darray.asarray(np.arange(CELLS * 2.0))])
    assert cat.mesh is default_mesh()
    np.testing.assert_array_equal(np.asarray(cat), np.concatenate([h, np.arange(CELLS * 2.0)]))


def test_jit_grad_and_vmap():
    a = RNG.standard_normal((64, 80))
    x = darray.asarray(a, mesh=MESH, spec=("x", "y"))
    h = RNG.standard_normal(80)
    t = darray.asarray(h)
    s = darray.sum(x)
    # jit: small and 0-d operands next to a distributed one (uncommitted: jit moves them)
    out = jax.jit(lambda x, t, s: x * t + s)(x, t, s)
    assert_on(out, x.layout, a * h + a.sum())
    r = jax.jit(lambda t: darray.sum(t * t))(t)
    np.testing.assert_allclose(np.asarray(r), (h * h).sum(), rtol=1e-12)
    assert r.shape == () and r.data.sharding.device_set == {DEVICE0}
    # grad of a 0-d loss, of a distributed and of a small argument
    g = darray.grad(lambda x: darray.sum(darray.sin(x) * s))(x)
    assert_on(g, x.layout, np.cos(a) * a.sum())
    gt = darray.grad(lambda t: darray.sum(t * t))(t)
    assert_small(gt, 2 * h)
    value, g2 = jax.jit(darray.value_and_grad(lambda x, t: darray.sum(x * t)))(x, t)
    np.testing.assert_allclose(float(value), (a * h).sum(), rtol=1e-12)
    assert_on(g2, x.layout, np.broadcast_to(h, a.shape))
    # vmap over a distributed batch, with a small operand and 0-d results
    v = darray.vmap(lambda row: darray.sum(row * t))(x)
    np.testing.assert_allclose(np.asarray(v), (a * h).sum(axis=1), rtol=1e-12)
    assert v.shape == (64,)
    w = jax.vmap(lambda row: darray.sum(row * 2.0))(darray.reshape(t, (8, 10)))
    np.testing.assert_allclose(np.asarray(w), 2 * h.reshape(8, 10).sum(axis=1), rtol=1e-12)
    assert isinstance(w, DistArray) and w.shape == (8,)


def test_asarray_of_small_and_zero_d_values_for_later_use():
    """A library that makes helpers with xp.zeros(n) and combines them with the user's arrays
    on a (2, 4) mesh works, as it does in JAX (scikit-learn's f1_score does this)."""
    a = RNG.standard_normal((64, 12))
    x = darray.asarray(a, mesh=MESH, spec=("x", "y"))
    helper = darray.zeros(12) + 1.0
    assert_small(helper)
    assert_on(x * helper, x.layout, a)
    total = darray.sum(x, axis=0)  # a (12,) result of a distributed array keeps its mesh
    assert total.mesh == MESH
    assert_on(total + helper, total.layout, a.sum(axis=0) + 1.0)
