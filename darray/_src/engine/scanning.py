"""Cumulative sums and products along any axis, split or not, block by block.

Left to XLA's partitioner, a scan along a split axis concatenates the per-block totals and
scans them on every device (an all-gather of the totals, and with include_initial an
all-gather of the whole axis: 17 blocks per device measured on 8 CPU devices). Here every move
is explicit, in one shard_map over the array's mesh:

1. each device scans its own block along the axis (padding needs no masking: it sits after
   every logical cell of the axis, so it only reaches padding cells and the totals of blocks
   whose successors are padding too); a short axis is scanned in pieces (`_scan_block`);
2. the block totals (one value per row, a slab of 1 cell along the axis) are scanned across the
   blocks of the axis: one all-reduce of a table of every block's totals (p slabs, where that
   is no more than a block), else 1 + ceil(log2 p) lax.ppermute steps (Hillis-Steele); no
   all-gather;
3. each device combines its local scan with the running total of the blocks before it;
4. with include_initial the axis grows by one cell: the identity and the scan are joined into
   the output's blocks by engine/joining.py's ppermute rounds (a one-cell shift per block).

Temporaries: the local scan (one output block) plus the join's windows; the totals are tiny.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.engine import joining
from darray._src.layout.layout import Layout

_SCANS = {"sum": (jnp.cumsum, 0, jnp.add), "prod": (jnp.cumprod, 1, jnp.multiply)}


def _exclusive_totals(totals, names, parts: int, chunk: int, op: str, mesh):
    """Inside shard_map: the combined totals of the blocks before mine (the identity on block
    0), from my block's `totals` (a slab of one cell along the axis; the block has `chunk`)."""
    if parts <= chunk and parts <= _ONE_REDUCE_PARTS:
        return _exclusive_by_all_reduce(totals, names, parts, op)
    return _exclusive_by_doubling(totals, names, parts, op, mesh)


_ONE_REDUCE_PARTS = 64  # up to this many blocks, one all-reduce of every block's totals


def _exclusive_by_all_reduce(totals, names, parts: int, op: str):
    """One all-reduce (lax.psum) of a table with every block's totals in its row, the other
    rows -0 (x + -0 is x, bit for bit, the sign of a zero included); each device then
    combines the rows before its own. One collective: on CPU each collective costs a
    rendezvous of every device, so this is 2x faster than the doubling steps at 2^20 cells.
    The table is `parts` slabs; used where that is no more than a block."""
    _, identity, _ = _SCANS[op]
    me = jax.lax.axis_index(names)  # block number in the split's order
    rows = jax.lax.broadcasted_iota(np.int32, (parts,) + totals.shape, 0)
    neutral = jnp.asarray(-0.0 if totals.dtype.kind in "fc" else 0, totals.dtype)
    table = jax.lax.psum(jnp.where(rows == me, totals[None], neutral), names)
    earlier = jnp.where(rows < me, table, jnp.asarray(identity, totals.dtype))
    if op == "sum":
        return jnp.sum(earlier, axis=0)
    return jnp.prod(earlier, axis=0)


def _exclusive_by_doubling(totals, names, parts: int, op: str, mesh):
    """The exclusive scan of the blocks' totals in 1 + ceil(log2 parts) collective-permutes
    of the slab (Hillis-Steele): for many blocks, where a table of every block's totals
    would outgrow a block."""
    _, identity, combine = _SCANS[op]
    me = jax.lax.axis_index(names)  # block number in the split's order
    shifted = compat.ppermute_blocks(totals, names, [(b, b + 1) for b in range(parts - 1)],
                                     mesh)
    running = jnp.where(me >= 1, shifted, jnp.asarray(identity, totals.dtype))
    hop = 1
    while hop < parts - 1:  # block b holds the combined totals of blocks [b - 2*hop + 1, b)
        earlier = compat.ppermute_blocks(running, names,
                                         [(b, b + hop) for b in range(parts - hop)], mesh)
        running = jnp.where(me >= hop, combine(earlier, running), running)
        hop *= 2
    return running


def _chunked_scan(block, axis: int, dtype, op: str, carry):
    """The inclusive scan of `block` along `axis`, in dtype, started from `carry` (a slab of
    one cell along the axis), computed `_CHUNKS` pieces at a time.

    XLA's scan of a whole block (an associative scan of odd and even halves) plans 2 to 3.8
    blocks of temporaries (3.8 for an odd extent such as 17 cells along a middle axis); a loop
    over a few pieces plans the scan of one piece at a time, into the output. A piece starts
    from the output's cell just before it, so the last piece may start early (overlapping the
    one before) and every piece has one static length.
    """
    scan, _, combine = _SCANS[op]
    c = block.shape[axis]
    k = -(-c // _CHUNKS)
    pieces = -(-c // k)

    def piece(i, out):
        start = jnp.minimum(i * k, c - k)
        before = jax.lax.dynamic_slice_in_dim(out, jnp.maximum(start - 1, 0), 1, axis=axis)
        before = jnp.where(start > 0, before, carry)
        cells = jax.lax.dynamic_slice_in_dim(block, start, k, axis=axis).astype(dtype)
        return jax.lax.dynamic_update_slice_in_dim(out, combine(scan(cells, axis=axis), before),
                                                   start, axis=axis)
    if pieces == 1:
        return combine(scan(block.astype(dtype), axis=axis), carry)
    out = jnp.zeros_like(block, dtype)  # (varies over the mesh as the block does)
    return jax.lax.fori_loop(0, pieces, piece, out)


_CHUNKS = 8


def _block_totals(block, axis: int, dtype, op: str):
    """Every row's total over my block along `axis` (a slab of one cell along it)."""
    if op == "sum":
        return jnp.sum(block, axis=axis, dtype=dtype, keepdims=True)
    return jnp.prod(block, axis=axis, dtype=dtype, keepdims=True)


_SHORT_AXIS = 64  # cells per block along the axis up to which the scan goes piece by piece


def _scan_block(block, layout: Layout, axis: int, dtype, op: str):
    """Inside shard_map: my block of the inclusive scan along `axis`.

    Along a long axis (more than `_SHORT_AXIS` cells per block) XLA's scan of the whole block
    plans about 2 blocks (measured: 2.0-2.5) and is the fastest: the totals are the scan's
    last cells, combined back afterwards. Along a short axis it plans up to 3.8 (17 cells), so
    the running total of the blocks before mine comes first (from a reduction of the block)
    and the scan runs in pieces from it (`_chunked_scan`).
    """
    parts = layout.parts(axis)
    scan, _, combine = _SCANS[op]
    c = layout.chunk(axis)
    if parts == 1:
        if c > _SHORT_AXIS:
            return scan(block.astype(dtype), axis=axis)
        return _chunked_scan(block, axis, dtype, op, _identity_slab(block, axis, dtype, op))
    names = layout.split[axis]
    if c > _SHORT_AXIS:
        local = scan(block.astype(dtype), axis=axis)
        totals = jax.lax.slice_in_dim(local, c - 1, c, axis=axis)
        return combine(local, _exclusive_totals(totals, names, parts, c, op, layout.mesh))
    totals = _block_totals(block, axis, dtype, op)
    carry = _exclusive_totals(totals, names, parts, c, op, layout.mesh)
    return _chunked_scan(block, axis, dtype, op, carry)


def _identity_slab(like, axis: int, dtype, op: str):
    shape = list(like.shape)
    shape[axis] = 1
    return jnp.full(shape, _SCANS[op][1], dtype)


def _scan_local(layout: Layout, out: Layout, axis: int, dtype, op: str, include_initial: bool):
    def local(block):
        result = _scan_block(block, layout, axis, dtype, op)
        if not include_initial:
            return result
        first = _identity_slab(result, axis, dtype, op)
        if not out.split[axis]:
            return jnp.concatenate([first, result], axis=axis)
        # the identity (one cell, held by block 0) and the scan, joined into out's blocks
        return joining.join_blocks([first, result], (1, layout.shape[axis]), None, out, axis,
                                   dtype)
    return local


@program_cache(MEDIUM)
def cumulative_fn(layout: Layout, out: Layout, axis: int, dtype, op: str,
                  include_initial: bool):
    """jit(physical data in `layout`) -> the physical scan in `out` (x's layout, the axis one
    cell longer with include_initial). `layout` has no ghost cells; op is "sum" or "prod"."""
    local = _scan_local(layout, out, axis, np.dtype(dtype), op, include_initial)

    def run(data):
        fn = compat.shard_map(local, mesh=layout.mesh, in_specs=(layout.spec,),
                              out_specs=out.spec)
        return fn(data)
    return jax.jit(run)
