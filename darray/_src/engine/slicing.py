"""Basic-key reads and writes (ints, slices, None) on the physical blocks, without gathering.

Left to the SPMD partitioner, ``x[2:5, 1]`` on an array split over both axes compiles to an
all-gather of the whole physical array (measured on CPU, jax 0.10 and 0.12), and a basic-key
write gathers the written axes too: O(global array) memory per device, which docs/design.md
(principle 2) forbids. Here every move is explicit, inside one shard_map:

* an int on a split axis is read by its owner (a clamped local read, zeros elsewhere) and
  shared by one psum of the output-sized result over that axis' mesh axes;
* a slice (any start, stop, step, negative included) on a split axis keeps the axis' mesh
  axes: output block q holds output cells [q*c_out, (q+1)*c_out), whose sources lie in blocks
  q + d for a small static set of shifts d (computed on the host from the static slice). Each
  shift is one lax.ppermute of an output-chunk-sized buffer, so the traffic per device is
  (number of shifts) x (output block), never the input;
* ints and slices on unsplit axes are local.

A write runs the same geometry backwards: the value, brought to the output layout of the key
(an output-sized move), travels to the blocks that own its cells by the same shifts, and each
device overwrites the cells of its own block that the key hits (a select, so x's other cells,
padding included, are untouched).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.engine import compaction
from darray._src.layout.layout import Layout
from darray._src.placement import physical

_INT = "int"
_NEW = "new"


def _axis_steps(lay: Layout, plan):
    """(axis, plan entry) for every plan entry that consumes an array axis, in axis order."""
    out, axis = [], 0
    for p in plan:
        if p[0] == _NEW:
            continue
        out.append((axis, p))
        axis += 1
    return out


def _slice_geometry(lay: Layout, axis: int, p):
    """(start, step, length) of a slice entry on `axis` (a whole-axis entry is (0, 1, n))."""
    n = lay.shape[axis]
    if p == (None, None, None):
        return 0, 1, n
    start, stop, step = p
    return start, step, len(range(start, -1 if stop is None else stop, step))


def _shifts(n_src_chunk: int, parts: int, start: int, step: int, m: int) -> tuple[int, ...]:
    """The block offsets d = (source block) - (output block) that a sliced split axis needs."""
    if m == 0:
        return ()
    c_out = -(-m // parts)
    j = np.arange(m)
    src_block = (start + j * step) // n_src_chunk
    return tuple(sorted({int(d) for d in np.unique(src_block - j // c_out)}))


def _is_identity(lay: Layout, axis: int, p) -> bool:
    start, step, m = _slice_geometry(lay, axis, p)
    return start == 0 and step == 1 and m == lay.shape[axis]


def _perm(lay: Layout, axis: int, shift: int):
    """Block pairs sending block b to block b - shift (receivers hold output block q, whose
    sources sit at q + shift)."""
    parts = lay.parts(axis)
    return [(b, b - shift) for b in range(parts) if 0 <= b - shift < parts]


def _names(split):
    return split[0] if len(split) == 1 else tuple(split)


def _my_block(lay: Layout, axis: int):
    """This device's block number along split `axis`, in an int wide enough for the axis's
    global indices: int32 arithmetic on `block * chunk + i` wraps past 2^31 cells (a read of
    a 1291^3 array flattened returned 0 past index 2^31 - 2)."""
    me = jax.lax.axis_index(_names(lay.split[axis]))
    if lay.shape[axis] + 2 * lay.chunk(axis) > 2**31 - 1 and jax.config.read("jax_enable_x64"):
        me = me.astype(np.int64)
    return me


# -- read -------------------------------------------------------------------------------------
def _gather_split_slice(block, lay: Layout, axis: int, p):
    """Output block along a split, sliced `axis`: each shift d brings, from block q + d, the
    output cells whose source it owns (an output-chunk-sized buffer); a select keeps, per cell,
    the buffer of the shift that owns it."""
    start, step, m = _slice_geometry(lay, axis, p)
    parts, c = lay.parts(axis), lay.chunk(axis)
    c_out = -(-m // parts)
    me = _my_block(lay, axis)
    i = jnp.arange(c_out)
    out = None
    for d in _shifts(c, parts, start, step, m):
        # as a sender: my block b = me serves output block q = me - d
        j_send = (me - d) * c_out + i
        r = start + j_send * step - me * c
        buf = jnp.take(block, jnp.clip(r, 0, c - 1), axis=axis)
        if d:
            buf = compat.ppermute_blocks(buf, lay.split[axis], _perm(lay, axis, d), lay.mesh)
        # as a receiver: output cell j of my block q = me comes from block src // c
        j = me * c_out + i
        src = start + j * step
        take = (src // c - me) == d
        shape = [1] * block.ndim
        shape[axis] = c_out
        take = take.reshape(shape)
        out = buf if out is None else jnp.where(take, buf, out)
    return out


@program_cache(SMALL)
def read_fn(lay: Layout, plan, out: Layout):
    """jit(data, int values) -> physical data of x[key] in layout `out` (see module doc)."""
    steps = _axis_steps(lay, plan)
    int_axes = [a for a, p in steps if p[0] == _INT]
    owned = [a for a in int_axes if lay.split[a]]
    reduce_names = tuple(nm for a in owned for nm in lay.split[a])
    out_block = out.block_shape

    def local(block, values):
        owner = True
        for a, p in steps:
            if p[0] == _INT:
                i = values[int_axes.index(a)]
                if lay.split[a]:
                    c = lay.chunk(a)
                    lo = _my_block(lay, a) * c
                    owner = owner & (i >= lo) & (i < lo + c)
                    i = jnp.clip(i - lo, 0, c - 1)
                block = jnp.take(block, jnp.reshape(i, (1,)), axis=a)
            elif not lay.split[a] and p != (None, None, None):
                index = [slice(None)] * block.ndim
                index[a] = slice(*p)
                block = block[tuple(index)]
        for a, p in steps:
            if p[0] != _INT and lay.split[a] and not _is_identity(lay, a, p):
                block = _gather_split_slice(block, lay, a, p)
        block = block.reshape(out_block)  # ints dropped, new axes in: output-sized
        if reduce_names:
            # the owner's cells plus zeros: summed on bit patterns so -0.0 stays -0.0
            block = compaction.exact_read(
                lambda b, own: jax.lax.psum(jnp.where(own, b, jnp.zeros((), b.dtype)),
                                            reduce_names), block, owner)
        return block

    def run(data, values):
        if 0 in out.shape or 0 in lay.shape:
            return physical.constrain(jnp.zeros(out.physical_shape, data.dtype), out)
        data = physical.constrain(data, lay)
        fn = compat.shard_map(local, mesh=lay.mesh, in_specs=(lay.spec, PartitionSpec()),
                              out_specs=out.spec)
        return physical.constrain(fn(data, values), out)
    return jax.jit(run)


# -- write ------------------------------------------------------------------------------------
def value_layout(lay: Layout, plan) -> Layout:
    """Where a written value is placed first: x's rank, 1 on int axes, the slice length on
    sliced axes with x's split (the read's output layout with new axes dropped)."""
    shape, split = [], []
    for a, p in _axis_steps(lay, plan):
        if p[0] == _INT:
            shape.append(1)
            split.append(())
        else:
            shape.append(_slice_geometry(lay, a, p)[2])
            split.append(lay.split[a])
    n = len(shape)
    return Layout(tuple(shape), lay.mesh, tuple(split), ((0, 0),) * n)


def _scatter_split_slice(vblock, lay: Layout, axis: int, p):
    """Value cells for my block of split `axis` (length chunk) and the mask of hit cells: the
    value blocks travel by the read's shifts, reversed."""
    start, step, m = _slice_geometry(lay, axis, p)
    parts, c = lay.parts(axis), lay.chunk(axis)
    c_out = -(-m // parts)
    me = _my_block(lay, axis)
    s = me * c + jnp.arange(c)
    hit = (s < lay.shape[axis]) & ((s - start) % step == 0)
    j = (s - start) // step
    hit = hit & (j >= 0) & (j < m)
    q = j // c_out
    out = None
    for d in _shifts(c, parts, start, step, m):
        buf = vblock
        if d:
            # output block q sends its value block to source block q + d
            buf = compat.ppermute_blocks(buf, lay.split[axis], _perm(lay, axis, -d), lay.mesh)
        picked = jnp.take(buf, jnp.clip(j - (me - d) * c_out, 0, c_out - 1), axis=axis)
        shape = [1] * vblock.ndim
        shape[axis] = c
        use = ((me - q) == d).reshape(shape)
        out = picked if out is None else jnp.where(use, picked, out)
    return out, hit


def _local_geometry(lay: Layout, axis: int, p, values, int_axes):
    """(index into the value along `axis`, mask of hit cells) for my block, no communication."""
    n_local = lay.chunk(axis) if lay.split[axis] else lay.shape[axis]
    lo = _my_block(lay, axis) * n_local if lay.split[axis] else 0
    r = lo + jnp.arange(n_local)
    if p[0] == _INT:
        return jnp.zeros(n_local, jnp.int32), r == values[int_axes.index(axis)]
    start, step, m = _slice_geometry(lay, axis, p)
    j = (r - start) // step
    hit = (r < lay.shape[axis]) & ((r - start) % step == 0) & (j >= 0) & (j < m)
    return jnp.clip(j, 0, max(m - 1, 0)), hit


@program_cache(SMALL)
def write_fn(lay: Layout, plan, src_layout, indexed_shape, donate: bool = False):
    """jit(data, value, int values) -> x's physical data with x[key] = value (see module doc).
    `value` is a DistArray's physical data in `src_layout`, or a host/jax value (None).
    `donate`: the program writes into `data`'s buffer (engine/donation.py decided it may)."""
    steps = _axis_steps(lay, plan)
    vlay = value_layout(lay, plan)
    int_axes = [a for a, p in steps if p[0] == _INT]

    def local(block, vblock, values):
        mask = jnp.ones((1,) * block.ndim, bool)
        for a, p in steps:
            shape = [1] * block.ndim
            shape[a] = block.shape[a]
            if p[0] != _INT and lay.split[a]:
                vblock, hit = _scatter_split_slice(vblock, lay, a, p)
            else:
                index, hit = _local_geometry(lay, a, p, values, int_axes)
                if p[0] != _INT:
                    vblock = jnp.take(vblock, index, axis=a)
            mask = mask & hit.reshape(shape)
        return jnp.where(mask, vblock.astype(block.dtype), block)

    def run(data, value, values):
        data = physical.constrain(data, lay)
        if 0 in vlay.shape or 0 in lay.shape:
            return data
        if src_layout is not None:
            value = physical.to_logical(value, src_layout)
        # an output-sized move: broadcast to the indexed shape, new axes dropped, ints as 1
        value = jnp.broadcast_to(jnp.asarray(value).astype(data.dtype), indexed_shape)
        value = physical.logical_to_physical(value.reshape(vlay.shape), vlay)
        fn = compat.shard_map(local, mesh=lay.mesh,
                              in_specs=(lay.spec, vlay.spec, PartitionSpec()),
                              out_specs=lay.spec)
        return physical.constrain(fn(data, value, values), lay)
    return jax.jit(run, donate_argnums=(0,) if donate else ())
