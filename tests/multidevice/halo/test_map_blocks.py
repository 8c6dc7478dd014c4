"""Covers: darray/_src/api/blocks.py

map_blocks: stencils on haloed blocks against numpy's np.roll formulas."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import PartitionSpec as P

import darray

MESHES = {(8,): ("d",), (2, 4): ("x", "y"), (4, 2): ("x", "y"), (1, 8): ("x", "y")}


def laplacian7(b):
    """7-point Laplacian of a block with one ghost on every side (returns the interior)."""
    c = b[1:-1, 1:-1, 1:-1]
    return (b[:-2, 1:-1, 1:-1] + b[2:, 1:-1, 1:-1] + b[1:-1, :-2, 1:-1] + b[1:-1, 2:, 1:-1]
            + b[1:-1, 1:-1, :-2] + b[1:-1, 1:-1, 2:] - 6 * c)


def laplacian7_numpy(a):
    return sum(np.roll(a, s, axis=k) for k in range(3) for s in (1, -1)) - 6 * a


@pytest.mark.x64
@pytest.mark.parametrize("mesh_shape", [(8,), (2, 4), (4, 2), (1, 8)])
@pytest.mark.parametrize("shape", [(16, 16, 8), (13, 7, 5), (9, 10, 3)])
def test_laplacian_periodic(mesh_shape, shape):
    spec = ("d",) if len(mesh_shape) == 1 else ("x", "y")
    host = np.random.default_rng(0).standard_normal(shape)
    x = darray.asarray(host, mesh=mesh_of(mesh_shape, MESHES[mesh_shape]), spec=spec)
    lap = darray.map_blocks(laplacian7, x.halo(1))
    assert isinstance(lap, darray.DistArray)
    assert lap.layout == x.layout and not lap.layout.has_halo
    assert lap.data.sharding.spec == x.data.sharding.spec
    np.testing.assert_allclose(np.asarray(lap), laplacian7_numpy(host), rtol=1e-12, atol=1e-12)


@pytest.mark.x64
def test_wide_stencil_uneven_1d():
    # 4th-order second derivative (width 2) on 13 cells over 8 blocks (2,2,2,2,2,2,1,0)
    host = np.random.default_rng(1).standard_normal(13)
    x = darray.asarray(host, mesh=mesh_of((8,), ("d",)), spec=("d",))

    def d2(b):
        return (-b[:-4] + 16 * b[1:-3] - 30 * b[2:-2] + 16 * b[3:-1] - b[4:]) / 12
    out = darray.map_blocks(d2, x.halo(2))
    ref = (-np.roll(host, 2) + 16 * np.roll(host, 1) - 30 * host + 16 * np.roll(host, -1)
           - np.roll(host, -2)) / 12
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-12, atol=1e-12)
    assert out.layout == x.layout


@pytest.mark.x64
def test_jacobi_step_constant_boundary_jit():
    host = np.random.default_rng(2).standard_normal((12, 10, 6))
    x = darray.asarray(host, mesh=mesh_of((2, 4)), spec=("x", "y"))

    @jax.jit
    def step(u):
        return u + 0.1 * darray.map_blocks(laplacian7, u.halo(1, boundary="constant"))
    out = step(x)
    padded = np.pad(host, 1)
    ref = host + 0.1 * (laplacian7(padded))
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-12, atol=1e-12)
    assert out.data.sharding.spec == P("x", "y")


@pytest.mark.x64
def test_keep_halo_multiple_outputs_and_scalar_args():
    host = np.random.default_rng(3).standard_normal((16, 8))
    x = darray.asarray(host, mesh=mesh_of((2, 4)), spec=("x", "y"))
    y = x.halo(1)

    scaled, interior = darray.map_blocks(lambda b, s: (b * s, b[1:-1, 1:-1] - s), y, 2.0)
    assert scaled.layout == y.layout and interior.layout == x.layout
    np.testing.assert_allclose(np.asarray(scaled), 2 * host)
    np.testing.assert_allclose(np.asarray(interior), host - 2.0)
    np.testing.assert_allclose(np.asarray(scaled.unhalo()), 2 * host)


def test_block_info_uneven():
    x = darray.zeros((13, 5), mesh=mesh_of((4, 2)), spec=("x", "y"))

    def global_index(b, block_info):
        i = block_info.start[0] + jnp.arange(b.shape[0])
        owned = jnp.arange(b.shape[0]) < block_info.extent[0]
        return jnp.where(owned, i, -1)[:, None] + 0 * b
    out = darray.map_blocks(global_index, x, block_info=True)
    np.testing.assert_array_equal(np.asarray(out), np.repeat(np.arange(13)[:, None], 5, 1))
    # the short block: 13 over 4 -> 4,4,4,1; the physical rows after the owned one are padding
    # (-1 where f ignores its input there; f's `0 * b` reads the input's NaN padding)
    data = np.asarray(out.data)
    assert data[12, 0] == 12 and np.isnan(data[13:, 0]).all()
    def masked(b, block_info):
        i = block_info.start[0] + jnp.arange(b.shape[0])
        owned = jnp.arange(b.shape[0]) < block_info.extent[0]
        return jnp.where(owned, i, -1)[:, None] + 0 * jnp.where(block_info.owned_mask(), b, 0)
    out = darray.map_blocks(masked, x, block_info=True)
    assert (np.asarray(out.data)[13:, 0] == -1).all()


@pytest.mark.parametrize("mask", [True, False])
def test_padding_is_nan_in_block_functions(mask):
    """Issue 38: a hand-written deposit that took the padding of an uneven split for particles
    painted 28800 on 30^3 over a (2, 4) mesh, not 27000, without a word. Floating inputs reach
    f with NaN in their padding, so the unmasked deposit gives NaN; the masked one the exact
    mass (numpy: 27000 unit masses) in the grid's layout."""
    mesh = mesh_of((2, 4))
    disp = darray.asarray(np.random.default_rng(5).uniform(-0.9, 0.9, (30, 30, 30)), mesh=mesh,
                          spec=("x", "y"))

    def deposit(grid, d, block_info):                  # NGP along axis 0, one unit mass each
        owned = block_info.owned_mask(ghosts=False)
        if mask:
            d = jnp.where(owned, d, 0.0)
        lo = [h[0] for h in block_info.halo]
        q = [jnp.arange(n).reshape([-1 if a == axis else 1 for a in range(3)]) + lo[axis]
             for axis, n in enumerate(d.shape)]
        cell = jnp.round(q[0] + d).astype(jnp.int32)
        index = (jnp.broadcast_to(cell, d.shape),) + tuple(jnp.broadcast_to(c, d.shape)
                                                           for c in q[1:])
        mass = jnp.where(owned, 1.0, 0.0) if mask else jnp.ones_like(d) + 0 * d
        return grid.at[index].add(mass)
    rho = darray.map_blocks(deposit, darray.zeros_like(disp).halo(2), disp,
                            block_info=True).halo_reduce()
    assert rho.layout == disp.layout
    total = float(darray.sum(rho))
    if mask:
        assert abs(total - 27000) < 1e-9
    else:
        assert np.isnan(total)
    # padding="keep": the padding as it is (finite here), for code that masks it some other way
    def block_sums(d):
        return jnp.full_like(d, jnp.sum(d))
    for padding, finite in (("keep", True), ("nan", False)):
        out = darray.map_blocks(block_sums, disp, padding=padding)
        assert np.isfinite(np.asarray(out)).all() == finite
    with pytest.raises(ValueError, match=r"padding='zero' is not accepted; use \"nan\""):
        darray.map_blocks(lambda b: b, disp, padding="zero")
    # integer blocks keep their padding content (no NaN to put there)
    ints = darray.map_blocks(lambda b: b + 1, darray.asarray(np.zeros((30, 30), np.int32),
                                                               mesh=mesh, spec=("x", "y")))
    np.testing.assert_array_equal(np.asarray(ints), 1)


def test_explicit_out_layout_and_errors():
    x = darray.zeros((16, 8), mesh=mesh_of((8,), ("d",)), spec=("d",))
    out = darray.map_blocks(lambda b: b + 1, x, out_layout=x.layout)
    np.testing.assert_array_equal(np.asarray(out), np.ones((16, 8)))
    with pytest.raises(darray.LayoutError, match=r"along axis 0 a block must have 2 cells"):
        darray.map_blocks(lambda b: b[:1], x)
    with pytest.raises(darray.LayoutError, match=r"blocks of rank 1 but"):
        darray.map_blocks(lambda b: b[:, 0], x)
    with pytest.raises(TypeError, match=r"needs at least one array"):
        darray.map_blocks(lambda b: b, 3.0)
    with pytest.raises(TypeError, match=r"f=3 must be callable"):
        darray.map_blocks(3, x)
    other = darray.zeros((16, 8), mesh=mesh_of((2, 4)), spec=("x",))
    with pytest.raises(darray.LayoutError, match=r"argument 1 lives on mesh"):
        darray.map_blocks(lambda a, b: a, x, other)


@pytest.mark.x64
def test_array_api_on_haloed_array_sees_interior():
    host = np.random.default_rng(4).standard_normal((13, 6))
    x = darray.asarray(host, mesh=mesh_of((8,), ("d",)), spec=("d",))
    y = x.halo(2, boundary="constant", fill_value=1e6)  # ghosts must not leak into results
    np.testing.assert_allclose(np.asarray(y + 1), host + 1)
    np.testing.assert_allclose(np.asarray(darray.sum(y)), host.sum(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(darray.max(y)), host.max())
