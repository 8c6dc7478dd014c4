"""Boolean selection along one split axis, ``x[mask]`` for a 1-D mask over x's leading axis
(also `nonzero` of a 1-D array): a distributed compaction whose result stays split by rows.

Why not compaction.compact's general kernel: it scatters every device's hits into a buffer as
long as the whole result, then reduce-scatters the buffers. Selecting half the rows of a
row-split matrix over 8 devices made every device hold 4 blocks of zeros and sum 8 of them
(scikit-learn's LinearDiscriminantAnalysis selects each class's rows this way: 12.8x the
data's memory at 2^20 x 32).

Here:

1. one small program counts each block's hits (padding masked): P integers come to the host
   in one transfer, the only host synchronisation (the result's length is their sum);
2. from the counts the host knows where block b's hits land: output cells [o_b, o_b + n_b),
   with o_b the hits of the blocks before b. Output block q owns [q*C, (q+1)*C), C =
   ceil(total / P). Block b feeds the output blocks q its range overlaps; the differences
   q - b that occur ("shifts") are few (0 and 1 when every block keeps a similar share);
3. one program: every device ranks its hits (a running count by matmuls; offsets from the
   counts, passed in from the host), then for every shift s sends the window of its hits
   that belongs to block me + s (at most C rows, gathered straight from its rows by the hit
   positions) with one lax.ppermute, and the receiver keeps the rows of the window that fall
   in its range. One round is in flight at a time (joining.after_written), so a device
   holds its output block and one window: under 1 block of temporaries measured (0.8 at
   10007 x 61 on 8 devices; the general kernel: 4.2), never the whole result.

The program is compiled per (layouts, total, shifts); the shifts, unlike the counts, repeat
from call to call.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import COMPACTION, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.joining import after_written
from darray._src.layout.layout import Layout
from darray._src.placement import physical


def _block_number(names, sizes):
    """This device's block number over mesh axes `names` (major first, as Layout counts)."""
    index = jnp.zeros((), jnp.int32)
    for name in names:
        index = index * sizes[name] + jax.lax.axis_index(name)
    return index


def _hits(mask_block, lay: Layout, me):
    """Which cells of my (ghost-free) block of a 1-D mask are logical nonzeros."""
    hits = mask_block != 0
    if lay.parts(0) * lay.chunk(0) != lay.shape[0]:
        rows = me * lay.chunk(0) + jnp.arange(lay.chunk(0), dtype=jnp.int32)
        hits = hits & (rows < lay.shape[0])
    return hits


EXACT_FLOAT32 = 1 << 24  # float32 counts up to here exactly


def running_count(hits, width: int = 128):
    """Inclusive running count of a 1-D boolean array, as int32, by matmuls with a triangle
    of ones over rows of `width` cells (then over the rows' totals, recursively). Why not
    jnp.cumsum: on CPU (measured, 8 devices, 12504-cell blocks) XLA compiled its reduce-window
    in 0.9 s and ran it in 2.0 ms; a stable argsort compiles in 0.2 s but ran 15.6 ms; this
    compiles in 0.6 s and runs in 1.1 ms. Float32 counts are exact below 2^24 cells."""
    n = hits.shape[0]
    if n >= EXACT_FLOAT32:
        return jnp.cumsum(hits.astype(jnp.int32))
    return _running_sum(hits.astype(jnp.float32), width).astype(jnp.int32)


def _running_sum(x, width):
    n = x.shape[0]
    rows = -(-n // width)
    triangle = jnp.triu(jnp.ones((width, width), jnp.float32))
    within = jnp.matmul(jnp.pad(x, (0, rows * width - n)).reshape(rows, width), triangle,
                        precision=jax.lax.Precision.HIGHEST)
    if rows > 1:
        totals = within[:, -1]
        within = within + (_running_sum(totals, width) - totals)[:, None]
    return within.reshape(-1)[:n]


def _axis_entry(names):
    return names[0] if len(names) == 1 else tuple(names)


@program_cache(COMPACTION)
def _counts_fn(lay: Layout):
    names = lay.split[0]
    sizes = lay.mesh_shape

    def body(block):
        me = _block_number(names, sizes)
        hits = _hits(physical.strip_ghosts(block, lay), lay, me)
        return jnp.sum(hits, dtype=jnp.int32).reshape(1)

    fn = compat.shard_map(body, mesh=lay.mesh, in_specs=(lay.spec,),
                          out_specs=PartitionSpec(_axis_entry(names)), check_vma=False)
    return jax.jit(lambda data: fn(physical.constrain(data, lay)))


def block_counts(mask: DistArray) -> np.ndarray:
    """Hits of each block of a 1-D mask split over its axis, in block order (one transfer)."""
    return np.asarray(_counts_fn(mask.layout)(mask.data), dtype=np.int64)


def plan_shifts(counts: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """(out_chunk, shifts): rows per output block and the block differences q - b with which
    block b's hits reach output block q (module doc, step 2)."""
    parts = len(counts)
    total = int(counts.sum())
    out_chunk = -(-total // parts)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    shifts: set[int] = set()
    for b, (lo, n) in enumerate(zip(offsets, counts)):
        if n:
            first, last = int(lo) // out_chunk, (int(lo) + int(n) - 1) // out_chunk
            shifts.update(q - b for q in range(first, last + 1))
    return out_chunk, tuple(sorted(shifts))


def out_layout(mask_lay: Layout, total: int, rest_shape=(), rest_split=()) -> Layout:
    shape = (total,) + tuple(rest_shape)
    split = (tuple(mask_lay.split[0]),) + tuple(tuple(s) for s in rest_split)
    return Layout(shape, mask_lay.mesh, split, ((0, 0),) * len(shape))


@program_cache(COMPACTION)
def _rows_fn(mask_lay: Layout, payload_lays: tuple, total: int, shifts: tuple,
             with_indices: bool):
    names = mask_lay.split[0]
    sizes = mask_lay.mesh_shape
    parts, chunk = mask_lay.parts(0), mask_lay.chunk(0)
    out_chunk = -(-total // parts)
    idx_dtype = _dt.default_int()

    def body(counts, mask_block, *payload_blocks):
        # counts: every block's hits by block number, as the host read them (an argument, not
        # a collective: each collective added ~0.25 s to the compile on CPU)
        me = _block_number(names, sizes)
        hits = _hits(physical.strip_ghosts(mask_block, mask_lay), mask_lay, me)
        offsets = jnp.cumsum(counts) - counts
        # where[r]: my row holding my r-th hit, scattered at each hit's rank
        rank = running_count(hits) - 1
        where = jnp.zeros((chunk,), jnp.int32).at[jnp.where(hits, rank, chunk)].set(
            jnp.arange(chunk, dtype=jnp.int32), mode="drop")
        items = []
        if with_indices:
            items.append(me.astype(idx_dtype) * chunk + jnp.arange(chunk, dtype=idx_dtype))
        items += [physical.strip_ghosts(b, lay) for b, lay in zip(payload_blocks, payload_lays)]
        outs = [jnp.zeros((out_chunk,) + item.shape[1:], item.dtype) for item in items]
        window_rows = jnp.arange(out_chunk, dtype=jnp.int32)
        mine_at = me * out_chunk + window_rows  # output positions of my block's rows
        for s in shifts:
            # as sender: my hits that belong to output block me + s
            wanted = (me + s) * out_chunk - offsets[me] + window_rows + after_written(outs[0])
            rows = where[jnp.clip(wanted, 0, chunk - 1)]
            # as receiver: rows of block me - s land on [o, o + n) of the output
            src = jnp.clip(me - s, 0, parts - 1)
            keep = ((me - s >= 0) & (me - s < parts) & (mine_at >= offsets[src])
                    & (mine_at < offsets[src] + counts[src]))
            pairs = [(b, b + s) for b in range(parts) if 0 <= b + s < parts]
            for i, item in enumerate(items):
                window = jnp.take(item, rows, axis=0)
                if s:
                    window = compat.ppermute_blocks(window, names, pairs, mask_lay.mesh)
                shape = keep.shape + (1,) * (window.ndim - 1)
                outs[i] = jnp.where(keep.reshape(shape), window, outs[i])
        return tuple(outs)

    out_lays = []
    if with_indices:
        out_lays.append(out_layout(mask_lay, total))
    out_lays += [out_layout(mask_lay, total, lay.shape[1:], lay.split[1:])
                 for lay in payload_lays]
    fn = compat.shard_map(body, mesh=mask_lay.mesh,
                          in_specs=(PartitionSpec(), mask_lay.spec)
                          + tuple(lay.spec for lay in payload_lays),
                          out_specs=tuple(lay.spec for lay in out_lays), check_vma=False)

    def run(counts, mask_data, *payload_datas):
        counts = compat.constrain(counts, mask_lay.mesh, PartitionSpec())
        mask_data = physical.constrain(mask_data, mask_lay)
        payload_datas = [physical.constrain(d, lay) for d, lay in zip(payload_datas, payload_lays)]
        return tuple(physical.constrain(o, lay)
                     for o, lay in zip(fn(counts, mask_data, *payload_datas), out_lays))
    return jax.jit(run), tuple(out_lays)


def compact_rows(mask: DistArray, payloads: Sequence[DistArray], with_indices: bool):
    """(global row indices if with_indices) + (payload[mask] for each payload), for a 1-D
    `mask` split over its axis (no ghosts) and payloads whose axis 0 is split like it; None
    when nothing is selected (the caller builds the empty results)."""
    counts = block_counts(mask)
    total = int(counts.sum())
    if total == 0:
        return None
    _, shifts = plan_shifts(counts)
    fn, out_lays = _rows_fn(mask.layout, tuple(p.layout for p in payloads), total, shifts,
                            with_indices)
    outs = fn(counts.astype(np.int32), mask.data, *[p.data for p in payloads])
    return tuple(DistArray._new(o, lay) for o, lay in zip(outs, out_lays))
