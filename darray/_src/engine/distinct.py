"""Unique values of a split integer array without gathering it (set_functions' unique_*).

Why: the replicated kernel (compaction.run_replicated) gathers the whole array onto every
device and sorts it there, twice (once to count the values, once for the results). For class
labels (scikit-learn's unique_labels, unique_counts, unique_inverse on a row-split label
array) that is 8 full sorts of a 2^20-element array for a handful of values.

Here, in three programs:

1. every device sorts its own block (padding last) and keeps its distinct values at the front;
   their number per device (P integers) comes to the host;
2. every device gathers the first `width` = max(counts) cells of every block (P * width values,
   a few when the array holds few values), sorts them and keeps the distinct ones: the global
   unique values, replicated, and their number n (one integer to the host: the output shape);
3. with n static, each device looks its cells up in the values (searchsorted): inverse indices
   in x's layout, counts summed over the devices (psum), first-occurrence indices as a
   minimum over the devices (pmin) of flat C-order indices.

Integers only: the order and equality of integers is the same everywhere (no NaN, no signed
zero), so merging per-device distinct values gives exactly jnp.unique's values. Many distinct
values make `width` large and step 2 as costly as the replicated sort, no worse.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import COMPACTION, program_cache
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout, default_layout
from darray._src.placement import physical

MIN_CELLS = 1 << 15  # below this the replicated kernel is as fast (fewer programs)
COMPARE_ALL_MAX = 64  # up to this many values, each cell is compared with all of them
OUTPUTS = ("values", "indices", "inverse", "counts")


def applies(x: DistArray) -> bool:
    """Whether `x` takes this path: a split integer array of at least MIN_CELLS cells."""
    return (np.dtype(x.dtype).kind in "iu" and bool(x.layout.used_mesh_axes)
            and x.size >= max(MIN_CELLS, 1))


def _names(lay: Layout):
    names = lay.used_mesh_axes
    return names[0] if len(names) == 1 else names


def _block_indices(lay: Layout, shape):
    """Per axis, the global index of every cell of my ghost-free block (inside shard_map)."""
    out = []
    for axis in range(lay.ndim):
        start = jnp.zeros((), jnp.int64 if jax.config.read("jax_enable_x64") else jnp.int32)
        for name in lay.split[axis]:
            start = start * lay.mesh_shape[name] + jax.lax.axis_index(name)
        start = start * lay.chunk(axis)
        out.append(start + jax.lax.broadcasted_iota(start.dtype, shape, axis))
    return out


def _valid(block, lay: Layout):
    """My block's logical cells (False on padding), flattened, with the block flattened."""
    valid = jnp.ones(block.shape, bool)
    for axis, index in enumerate(_block_indices(lay, block.shape)):
        if lay.parts(axis) * lay.chunk(axis) != lay.shape[axis]:
            valid = valid & (index < lay.shape[axis])
    return block.reshape(-1), valid.reshape(-1)


def _distinct_first(values, valid):
    """(buffer, count): the distinct valid values, ascending, at the front of a buffer as long
    as `values` (the rest zeros)."""
    size = values.shape[0]
    invalid, ordered = jax.lax.sort(((~valid).astype(jnp.uint8), values), num_keys=2)
    starts = invalid == 0
    if size > 1:
        starts = starts & jnp.concatenate([jnp.ones((1,), bool), ordered[1:] != ordered[:-1]])
    # the run starts to the front by a stable sort (a cumulative count and a scatter compile
    # 0.8 s slower on CPU); the rest becomes zeros
    _, buf = jax.lax.sort(((~starts).astype(jnp.uint8), ordered), num_keys=1, is_stable=True)
    count = jnp.sum(starts, dtype=jnp.int32)
    return jnp.where(jnp.arange(size) < count, buf, 0), count


@program_cache(COMPACTION)
def _local_fn(lay: Layout):
    names = _names(lay)

    def body(block):
        flat, valid = _valid(physical.strip_ghosts(block, lay), lay)
        buf, count = _distinct_first(flat, valid)
        return buf, count.reshape(1)

    fn = compat.shard_map(body, mesh=lay.mesh, in_specs=(lay.spec,),
                          out_specs=(PartitionSpec(names), PartitionSpec(names)),
                          check_vma=False)
    return jax.jit(lambda data: fn(physical.constrain(data, lay)))


@program_cache(COMPACTION)
def _merge_fn(lay: Layout, width: int):
    names = _names(lay)

    def body(buf, count):
        mine = jnp.arange(width) < count[0]
        values = jax.lax.all_gather(buf[:width], names, tiled=True)
        valid = jax.lax.all_gather(mine, names, tiled=True)
        merged, n = _distinct_first(values, valid)
        return merged, n

    fn = compat.shard_map(body, mesh=lay.mesh, in_specs=(PartitionSpec(names),) * 2,
                          out_specs=(PartitionSpec(), PartitionSpec()), check_vma=False)
    return jax.jit(fn)


@program_cache(COMPACTION)
def _finish_fn(lay: Layout, n: int, want: tuple[str, ...]):
    names = _names(lay)
    idx_dtype = _dt.default_int()
    flat_lay = default_layout((n,), lay)
    inverse_lay = lay.without_halo()
    # a few values (class labels): one fused compare-and-count per cell, 2 blocks of
    # temporaries; a binary search (jnp's "scan") kept 3 (measured on (1001, 203) over 2x4)
    method = "compare_all" if n <= COMPARE_ALL_MAX else "scan"

    def body(block, merged):
        block = physical.strip_ghosts(block, lay)
        values = merged[:n]
        flat, valid = _valid(block, lay)
        # positions in int32 (n < 2^31), widened only where they are an output
        where = jnp.searchsorted(values, flat, method=method).astype(jnp.int32)
        slot = jnp.where(valid, where, n)
        outs = []
        for what in want:
            if what == "values":
                outs.append(values)
            elif what == "inverse":
                outs.append(jnp.where(valid, where, 0).astype(idx_dtype).reshape(block.shape))
            elif what == "counts":
                local = jnp.zeros((n,), idx_dtype).at[slot].add(1, mode="drop")
                outs.append(jax.lax.psum(local, names))
            else:  # first occurrence: the smallest flat C-order index holding the value
                flat_index = jnp.zeros(block.shape, idx_dtype)
                for axis, index in enumerate(_block_indices(lay, block.shape)):
                    flat_index = flat_index * lay.shape[axis] + index.astype(idx_dtype)
                big = np.iinfo(idx_dtype).max
                local = jnp.full((n,), big, idx_dtype).at[slot].min(
                    flat_index.reshape(-1), mode="drop")
                outs.append(jax.lax.pmin(local, names))
        return tuple(outs)

    out_specs = tuple(inverse_lay.spec if w == "inverse" else PartitionSpec() for w in want)
    fn = compat.shard_map(body, mesh=lay.mesh, in_specs=(lay.spec, PartitionSpec()),
                          out_specs=out_specs, check_vma=False)
    out_lays = tuple(inverse_lay if w == "inverse" else flat_lay for w in want)

    def run(data, merged):
        outs = fn(physical.constrain(data, lay), merged)
        return tuple(physical.constrain(o, ol) if w == "inverse"
                     else physical.logical_to_physical(o, ol)
                     for o, ol, w in zip(outs, out_lays, want))
    return jax.jit(run), out_lays


def unique(x: DistArray, want: tuple[str, ...]) -> tuple[DistArray, ...]:
    """The unique_* results named in `want` (of OUTPUTS), in that order, for x with
    applies(x): values ascending; indices, counts split as default_layout((n,), x.layout);
    inverse in x's layout (no ghosts)."""
    lay = x.layout
    buf, counts = _local_fn(lay)(x.data)
    width = max(int(np.max(np.asarray(counts))), 1)  # host transfer 1: P integers
    merged, n = _merge_fn(lay, width)(buf, counts)
    n = int(n)  # host transfer 2: the output shape
    fn, out_lays = _finish_fn(lay, n, tuple(want))
    return tuple(DistArray._new(o, ol) for o, ol in zip(fn(x.data, merged), out_lays))
