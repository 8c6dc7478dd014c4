"""Compaction (boolean masks, nonzero) and other data-dependent-shape kernels, computed where
XLA's SPMD partitioner cannot get them wrong.

Why not ``jnp.nonzero(size=...)`` through the partitioner: XLA miscompiles it on sliced,
partly replicated operands (a 1-D array split over one axis of a (2, 4) mesh gave
``[6 .. 12, 0]`` for ``x[x > 4]``; it reproduces with jax alone, on jax 0.10). The partitioner
decides how to split the cumulative sum and the scatter inside nonzero; any version may choose
differently. So nothing here hands a data-dependent operation to the partitioner:

* `compact` / `expand` run inside ``shard_map`` on the physical blocks. Every device ranks its
  own hits (a local cumulative count plus per-row totals of the blocks before it, exchanged by
  ``psum`` / ``all_gather``), scatters them into a buffer at their global C-order rank, and one
  ``psum_scatter`` over the mask's mesh axes sums the buffers (each slot is written by exactly
  one device) straight into the split output. The partitioner only sees collectives whose
  meaning is fixed. Communication: per-row totals plus one reduce-scatter of the output.
* `run_replicated` runs a kernel whose every step needs the whole array anyway (unique values
  sort it; repeat with per-element counts) inside ``shard_map`` on fully replicated operands:
  each device computes the whole answer on its own, nothing is partitioned.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import COMPACTION, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine import compaction_rows
from darray._src.engine.placing import asarray
from darray._src.layout.layout import Layout
from darray._src.placement import physical


def concrete_count(arr: DistArray, what: str) -> None:
    """The result shape of `what` depends on values: under jit there is none to read. This is
    JAX's own limit (shapes are static), reported the way JAX reports it."""
    if isinstance(arr, DistArray) and compat.is_tracer(arr.data):
        raise jax.errors.ConcretizationTypeError(
            arr.data,  # type: ignore[arg-type]  # a Tracer (checked above); jax types it so
            f"{what}: the result's shape depends on the values, which jit cannot "
            "trace; call it outside jit, or use darray.where(mask, x, fill) to keep "
            "the shape static")


def plain_like(arr: DistArray, spec) -> DistArray:
    """`arr` without ghosts, split as `spec` (moves data only if needed)."""
    lay = arr.layout
    spec = tuple(tuple(s) for s in spec)
    if not lay.has_halo and lay.split == spec:
        return arr
    return asarray(arr, mesh=arr.mesh, spec=tuple(spec))


# -- the in-block pieces -----------------------------------------------------------------------
def _block_index(names, sizes):
    """Linear block number over mesh axes `names` (major to minor), inside shard_map."""
    index = jnp.zeros((), jnp.int32)
    for name in names:
        index = index * sizes[name] + jax.lax.axis_index(name)
    return index


def _global_index(lay: Layout, axis: int, shape, dtype):
    """Global logical index along `axis` of every cell of this device's (ghost-free) block."""
    sizes = lay.mesh_shape
    start = _block_index(lay.split[axis], sizes).astype(dtype) * lay.chunk(axis)
    return start + jax.lax.broadcasted_iota(dtype, shape, axis)


def _hits_and_ranks(mask_block, lay: Layout, idx_dtype):
    """(hits, ranks): which cells of this block are logical nonzeros, and for each its position
    in the C-order list of all nonzeros of the global array.

    rank(i) = sum over axes k of the nonzeros in the cells that agree with i on axes < k and
    come before i on axis k. Per axis k: S_k (nonzeros per prefix (i_0..i_k), summed over later
    axes: local sum + psum over the mesh axes splitting later axes), its exclusive cumulative
    sum along k inside the block, plus the totals of the blocks before this one along k
    (all_gather of per-prefix totals with the block numbers, so no ordering is assumed).
    """
    sizes = lay.mesh_shape
    shape = mask_block.shape
    ndim = len(shape)
    hits = mask_block != 0
    for axis in range(ndim):
        if lay.parts(axis) * lay.chunk(axis) != lay.shape[axis]:
            hits = hits & (_global_index(lay, axis, shape, jnp.int32) < lay.shape[axis])
    counts = hits.astype(idx_dtype)
    rank = jnp.zeros(shape, idx_dtype)
    for k in range(ndim):
        local = counts.sum(axis=tuple(range(k + 1, ndim))) if k + 1 < ndim else counts
        later = tuple(nm for a in range(k + 1, ndim) for nm in lay.split[a])
        per_prefix = jax.lax.psum(local, later) if later else local
        before = jnp.cumsum(per_prefix, axis=k) - per_prefix
        names = lay.split[k]
        if names:
            totals = per_prefix.sum(axis=k)
            mine = _block_index(names, sizes)
            all_totals = jax.lax.all_gather(totals, names)
            all_index = jax.lax.all_gather(mine, names)
            earlier = (all_index < mine).reshape((-1,) + (1,) * totals.ndim)
            offset = jnp.sum(jnp.where(earlier, all_totals, 0), axis=0, dtype=idx_dtype)
            before = before + jnp.expand_dims(offset, k)
        rank = rank + before.reshape(before.shape + (1,) * (ndim - k - 1))
    return hits, rank


_UINT = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint64}


def _to_bits(block):
    """Real values as unsigned integers of their bit patterns (bool as uint8)."""
    dtype = np.dtype(block.dtype)
    if dtype == np.bool_:
        return block.astype(jnp.uint8)
    if dtype.kind == "f":
        return jax.lax.bitcast_convert_type(block, _UINT[dtype.itemsize])
    return block


def _from_bits(bits, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return bits.astype(jnp.bool_)
    if dtype.kind == "f":
        return jax.lax.bitcast_convert_type(bits, dtype)
    return bits


def _on_bits(fn, a, *ops):
    dtype = np.dtype(a.dtype)
    if dtype.kind == "c":
        return jax.lax.complex(_on_bits(fn, a.real, *ops), _on_bits(fn, a.imag, *ops)).astype(dtype)
    return _from_bits(fn(_to_bits(a), *ops), dtype)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _exact_float(fn, a, *ops):
    return _on_bits(fn, a, *ops)


@_exact_float.defjvp
def _exact_float_jvp(fn, primals, tangents):
    # bit patterns have no derivative; fn is linear in `a`, so the tangent is fn(tangent)
    # (a tangent's sign of zero does not matter)
    a, *ops = primals
    return _on_bits(fn, a, *ops), fn(tangents[0], *ops)


def exact_read(fn: Callable, a, *ops):
    """fn(a, *ops) for fn linear in `a` whose data movement XLA (or darray) does as a sum of one
    value with zeros, computed on bit patterns: a float sum turns -0.0 into +0.0 (measured on
    CPU: XLA partitions a gather from a split operand as a masked local gather plus an
    all-reduce sum). On unsigned integers the sum is exact. `ops` (index arrays, masks) are
    passed explicitly so that the custom derivative closes over no tracer."""
    if np.dtype(a.dtype).kind in "fc":
        return _exact_float(fn, a, *ops)
    return _on_bits(fn, a, *ops)


# -- compaction ----------------------------------------------------------------------------------
def _out_layout(mesh, count, names, rest_shape=(), rest_split=()) -> Layout:
    shape = (count,) + tuple(rest_shape)
    split = (tuple(names),) + tuple(tuple(s) for s in rest_split)
    return Layout(shape, mesh, split, ((0, 0),) * len(shape))


@program_cache(COMPACTION)
def _compact_fn(mask_lay: Layout, payload_lays: tuple, count: int, with_indices: bool):
    k = mask_lay.ndim
    names = mask_lay.used_mesh_axes
    parts = int(np.prod([mask_lay.mesh_shape[n] for n in names])) if names else 1
    padded = parts * -(-count // parts)
    idx_dtype = _dt.default_int()
    scatter_names = names[0] if len(names) == 1 else names

    def place(item, slots):
        """Each hit at its rank in a zero buffer; the buffers of the mask's devices summed
        (one writer per slot) into the split output. A scatter-add: linear and transposable."""
        rest = item.shape[k:]
        buf = jnp.zeros((padded,) + rest, item.dtype)
        # the leading count is spelled out: reshape's -1 divides by zero when rest is empty
        lead = int(np.prod(item.shape[:k], dtype=np.int64))
        buf = buf.at[slots].add(item.reshape((lead,) + rest), mode="drop")
        if names:
            buf = jax.lax.psum_scatter(buf, scatter_names, scatter_dimension=0, tiled=True)
        return buf

    def body(mask_block, *payload_blocks):
        mask_block = physical.strip_ghosts(mask_block, mask_lay)
        hits, rank = _hits_and_ranks(mask_block, mask_lay, idx_dtype)
        slots = jnp.where(hits, rank, padded).reshape(-1)
        items = []
        if with_indices:
            items += [_global_index(mask_lay, a, mask_block.shape, idx_dtype) for a in range(k)]
        items += [physical.strip_ghosts(b, lay) for b, lay in zip(payload_blocks, payload_lays)]
        outs = []
        for item in items:
            outs.append(exact_read(place, item, slots))
        return tuple(outs)

    out_lays = []
    if with_indices:
        out_lays += [_out_layout(mask_lay.mesh, count, names) for _ in range(k)]
    out_lays += [_out_layout(mask_lay.mesh, count, names, lay.shape[k:], lay.split[k:])
                 for lay in payload_lays]
    fn = compat.shard_map(body, mesh=mask_lay.mesh,
                          in_specs=(mask_lay.spec,) + tuple(lay.spec for lay in payload_lays),
                          out_specs=tuple(lay.spec for lay in out_lays), check_vma=False)

    def run(mask_data, *payload_datas):
        mask_data = physical.constrain(mask_data, mask_lay)
        payload_datas = [physical.constrain(d, lay) for d, lay in zip(payload_datas, payload_lays)]
        return tuple(physical.constrain(o, lay) for o, lay in zip(fn(mask_data, *payload_datas),
                                                                   out_lays))
    return jax.jit(run), tuple(out_lays)


def count_true(mask: DistArray) -> int:
    """How many cells of `mask` are nonzero: the blocks' counts (padding and ghosts masked out)
    summed by one all-reduce. Counted here, not by statistical.count_nonzero, so the engine
    depends on no namespace section."""
    return int(_count_fn(mask.layout)(mask.data))


@program_cache(COMPACTION)
def _count_fn(layout: Layout):
    return jax.jit(
        lambda data: jnp.count_nonzero(physical.masked_physical(data != 0, layout, False)))


def compact(mask: DistArray, payloads: Sequence[DistArray] = (), *, with_indices: bool,
            count: int | None = None):
    """C-order nonzeros of `mask`: (index arrays if with_indices) + (payload[mask] for each
    payload). A payload has mask's shape (and split) on its leading axes; its other axes are
    kept (with their split). Outputs are split over the mesh axes the mask uses."""
    concrete_count(mask, "boolean-mask selection / nonzero")
    mask_spec = mask.layout.split
    # the mask's split must match the payloads' leading split; choose the first payload's
    mask_spec = payloads[0].layout.split[:mask.ndim] if payloads else mask_spec
    mask = plain_like(mask, mask_spec)
    payloads = [p if p.layout.split[:mask.ndim] == mask.layout.split
                else plain_like(p, tuple(mask.layout.split) + tuple(p.layout.split[mask.ndim:]))
                for p in payloads]
    if mask.ndim == 1 and mask.layout.split[0]:  # rows of a split axis: compaction_rows.py
        outs = compaction_rows.compact_rows(mask, payloads, with_indices)
        return empty_results(mask, payloads, with_indices) if outs is None else outs
    if count is None:
        count = count_true(mask)
    if count == 0:
        return empty_results(mask, payloads, with_indices)
    fn, out_lays = _compact_fn(mask.layout, tuple(p.layout for p in payloads), count,
                               with_indices)
    outs = fn(mask.data, *[p.data for p in payloads])
    return tuple(DistArray._new(o, lay) for o, lay in zip(outs, out_lays))


def empty_results(mask, payloads, with_indices):
    """Nothing selected: empty arrays in the layouts a selection would have had."""
    k, names = mask.ndim, (mask.layout.used_mesh_axes,)
    outs = []
    if with_indices:
        outs += [asarray(np.zeros((0,), _dt.default_int()), mesh=mask.mesh, spec=names)
                 for _ in range(k)]
    outs += [asarray(np.zeros((0,) + p.shape[k:], p.dtype), mesh=mask.mesh,
                     spec=names + tuple(p.layout.split[k:])) for p in payloads]
    return tuple(outs)


# -- expansion (x[mask] = values) ----------------------------------------------------------------
@program_cache(COMPACTION)
def _expand_fn(x_lay: Layout, mask_lay: Layout, count: int):
    k = mask_lay.ndim
    idx_dtype = _dt.default_int()
    out_lay = x_lay.without_halo()
    rest_axes = range(k, x_lay.ndim)

    def body(x_block, mask_block, values):
        x_block = physical.strip_ghosts(x_block, x_lay)
        mask_block = physical.strip_ghosts(mask_block, mask_lay)
        hits, rank = _hits_and_ranks(mask_block, mask_lay, idx_dtype)
        picked = values[jnp.clip(rank, 0, count - 1).reshape(-1)]   # (cells, *padded rest)
        for a in rest_axes:
            if x_lay.split[a]:
                start = _block_index(x_lay.split[a], x_lay.mesh_shape) * x_lay.chunk(a)
                picked = jax.lax.dynamic_slice_in_dim(picked, start, x_lay.chunk(a),
                                                      axis=a - k + 1)
        picked = picked.reshape(x_block.shape)
        select = hits.reshape(hits.shape + (1,) * (x_block.ndim - k))
        return jnp.where(select, picked.astype(x_block.dtype), x_block)

    fn = compat.shard_map(body, mesh=x_lay.mesh,
                          in_specs=(x_lay.spec, mask_lay.spec, PartitionSpec()),
                          out_specs=out_lay.spec, check_vma=False)
    rest_shape = x_lay.shape[k:]
    rest_pad = [(0, x_lay.padded_shape[a] - x_lay.shape[a]) for a in rest_axes]

    def run(x_data, mask_data, values):
        values = jnp.broadcast_to(jnp.asarray(values), (count,) + rest_shape)
        values = jnp.pad(values, [(0, 0)] + rest_pad)
        values = compat.constrain(values, x_lay.mesh, PartitionSpec())
        out = fn(physical.constrain(x_data, x_lay), physical.constrain(mask_data, mask_lay),
                 values)
        return physical.constrain(out, out_lay)
    return jax.jit(run), out_lay


def expand(x: DistArray, mask: DistArray, values) -> DistArray:
    """x with the cells selected by `mask` (over x's leading axes) replaced, in C order, by
    `values` (broadcast to (count, *x.shape[mask.ndim:]))."""
    concrete_count(mask, "x[mask] = values")
    count = count_true(mask)
    rest = x.shape[mask.ndim:]
    vshape = tuple(values.shape) if hasattr(values, "shape") else np.shape(values)
    try:
        ok = np.broadcast_shapes(vshape, (count,) + rest) == (count,) + rest
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"value of shape {vshape} cannot be broadcast to the {count} selected "
                         f"cells of shape {(count,) + rest}")
    mask = plain_like(mask, x.layout.split[:mask.ndim])
    if count == 0:
        return plain_like(x, x.layout.split)
    if isinstance(values, DistArray):
        values = values.to_jax()
    fn, out_lay = _expand_fn(x.layout, mask.layout, count)
    return DistArray._new(fn(x.data, mask.data, values), out_lay)


# -- replicated kernels --------------------------------------------------------------------------
def run_replicated(fn: Callable, arrays: Sequence[DistArray], out_layouts, static=()):
    """fn(*logical_arrays, *static) computed whole on every device (inside shard_map on
    replicated operands, so the partitioner splits nothing), outputs then placed in
    `out_layouts` (a tuple of Layouts; None returns that output as the replicated jax
    array)."""
    mesh = arrays[0].mesh
    jitted = _replicated_fn(fn, tuple(a.layout for a in arrays), tuple(out_layouts), static,
                            mesh)
    outs = jitted(*[a.data for a in arrays])
    return tuple(o if lay is None else DistArray._new(o, lay) for o, lay in zip(outs, out_layouts))


@program_cache(COMPACTION)
def _replicated_fn(fn, in_lays, out_lays, static, mesh):
    whole = PartitionSpec()
    body = compat.shard_map(lambda *xs: tuple(fn(*xs, *static)), mesh=mesh,
                            in_specs=(whole,) * len(in_lays),
                            out_specs=(whole,) * len(out_lays), check_vma=False)

    def run(*datas):
        logical = [compat.constrain(physical.to_logical(d, lay), mesh, whole)
                   for d, lay in zip(datas, in_lays)]
        return tuple(o if lay is None else physical.logical_to_physical(o, lay)
                     for o, lay in zip(body(*logical), out_lays))
    return jax.jit(run)


def blockwise_with_whole(fn: Callable, x: DistArray, whole: Sequence[DistArray], static=()):
    """fn(x_block, *whole_arrays, *static) on each device's ghost-free block of x, the `whole`
    arrays replicated to every device; output in x's layout without ghosts. Inside shard_map,
    so a data-dependent kernel (a search, a membership test) is never partitioned by XLA."""
    jitted, out = _blockwise_fn(fn, x.layout, tuple(a.layout for a in whole), static)
    return DistArray._new(jitted(x.data, *[a.data for a in whole]), out)


@program_cache(COMPACTION)
def _blockwise_fn(fn, x_lay: Layout, whole_lays, static):
    whole = PartitionSpec()
    out_lay = x_lay.without_halo()
    mesh = x_lay.mesh
    body = compat.shard_map(
        lambda block, *rest: fn(physical.strip_ghosts(block, x_lay), *rest, *static), mesh=mesh,
        in_specs=(x_lay.spec,) + (whole,) * len(whole_lays), out_specs=out_lay.spec,
        check_vma=False)

    def run(data, *datas):
        rest = [compat.constrain(physical.to_logical(d, lay), mesh, whole)
                for d, lay in zip(datas, whole_lays)]
        return physical.constrain(body(physical.constrain(data, x_lay), *rest), out_lay)
    return jax.jit(run), out_lay
