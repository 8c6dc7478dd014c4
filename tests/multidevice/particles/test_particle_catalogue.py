"""Covers: darray/_src/particles/catalogue.py, darray/_src/particles/catalogue_blocks.py

darray.particles.paint_catalogue / readout_catalogue: an (M, d) catalogue on a grid of any
shape (issue 38), against float64 numpy (np.add.at painting, written here from the schemes'
definitions) and single-device jax.numpy (gradients), on several meshes, uneven M and grids."""
from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray.particles import ParticleError, paint_catalogue, readout_catalogue

SCHEMES = ("ngp", "cic", "tsc")
ALL = ("x", "y")


def mesh24():
    return mesh_of((2, 4), ALL)


def place(host, spec=(ALL,), mesh=None):
    return darray.asarray(host, mesh=mesh or mesh24(), spec=spec)


# -- float64 numpy references ------------------------------------------------------------------
def stencil_numpy(scheme, p):
    """Base cell and weights along one axis; cell c centred on c."""
    if scheme == "ngp":
        return np.floor(p + 0.5).astype(int), [np.ones_like(p)]
    if scheme == "cic":
        base = np.floor(p)
        return base.astype(int), [1 - (p - base), p - base]
    near = np.floor(p + 0.5)
    d = p - near
    return (near - 1).astype(int), [0.5 * (0.5 - d) ** 2, 0.75 - d ** 2, 0.5 * (0.5 + d) ** 2]


def corners_numpy(pos, shape, scheme):
    pos = np.asarray(pos, np.float64)
    parts = [stencil_numpy(scheme, pos[:, a]) for a in range(len(shape))]
    for offsets in itertools.product(range(len(parts[0][1])), repeat=len(shape)):
        index = tuple((b + o) % n for (b, _), o, n in zip(parts, offsets, shape))
        yield index, np.prod([w[o] for (_, w), o in zip(parts, offsets)], axis=0)


def paint_numpy(pos, shape, weights=None, scheme="cic"):
    rho = np.zeros(shape)
    mass = np.ones(len(pos)) if weights is None else np.asarray(weights, np.float64)
    for index, w in corners_numpy(pos, shape, scheme):
        np.add.at(rho, index, w * mass)
    return rho


def readout_numpy(field, pos, scheme="cic"):
    field = np.asarray(field, np.float64)
    d = np.shape(pos)[1]
    out = 0.0
    for index, w in corners_numpy(pos, field.shape[:d], scheme):
        out = out + w.reshape(w.shape + (1,) * (field.ndim - d)) * field[index]
    return out


def assert_layout(out, mesh, spec, shape):
    want = darray.asarray(np.zeros((1,) * len(shape)), mesh=mesh, spec=spec).layout
    assert out.shape == shape
    assert out.layout.split == want.split and out.layout.mesh == want.mesh
    assert not out.layout.has_halo


# -- values against numpy ----------------------------------------------------------------------
@pytest.mark.x64  # float64 data and tolerances
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("shape, m", [((13, 10, 7), 1001), ((16, 9, 12), 5)])
def test_paint_matches_numpy(scheme, shape, m):
    rng = np.random.default_rng(1)
    host = rng.uniform(-30, 30, (m, 3))          # far outside the box: wrapped periodically
    mass = rng.uniform(0.5, 2.0, m)
    rho = paint_catalogue(place(host), shape, weights=place(mass), scheme=scheme)
    assert_layout(rho, mesh24(), ALL, shape)
    np.testing.assert_allclose(np.asarray(rho), paint_numpy(host, shape, mass, scheme),
                               rtol=0, atol=1e-12)
    assert abs(float(darray.sum(rho)) - mass.sum()) < 1e-12 * mass.sum()


@pytest.mark.x64  # float64 data and tolerances
@pytest.mark.parametrize("scheme", ["cic", "tsc", pytest.param("ngp", marks=pytest.mark.slow)])
def test_readout_matches_numpy(scheme):
    shape, m = (13, 10, 7), 777
    rng = np.random.default_rng(2)
    host = rng.uniform(0, 13, (m, 3))
    field = rng.standard_normal(shape + (3,))
    pos = place(host)
    got = readout_catalogue(place(field, ALL), pos, scheme=scheme)
    assert got.shape == (m, 3) and got.layout == pos.layout
    np.testing.assert_allclose(np.asarray(got), readout_numpy(field, host, scheme), rtol=0,
                               atol=1e-12)
    got = readout_catalogue(place(field[..., 1], ALL), pos, scheme=scheme)
    assert got.shape == (m,) and got.layout.split == pos.layout.split[:1]
    np.testing.assert_allclose(np.asarray(got), readout_numpy(field[..., 1], host, scheme),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("mesh_shape, names, pos_spec, grid_spec", [
    ((8,), ("d",), ("d",), ("d",)),
    pytest.param((4, 2), ("x", "y"), (("y", "x"),), ("x", "y"), marks=pytest.mark.slow),
    ((2, 4), ("x", "y"), (ALL,), (None, "y")),       # the grid replicated over x: a psum
    ((2, 4), ("x", "y"), ("x",), ("y", None, "x")),  # pos's rows replicated over y
])
@pytest.mark.x64  # float64 data and tolerances
def test_other_meshes_and_splits(mesh_shape, names, pos_spec, grid_spec):
    mesh = mesh_of(mesh_shape, names)
    shape, m = (11, 17, 6), 650
    rng = np.random.default_rng(3)
    host = rng.uniform(-4, 20, (m, 3))
    mass = rng.uniform(0.5, 2.0, m)
    pos = place(host, pos_spec, mesh)
    rho = paint_catalogue(pos, shape, weights=place(mass, pos_spec, mesh), scheme="tsc",
                          spec=grid_spec)
    assert_layout(rho, mesh, grid_spec, shape)
    np.testing.assert_allclose(np.asarray(rho), paint_numpy(host, shape, mass, "tsc"), rtol=0,
                               atol=1e-12)
    field = rng.standard_normal(shape)
    got = readout_catalogue(place(field, grid_spec, mesh), pos, scheme="cic")
    assert got.layout.split == pos.layout.split[:1] and got.layout.mesh == pos.layout.mesh
    np.testing.assert_allclose(np.asarray(got), readout_numpy(field, host, "cic"), rtol=0,
                               atol=1e-12)


@pytest.mark.x64  # float64 data and tolerances
def test_finer_mesh_box_units_and_2d():
    # 8^3 particles on their Lagrangian grid, displaced, painted on a 2x finer 16^3 mesh, with
    # positions in box units (box 100): pmesh's BoxSize convention
    rng = np.random.default_rng(4)
    q = np.stack(np.meshgrid(*[np.arange(8.0)] * 3, indexing="ij"), -1).reshape(-1, 3)
    host = (q + rng.uniform(-0.7, 0.7, q.shape)) * (100 / 8)
    rho = paint_catalogue(place(host), (16, 16, 16), box=100.0)
    cells = host * 16 / 100
    np.testing.assert_allclose(np.asarray(rho), paint_numpy(cells, (16, 16, 16)), rtol=0,
                               atol=1e-12)
    assert abs(float(darray.sum(rho)) - 512) < 1e-10
    rho = paint_catalogue(place(host), (16, 20, 12), box=(100.0, 50.0, 25.0), scheme="tsc")
    cells = host * np.array([16 / 100, 20 / 50, 12 / 25])
    np.testing.assert_allclose(np.asarray(rho), paint_numpy(cells, (16, 20, 12), None, "tsc"),
                               rtol=0, atol=1e-12)
    host2 = rng.uniform(0, 30, (301, 2))
    field2 = rng.standard_normal((23, 14))
    got = readout_catalogue(place(field2, ALL), place(host2), scheme="tsc")
    np.testing.assert_allclose(np.asarray(got), readout_numpy(field2, host2, "tsc"), rtol=0,
                               atol=1e-12)


def test_float32():
    rng = np.random.default_rng(5)
    host = rng.uniform(0, 32, (4000, 3)).astype(np.float32)
    rho = paint_catalogue(place(host), (32, 32, 32))
    assert rho.dtype == darray.float32
    np.testing.assert_allclose(np.asarray(rho), paint_numpy(host, (32, 32, 32)), atol=2e-5)
    field = rng.standard_normal((32, 32, 32)).astype(np.float32)
    got = readout_catalogue(place(field, ALL), place(host))
    assert got.dtype == darray.float32
    np.testing.assert_allclose(np.asarray(got), readout_numpy(field, host), atol=2e-5)


# -- adjoint and gradients ---------------------------------------------------------------------
@pytest.mark.x64  # float64 data and tolerances
def test_paint_and_readout_are_adjoint():
    shape, m = (13, 10, 7), 500
    rng = np.random.default_rng(6)
    pos = place(rng.uniform(0, 13, (m, 3)))
    w, f = rng.standard_normal(m), rng.standard_normal(shape)
    lhs = float(darray.sum(paint_catalogue(pos, shape, weights=place(w), scheme="tsc")
                           * place(f, ALL)))
    rhs = float(darray.sum(place(w) * readout_catalogue(place(f, ALL), pos, scheme="tsc")))
    assert abs(lhs - rhs) < 1e-11 * (abs(lhs) + 1)


def _jnp_corners(pos, shape, scheme):
    parts = []
    for a in range(len(shape)):
        p = pos[:, a] - shape[a] * jnp.floor(pos[:, a] / shape[a])
        if scheme == "cic":
            base = jnp.floor(p)
            parts.append((base.astype(int), [1 - (p - base), p - base]))
        else:
            near = jnp.floor(p + 0.5)
            d = p - near
            parts.append(((near - 1).astype(int),
                          [0.5 * (0.5 - d) ** 2, 0.75 - d ** 2, 0.5 * (0.5 + d) ** 2]))
    for offsets in itertools.product(range(len(parts[0][1])), repeat=len(shape)):
        index = tuple((b + o) % n for (b, _), o, n in zip(parts, offsets, shape))
        w = parts[0][1][offsets[0]]
        for (_, ws), o in zip(parts[1:], offsets[1:]):
            w = w * ws[o]
        yield index, w


@pytest.mark.x64  # float64 data and tolerances
@pytest.mark.parametrize("scheme", ("cic", pytest.param("tsc", marks=pytest.mark.slow)))
def test_gradients_equal_single_device_jax(scheme):
    shape, m = (13, 10, 7), 601
    rng = np.random.default_rng(7)
    host = rng.uniform(-3, 16, (m, 3))
    w = rng.uniform(0.5, 2, m)
    f, target = rng.standard_normal(shape + (3,)), rng.standard_normal(shape)

    def loss_d(pos, weights, field):
        rho = paint_catalogue(pos, shape, weights=weights, scheme=scheme)
        val = readout_catalogue(field, pos, scheme=scheme)
        return darray.sum((rho - place(target, ALL)) ** 2) + darray.sum(val ** 3)

    def loss_j(pos, weights, field):
        rho = jnp.zeros(shape)
        for index, wt in _jnp_corners(pos, shape, scheme):
            rho = rho.at[index].add(wt * weights)
        val = sum(wt[:, None] * field[index] for index, wt in _jnp_corners(pos, shape, scheme))
        return jnp.sum((rho - target) ** 2) + jnp.sum(val ** 3)

    args = (place(host), place(w), place(f, ALL))
    grads = jax.jit(darray.grad(loss_d, argnums=(0, 1, 2)))(*args)
    ref = jax.grad(loss_j, argnums=(0, 1, 2))(jnp.asarray(host), jnp.asarray(w),
                                              jnp.asarray(f))
    for g, r, a in zip(grads, ref, args):
        assert isinstance(g, darray.DistArray)
        assert g.layout == a.layout and g.data.sharding.spec == a.data.sharding.spec
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-10, atol=1e-10)


# -- communication ----------------------------------------------------------------------------
def test_no_all_gather():
    pos, field = place(np.zeros((1000, 3))), place(np.zeros((32, 32, 32)), ALL)

    def step(p, f):
        return paint_catalogue(p, (32, 32, 32), capacity=64), readout_catalogue(f, p,
                                                                                capacity=64)
    hlo = jax.jit(step).lower(pos, field).compile().as_text()
    assert "all-gather" not in hlo
    assert "all-to-all" in hlo
    grad_hlo = jax.jit(darray.grad(lambda p, f: darray.sum(
        paint_catalogue(p, (32, 32, 32), capacity=64) ** 2)
        + darray.sum(readout_catalogue(f, p, capacity=64)), argnums=(0, 1))).lower(
        pos, field).compile().as_text()
    assert "all-gather" not in grad_hlo and "all-to-all" in grad_hlo


# -- capacity ----------------------------------------------------------------------------------
def _sorted_catalogue():
    # a Lagrangian grid in its natural order: each device's rows are one slab, so every
    # particle heads for the few devices owning that slab -- past the default first guess
    q = np.stack(np.meshgrid(*[np.arange(16.0)] * 3, indexing="ij"), -1).reshape(-1, 3)
    return q + np.random.default_rng(8).uniform(-0.4, 0.4, q.shape)


@pytest.mark.x64  # float64 data and tolerances
def test_capacity_sized_from_the_data_eagerly():
    host = _sorted_catalogue()
    pos = place(host)
    rho, need = paint_catalogue(pos, (32, 32, 32), box=16.0, return_needed=True)
    assert int(need) > 2 * 512 // 8      # the first guess: twice the even share (512 rows)
    np.testing.assert_allclose(np.asarray(rho), paint_numpy(host * 2, (32, 32, 32)), rtol=0,
                               atol=1e-12)
    field = np.random.default_rng(9).standard_normal((32, 32, 32))
    got = readout_catalogue(place(field, ALL), pos, box=16.0)
    np.testing.assert_allclose(np.asarray(got), readout_numpy(field, host * 2), rtol=0,
                               atol=1e-12)
    with pytest.raises(ParticleError, match=rf"capacity=100; pass capacity={int(need)} or more"):
        paint_catalogue(pos, (32, 32, 32), box=16.0, capacity=100)
    with pytest.raises(ParticleError, match=r"capacity=100; pass capacity="):
        readout_catalogue(place(field, ALL), pos, box=16.0, capacity=100)


@pytest.mark.x64  # float64 data and tolerances
def test_overflow_under_jit_is_nan_with_nan_gradients_and_the_retry(capfd):
    host = _sorted_catalogue()
    pos, w = place(host), place(np.ones(len(host)))
    field = place(np.random.default_rng(10).standard_normal((32, 32, 32)), ALL)

    def loss(p, w, f, capacity):
        rho, need = paint_catalogue(p, (32, 32, 32), weights=w, box=16.0, capacity=capacity,
                                    return_needed=True)
        val = readout_catalogue(f, p, box=16.0, capacity=capacity)
        return darray.sum(rho ** 2) + darray.sum(val ** 2), need

    step = jax.jit(darray.value_and_grad(loss, argnums=(0, 1, 2), has_aux=True),
                   static_argnames="capacity")
    capfd.readouterr()
    (value, need), grads = step(pos, w, field, capacity=64)
    jax.effects_barrier()
    assert int(need) > 64 and np.isnan(float(value))
    for g, a in zip(grads, (pos, w, field)):
        assert g.layout == a.layout
        assert np.isnan(np.asarray(g)).all()        # never a silent zero or finite garbage
    err = capfd.readouterr().err
    assert "ParticleError: darray.particles.paint_catalogue:" in err
    assert "ParticleError: darray.particles.readout_catalogue:" in err
    # the documented retry: rerun with the count the program returned
    (value, need2), grads = step(pos, w, field, capacity=int(need))
    assert int(need2) == int(need) and np.isfinite(float(value))
    assert all(np.isfinite(np.asarray(g)).all() for g in grads)
    rho = paint_numpy(host * 2, (32, 32, 32))
    expect = (rho ** 2).sum() + (readout_numpy(np.asarray(field), host * 2) ** 2).sum()
    assert abs(float(value) - expect) < 1e-9 * expect


# -- bad input ---------------------------------------------------------------------------------
def test_bad_input_names_the_argument():
    pos = place(np.zeros((10, 3)))
    field = place(np.zeros((8, 8, 8)), ALL)
    with pytest.raises(TypeError, match="pos must be a DistArray of shape"):
        paint_catalogue(np.zeros((10, 3)), (8, 8, 8))
    with pytest.raises(ValueError, match=r"pos has shape \(10,\)"):
        paint_catalogue(place(np.zeros(10)), (8, 8, 8))
    with pytest.raises(TypeError, match="pos has dtype int32"):
        paint_catalogue(place(np.zeros((10, 3), np.int32)), (8, 8, 8))
    with pytest.raises(darray.LayoutError, match="pos's coordinate axis"):
        paint_catalogue(place(np.zeros((10, 4)), ("x", "y")), (8, 8, 8, 8))
    with pytest.raises(ValueError, match=r"shape=\(8, 8\) must be 3 positive ints"):
        paint_catalogue(pos, (8, 8))
    with pytest.raises(ValueError, match=r"capacity=-1 must be None .* or a positive int"):
        paint_catalogue(pos, (8, 8, 8), capacity=-1)
    with pytest.raises(ValueError, match=r"capacity=0 must be"):
        readout_catalogue(field, pos, capacity=0)
    with pytest.raises(ValueError, match=r"box=-1.0 must be None"):
        paint_catalogue(pos, (8, 8, 8), box=-1.0)
    with pytest.raises(ValueError, match="scheme='pcs' is not a known"):
        paint_catalogue(pos, (8, 8, 8), scheme="pcs")
    with pytest.raises(ValueError, match=r"weights has shape \(9,\)"):
        paint_catalogue(pos, (8, 8, 8), weights=place(np.ones(9)))
    with pytest.raises(TypeError, match="weights has dtype int32"):
        paint_catalogue(pos, (8, 8, 8), weights=place(np.ones(10, np.int32)))
    with pytest.raises(darray.LayoutError, match="weights is laid out as"):
        paint_catalogue(pos, (8, 8, 8), weights=place(np.ones(10), ("x",)))
    with pytest.raises(ValueError, match=r"field has shape \(8, 8\)"):
        readout_catalogue(place(np.zeros((8, 8)), ALL), pos)
    with pytest.raises(TypeError, match="field has dtype int32"):
        readout_catalogue(place(np.zeros((8, 8, 8), np.int32), ALL), pos)
    with pytest.raises(darray.LayoutError, match="field is on mesh"):
        readout_catalogue(place(np.zeros((8, 8, 8)), ("d",),
                                mesh_of((8,), ("d",))), pos)


def test_non_finite_position_names_the_row():
    host = np.random.default_rng(11).uniform(0, 8, (50, 3))
    host[37, 1] = np.nan
    with pytest.raises(ParticleError, match="non-finite coordinate in row 37"):
        paint_catalogue(place(host), (8, 8, 8))
    with pytest.raises(ParticleError, match="non-finite coordinate in row 37"):
        readout_catalogue(place(np.ones((8, 8, 8)), ALL), place(host))


def test_empty_catalogue():
    pos = place(np.zeros((0, 3)))
    rho = paint_catalogue(pos, (8, 6, 5), scheme="tsc")
    assert_layout(rho, mesh24(), ALL, (8, 6, 5))
    np.testing.assert_array_equal(np.asarray(rho), np.zeros((8, 6, 5)))
    got = readout_catalogue(place(np.ones((8, 6, 5, 2)), ALL), pos)
    assert got.shape == (0, 2) and got.layout == pos.layout.with_shape((0, 2))
