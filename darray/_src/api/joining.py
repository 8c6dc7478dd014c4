"""concat and stack on the physical blocks, without gathering the inputs.

Left to the SPMD partitioner, ``concatenate`` along an axis split over mesh axes compiles to an
all-gather of every input (measured on CPU, jax 0.10 and 0.12): each device ends up holding the
whole result, which DESIGN.md principle 2 forbids. Here every move is explicit, in one
shard_map:

* every input is first brought to the output's split (an input already there goes in as it is,
  its ghost cells dropped locally; another is redistributed, one resharding of that input);
* along an unsplit join axis each device joins its own blocks (no communication);
* along a split join axis, output block q holds output cells [q*C, (q+1)*C). Input k, placed at
  output offset o_k and cut in blocks of c_k cells, feeds block q from the input blocks b whose
  cells [o_k + b*c_k, o_k + (b+1)*c_k) overlap that range. Each overlapping (b, q) pair is a
  piece, known on the host from the static shapes. Pieces travel in rounds; a round is one
  lax.ppermute (every block sends and receives at most one piece) of a window as long as its
  longest piece, and the receiver writes the cells of its piece into its block
  (dynamic_update_slice of a select, on a block framed so no window is clamped). Packing the
  pieces largest first keeps the traffic per device near max(c_k, C), whatever the number of
  devices; nothing is ever gathered.

Block numbers follow the split's order (major first, as the Layout counts them); the ppermute
pairs go through compat.ppermute_blocks, which translates them to the mesh's numbering.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from darray._src import compat, physical
from darray._src.array import DistArray
from darray._src.layout import Layout


def _plain_like(lay: Layout, shape, split) -> Layout:
    """`shape` with `split`, no ghosts, natural axis order, on `lay`'s mesh."""
    n = len(shape)
    return Layout(tuple(shape), lay.mesh, tuple(split), ((0, 0),) * n, tuple(range(n)))


def _goes_in_directly(lay: Layout, split) -> bool:
    """An input whose blocks already sit where the output's split wants them: only ghost cells,
    if any, need dropping (locally)."""
    return lay.split == tuple(split) and lay.order == tuple(range(lay.ndim))


def _strip_ghosts(block, lay: Layout):
    for axis, (lo, hi) in enumerate(lay.halo):
        if lo or hi:
            block = jax.lax.slice_in_dim(block, lo, lo + lay.chunk(axis), axis=axis)
    return block


class _Round(NamedTuple):
    """One lax.ppermute: every device sends at most one window and receives at most one.
    Tables are indexed by block number (the split's order)."""
    length: int                         # window length along the join axis
    pairs: tuple[tuple[int, int], ...]  # (source block, output block)
    send_start: tuple[int, ...]         # first cell of the window in the source block
    place: tuple[int, ...]              # where the window's first cell lands in my output block
    keep_lo: tuple[int, ...]            # window cells [keep_lo, keep_hi) are the receiver's
    keep_hi: tuple[int, ...]


@functools.lru_cache(maxsize=1024)
def _rounds(n: int, c: int, offset: int, out_chunk: int, parts: int) -> tuple[_Round, ...]:
    """The ppermute rounds that bring an input of `n` cells (blocks of `c`), placed at output
    `offset`, to output blocks of `out_chunk` cells.

    Each overlapping (input block b, output block q) pair is one piece. A round is one
    permutation (a block sends at most one piece and receives at most one) whose window is
    its longest piece, so the traffic per device is the sum of the rounds' windows. Pieces go
    largest first into the first round where both their blocks are free: pieces of similar
    size share rounds, and the sum stays near max(c, out_chunk) whatever the number of
    devices (rounds of one fixed block offset would need up to `parts` full windows).
    """
    pieces = []
    for b in range(parts):
        lo, hi = offset + b * c, offset + min(n, (b + 1) * c)
        for q in range(lo // out_chunk, (hi - 1) // out_chunk + 1) if lo < hi else ():
            pieces.append((b, q, max(lo, q * out_chunk), min(hi, (q + 1) * out_chunk)))
    pieces.sort(key=lambda p: (p[2] - p[3], p[0]))
    rounds: list[list] = []
    busy: list[tuple[set, set]] = []  # per round: sending blocks, receiving blocks
    for piece in pieces:
        r = next((r for r, (snd, rcv) in enumerate(busy)
                  if piece[0] not in snd and piece[1] not in rcv), None)
        if r is None:
            r = len(rounds)
            rounds.append([])
            busy.append((set(), set()))
        rounds[r].append(piece)
        busy[r][0].add(piece[0])
        busy[r][1].add(piece[1])
    out = []
    for mine in rounds:
        length = max(hi - lo for _, _, lo, hi in mine)
        send, place, keep_lo, keep_hi = ([0] * parts for _ in range(4))
        for b, q, lo, hi in mine:
            first = lo - offset - b * c          # piece start in the source block
            send[b] = min(first, c - length)     # a window that stays inside the block
            skew = first - send[b]               # piece start inside the window
            place[q] = lo - skew - q * out_chunk
            keep_lo[q], keep_hi[q] = skew, skew + hi - lo
        out.append(_Round(length, tuple((b, q) for b, q, _, _ in mine), tuple(send),
                          tuple(place), tuple(keep_lo), tuple(keep_hi)))
    return tuple(out)


def _overhang(r: _Round, out_chunk: int) -> int:
    """How far a round's windows reach before or past the receiving block."""
    return max([max(-p, p + r.length - out_chunk) for (_, q), p in
                zip(r.pairs, (r.place[q] for _, q in r.pairs))] + [0])


def _join_split_axis(blocks, lays, out: Layout, axis: int, dtype):
    """My output block along the split join `axis` (module doc): every input's overlapping
    windows travel in a few ppermute rounds and are written where they belong."""
    parts, out_chunk = out.parts(axis), out.chunk(axis)
    split = out.split[axis]
    names = split[0] if len(split) == 1 else split
    me = jax.lax.axis_index(names)  # block number in the split's order
    plans, offset = [], 0
    for lay in lays:
        plans.append(_rounds(lay.shape[axis], lay.chunk(axis), offset, out_chunk, parts))
        offset += lay.shape[axis]
    # my block framed by `frame` cells on both sides, so that a window landing partly before
    # or after the block is written unclamped (dynamic_update_slice clamps, it never clips)
    frame = max([_overhang(r, out_chunk) for plan in plans for r in plan], default=0)
    shape = list(out.block_shape)
    shape[axis] = out_chunk + 2 * frame
    framed = jnp.zeros(shape, dtype)

    def at_me(table):
        return jnp.asarray(np.asarray(table, np.int32))[me]
    for block, plan in zip(blocks, plans):
        for r in plan:
            buf = jax.lax.dynamic_slice_in_dim(block, at_me(r.send_start), r.length, axis=axis)
            if any(b != q for b, q in r.pairs):
                buf = compat.ppermute_blocks(buf, split, r.pairs, out.mesh)
            start = at_me(r.place) + frame
            w = jnp.arange(r.length)
            keep = (w >= at_me(r.keep_lo)) & (w < at_me(r.keep_hi))
            keep_shape = [1] * out.ndim
            keep_shape[axis] = r.length
            here = jax.lax.dynamic_slice_in_dim(framed, start, r.length, axis=axis)
            framed = jax.lax.dynamic_update_slice_in_dim(
                framed, jnp.where(keep.reshape(keep_shape), buf, here), start, axis=axis)
    return jax.lax.slice_in_dim(framed, frame, frame + out_chunk, axis=axis)


def _local_join(kind: str, lays, out: Layout, axis: int, dtype):
    def local(*blocks):
        blocks = [_strip_ghosts(b, lay).astype(dtype) for b, lay in zip(blocks, lays)]
        if kind == "stack":
            return jnp.stack(blocks, axis=axis)
        if not out.split[axis]:
            return jnp.concatenate(blocks, axis=axis)
        plain = [_plain_like(lay, lay.shape, lay.split) for lay in lays]
        return _join_split_axis(blocks, plain, out, axis, dtype)
    return local


@functools.lru_cache(maxsize=1024)
def _join_fn(kind: str, in_layouts, targets, out: Layout, axis: int, dtype):
    """jit(*physical datas) -> the joined physical data in `out`. `targets[k]` is the layout
    input k is redistributed to first, or None when it goes in as it is."""
    lays = tuple(t if t is not None else lay for lay, t in zip(in_layouts, targets))
    local = _local_join(kind, lays, out, axis, dtype)

    def run(*datas):
        moved = []
        for data, lay, target in zip(datas, in_layouts, targets):
            data = physical.constrain(data, lay)
            if target is not None:
                data = physical.logical_to_physical(physical.physical_to_logical(data, lay),
                                                    target)
            moved.append(data)
        fn = compat.shard_map(local, mesh=out.mesh, in_specs=tuple(lay.spec for lay in lays),
                              out_specs=out.spec)
        return physical.constrain(fn(*moved), out)
    return jax.jit(run)


def _run(kind, arrays, per_input_split, out: Layout, axis: int, dtype) -> DistArray:
    if 0 in out.shape:
        return DistArray._new(physical.filled(out, 0, dtype), out)
    if kind == "concat":
        # inputs with nothing along the join axis contribute no cells
        arrays = [a for a in arrays if a.shape[axis]]
    in_layouts = tuple(a.layout for a in arrays)
    targets = tuple(None if _goes_in_directly(lay, split) else _plain_like(lay, lay.shape, split)
                    for lay, split in zip(in_layouts, per_input_split(in_layouts)))
    fn = _join_fn(kind, in_layouts, targets, out, axis, jnp.dtype(dtype))
    return DistArray._new(fn(*[a.data for a in arrays]), out)


def concat_arrays(arrays, axis: int, out: Layout, dtype) -> DistArray:
    """Join DistArrays of one rank (>= 1) along `axis` into layout `out` (no ghosts, natural
    order); their shapes agree off `axis` and their extents along it sum to out's."""
    return _run("concat", arrays, lambda lays: [out.split] * len(lays), out, axis, dtype)


def stack_arrays(arrays, axis: int, out: Layout, dtype) -> DistArray:
    """Join DistArrays of one shape along a new `axis` of `out` (which is unsplit there)."""
    inner = out.split[:axis] + out.split[axis + 1:]
    return _run("stack", arrays, lambda lays: [inner] * len(lays), out, axis, dtype)
