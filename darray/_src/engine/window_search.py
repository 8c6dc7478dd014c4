"""Searching a split sorted 1-D array for values split on the same mesh axes, without holding it.

Inside a shard_map over x1's mesh axes (P blocks of c cells, padding at the end of the axis),
each device holds its own block of x1 and a block of values that differs from its neighbours'
(x2 split on x1's mesh axes). The replicated search gathers x1 (P blocks per device, 9 measured,
issue 49); a ring of x1's blocks searches every value in every block (P log c steps, 6.7x the
replicated search). Here x1 is cut into windows of s = P consecutive cells, each inside one
block (block b's windows start at its cells 0, s, 2s, ...):

* **coarse**: the first cell of every window (P * ceil(c / s) cells, about one block) is put
  together on every device with one psum (each device fills its own slot, the others add
  zeros: exact). A binary search of it gives k, the count of windows whose first cell comes
  before the value: the value's count lies in window k - 1 (k = 0: the count is 0).
* **fine**: for t = 1 .. s - 1, the t-th cell of every window is put together the same way,
  and each value compares itself with its window's t-th cell: the count is the window's start
  plus 1 plus the cells before the value.

x1 being sorted, the cells before a value form a prefix of x1, so the windows whose first cell
is before it are a prefix of the windows, and the count stops inside window k - 1. Per device:
a window column (about one block), its psum and two int32 numbers per value; log2(c) + s
search steps against the replicated search's log2(P c), and P psums of a block.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def before(cell, values, side: str, lt_eq, dtype):
    """Whether x1's `cell` comes before each value: ``<`` for side left, ``<=`` right."""
    cell, values = cell.astype(dtype), values.astype(dtype)
    if side == "left":
        return lt_eq(cell, values)[0]
    return ~lt_eq(values, cell)[0]


def count_in_prefix(cells, logical, values, before):
    """Per value, the count of the sorted `cells`' first `logical` entries (an int or a traced
    int32 scalar) before it: a binary search by powers of two, whose only buffer per value is
    the count itself. Unrolled: as a while loop it ran 2.5x slower on 8 CPU devices (2^18
    cells; the carry was copied every step)."""
    count = jnp.zeros(values.shape, np.int32)
    last = jnp.maximum(jnp.asarray(logical, np.int32) - 1, 0)
    for power in reversed(range(int(cells.shape[0]).bit_length())):
        ahead = count + (1 << power)
        cell = jnp.take(cells, jnp.minimum(ahead - 1, last), mode="clip")
        count = jnp.where((ahead <= logical) & before(cell), ahead, count)
    return count


def count_before_split(b1, b2, *, n: int, chunk: int, parts: int, me, names, side: str,
                       count_dtype, lt_eq):
    """Per value of the block `b2`, the count of the split sorted x1's cells before it.

    Args:
      b1: this device's block of x1 (`chunk` cells, ghosts dropped).
      b2: this device's block of values.
      n, chunk, parts: x1's logical length, block length and number of blocks.
      me: this device's block number over x1's mesh axes `names`.
      side: "left" or "right".
      count_dtype: integer dtype of the counts.
      lt_eq: (a, b) -> (a before b, a equal b) in jax's sort order.
    """
    stride = parts
    per_block = -(-chunk // stride)
    windows = parts * per_block
    cells = [min(max(n - b * chunk, 0), chunk) for b in range(parts)]
    valid_windows = sum(-(-c // stride) for c in cells)  # a prefix of the windows
    dtype = jnp.result_type(b1.dtype, b2.dtype)
    wire = np.uint8 if b1.dtype == np.bool_ else b1.dtype  # psum adds no bool
    starts = jnp.arange(per_block, dtype=np.int32) * stride

    def is_before(cell):
        return before(cell, b2, side, lt_eq, dtype)

    def column(t):
        """Cell t of every window, every block's windows in block order, on every device."""
        mine = jnp.take(b1, jnp.minimum(starts + t, chunk - 1), mode="clip").astype(wire)
        slots = jax.lax.dynamic_update_slice(jnp.zeros((parts, per_block), wire),
                                             mine[None], (me, jnp.zeros((), me.dtype)))
        return jax.lax.psum(slots, names).reshape(windows).astype(b1.dtype)

    k = count_in_prefix(column(0), valid_windows, b2, is_before)
    # the value's count lies in window k - 1: its start, plus 1 (that first cell is before
    # the value), plus the window's other cells before it; k = 0: no cell is before it
    window = jnp.maximum(k - 1, 0)
    start = ((window // per_block).astype(count_dtype) * chunk
             + ((window % per_block) * stride).astype(count_dtype))
    count = jnp.where(k > 0, start + 1, jnp.zeros((), count_dtype))

    def probe(t, count):
        # the window is read back from the count, which stays inside it: one buffer per value
        at = jnp.maximum(count - 1, 0)
        block, within = at // chunk, (at % chunk) // stride * stride
        window = (block * per_block + within // stride).astype(np.int32)
        cell = jnp.take(column(t), window, mode="clip")
        inside = (count > 0) & (within + t < chunk) & (block * chunk + within + t < n)
        return count + (inside & is_before(cell)).astype(count_dtype)
    # a loop, not unrolled: unrolled, XLA ran the psums ahead and held every column at once
    # (7.5 blocks measured)
    return jax.lax.fori_loop(1, stride, probe, count) if stride > 1 else count
