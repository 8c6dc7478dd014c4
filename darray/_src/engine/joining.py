"""concat and stack on the physical blocks, without gathering the inputs.

Left to the SPMD partitioner, ``concatenate`` along an axis split over mesh axes compiles to an
all-gather of every input (measured on CPU, jax 0.10 and 0.12): each device ends up holding the
whole result, which docs/design.md (principle 2) forbids. Here every move is explicit, in one
shard_map:

* every input is first brought to the output's split (an input already there goes in as it is,
  its ghost cells dropped locally; another is redistributed, one resharding of that input);
* along an unsplit join axis each device joins its own blocks (no communication);
* along a split join axis, output block q holds output cells [q*C, (q+1)*C). Input k, placed at
  output offset o_k and cut in blocks of c_k cells, feeds block q from the input blocks b whose
  cells [o_k + b*c_k, o_k + (b+1)*c_k) overlap that range. Each overlapping (b, q) pair is a
  piece, known on the host from the static shapes (`plan_rounds`). Pieces travel in rounds: a
  round is one lax.ppermute (every block sends and receives at most one piece) of a window as
  long as its longest piece, read from the sender's blocks of all inputs seen side by side
  (never joined into one copy); the receiver writes the piece's cells into its block
  (dynamic_update_slice of a select). One round is in flight at a time, so a device holds at
  most one window each way besides its blocks; nothing is ever gathered. Temporaries: 0.3 to
  2.8 blocks per device (tests/memory/test_memory_concat.py);
* an input whose split XLA's partitioner would change through an all-gather moves first by
  engine/reshaping.py's block-wise row exchange.

Block numbers follow the split's order (major first, as the Layout counts them); the ppermute
pairs go through compat.ppermute_blocks, which translates them to the mesh's numbering.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine import reshaping
from darray._src.layout.layout import Layout
from darray._src.placement import physical


def _goes_in_directly(lay: Layout, split) -> bool:
    """An input whose blocks already sit where the output's split wants them: only ghost cells,
    if any, need dropping (locally)."""
    return lay.split == tuple(split)


class _Round(NamedTuple):
    """One lax.ppermute: every device sends at most one window and receives at most one.
    Tables are indexed by block number (the split's order)."""
    length: int                         # window length along the join axis
    pairs: tuple[tuple[int, int], ...]  # (source block, output block)
    send_start: tuple[int, ...]         # first cell of the window in the sender's source
    place: tuple[int, ...]              # where the window's first cell lands in my output block
    keep_lo: tuple[int, ...]            # window cells [keep_lo, keep_hi) are the receiver's
    keep_hi: tuple[int, ...]


def _pieces(sizes, parts: int, chunks=None):
    """Every overlapping (input block b, output block q) pair of every input, as (b, q, start
    in b's source, start in q's block, length). A device's source is its blocks of all inputs
    side by side (input k's block holds ceil(n_k / parts) cells, padding included, or
    `chunks[k]` cells where given: block b then owns cells [b*c, min(n, (b+1)*c)))."""
    out_chunk = -(-sum(sizes) // parts)
    pieces, out_at, src_at = [], 0, 0
    for k, n in enumerate(sizes):
        c = -(-n // parts) if chunks is None else chunks[k]
        for b in range(parts):
            lo, hi = out_at + b * c, out_at + min(n, (b + 1) * c)
            for q in range(lo // out_chunk, (hi - 1) // out_chunk + 1) if lo < hi else ():
                start, stop = max(lo, q * out_chunk), min(hi, (q + 1) * out_chunk)
                pieces.append((b, q, src_at + start - out_at - b * c, start - q * out_chunk,
                               stop - start))
        out_at, src_at = out_at + n, src_at + c
    return pieces, src_at


@functools.lru_cache(maxsize=1024)
def plan_rounds(sizes: tuple[int, ...], parts: int,
                chunks: tuple[int, ...] | None = None) -> tuple[_Round, ...]:
    """The ppermute rounds that join inputs of `sizes` cells (each cut in `parts` blocks, of
    `chunks[k]` cells where given: see _pieces) into an output cut in `parts` blocks.

    A round is one permutation whose window is as long as its longest piece, so what a device
    holds in flight is the sum of the rounds' windows. Pieces go largest first into the first
    round where their sender and receiver are both free: pieces of similar size share rounds,
    and pieces of different inputs share rounds too (the blocks an input feeds change from
    input to input). Measured on the host: the windows add up to about one output block (1.0
    to 1.6 blocks for 2 to 50 inputs on 8 to 1024 blocks), in about one round per input.
    Rounds of one fixed block offset per input would need up to `parts` windows per input.
    """
    pieces, source = _pieces(sizes, parts, chunks)
    out_chunk = -(-sum(sizes) // parts)
    pieces.sort(key=lambda p: (-p[4], p[0], p[1]))
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
        length = max(p[4] for p in mine)
        send, place, keep_lo, keep_hi = ([0] * parts for _ in range(4))
        for b, q, src, dst, size in mine:
            skew = _skew(src, dst, size, length, source, out_chunk)
            send[b] = src - skew
            place[q] = dst - skew
            keep_lo[q], keep_hi[q] = skew, skew + size
        out.append(_Round(length, tuple((b, q) for b, q, *_ in mine), tuple(send),
                          tuple(place), tuple(keep_lo), tuple(keep_hi)))
    return tuple(out)


def _skew(src: int, dst: int, size: int, length: int, source: int, out_chunk: int) -> int:
    """Where a piece starts inside its window. The window always lands inside the receiving
    block (so the output needs no frame and no final copy); among those placements, one that
    also stays inside the sender's source when there is one (it cannot when the piece ends
    the source and starts the block, or the reverse: then the source's zero frame is read)."""
    lo, hi = max(0, dst + length - out_chunk), min(dst, length - size)
    fits = (max(lo, src + length - source), min(hi, src))
    return fits[0] if fits[0] <= fits[1] else (hi if src + length - source > hi else lo)


def source_frame(rounds, source: int) -> int:
    """How far the rounds' windows reach before or past the sender's source."""
    return max([0] + [max(-r.send_start[b], r.send_start[b] + r.length - source)
                      for r in rounds for b, _ in r.pairs])


def _join_split_axis(blocks, lays, out: Layout, axis: int, dtype):
    """My output block along the split join `axis` (module doc): the pieces of every input
    travel in a few ppermute rounds and are written where they belong."""
    return join_blocks(blocks, tuple(lay.shape[axis] for lay in lays), None, out, axis, dtype)


def join_blocks(blocks, sizes: tuple[int, ...], chunks: tuple[int, ...] | None, out: Layout,
                axis: int, dtype):
    """Inside shard_map: my block of `out` along its split `axis`, joined from my `blocks` of
    inputs of `sizes` cells along `axis` (block b of input k owns its cells [b*c, (b+1)*c),
    c = chunks[k], or ceil(n_k / parts) when chunks is None; the rest is padding). Other axes
    of every block have out's block extent. Used by concat, tile (copies of one input) and
    repeat (a locally repeated block, c = count * x's chunk) and by include_initial scans."""
    split = out.split[axis]
    names = split[0] if len(split) == 1 else split
    me = jax.lax.axis_index(names)  # block number in the split's order
    rounds = plan_rounds(tuple(sizes), out.parts(axis),
                         None if chunks is None else tuple(chunks))
    result = jnp.zeros(out.block_shape, dtype)

    def at_me(table):
        return jnp.asarray(np.asarray(table, np.int32))[me]

    def run_round(r: _Round):
        def write(result):
            buf = _window(blocks, r, at_me, axis, dtype, after_written(result))
            if any(b != q for b, q in r.pairs):
                buf = compat.ppermute_blocks(buf, split, r.pairs, out.mesh)
            start = at_me(r.place)  # the window lies inside my block (see _skew)
            w = jnp.arange(r.length)
            keep_shape = [1] * out.ndim
            keep_shape[axis] = r.length
            keep = ((w >= at_me(r.keep_lo)) & (w < at_me(r.keep_hi))).reshape(keep_shape)
            here = jax.lax.dynamic_slice_in_dim(result, start, r.length, axis=axis)
            return jax.lax.dynamic_update_slice_in_dim(result, jnp.where(keep, buf, here),
                                                       start, axis=axis)
        return write

    # One round at a time: each round's window is cut after the previous round has written
    # (after_written). Left free, XLA cut every round's window first and held them all: about 2
    # output blocks, 3.0 blocks of temporaries in all for (1001, 403) and (203, 403) joined
    # along axis 0 over 8 devices. A loop over the rounds also serialises them, but copied
    # the output block in every round (1.5-1.9x slower, benchmarks/bench_concat.py).
    for r in rounds:
        result = run_round(r)(result)
    return result


def after_written(result):
    """Zero, computed from `result`'s first cell: a window start plus this waits until
    `result` is written (XLA cannot fold the clamp of a data value, and it does not keep
    optimization barriers for scheduling on CPU)."""
    if result.size == 0:
        return np.int32(0)
    first = jax.lax.slice(result, (0,) * result.ndim, (1,) * result.ndim).reshape(())
    if first.dtype == jnp.bool_:
        first = first.astype(jnp.int32)
    zero = np.int32(0)
    return jax.lax.clamp(zero, first.real.astype(jnp.int32) if jnp.iscomplexobj(first)
                         else first.astype(jnp.int32), zero)


def _window(blocks, r: _Round, at_me, axis: int, dtype, after=0):
    """My window of round `r`: cells [start, start + length) along `axis` of my `blocks` laid
    side by side, zero where it reaches past them, read straight from the blocks rather than
    from a joined copy of them (that copy, framed by zeros, measured 1.5 blocks of temporaries
    on its own). Where every sender's window lies inside one block, a slice of that block
    (picked per device); else a gather over the blocks some window touches, fused by XLA into
    the window's own loop."""
    ends = np.cumsum([0] + [b.shape[axis] for b in blocks])
    senders = [b for b, _ in r.pairs]
    inside = {b: next((k for k in range(len(blocks)) if ends[k] <= r.send_start[b]
                       and r.send_start[b] + r.length <= ends[k + 1]), None) for b in senders}
    start = at_me(r.send_start) + after
    whole = {b: k for b, k in inside.items() if k is not None}
    if len(whole) == len(inside):
        used = sorted(set(whole.values()))
        table = [whole.get(b, used[0]) for b in range(len(r.send_start))]
        which = at_me(table)
        window = None
        for k in used:
            cut = jax.lax.dynamic_slice_in_dim(blocks[k], start - int(ends[k]), r.length, axis)
            window = cut if window is None else jnp.where(which == k, cut, window)
        return window
    cell = start + jnp.arange(r.length)
    shape = [1] * blocks[0].ndim
    shape[axis] = r.length
    window = jnp.zeros((), dtype)
    for k, block in enumerate(blocks):
        if not any(ends[k] < r.send_start[b] + r.length and r.send_start[b] < ends[k + 1]
                   for b in senders):
            continue  # no window of this round reaches block k
        local = cell - int(ends[k])
        here = ((local >= 0) & (local < block.shape[axis])).reshape(shape)
        cells = jnp.take(block, jnp.clip(local, 0, block.shape[axis] - 1), axis=axis)
        window = jnp.where(here, cells, window)
    return jnp.broadcast_to(window, tuple(shape[i] if i == axis else blocks[0].shape[i]
                                          for i in range(len(shape)))).astype(dtype)


def _local_join(kind: str, lays, out: Layout, axis: int, dtype):
    def local(*blocks):
        blocks = [physical.strip_ghosts(b, lay).astype(dtype) for b, lay in zip(blocks, lays)]
        if kind == "stack":
            return jnp.stack(blocks, axis=axis)
        if not out.split[axis]:
            return jnp.concatenate(blocks, axis=axis)
        return _join_split_axis(blocks, lays, out, axis, dtype)
    return local


@program_cache(MEDIUM)
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


def _run(kind: str, arrays, split, out: Layout, axis: int, dtype) -> DistArray:
    """Every input brought to `split` (no ghosts), then joined by `kind` into `out`."""
    if 0 in out.shape:
        return DistArray._new(physical.filled(out, 0, dtype), out)
    if kind == "concat":
        # inputs with nothing along the join axis contribute no cells
        arrays = [a for a in arrays if a.shape[axis]]
    in_layouts = tuple(a.layout for a in arrays)
    n = len(split)
    targets = tuple(None if _goes_in_directly(lay, split) else
                    Layout(lay.shape, out.mesh, tuple(split), ((0, 0),) * n)
                    for lay in in_layouts)
    if any(t is not None and reshaping.takes_blockwise(lay, t)
           for lay, t in zip(in_layouts, targets)):
        # an input XLA's partitioner would move through an all-gather (measured: 4.3 blocks
        # and one all-gather for (33, 67, 45) split (None, (x, y)) brought to (x, y) on 4x2)
        # moves first by reshaping's block-wise row exchange, the same shape in another split
        arrays = [DistArray._new(reshaping.reshape_fn(lay, t)(a.data), t)
                  if t is not None and reshaping.takes_blockwise(lay, t) else a
                  for a, lay, t in zip(arrays, in_layouts, targets)]
        return _run(kind, arrays, split, out, axis, dtype)
    fn = _join_fn(kind, in_layouts, targets, out, axis, jnp.dtype(dtype))
    return DistArray._new(fn(*[a.data for a in arrays]), out)


def concat_arrays(arrays, axis: int, out: Layout, dtype) -> DistArray:
    """Join DistArrays of one rank (>= 1) along `axis` into layout `out` (no ghosts, natural
    order); their shapes agree off `axis` and their extents along it sum to out's."""
    return _run("concat", arrays, out.split, out, axis, dtype)


def stack_arrays(arrays, axis: int, out: Layout, dtype) -> DistArray:
    """Join DistArrays of one shape along a new `axis` of `out` (which is unsplit there)."""
    return _run("stack", arrays, out.split[:axis] + out.split[axis + 1:], out, axis, dtype)
