"""Pure-JAX halo exchange: `lax.ppermute` of face-sized buffers inside one `shard_map`.

Executes the static per-axis plans of `darray._src.plans.halo_plan`. Axes are exchanged one after
the other, each sending slabs that already carry the ghosts of the axes before it, so corner and
edge ghosts arrive without extra messages (and match `np.pad`, which pads axis by axis too).
Every operation used (slice, gather with per-device index rows, select, ppermute, concatenate,
dynamic_update_slice) is linear in the data with JAX's own transpose rule, so the VJP of the
fill is the sum-back of ghosts into their owners (`halo_reduce`) and the JVP is the fill itself.
The executor is called inside jit and does not pin shardings (the caller does).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.base import compat
from darray._src.layout.layout import Layout
from darray._src.plans import halo_plan as planning


def _row(table: np.ndarray, block):
    """Block `block`'s row of a per-block table: a numpy constant when every row is the same
    (then XLA sees static indices), else a dynamic lookup by the device's block index."""
    if table.shape[0] == 1 or (table == table[0]).all():
        return table[0]
    return jnp.asarray(table)[block]


def _take(data, index, axis: int):
    """data[..., index, ...] along `axis`; a plain slice when `index` is a static run."""
    if isinstance(index, np.ndarray):
        if len(index) and (np.diff(index) == 1).all():
            return lax.slice_in_dim(data, int(index[0]), int(index[0]) + len(index), axis=axis)
        return jnp.take(data, jnp.asarray(index), axis=axis)
    return jnp.take(data, index, axis=axis, mode="clip")


def _select(mask, on_true, on_false, axis: int, ndim: int):
    """where(mask along `axis`, ...); skipped when a static mask is all True."""
    if isinstance(mask, np.ndarray) and mask.all():
        return on_true
    shape = [1] * ndim
    shape[axis] = -1
    return jnp.where(jnp.reshape(jnp.asarray(mask), shape), on_true, on_false)


def _side(blk, side: planning.SidePlan, nonempty, axis, names, block, fill_value, mesh, permute):
    """The ghost slab of one side (shape of `blk` with `axis` -> width) on this device."""
    if side.covered_by_one_round(nonempty):
        run = side.rounds[0].static_send
        assert run is not None  # covered_by_one_round checked it
        face = lax.slice_in_dim(blk, run[0], run[1], axis=axis)
        return permute(face, names, side.rounds[0].perm, mesh)
    shape = list(blk.shape)
    shape[axis] = side.width
    ghosts = jnp.zeros(shape, blk.dtype)
    if side.local is not None:
        index = _row(side.local, block)
        ghosts = _select(index >= 0, _take(blk, jnp.maximum(index, 0) if not isinstance(
            index, np.ndarray) else np.maximum(index, 0), axis), ghosts, axis, blk.ndim)
    for rnd in side.rounds:
        run = rnd.static_send
        face = (lax.slice_in_dim(blk, run[0], run[1], axis=axis) if run is not None
                else _take(blk, _row(rnd.send, block), axis))
        got = permute(face, names, rnd.perm, mesh)
        index = _row(rnd.recv, block)
        safe = np.maximum(index, 0) if isinstance(index, np.ndarray) else jnp.maximum(index, 0)
        ghosts = _select(index >= 0, _take(got, safe, axis), ghosts, axis, blk.ndim)
    if side.negate is not None:  # odd mirrors (Dirichlet walls): linear, so halo_reduce follows
        ghosts = _select(~_row(side.negate, block), ghosts, -ghosts, axis, blk.ndim)
    if side.constant is not None and fill_value is not None:
        ghosts = _select(~_row(side.constant, block), ghosts,
                         jnp.asarray(fill_value, blk.dtype), axis, blk.ndim)
    return ghosts


def _exchange_axis(out, plan: planning.AxisPlan, axis: int, names, halo, fill_value, mesh,
                   permute):
    """Fill axis `axis`'s ghosts of `out`, the block already padded to its final shape.

    Writing faces into one preallocated block (in place for XLA) costs one pass over the block
    in total, where concatenating per axis would copy it once per axis. The sent slab spans
    the ghosts of the axes before `axis` (filled already: corners) and the interior of the
    axes after it.
    """
    block = lax.axis_index(names) if plan.parts > 1 else 0
    lo = halo[axis][0]
    starts = [0 if a < axis else halo[a][0] for a in range(out.ndim)]
    sizes = [out.shape[a] if a < axis else out.shape[a] - sum(halo[a]) for a in range(out.ndim)]
    interior = lax.slice(out, starts, [s + n for s, n in zip(starts, sizes)])
    nonempty = plan.nonempty
    ghosts_lo = _side(interior, plan.lo, nonempty, axis, names, block, fill_value, mesh, permute)
    ghosts_hi = _side(interior, plan.hi, nonempty, axis, names, block, fill_value, mesh, permute)
    if plan.lo.width:
        out = lax.dynamic_update_slice(out, ghosts_lo, [*starts[:axis], 0, *starts[axis + 1:]])
    if plan.hi.width:
        # The short block's hi ghosts go right after its owned cells (see plan.py's picture).
        hi_start = (lo + jnp.asarray(plan.extent, np.int32)[block] if plan.uneven
                    else lo + plan.chunk)
        index = [*starts]
        index[axis] = hi_start
        index = [jnp.asarray(i, np.int32) for i in index]
        out = lax.dynamic_update_slice(out, ghosts_hi, index)
    return out


def plans_for(layout: Layout, widths, rules) -> tuple:
    """One AxisPlan per axis (None where the axis gets no ghosts)."""
    out: list[planning.AxisPlan | None] = []
    for axis, ((lo, hi), rule) in enumerate(zip(widths, rules)):
        if not (lo or hi):
            out.append(None)
            continue
        out.append(planning.axis_plan(layout.shape[axis], layout.parts(axis), layout.chunk(axis),
                                      lo, hi, rule))
    return tuple(out)


def strip_block(blk, layout: Layout):
    """A device block without its ghosts: the `chunk` cells after the lo ghosts, per axis."""
    for axis, (lo, _) in enumerate(layout.halo):
        if lo or layout.halo[axis][1]:
            blk = lax.slice_in_dim(blk, lo, lo + layout.chunk(axis), axis=axis)
    return blk


_NUMPY_MODE = {"periodic": "wrap", "constant": "constant", "edge": "edge", "reflect": "reflect",
               "symmetric": "symmetric", "antisymmetric": "symmetric", "antireflect": "reflect"}


def _local_pad(blk, axis: int, lo: int, hi: int, rule: str, value):
    """Ghosts of an axis held whole by every block: one jnp.pad along it (np.pad's rules)."""
    widths = [(0, 0)] * blk.ndim
    widths[axis] = (lo, hi)
    if rule == "constant":
        return jnp.pad(blk, widths, constant_values=jnp.zeros((), blk.dtype) if value is None
                       else value)
    padded = jnp.pad(blk, widths, mode=_NUMPY_MODE[rule])
    if rule in planning.NEGATED:  # the odd mirror: np.pad's even one with the ghosts negated
        n = blk.shape[axis]
        sign = np.concatenate([-np.ones(lo), np.ones(n), -np.ones(hi)]).astype(blk.dtype)
        shape = [1] * blk.ndim
        shape[axis] = -1
        padded = padded * sign.reshape(shape)
    return padded


def _pad_block(blk, value, plans, rules, layout: Layout, halo, permute):
    """One block without ghosts -> with ghosts, axis by axis in order (corners as np.pad).

    An axis in one part (unsplit, or split only over mesh axes of size 1) is padded locally:
    the zero pad, slices, selects and size-1 ppermutes of the exchange cost 2.4-2.7x a jnp.pad
    on one H100. A run of consecutive split axes is padded with zeros once and exchanged in
    place (one pass over the block). Both are linear in the block (halo_reduce transposes it).
    """
    ndim, axis = blk.ndim, 0
    while axis < ndim:
        if plans[axis] is None:
            axis += 1
        elif plans[axis].parts == 1:
            lo, hi = halo[axis]
            blk = _local_pad(blk, axis, lo, hi, rules[axis], value)
            axis += 1
        else:
            end = axis
            while end < ndim and (plans[end] is None or plans[end].parts > 1):
                end += 1
            # Axes before the run carry their ghosts already, axes after it get theirs later.
            run = [halo[a] if a < end else (0, 0) for a in range(ndim)]
            blk = lax.pad(blk, jnp.zeros((), blk.dtype),
                          [(lo, hi, 0) if a >= axis else (0, 0, 0) for a, (lo, hi) in
                           enumerate(run)])
            for a in range(axis, end):
                if plans[a] is not None:
                    blk = _exchange_axis(blk, plans[a], a, layout.split[a], run, value,
                                         layout.mesh, permute)
            axis = end
    return blk


def fill(data, fill_value, *, in_layout: Layout, out_layout: Layout, rules,
         permute=compat.ppermute_blocks) -> jax.Array:
    """Physical data of `in_layout` -> physical data of `out_layout` with ghosts filled.

    `fill_value` (a scalar, or None for the linear map that leaves constant ghosts zero) goes
    into ghosts that the boundary rule leaves without a source. `permute(x, names, pairs,
    mesh)` moves the faces (`compat.ppermute_blocks`; the MPI backend passes its own).
    """
    plans = plans_for(in_layout, out_layout.halo, rules)

    def per_device(blk, value):
        return _pad_block(strip_block(blk, in_layout), value, plans, rules, in_layout,
                          out_layout.halo, permute)

    spec = in_layout.spec
    if fill_value is None:
        linear = compat.shard_map(lambda b: per_device(b, None), mesh=in_layout.mesh,
                                  in_specs=(spec,), out_specs=spec)
        return linear(data)
    body = compat.shard_map(per_device, mesh=in_layout.mesh,
                            in_specs=(spec, jax.sharding.PartitionSpec()), out_specs=spec)
    return body(data, jnp.asarray(fill_value, data.dtype))


def pad(data, values, *, in_layout: Layout, out_layout: Layout, widths, rules,
        permute=compat.ppermute_blocks) -> jax.Array:
    """Physical data of `in_layout` (no ghosts) -> that of ``np.pad(x, widths, rule)`` in
    `out_layout` (the same split, longer axes), axis by axis as np.pad pads.

    An axis in one part is padded locally (jnp.pad). A split axis changes its blocking (the
    padded axis has a larger chunk), so each output block gathers its cells with the rounds of
    `plan.regrid_plan`: ppermutes of the cells each block needs, never an all-gather.
    `values` is an (ndim, 2) array of the constant rule's (before, after) values.
    """
    def per_device(blk, vals):
        for axis, ((lo, hi), rule) in enumerate(zip(widths, rules)):
            if not (lo or hi):
                continue
            n, parts = in_layout.shape[axis], in_layout.parts(axis)
            if parts == 1:
                cut = [(0, 0)] * blk.ndim
                cut[axis] = (lo, hi)
                if rule == "constant":
                    blk = _pad_constant(jnp.pad(blk, cut), axis, lo, n, 0, vals[axis])
                else:
                    blk = jnp.pad(blk, cut, mode=_NUMPY_MODE[rule])
                continue
            names = in_layout.split[axis]
            side = planning.regrid_plan(n, parts, in_layout.chunk(axis), lo, hi, rule)
            block = lax.axis_index(names)
            out_chunk = out_layout.chunk(axis)
            nonempty = np.arange(parts) * out_chunk < out_layout.shape[axis]
            blk = _side(blk, side, nonempty, axis, names, block, None, in_layout.mesh, permute)
            if rule == "constant":
                blk = _pad_constant(blk, axis, lo, n, block * out_chunk, vals[axis])
        return blk
    fn = compat.shard_map(per_device, mesh=in_layout.mesh,
                          in_specs=(in_layout.spec, jax.sharding.PartitionSpec()),
                          out_specs=out_layout.spec)
    return fn(data, values)


def _pad_constant(blk, axis: int, lo: int, n: int, start, values):
    """Cells before the array (global position < lo) take values[0], after it values[1]."""
    shape = [1] * blk.ndim
    shape[axis] = blk.shape[axis]
    g = start + lax.broadcasted_iota(np.int32, tuple(shape), axis)
    before, after = values[0].astype(blk.dtype), values[1].astype(blk.dtype)
    return jnp.where(g < lo, before, jnp.where(g >= lo + n, after, blk))


def unhalo(data, *, in_layout: Layout) -> jax.Array:
    """Drop ghosts block by block (no communication)."""
    spec = in_layout.spec
    return compat.shard_map(lambda b: strip_block(b, in_layout), mesh=in_layout.mesh,
                            in_specs=(spec,), out_specs=spec)(data)
