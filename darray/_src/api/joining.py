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
  cells [o_k + b*c_k, o_k + (b+1)*c_k) overlap that range. The block offsets d = b - q that occur
  are few and known on the host from the static shapes; each is one lax.ppermute of a buffer no
  longer than the largest such overlap (at most min(c_k, C) cells along the axis). A select then
  keeps, per output cell, the buffer of the shift that owns it. Traffic per device is about one
  output block per input, never a whole input.

Block numbers follow the split's order (major first, as the Layout counts them); the ppermute
pairs go through compat.ppermute_blocks, which translates them to the mesh's numbering.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

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


@functools.lru_cache(maxsize=1024)
def _transfers(n: int, c: int, offset: int, out_chunk: int, parts: int):
    """The moves that bring an input of `n` cells (blocks of `c`), placed at output `offset`, to
    output blocks of `out_chunk` cells: a tuple of (d, length, pairs) per block offset
    d = source block - output block, where `length` is the longest overlap any pair of blocks
    at that offset has and `pairs` the (source, output) block pairs that overlap."""
    plan: dict[int, list] = {}
    for b in range(parts):
        lo, hi = offset + b * c, offset + min(n, (b + 1) * c)
        if lo >= hi:
            continue
        for q in range(lo // out_chunk, (hi - 1) // out_chunk + 1):
            size = min(hi, (q + 1) * out_chunk) - max(lo, q * out_chunk)
            entry = plan.setdefault(b - q, [0, []])
            entry[0] = max(entry[0], size)
            entry[1].append((b, q))
    return tuple((d, length, tuple(pairs)) for d, (length, pairs) in sorted(plan.items()))


def _join_split_axis(blocks, lays, out: Layout, axis: int, dtype):
    """My output block along the split join `axis` (module doc): every input's overlapping
    cells travel by a few fixed ppermute shifts and are selected per cell."""
    parts, out_chunk = out.parts(axis), out.chunk(axis)
    split = out.split[axis]
    names = split[0] if len(split) == 1 else split
    me = jax.lax.axis_index(names)  # block number in the split's order
    shape = list(out.block_shape)
    index_shape = [1] * out.ndim
    index_shape[axis] = out_chunk
    result = jnp.zeros(shape, dtype)
    j = me * out_chunk + jnp.arange(out_chunk)  # my output cells along `axis`
    offset = 0
    for block, lay in zip(blocks, lays):
        n, c = lay.shape[axis], lay.chunk(axis)
        t = j - offset  # input cell for each of my output cells
        inside = (t >= 0) & (t < n)
        src_block = jnp.where(inside, t, 0) // c
        for d, length, pairs in _transfers(n, c, offset, out_chunk, parts):
            # As a sender (block b = me, feeding output block me - d): the overlap starts at
            # `first` in my block; a window of `length` cells starting at most c - length
            # still covers it (dynamic_slice would clamp the start anyway: stated, not implied).
            first = jnp.clip((me - d) * out_chunk - offset - me * c, 0, c - length)
            buf = jax.lax.dynamic_slice_in_dim(block, first, length, axis=axis)
            if d:
                buf = compat.ppermute_blocks(buf, split, [(b, q) for b, q in pairs], out.mesh)
            # As a receiver (output block me, fed by block b = me + d): the same window start.
            b = me + d
            start = jnp.clip(me * out_chunk - offset - b * c, 0, c - length)
            pos = jnp.clip(t - b * c - start, 0, length - 1)
            taken = jnp.take(buf, pos, axis=axis)
            use = (inside & (src_block == b)).reshape(index_shape)
            result = jnp.where(use, taken, result)
        offset += n
    return result


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
