"""Covers: darray/_src/engine/reshaping.py, darray/_src/api/manipulation.py

A reshape that merges or cuts split axes moves data block by block (issue 49, item 2): an
all-to-all in two halves where an axis stays whole (else a loop of collective-permutes), then
rounds of one collective-permute each, never an all-gather, within 3 blocks of temporaries per
device (XLA's plan: ``jax.jit(f).lower(x).compile().memory_analysis()``), on uneven shapes too.
Before, XLA's partitioner all-gathered the uneven operand: 12.0 blocks and two all-gathers for
(101, 67, 45) split (x, y) merged into (6767, 45); 9.0 and one on the 8-device mesh.
Values against numpy's reshape in float64; output layout and physical sharding asserted.
"""
import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.api import manipulation
from darray._src.engine import reshaping

RULE = 3.0


@pytest.fixture(autouse=True)
def _blockwise_at_every_size(monkeypatch):
    """The cases are small: the block-wise path is asked for below its size threshold."""
    monkeypatch.setattr(reshaping, "MIN_CELLS", 0)

# (input shape, mesh shape, spec, new shape, expected output split)
CASES = [
    ((101, 67, 45), (2, 4), ("x", "y"), (-1, 45), (("x", "y"), ())),
    ((101, 67, 45), (2, 4), ("x", "y"), (-1,), (("x", "y"),)),
    ((104, 68, 48), (2, 4), ("x", "y"), (-1, 48), (("x", "y"), ())),
    ((37, 203, 19), (8,), (None, "x"), (-1,), (("x",),)),
    ((37, 203, 19), (8,), (None, "x"), (37 * 203, 19), (("x",), ())),
    ((6767, 45), (2, 4), (("x", "y"),), (101, 67, 45), (("x", "y"), (), ())),
    ((13, 7, 3), (2, 4), (None, "y", "x"), (3, 7, 13), ((), ("y",), ("x",))),
    ((7, 13, 3), (4, 2), ("y", "x"), (91, 3), (("y", "x"), ())),
    # every axis split: no axis stays whole for the all-to-all, the collective-permute loop
    ((203, 67), (2, 4), ("x", "y"), (-1,), (("x", "y"),)),
    # a mesh axis the input leaves unused: the data is replicated over it
    ((101, 67), (2, 4), ("y", None), (-1,), (("y",),)),
    ((5, 3), (8,), ("x", None), (15,), (("x",),)),
]
IDS = [f"{s}-{m}-{new}" for s, m, _, new, _ in CASES]


def _host(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _plan(fn, x):
    compiled = jax.jit(fn).lower(x).compile()
    m = compiled.memory_analysis()
    block = max(m.argument_size_in_bytes, m.output_size_in_bytes)
    return m.temp_size_in_bytes / block, compiled.as_text()


@pytest.mark.parametrize("shape,mesh_shape,spec,new,split", CASES, ids=IDS)
def test_reshape_across_split_axes_matches_numpy_with_no_gather(shape, mesh_shape, spec, new,
                                                                split):
    mesh = mesh_of(mesh_shape)
    host = _host(shape)
    x = darray.asarray(host, mesh=mesh, spec=spec)
    assert reshaping.supported(x.layout, x.layout.with_shape(x.shape))
    y = darray.reshape(x, new, copy=True)
    np.testing.assert_array_equal(np.asarray(y).astype(np.float64),
                                  host.astype(np.float64).reshape(new))
    assert y.layout.split == split, y.layout
    assert y.data.shape == y.layout.physical_shape
    assert y.data.sharding.is_equivalent_to(y.sharding, y.data.ndim)
    blocks, hlo = _plan(lambda v: darray.reshape(v, new, copy=True), x)
    assert "all-gather" not in hlo
    if x.layout.is_padded or y.layout.is_padded:  # even ones may take XLA's all-to-all
        assert "collective-permute" in hlo
    if np.prod(shape) >= 10_000:  # tiny arrays: fixed costs dominate a block of bytes
        assert blocks <= RULE, blocks


@pytest.mark.parametrize("dtype", [np.int8, np.bool_, np.complex64])
def test_reshape_blockwise_other_dtypes(dtype):
    mesh = mesh_of((2, 4))
    host = (np.arange(101 * 67 * 5).reshape(101, 67, 5) % 7).astype(dtype)
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    y = darray.reshape(x, (-1, 5))
    np.testing.assert_array_equal(np.asarray(y), host.reshape(-1, 5))
    assert y.layout.split == (("x", "y"), ())
    assert y.data.sharding.is_equivalent_to(y.sharding, y.data.ndim)


def test_reshape_blockwise_under_jit_and_grad():
    mesh = mesh_of((2, 4))
    host = _host((21, 13, 5)).astype(np.float64) if jax.config.jax_enable_x64 else _host(
        (21, 13, 5))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    weights = np.arange(21 * 13 * 5, dtype=host.dtype)

    def loss(v):
        flat = darray.reshape(v, (-1,))
        return darray.sum(flat * darray.asarray(weights, mesh=mesh, spec=(("x", "y"),)))

    g = darray.grad(loss)(x)
    np.testing.assert_allclose(np.asarray(g), weights.reshape(21, 13, 5), rtol=1e-6)
    assert g.layout.split == x.layout.split
    y = jax.jit(lambda v: darray.reshape(v, (273, 5)))(x)
    np.testing.assert_array_equal(np.asarray(y), host.reshape(273, 5))
    assert y.layout.split == (("x", "y"), ())


def test_view_writes_back_through_the_blockwise_reshape():
    mesh = mesh_of((8,))
    host = _host((37, 20, 3))
    x = darray.asarray(host, mesh=mesh, spec=(None, "x"))
    y = darray.reshape(x, (-1,))
    y[5:9] = 1.0
    ref = host.reshape(-1).copy()
    ref[5:9] = 1.0
    np.testing.assert_array_equal(np.asarray(x), ref.reshape(37, 20, 3))
    # the write-back is a reshape too (the view's shape to x's): x's split may move, its
    # physical data must still match its layout
    assert x.layout.used_mesh_axes == ("x",)
    assert x.data.sharding.is_equivalent_to(x.sharding, x.data.ndim)


def test_plan_rounds_are_permutations():
    mesh = mesh_of((2, 4))
    x = darray.asarray(_host((101, 67, 45)), mesh=mesh, spec=("x", "y"))
    out = darray.reshape(x, (-1, 45)).layout
    ex = reshaping.plan(x.layout, out)
    rows_in, rows_out = reshaping.rows_of(x.layout), reshaping.rows_of(out)
    # a window is at most an eighth of a device's rows: what is in flight stays small
    assert ex.window <= -(-max(rows_in.sub * rows_in.row_cells,
                               rows_out.sub * rows_out.row_cells) // 8)
    for perm in ex.perms:
        senders = [s for s, _ in perm]
        receivers = [d for _, d in perm]
        assert len(set(senders)) == len(senders) and len(set(receivers)) == len(receivers)
    # every logical output cell is copied (a device's own piece) or received exactly once
    got = [cells for _, _, cells in ex.own]
    for j in range(len(ex.perm_of)):
        for d in range(mesh.size):
            got[d] += ex.keep_hi[j][d] - ex.keep_lo[j][d]
    assert got == [c * rows_out.row_cells for c in rows_out.counts]


@pytest.mark.parametrize("shape,mesh_shape,spec", [
    ((101, 67, 45), (2, 4), ("x", "y")), ((104, 68, 48), (2, 4), ("x", "y")),
    ((37, 203, 19), (8,), (None, "x")), ((7, 13, 3), (2, 4), ("y", None, "x"))])
def test_roll_of_the_flattened_array_is_blockwise(shape, mesh_shape, spec):
    # roll(axis=None): flattened block by block, rolled along the split axis, put back in
    # x's layout; XLA's partitioner planned 12.0 blocks (2x4 uneven) and 8.0 (8 uneven)
    mesh = mesh_of(mesh_shape)
    host = _host(shape)
    x = darray.asarray(host, mesh=mesh, spec=spec)
    for shift in (0, 1, -12345, 999):
        y = darray.roll(x, shift)
        np.testing.assert_array_equal(np.asarray(y).astype(np.float64),
                                      np.roll(host.astype(np.float64), shift))
        assert y.layout == x.layout
        assert y.data.sharding.is_equivalent_to(y.sharding, y.data.ndim)
    blocks, hlo = _plan(lambda v: darray.roll(v, 7), x)
    assert "all-gather" not in hlo
    if np.prod(shape) >= 10_000:
        assert blocks <= RULE, blocks


def test_even_reshapes_keep_xla_path_only_where_it_does_not_gather():
    # merging leading split axes of even shapes: XLA's all-to-all (or nothing), 10-30x faster
    # than the rounds; an even reshape XLA gathers (10 blocks, 6 all-gathers) goes block-wise
    mesh = mesh_of((2, 4))
    x = darray.asarray(_host((104, 68, 48)), mesh=mesh, spec=("x", "y"))
    out = darray.reshape(x, (-1, 48)).layout
    assert reshaping.xla_is_blockwise(x.layout, out)
    host = _host((8, 16, 4))
    z = darray.asarray(host, mesh=mesh, spec=(None, "y", "x"))
    w = darray.reshape(z, (4, 16, 8), copy=True)
    assert not reshaping.xla_is_blockwise(z.layout, w.layout)
    np.testing.assert_array_equal(np.asarray(w), host.reshape(4, 16, 8))
    assert w.data.sharding.is_equivalent_to(w.sharding, w.data.ndim)
    _, hlo = _plan(lambda v: darray.reshape(v, (4, 16, 8), copy=True), z)
    assert "all-gather" not in hlo and "collective-permute" in hlo


def test_small_reshapes_keep_xla_path_below_the_threshold(monkeypatch):
    """Below reshaping.MIN_CELLS XLA's gather is the faster path (bench_speed_guard.py) and
    holds little memory in bytes: it is kept; the answer is the same."""
    monkeypatch.setattr(reshaping, "MIN_CELLS", 1 << 16)
    host = _host((13, 17, 19))
    x = darray.asarray(host, mesh=mesh_of((2, 4)), spec=("x", "y"))
    out, _ = manipulation._reshape_layout(x.layout, (13 * 17 * 19,))
    assert not reshaping.takes_blockwise(x.layout, out)
    y = darray.reshape(x, (-1,))
    np.testing.assert_array_equal(np.asarray(y), host.reshape(-1))
    assert y.layout.split == (("x", "y"),)
    _, hlo = _plan(lambda v: darray.reshape(v, (-1,)), x)
    assert "collective-permute" not in hlo  # XLA's program, not the rows exchange
