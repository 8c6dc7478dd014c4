"""Sorting and searching along a split axis without gathering it.

XLA's partitioner sorts a split axis by gathering it on every device of the group that shares
it (4 to 24 blocks of temporaries per device measured, issue 49). Here the axis stays split.

**Sort: a merge-split odd-even transposition network** over the P blocks of the axis.

* Each device sorts its block locally by the key (value, global index). The global index
  breaks ties, so the network is stable as numpy's sort is, and it is unique, so every compare
  below is strict. Padding cells (at the end of the axis) get the largest value of the order
  and indices >= n: they sort behind every logical cell and end in the padding again.
* P phases follow. In phase s the blocks at positions (p, p + 1), p = s mod 2, are partners:
  they swap blocks with one ``ppermute``, and the lower keeps the smaller half of the union,
  the upper the larger. Both blocks being sorted, the smaller half of the union is
  ``min(a[i], b[c-1-i])`` elementwise (Batcher's bitonic split), a bitonic sequence the device
  sorts again. Each phase moves one block per device; P phases sort P blocks (Knuth 5.3.4).
* Descending: the ascending network, with padding the smallest, run on the reversed block
  order, then every block flipped. NaNs come first. jax.numpy's own descending results differ
  in ties, and so do the keys here: argsort ties keep their original order (key n-1-index),
  sort's come in reverse order (jax reverses its ascending sort: key index), which shows
  on -0.0 / +0.0 and on NaNs.

The comparisons are jax.numpy's sort order: -0.0 equals +0.0, every NaN equals every other and
follows +inf; complex numbers compare by real then imaginary part.

Per device the loop holds its block of values and of indices (int32 where the axis fits), the
partner's block as it arrives, and the sort's scratch: no device ever holds more than two
blocks of the axis.

**searchsorted against a split sorted x1**: for a sorted x1, the insertion index of v is the
count of x1's elements before v (``< v`` left, ``<= v`` right), a sum over x1's blocks. Each
device counts against its own x1 block (padding filled with the largest value, the count
clipped to the block's logical length), then either ``psum`` over x1's mesh axes (when x2's
block is the same on all of them) or x1's blocks pass around a ring of ``ppermute`` so each
device counts its x2 block against every x1 block. x1 is never gathered.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.layout.layout import Layout
from darray._src.placement import physical

# Below this many elements per block the network's P rounds of messages cost more than XLA's
# gather-and-sort (benchmarks/bench_sort.py); memory only matters for large blocks.
MIN_BLOCK_ELEMENTS = 4096


def _extreme(dtype, largest: bool):
    """The value sorting after (largest) or before every value of `dtype` in jax's order."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.bool_(largest)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if largest else info.min
    v = np.nan if largest else -np.inf
    return complex(v, v) if dtype.kind == "c" else v


def _float_lt_eq(a, b):
    """jax's sort order on floats: NaNs equal and last, -0.0 == +0.0."""
    a_nan, b_nan = jnp.isnan(a), jnp.isnan(b)
    return (a < b) | (~a_nan & b_nan), (a == b) | (a_nan & b_nan)


def _value_lt_eq(a, b):
    if jnp.issubdtype(a.dtype, jnp.complexfloating):
        re_lt, re_eq = _float_lt_eq(jnp.real(a), jnp.real(b))
        im_lt, im_eq = _float_lt_eq(jnp.imag(a), jnp.imag(b))
        return re_lt | (re_eq & im_lt), re_eq & im_eq
    if jnp.issubdtype(a.dtype, jnp.floating):
        return _float_lt_eq(a, b)
    if a.dtype == np.bool_:
        return ~a & b, a == b
    return a < b, a == b


def _key_lt(xa, ka, xb, kb):
    """(xa, ka) < (xb, kb) in lax.sort's order with num_keys=2."""
    lt, eq = _value_lt_eq(xa, xb)
    return lt | (eq & (ka < kb))


def sortable(layout: Layout, axis: int) -> bool:
    """Whether the network applies: a split axis, blocks big enough to pay for P rounds."""
    if not layout.split[axis] or 0 in layout.shape:
        return False
    return int(np.prod(layout.block_shape)) >= MIN_BLOCK_ELEMENTS


def _phase_pairs(parts: int, parity: int, descending: bool):
    """ppermute pairs (block numbers) of one phase: positions (p, p+1), p = parity mod 2."""
    def block(pos):
        return parts - 1 - pos if descending else pos
    pairs = []
    for p in range(parity, parts - 1, 2):
        pairs += [(block(p), block(p + 1)), (block(p + 1), block(p))]
    return tuple(pairs)


def _network(x, k, layout: Layout, axis: int, pos, descending: bool):
    """The odd-even transposition phases (module doc) on my sorted block (x, k)."""
    parts, split = layout.parts(axis), layout.split[axis]

    def local_sort(x, k):
        return jax.lax.sort((x, k), dimension=axis, num_keys=2, is_stable=False)

    def phase(parity, x, k):
        pairs = _phase_pairs(parts, parity, descending)
        if not pairs:
            return x, k
        rx, rk = compat.ppermute_blocks((x, k), split, pairs, layout.mesh)
        rx, rk = jnp.flip(rx, axis), jnp.flip(rk, axis)
        lower = (pos % 2 == parity) & (pos + 1 < parts)
        upper = (pos % 2 != parity) & (pos >= 1)
        take = jnp.where(lower, _key_lt(rx, rk, x, k),
                         upper & _key_lt(x, k, rx, rk))
        return local_sort(jnp.where(take, rx, x), jnp.where(take, rk, k))

    def two_phases(_, carry):
        return phase(1, *phase(0, *carry))

    x, k = local_sort(x, k)
    return jax.lax.fori_loop(0, (parts + 1) // 2, two_phases, (x, k))


@program_cache(MEDIUM)
def _sort_fn(layout: Layout, axis: int, descending: bool, indices: bool):
    """jit(physical data) -> sorted values (or argsort indices), in layout.without_halo()."""
    out = layout.without_halo()
    n, chunk, parts = layout.shape[axis], layout.chunk(axis), layout.parts(axis)
    split = layout.split[axis]
    names = split[0] if len(split) == 1 else split
    key_dtype = np.int32 if parts * chunk < 2 ** 31 else np.int64

    def body(block):
        x = physical.strip_ghosts(block, layout)
        me = jax.lax.axis_index(names)  # block number in the split's order
        index = (jax.lax.broadcasted_iota(key_dtype, x.shape, axis)
                 + me.astype(key_dtype) * chunk)
        valid = index < n
        x = jnp.where(valid, x, jnp.asarray(_extreme(x.dtype, not descending), x.dtype))
        if descending and indices:
            k = (n - 1) - index  # argsort: ties keep their order once the result is reversed
        elif descending:
            # sort: jax reverses its ascending sort, so ties come out in reverse order; the
            # padding's keys go negative to sort first (and so end last)
            k = jnp.where(valid, index, index - parts * chunk)
        else:
            k = index
        pos = parts - 1 - me if descending else me
        x, k = _network(x, k, layout, axis, pos, descending)
        if descending:
            x, k = jnp.flip(x, axis), jnp.flip(k, axis)
        if not indices:
            return x
        k = (n - 1) - k if descending else k
        return k.astype(_dt.default_int())

    fn = compat.shard_map(body, mesh=layout.mesh, in_specs=(layout.spec,),
                          out_specs=out.spec, check_vma=False)

    def run(data):
        return physical.constrain(fn(physical.constrain(data, layout)), out)
    return jax.jit(run), out


def sort_split_axis(data, layout: Layout, axis: int, descending: bool, indices: bool):
    """Physical data sorted (or its argsort) along the split `axis`, and its layout."""
    fn, out = _sort_fn(layout, axis, bool(descending), bool(indices))
    return fn(data), out


# -- searchsorted ------------------------------------------------------------------------------
@program_cache(MEDIUM)
def _searchsorted_fn(x1_lay: Layout, x2_lay: Layout, side: str):
    out = x2_lay.without_halo()
    n, chunk, parts = x1_lay.shape[0], x1_lay.chunk(0), x1_lay.parts(0)
    split = x1_lay.split[0]
    names = split[0] if len(split) == 1 else split
    # x2's block is the same on every device of x1's group when x2 uses none of its mesh axes
    shared = not set(split) & set(x2_lay.used_mesh_axes)
    index_dtype = _dt.default_int()

    def body(b1, b2):
        b1 = physical.strip_ghosts(b1, x1_lay)
        b2 = physical.strip_ghosts(b2, x2_lay)
        me = jax.lax.axis_index(names)
        cell = jax.lax.iota(np.int32, chunk) + me.astype(np.int32) * chunk
        # padding holds the largest value, so the block stays sorted for the binary search
        b1 = jnp.where(cell < n, b1, jnp.asarray(_extreme(b1.dtype, True), b1.dtype))

        def count(block, at):
            logical = jnp.clip(n - at * chunk, 0, chunk).astype(index_dtype)
            return jnp.minimum(jnp.searchsorted(block, b2, side=side).astype(index_dtype),
                               logical)

        if shared:
            return jax.lax.psum(count(b1, me), names)
        ring = tuple((b, (b + 1) % parts) for b in range(parts))

        def step(t, carry):
            block, total = carry
            block = compat.ppermute_blocks(block, split, ring, x1_lay.mesh)
            return block, total + count(block, (me - t) % parts)
        return jax.lax.fori_loop(1, parts, step, (b1, count(b1, me)))[1]

    fn = compat.shard_map(body, mesh=x2_lay.mesh, in_specs=(x1_lay.spec, x2_lay.spec),
                          out_specs=out.spec, check_vma=False)

    def run(d1, d2):
        return physical.constrain(fn(physical.constrain(d1, x1_lay),
                                     physical.constrain(d2, x2_lay)), out)
    return jax.jit(run), out


def searchable(x1_lay: Layout) -> bool:
    """Whether x1 (1-D) is split and non-empty: then searchsorted never gathers it."""
    return bool(x1_lay.split[0]) and x1_lay.shape[0] > 0


def searchsorted_split(d1, x1_lay: Layout, d2, x2_lay: Layout, side: str):
    """Physical insertion indices of x2's elements into the split sorted x1, and their
    layout (x2's, ghosts dropped)."""
    fn, out = _searchsorted_fn(x1_lay, x2_lay, side)
    return fn(d1, d2), out
