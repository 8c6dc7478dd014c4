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
blocks of the axis. argsort's values and indices cross in two ppermutes, the indices once
the values are merged (`_merge_keyed`), so only one received block is held at a time.

**searchsorted against a split sorted x1**: for a sorted x1, the insertion index of v is the
count of x1's elements before v (``< v`` left, ``<= v`` right). When x2's block is the same on
every device of x1's group, each device counts against its own x1 block (jnp.searchsorted
once) and the counts add up with one ``psum``. When x2 is split on x1's mesh axes too, the
window search (engine/window_search.py) puts together on every device one cell in P of x1 at
a time (one psum per column, about a block each) and reads each value's count off them. x1
is never gathered.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.engine import window_search
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


def _at(x, i, axis):
    """x[..., i, ...] along `axis` per lane (i has x's shape with `axis` of length 1)."""
    return jnp.take_along_axis(x, i, axis=axis, mode="promise_in_bounds")


def _prefix_length(holds, x, axis: int, chunk: int, looped: bool = False):
    """Per lane, the length of the prefix of [0, chunk) on which the monotone predicate
    `holds(i)` is true: a binary search of log2(chunk) steps, where a count would read (and
    XLA materialize) a whole block of flags."""
    shape = list(x.shape)
    shape[axis] = 1
    lo = jnp.zeros(shape, np.int32)
    hi = jnp.full(shape, chunk, np.int32)

    def step(_, bounds):
        lo, hi = bounds
        mid = jnp.minimum((lo + hi) // 2, chunk - 1)
        yes = holds(mid) & (lo < hi)
        no = ~holds(mid) & (lo < hi)
        return jnp.where(yes, mid + 1, lo), jnp.where(no, mid, hi)
    steps = max(1, int(chunk).bit_length())
    if looped:  # a loop's result is a buffer, never fused again into (recomputed in) a user
        return jax.lax.fori_loop(0, steps, step, (lo, hi))[0]
    for i in range(steps):
        lo, hi = step(i, (lo, hi))
    return lo


def _merge_split_counts(x, received, axis: int, chunk: int, looped: bool = False):
    """(t, u) per lane for my block x and the partner's `received`, both sorted: a lower
    block a keeps a[:t] and b[:c-t] of the pair, t = #{i: not b[c-1-i] < a[i]}; an upper b
    keeps a[c-u:] and b[u:], u = #{j: b[j] < a[c-1-j]}. Ties go to the lower block, so
    equal elements never pass each other (the network is stable)."""
    t = _prefix_length(lambda i: ~_value_lt_eq(_at(received, chunk - 1 - i, axis),
                                                _at(x, i, axis))[0], x, axis, chunk,
                       looped)
    u = _prefix_length(lambda j: _value_lt_eq(_at(x, j, axis),
                                              _at(received, chunk - 1 - j, axis))[0],
                       x, axis, chunk, looped)
    return t, u


def _kept_count(x, received, axis: int, chunk: int, lower):
    """`_merge_split_counts`'s t where `lower`, else its u, from one search (one loop where
    two would cost twice the compile time of every unrolled phase): u's predicate at j is
    the negation of t's at c-1-j, both comparing x[i] with received[c-1-i]."""
    def holds(i):
        mine, theirs = _at(x, i, axis), _at(received, chunk - 1 - i, axis)
        return jnp.where(lower, ~_value_lt_eq(theirs, mine)[0],
                         _value_lt_eq(mine, theirs)[0])
    return _prefix_length(holds, x, axis, chunk, looped=True)


def _merge_values(x, layout: Layout, axis: int, pos):
    """The odd-even transposition phases on my sorted block of values alone (no index key).

    A stable merge-split (`_merge_split_counts`): each device then sorts its two runs
    (theirs first where they came from the lower block) with a stable sort, so equal
    elements never pass each other: the network is stable without carrying indices."""
    parts, split, chunk = layout.parts(axis), layout.split[axis], layout.chunk(axis)

    def phase(parity, x):
        pairs = _phase_pairs(parts, parity, False)
        if not pairs:
            return x
        received = compat.ppermute_blocks(x, split, pairs, layout.mesh)
        lower = (pos % 2 == parity) & (pos + 1 < parts)
        upper = (pos % 2 != parity) & (pos >= 1)
        t, u = _merge_split_counts(x, received, axis, chunk)
        cell = jax.lax.broadcasted_iota(np.int32, x.shape, axis)  # built here: not held
        # mine where I keep my own run; else the partner's run, rotated into place
        own = jnp.where(lower, cell < t, jnp.where(upper, cell >= u, True))
        shift = jnp.where(lower, chunk - t, chunk - u)
        theirs = jnp.take_along_axis(received, (cell + shift) % chunk, axis=axis,
                                     mode="promise_in_bounds")
        return jax.lax.sort(jnp.where(own, x, theirs), dimension=axis, is_stable=True)

    def two_phases(_, x):
        return phase(1, phase(0, x))

    x = jax.lax.sort(x, dimension=axis, is_stable=True)
    return jax.lax.fori_loop(0, (parts + 1) // 2, two_phases, x)


def _after(k, x, axis: int):
    """`k` unchanged, but computed from x's first cell: XLA cannot start what uses it before
    x exists (CPU drops optimization barriers, and its scheduler would send the keys while
    both blocks of values are still held). A shift right by 31 then by 1 is 0, which XLA's
    simplifier does not know. The 0 is divided by k | 1 (never 0): a division is costly to
    XLA, so it is not recomputed inside each user of the result (which would keep k alive
    beside it); k + 0 is one buffer, written over k."""
    probe = jax.lax.slice_in_dim(x, 0, 1, axis=axis)
    if jnp.issubdtype(probe.dtype, jnp.complexfloating):
        probe = jnp.real(probe)
    bits = probe.astype(np.int32)  # any value: the shifts make it 0
    zero = jax.lax.shift_right_logical(jax.lax.shift_right_logical(bits, np.int32(31)),
                                       np.int32(1))
    return k + zero.astype(k.dtype) // (k | 1)


# Up to this many blocks the phases of `_merge_keyed` are unrolled: in a loop the carried
# blocks are the loop's buffers, which XLA never overwrites with a fused result, and argsort
# held 3.3 blocks of temporaries with x64 off (2.3 unrolled, 8 blocks; issue 49).
UNROLLED_MAX_PARTS = 32


def _merge_keyed(x, k, layout: Layout, axis: int, pos, descending: bool):
    """The odd-even transposition phases on my block of (value, unique key k) pairs.

    The split point comes from the values alone (`_merge_split_counts`): the key only
    orders ties, and in a stable network equal values in lower blocks have the smaller keys.
    So the values cross first, are merged, and only then the keys cross (a second
    ppermute): a device holds its pair and one received block, never two. What a device
    keeps is Batcher's split (one run reversed: a bitonic sequence the (value, key) sort
    orders again), with no gather to rotate it. Each merged block is written over the
    received one, and the keys' over their own (`_after`), so a phase holds three blocks,
    the output's buffer one of them."""
    parts, split, chunk = layout.parts(axis), layout.split[axis], layout.chunk(axis)

    def local_sort(x, k):
        return tuple(jax.lax.sort((x, k), dimension=axis, num_keys=2, is_stable=False))

    def phase(parity, x, k):
        pairs = _phase_pairs(parts, parity, descending)
        if not pairs:
            return x, k
        received = compat.ppermute_blocks(x, split, pairs, layout.mesh)
        lower = (pos % 2 == parity) & (pos + 1 < parts)
        upper = (pos % 2 != parity) & (pos >= 1)
        # from a loop, so a buffer: else XLA fuses the search's last step into the
        # selects, and both blocks of values stay alive until the keys are merged
        kept = _kept_count(x, received, axis, chunk, lower)  # t if lower, else u

        def keep(mine, theirs):
            # lower: theirs b[:c-t] at cells [0, c-t), mine a[:t] reversed after them; upper:
            # mine b[u:] reversed at [0, c-u), theirs a[c-u:] after. Written over the
            # received block (the select reads it cell by cell), so nothing else is held.
            cell = jax.lax.broadcasted_iota(np.int32, mine.shape, axis)
            from_partner = jnp.where(lower, cell < chunk - kept,
                                     upper & (cell >= chunk - kept))
            return jnp.where(from_partner, theirs, jnp.flip(mine, axis))

        x = keep(x, received)
        # the keys leave only once the values are merged: one received block at a time
        k = _after(k, x, axis)
        return local_sort(x, keep(k, compat.ppermute_blocks(k, split, pairs, layout.mesh)))

    carry = local_sort(x, k)
    if parts <= UNROLLED_MAX_PARTS:
        for s in range(parts):  # P phases sort P blocks
            carry = phase(s % 2, *carry)
        return carry

    def two_phases(_, carry):
        return phase(1, *phase(0, *carry))

    return jax.lax.fori_loop(0, (parts + 1) // 2, two_phases, carry)


def _mirror(x, layout: Layout, axis: int):
    """Output block `me` of the ascending sort reversed (jax's descending sort): cell j of the
    result is rank n-1-j of the ascending one, from the blocks S-me and S-me-1 (S the block
    holding rank n-1, me mine): two ppermutes of complementary pieces, each flipped."""
    n, chunk, split = layout.shape[axis], layout.chunk(axis), layout.split[axis]
    last, d = divmod(n - 1, chunk)
    head = jax.lax.slice_in_dim(x, 0, d + 1, axis=axis)  # -> the tail of block last - me
    pairs = tuple((s, last - s) for s in range(last + 1))
    pieces = [compat.ppermute_blocks(head, split, pairs, layout.mesh)]
    if d + 1 < chunk:
        rest = jax.lax.slice_in_dim(x, d + 1, chunk, axis=axis)
        pairs = tuple((s, last - 1 - s) for s in range(last))
        pieces.insert(0, compat.ppermute_blocks(rest, split, pairs, layout.mesh))
    return jnp.flip(jnp.concatenate(pieces, axis=axis) if len(pieces) > 1 else pieces[0],
                    axis)


@program_cache(MEDIUM)
def _sort_fn(layout: Layout, axis: int, descending: bool, indices: bool):
    """jit(physical data) -> sorted values (or argsort indices), in layout.without_halo()."""
    out = layout.without_halo()
    n, chunk, parts = layout.shape[axis], layout.chunk(axis), layout.parts(axis)
    split = layout.split[axis]
    names = split[0] if len(split) == 1 else split
    key_dtype = np.int32 if parts * chunk < 2 ** 31 else np.int64

    def sort_values(block):
        x = physical.strip_ghosts(block, layout)
        me = jax.lax.axis_index(names)  # block number in the split's order
        index = (jax.lax.broadcasted_iota(key_dtype, x.shape, axis)
                 + me.astype(key_dtype) * chunk)
        # padding: the largest value, and last in the original order, so last when sorted
        x = jnp.where(index < n, x, jnp.asarray(_extreme(x.dtype, True), x.dtype))
        x = _merge_values(x, layout, axis, me)
        return _mirror(x, layout, axis) if descending else x

    def sort_indices(block):
        x = physical.strip_ghosts(block, layout)
        me = jax.lax.axis_index(names)  # block number in the split's order
        index = (jax.lax.broadcasted_iota(key_dtype, x.shape, axis)
                 + me.astype(key_dtype) * chunk)
        x = jnp.where(index < n, x, jnp.asarray(_extreme(x.dtype, not descending), x.dtype))
        # descending: ties keep their order once the result is reversed
        k = (n - 1) - index if descending else index
        pos = parts - 1 - me if descending else me
        x, k = _merge_keyed(x, k, layout, axis, pos, descending)
        if descending:
            k = (n - 1) - jnp.flip(k, axis)
        else:
            # a copy into the output's buffer: the last sort's values (unused) take the
            # buffer the keys leave, where they would need a fourth block
            k = _after(k, k, axis)
        return k.astype(_dt.default_int())

    fn = compat.shard_map(sort_indices if indices else sort_values, mesh=layout.mesh,
                          in_specs=(layout.spec,), out_specs=out.spec, check_vma=False)

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
    shared = _shares_x2_block(x1_lay, x2_lay)
    index_dtype = _dt.default_int()
    # counts add up in int32 where x1 fits it: half the bytes of int64 while they are summed
    count_dtype = np.int32 if n < 2 ** 31 else index_dtype

    def body(b1, b2):
        b1 = physical.strip_ghosts(b1, x1_lay)
        b2 = physical.strip_ghosts(b2, x2_lay)
        me = _block_number(x1_lay.mesh, split)
        if not shared:
            return window_search.count_before_split(
                b1, b2, n=n, chunk=chunk, parts=parts, me=me, names=names, side=side,
                count_dtype=count_dtype, lt_eq=_value_lt_eq).astype(index_dtype)
        # x2's block searched once in each x1 block (a binary search with one buffer per
        # value; jnp.searchsorted's scan held 3.7 blocks with x64 off), the counts add up
        # over x1's group
        logical = jnp.clip(n - me * chunk, 0, chunk).astype(np.int32)
        dtype = jnp.result_type(b1.dtype, b2.dtype)
        found = window_search.count_in_prefix(
            b1, logical, b2, lambda cell: window_search.before(cell, b2, side, _value_lt_eq,
                                                               dtype))
        return jax.lax.psum(found.astype(count_dtype), names).astype(index_dtype)

    fn = compat.shard_map(body, mesh=x2_lay.mesh, in_specs=(x1_lay.spec, x2_lay.spec),
                          out_specs=out.spec, check_vma=False)

    def run(d1, d2):
        return physical.constrain(fn(physical.constrain(d1, x1_lay),
                                     physical.constrain(d2, x2_lay)), out)
    return jax.jit(run), out


def _block_number(mesh, names):
    """This device's block number over the mesh axes `names`, major first as Layout counts
    (axis_index of a tuple counts in the mesh's order)."""
    sizes = dict(mesh.shape)
    me = jnp.asarray(0, np.int32)
    for name in names:
        me = me * sizes[name] + jax.lax.axis_index(name)
    return me


def _shares_x2_block(x1_lay: Layout, x2_lay: Layout) -> bool:
    return not set(x1_lay.split[0]) & set(x2_lay.used_mesh_axes)


# x2 split on x1's mesh axes: the window search's P psums and log2(c) + P steps cost more than
# replicating a small x1 (2.2-3.1x the replicated search at 2^16 cells over 8 CPU devices,
# 1.1-1.3x at 100003, 0.5-0.8x at 2^18, load ~17: benchmarks/bench_speed_guard.py). Below
# this many cells of x1 it is replicated (as exchange_gather keeps XLA's gather below 96 Ki
# cells); the memory survey's 100003-cell cases run the window search.
WINDOW_MIN_ELEMENTS = 3 << 15


def searchable(x1_lay: Layout, x2_lay: Layout) -> bool:
    """Whether searchsorted runs here, x1 (1-D) never gathered: x1 split, with blocks big
    enough that replicating it matters (a gather of a few thousand cells is cheaper)."""
    if not x1_lay.split[0] or x1_lay.chunk(0) < MIN_BLOCK_ELEMENTS:
        return False
    return _shares_x2_block(x1_lay, x2_lay) or x1_lay.shape[0] >= WINDOW_MIN_ELEMENTS


def searchsorted_split(d1, x1_lay: Layout, d2, x2_lay: Layout, side: str):
    """Physical insertion indices of x2's elements into the split sorted x1, and their
    layout (x2's, ghosts dropped)."""
    fn, out = _searchsorted_fn(x1_lay, x2_lay, side)
    return fn(d1, d2), out
