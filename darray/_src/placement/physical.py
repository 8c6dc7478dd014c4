"""Moving between the logical global array and its physical (padded, haloed) storage.

These are the only functions that know how padding and ghost cells sit in the physical
jax.Array; everything else asks the Layout for sizes and calls these to convert.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.layout import host as host_reads
from darray._src.layout.layout import Layout


def sharding_of(layout: Layout) -> NamedSharding:
    return NamedSharding(layout.mesh, layout.spec)


def constrain(data, layout: Layout):
    """Pin a physical array to its layout's sharding (see compat.constrain for why two ways).
    A one-device layout is not pinned: a constraint would commit its data to the device, and
    small arrays stay uncommitted (placement.local_mesh), free to move where they are used."""
    if layout.mesh.size == 1:
        return data
    return compat.constrain(data, layout.mesh, layout.spec)


def host_to_physical(host: np.ndarray, layout: Layout) -> jax.Array:
    """Place host data so that each device receives only its own block (no full copy per device).

    Works in multi-process runs too: each process supplies the blocks of its own devices.
    With ghosts in the layout, each block is ``[lo ghosts | owned | hi ghosts | padding]`` and
    the ghosts hold what ``x.halo(boundary="periodic")`` would put there (the host has every
    cell, so no communication is needed to fill them).
    """
    if layout.has_halo:
        return _host_to_haloed(host, layout)
    physical = layout.physical_shape

    def block(index):
        # `index` is a tuple of slices into the physical array; map each to logical cells.
        out_shape, src = [], []
        for axis, sl in enumerate(index):
            start, stop, _ = sl.indices(physical[axis])
            out_shape.append(stop - start)
            src.append(slice(min(start, layout.shape[axis]), min(stop, layout.shape[axis])))
        piece = host[tuple(src)]
        if piece.shape == tuple(out_shape):
            return np.array(piece, order="C")
        out = np.zeros(out_shape, host.dtype)
        out[tuple(slice(0, n) for n in piece.shape)] = piece
        return out

    return jax.make_array_from_callback(physical, sharding_of(layout), block)


def _haloed_sources(layout: Layout, axis: int, start: int, stop: int):
    """For physical positions [start, stop) of `axis`: the index into the periodically padded
    host array (np.pad(host, halo, "wrap")) holding that cell, or -1 for padding."""
    lo, hi = layout.halo[axis]
    width = lo + layout.chunk(axis) + hi
    pos = np.arange(start, stop)
    block, local = pos // width, pos % width
    extent = np.array([layout.block_extent(axis, int(b)) for b in block], np.int64)
    begin = np.array([layout.block_start(axis, int(b)) for b in block], np.int64)
    return np.where(local < lo + extent + hi, begin + local, -1)


def _host_to_haloed(host: np.ndarray, layout: Layout) -> jax.Array:
    wrapped = np.pad(host, layout.halo, mode="wrap") if host.size else host
    physical = layout.physical_shape

    def block(index):
        sources = [_haloed_sources(layout, axis, *sl.indices(physical[axis])[:2])
                   for axis, sl in enumerate(index)]
        piece = wrapped[np.ix_(*[np.maximum(s, 0) for s in sources])] if wrapped.size else \
            np.zeros([len(s) for s in sources], host.dtype)
        valid = np.ones(piece.shape, bool)
        for axis, s in enumerate(sources):
            valid &= (s >= 0).reshape((-1,) + (1,) * (len(sources) - axis - 1))
        return np.where(valid, piece, np.zeros((), host.dtype)).astype(host.dtype)

    return jax.make_array_from_callback(physical, sharding_of(layout), block)


def logical_to_physical(x, layout: Layout):
    """Pad a logical jax array (any sharding) at the end of each split axis; pin the result."""
    pads = [(0, p - n) for p, n in zip(layout.padded_shape, layout.shape)]
    if any(hi for _, hi in pads):
        x = jnp.pad(x, pads)
    return constrain(x, layout)


def physical_to_logical(data, layout: Layout):
    """Strip ghosts and padding from a physical jax array, giving the logical global array."""
    for axis in range(layout.ndim):
        data = strip_axis(data, layout, axis)
    return data


@program_cache(SMALL)
def _to_logical_fn(layout: Layout):
    return jax.jit(lambda data: _pinned_logical(data, layout))


def to_logical(data, layout: Layout):
    """`physical_to_logical` pinned to the layout's sharding at both ends (JAX shards uneven
    logical arrays itself; unpinned, XLA tends to replicate them). Always through the cached
    jit, also for tracers: under eager `jax.grad` a bare constraint of an uneven logical shape
    raises IndivisibleError, while inside jit it is accepted.
    """
    return _to_logical_fn(layout)(data)


def _pinned_logical(data, layout: Layout):
    logical = physical_to_logical(constrain(data, layout), layout)
    return constrain(logical, layout.without_halo())


def strip_axis(data, layout: Layout, axis: int):
    """The physical array with the ghosts and padding of one axis dropped."""
    lo, hi = layout.halo[axis]
    n, chunk, parts = layout.shape[axis], layout.chunk(axis), layout.parts(axis)
    if lo or hi:
        shape = data.shape
        blocks = data.reshape(shape[:axis] + (parts, lo + chunk + hi) + shape[axis + 1:])
        blocks = jax.lax.slice_in_dim(blocks, lo, lo + chunk, axis=axis + 1)
        data = blocks.reshape(shape[:axis] + (parts * chunk,) + shape[axis + 1:])
    if data.shape[axis] != n:
        data = jax.lax.slice_in_dim(data, 0, n, axis=axis)
    return data


def strip_ghosts(block, layout: Layout):
    """One device's block (inside shard_map) with its ghost cells dropped: what it owns, plus
    its padding at the end of split axes."""
    for axis, (lo, hi) in enumerate(layout.halo):
        if lo or hi:
            block = jax.lax.slice_in_dim(block, lo, lo + layout.chunk(axis), axis=axis)
    return block


def valid_mask(layout: Layout):
    """Boolean physical-shaped mask (inside jit): True on logical cells, False on padding and
    ghosts; None where the layout has neither. Built from iotas, so it costs no communication
    and no memory until fused."""
    shape = layout.physical_shape
    mask = None
    for axis in range(layout.ndim):
        lo, hi = layout.halo[axis]
        if not (lo or hi or layout.padded_shape[axis] != layout.shape[axis]):
            continue
        block = lo + layout.chunk(axis) + hi
        i = jax.lax.broadcasted_iota(np.int32, shape, axis)
        local, blk = i % block, i // block
        logical_index = blk * layout.chunk(axis) + (local - lo)
        ok = ((local >= lo) & (local < lo + layout.chunk(axis))
              & (logical_index < layout.shape[axis]))
        mask = ok if mask is None else (mask & ok)
    return mask


def masked_physical(data, layout: Layout, fill):
    """Physical data with padding and ghosts replaced by `fill` (e.g. the identity of a
    reduction), so a reduction over the physical array is exact and needs only an all-reduce."""
    mask = valid_mask(layout)
    if mask is None:
        return data
    return jnp.where(mask, data, jnp.asarray(fill, data.dtype))


def physical_to_host(data, layout: Layout, what: str = "np.asarray(x)") -> np.ndarray:
    """The logical global array on the host. Never a collective: data with blocks on other
    processes raises `host.NonLocalDataError` naming `what` and the collective to call
    (`gather_to_host`, darray.distributed.gather) instead."""
    if 0 in layout.shape:
        # jax fails to bring some empty sharded arrays to the host; there is nothing to bring.
        return np.zeros(layout.shape, data.dtype)
    if getattr(data, "is_fully_addressable", True):
        host = np.asarray(data)
    elif data.is_fully_replicated:  # every process holds all of it
        host = np.asarray(data.addressable_shards[0].data)
    else:
        raise host_reads.refusal(layout, what)
    for axis in range(layout.ndim):
        lo, hi = layout.halo[axis]
        if lo or hi:
            parts, chunk = layout.parts(axis), layout.chunk(axis)
            shape = host.shape
            host = host.reshape(shape[:axis] + (parts, lo + chunk + hi) + shape[axis + 1:])
            host = np.take(host, np.arange(lo, lo + chunk), axis=axis + 1)
            host = host.reshape(shape[:axis] + (parts * chunk,) + shape[axis + 1:])
        host = np.take(host, np.arange(layout.shape[axis]), axis=axis)
    return host


@program_cache(SMALL)
def _filled(layout: Layout, value, dtype):
    shape = layout.physical_shape
    return jax.jit(lambda: jnp.full(shape, value, dtype), out_shardings=sharding_of(layout))


def filled(layout: Layout, value, dtype) -> jax.Array:
    """A physical array of `value`, created directly sharded (never whole on one device)."""
    return _filled(layout, value, np.dtype(dtype))()


def gather_to_host(data, layout: Layout) -> np.ndarray:
    """The logical global array on the host of every process. Collective: every process of the
    array must call it, in the same order (darray.distributed.gather)."""
    if host_reads.spans_other_processes(data):
        data = np.asarray(multihost_utils.process_allgather(data, tiled=True))
    return physical_to_host(data, layout)
