"""Cumulative sums and products along any axis, split or not, block by block.

Left to XLA's partitioner, a scan along a split axis concatenates the per-block totals and
scans them on every device (an all-gather of the totals, and with include_initial an
all-gather of the whole axis: 17 blocks per device measured on 8 CPU devices). Here every move
is explicit, in one shard_map over the array's mesh:

1. each device scans its own block along the axis (padding needs no masking: it sits after
   every logical cell of the axis, so it only reaches padding cells and the totals of blocks
   whose successors are padding too);
2. the block totals (one value per row, a slab of 1 cell along the axis) are scanned across the
   blocks of the axis: shifted one block on (the exclusive scan), then ceil(log2 p) doubling
   steps (Hillis-Steele), each one lax.ppermute of the slab; no all-gather;
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


def _exclusive_totals(totals, names, parts: int, op: str, mesh):
    """Inside shard_map: the combined totals of the blocks before mine (the identity on block
    0), from my block's `totals`, in 1 + ceil(log2 parts) collective-permutes of the slab."""
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
    out = jnp.zeros_like(block, dtype)  # (varies over the mesh as the block does)
    return jax.lax.fori_loop(0, pieces, piece, out) if pieces > 1 else piece(0, out)


_CHUNKS = 8


def _block_totals(block, axis: int, dtype, op: str):
    """Every row's total over my block along `axis` (a slab of one cell along it)."""
    if op == "sum":
        return jnp.sum(block, axis=axis, dtype=dtype, keepdims=True)
    return jnp.prod(block, axis=axis, dtype=dtype, keepdims=True)


def _scan_block(block, layout: Layout, axis: int, dtype, op: str):
    """Inside shard_map: my block of the inclusive scan along `axis`. The running total of the
    blocks before mine comes first (from the blocks' totals), so that the local scan starts
    from it and no second pass over the block is needed."""
    parts = layout.parts(axis)
    if parts == 1:
        carry = _identity_slab(block, axis, dtype, op)
    else:
        totals = _block_totals(block, axis, dtype, op)
        carry = _exclusive_totals(totals, layout.split[axis], parts, op, layout.mesh)
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
