"""Covers: darray/_src/api/blocks.py

BlockInfo.owned_mask: block code can ignore the padding of an uneven split (#28.7).

The documented deposit pattern (docs/halo.md): particles stored as displacement arrays split like
the grid, deposited into ``grid.halo(W)``'s blocks by `map_blocks`, then ``halo_reduce``. With 30
cells over 4 blocks (8, 8, 8, 6) the short block's padding cells are not particles.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray

N = 30
GHOST = 2


def cic_numpy(disp):
    """CIC mass of one particle per cell at q + disp (periodic), float64, np.add.at."""
    q = np.indices(disp[0].shape).astype(np.float64)
    pos = [qa + da for qa, da in zip(q, disp)]
    cells = [np.floor(p).astype(int) for p in pos]
    fracs = [p - c for p, c in zip(pos, cells)]
    rho = np.zeros(disp[0].shape)
    for offset in np.ndindex(*(2,) * len(disp)):
        w = np.prod([f if o else 1 - f for f, o in zip(fracs, offset)], axis=0)
        np.add.at(rho, tuple((c + o) % n for c, o, n in zip(cells, offset, rho.shape)), w)
    return rho


def deposit(grid, *disp, block_info, use_mask=True):
    """The docs' block function: CIC of this block's particles into its ghosted grid block."""
    lo = [h[0] for h in block_info.halo]
    owned = block_info.owned_mask(ghosts=False)
    cells, fracs = [], []
    for axis, d in enumerate(disp):
        d = jnp.where(owned, d, 0.0)          # padding content is unspecified (may be NaN)
        q = jnp.arange(d.shape[axis]).reshape([-1 if a == axis else 1 for a in range(d.ndim)])
        pos = q + lo[axis] + d
        cell = jnp.floor(pos)
        cells.append(cell.astype(jnp.int32))
        fracs.append(pos - cell)
    for offset in np.ndindex(*(2,) * len(disp)):
        w = 1.0
        for f, o in zip(fracs, offset):
            w = w * (f if o else 1.0 - f)
        if use_mask:
            w = jnp.where(owned, w, 0.0)
        index = tuple(jnp.broadcast_to(c + o, owned.shape) for c, o in zip(cells, offset))
        grid = grid.at[index].add(jnp.broadcast_to(w, owned.shape))
    return grid


@pytest.mark.x64
@pytest.mark.parametrize("shape", [(N, N, N), (13, 10, 7)])
def test_deposit_pattern_uneven_grid_matches_numpy(shape):
    mesh = mesh_of((2, 4), ("x", "y"))
    rng = np.random.default_rng(0)
    host = [rng.uniform(-1.5, 1.5, shape) for _ in range(3)]
    disp = [darray.asarray(h, mesh=mesh, spec=("x", "y")) for h in host]
    grid = darray.zeros(shape, dtype=darray.float64, mesh=mesh, spec=("x", "y")).halo(GHOST)
    rho = darray.map_blocks(deposit, grid, *disp, block_info=True).halo_reduce()
    assert rho.layout == disp[0].layout
    assert rho.data.sharding.spec == disp[0].data.sharding.spec
    np.testing.assert_allclose(np.asarray(rho), cic_numpy(host), rtol=1e-12, atol=1e-12)
    assert abs(float(darray.sum(rho)) - np.prod(shape)) < 1e-9


def test_unmasked_deposit_counts_padding_as_particles():
    # The failure the mask fixes: 30^3 on (2, 4) has 30*32*30 = 28800 padded cells per grid.
    mesh = mesh_of((2, 4), ("x", "y"))
    disp = [darray.zeros((N, N, N), dtype=darray.float64, mesh=mesh, spec=("x", "y"))
            for _ in range(3)]
    grid = darray.zeros((N, N, N), dtype=darray.float64, mesh=mesh, spec=("x", "y")).halo(GHOST)

    def unmasked(g, *d, block_info):
        return deposit(g, *d, block_info=block_info, use_mask=False)
    wrong = float(darray.sum(darray.map_blocks(unmasked, grid, *disp,
                                               block_info=True).halo_reduce()))
    right = float(darray.sum(darray.map_blocks(deposit, grid, *disp,
                                               block_info=True).halo_reduce()))
    assert right == N ** 3
    assert wrong > N ** 3


def test_owned_mask_shapes_and_values():
    mesh = mesh_of((8,), ("d",))
    x = darray.arange(13.0, mesh=mesh, spec=("d",)).halo([(1, 2)])

    def masks(b, block_info):
        with_ghosts = block_info.owned_mask()
        bare = block_info.owned_mask(ghosts=False)
        assert with_ghosts.shape == b.shape and bare.shape == (2,)
        return jnp.where(with_ghosts, b, -1.0)
    out = darray.map_blocks(masks, x, block_info=True)
    assert out.layout == x.layout
    blocks = np.asarray(out.data).reshape(8, 5)
    # 13 over 8 blocks of 2: extents 2,2,2,2,2,2,1,0; owned cells sit at [1, 1 + extent).
    for b, extent in enumerate([2, 2, 2, 2, 2, 2, 1, 0]):
        expect = np.full(5, -1.0)
        expect[1:1 + extent] = np.arange(2 * b, 2 * b + extent)
        np.testing.assert_array_equal(blocks[b], expect)


# -- issue 53 item 3: padding-born NaN is named where it is born -----------------------------
def _block_totals(mask_by):
    """Each block's masked total written into every cell of the block (a per-device bin)."""
    def f(b, block_info):
        owned = block_info.owned_mask()
        if mask_by == "none":  # a bin that forgot the padding: NaN in the short block
            return jnp.zeros_like(b) + jnp.sum(b * b)
        return jnp.zeros_like(b) + jnp.sum(jnp.where(owned, b * b, 0))
    return f


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_padding_born_nan_prints_why(capfd, jit):
    import jax
    host = np.arange(1.0, 31.0)  # 30 cells over 8 devices: the last block holds 2 padding cells
    x = darray.asarray(host, spec=("d",))
    assert x.layout.physical_shape == (32,)

    def run(fn, a):
        call = lambda a: darray.map_blocks(fn, a, block_info=True)  # noqa: E731
        return jax.jit(call)(a) if jit else call(a)

    bad = run(_block_totals("none"), x)
    np.asarray(bad)
    err = capfd.readouterr().err
    assert "MapBlocksWarning" in err and 'padding="keep"' in err and "jnp.where" in err, err
    assert np.isnan(np.asarray(bad)[-2:]).all()  # the short block's owned cells
    good = run(_block_totals("where"), x)
    want = np.repeat([np.sum(host[i:i + 4] ** 2) for i in range(0, 30, 4)], 4)[:30]
    np.testing.assert_allclose(np.asarray(good), want)
    assert good.layout.split == x.layout.split and good.mesh == x.mesh
    assert "MapBlocksWarning" not in capfd.readouterr().err
    # the user's own NaN is not blamed on the padding
    user = darray.asarray(np.where(np.arange(30) == 3, np.nan, host), spec=("d",))
    np.asarray(run(_block_totals("where"), user))
    assert "MapBlocksWarning" not in capfd.readouterr().err
    # padding="keep": f gets the padding as it is, and nothing is printed
    kept = darray.map_blocks(_block_totals("where"), x, block_info=True, padding="keep")
    np.testing.assert_allclose(np.asarray(kept), want)
    assert "MapBlocksWarning" not in capfd.readouterr().err
