"""Array API manipulation functions on DistArrays.

Each function states in its `Layout:` section where the output lives and what moves. Two
paths: *local* (a jitted kernel on the physical blocks, no communication; used when every split
axis survives unchanged) and *logical* (XLA's SPMD partitioner works on the logical arrays,
with the output pinned to the stated layout). `roll` along a split axis is a neighbour exchange
(`lax.ppermute` of the wrapped-around slabs), never a gather.
"""
from __future__ import annotations

import math
import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api.creation import asarray
from darray._src.base import compat
from darray._src.base.errors import AxisError
from darray._src.distarray.array import DistArray, settle
from darray._src.engine import compaction, joining, repeating, reshaping, views
from darray._src.engine.apply import apply_logical, run_physical
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_operand_meshes, check_same_mesh, placed
from darray._src.layout.axes import normalize_axes, normalize_axis
from darray._src.layout.layout import Layout, make_out_layout


def _shape_arg(shape, argname="shape") -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        return tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{argname}={shape!r} must be a tuple of ints") from None


# -- reshape ----------------------------------------------------------------------------------
def _kept_axes(old, new) -> dict[int, int]:
    """Input axis -> output axis for axes the reshape leaves intact (same extent, same number of
    cells before them), i.e. axes whose split can survive with no data movement."""
    kept = {}
    pre_new = [math.prod(new[:b]) for b in range(len(new))]
    for a, n in enumerate(old):
        if n <= 1:
            continue
        start = math.prod(old[:a])
        b = next((b for b in range(len(new)) if new[b] == n and pre_new[b] == start), None)
        if b is not None:
            kept[a] = b
    return kept


def _reshape_layout(layout: Layout, new) -> tuple[Layout, bool]:
    """Output layout and whether the reshape is local (every split axis kept)."""
    old = layout.shape
    kept = _kept_axes(old, new) if 0 not in old else {}
    split: list[tuple[str, ...]] = [()] * len(new)
    local = True
    for a, names in enumerate(layout.split):
        if not names:
            continue
        if a in kept:
            split[kept[a]] = split[kept[a]] + names
            continue
        local = False
        if old[a] <= 1 or not new:
            continue
        # Move the mesh axes to the leading output axis covering this axis's first cell.
        start = math.prod(old[:a])
        b = 0
        while b < len(new) - 1 and (new[b] == 1 or math.prod(new[:b + 1]) <= start):
            b += 1
        split[b] = split[b] + names
    return make_out_layout(layout.mesh, new, split), local


def _resolve_shape(shape, size: int) -> tuple[int, ...]:
    shape = _shape_arg(shape)
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in shape):
        raise ValueError(f"shape={shape!r} may hold at most one -1 and no other negative extent")
    known = math.prod(n for n in shape if n != -1)
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape an array of size {size} into shape {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape an array of size {size} into shape {shape}")
    return shape


def _physical_reshape(data, out_shape):
    return data.reshape(out_shape)


def reshape(x: DistArray, /, shape, *, copy=None) -> DistArray:
    """Reshape to `shape` (one entry may be -1).

    Args:
      x: input array.
      shape: new shape.
      copy: None: as needed. True: an independent array, not a view. False: raise ValueError
        unless the reshape is local (no data moves between devices). Without copy=True the
        result is a view of x, whatever moved: writing it writes x (docs/architecture.md,
        "Mutation and views").

    Returns:
      The reshaped array.

    Layout:
      Split axes that the reshape leaves intact keep their split and the reshape is local (no
      communication). A split axis that is merged or cut moves its mesh axes to the leading
      output axis of its group. Where XLA's partitioner moves the data without an all-gather
      (even sizes: an all-to-all, or nothing when merging leading split axes) it does;
      otherwise (uneven sizes) the blocks move in rounds of collective-permutes, one window
      of rows in flight (engine/reshaping.py): never an all-gather.
      Unless copy=True, the result is a view of x (engine/views.py): writing it writes x.
    """
    x = ensure_array("reshape", x)
    new = _resolve_shape(shape, x.size)
    result = _reshaped(x, new, copy)
    if copy is True:
        return result
    return views.make_view(result, x, views.Step(lambda p: _reshaped(p, new, None),
                                                 lambda p, v: _reshaped(v, p.shape, None)))


def _reshaped(x: DistArray, new, copy) -> DistArray:
    out, local = _reshape_layout(x.layout, new)
    local = local and not x.layout.has_halo
    if not local and copy is False:
        raise ValueError(f"reshape(copy=False) of {x!r} to {new} moves data between devices; "
                         "pass copy=None")
    if local:
        return run_physical(_physical_reshape, [x], out, static=(out.physical_shape,))
    if reshaping.takes_blockwise(x.layout, out):
        # block by block: XLA's partitioner all-gathers an uneven operand here
        return DistArray._new(reshaping.reshape_fn(x.layout, out)(x.data), out)
    return apply_logical(_physical_reshape, [x], out, static=(new,))


# -- axis permutations ------------------------------------------------------------------------
def _transpose(data, axes):
    return jnp.transpose(data, axes)


def permute_dims(x: DistArray, /, axes) -> DistArray:
    """Permute the axes: output axis i is input axis ``axes[i]``.

    Layout:
      The split is permuted with the axes (output axis i has input axis ``axes[i]``'s split).
      Local: no communication. The result is a view of x (engine/views.py): writing it writes x.
    """
    x = ensure_array("permute_dims", x)
    axes = normalize_axes(axes, x.ndim, "axes")
    if len(axes) != x.ndim:
        raise AxisError(f"axes={axes!r} must list each of the {x.ndim} axes exactly once")
    inverse = tuple(int(i) for i in np.argsort(axes))
    step = views.Step(lambda p: _permuted(p, axes), lambda p, v: _permuted(v, inverse))
    if axes != tuple(range(x.ndim)):
        # eager: computed at the first read; matmul & co. contract x itself (engine/views.py)
        unread = views.make_unread_permutation(x, _permuted_layout(x.layout, axes), axes,
                                               step, _permuted)
        if unread is not None:
            return unread
    return views.make_view(_permuted(x, axes), x, step)


def _permuted_layout(lay, axes):
    return make_out_layout(lay.mesh, [lay.shape[a] for a in axes], [lay.split[a] for a in axes])


def _permuted(x: DistArray, axes) -> DistArray:
    lay = x.layout
    out = _permuted_layout(lay, axes)
    if lay.has_halo:
        return apply_logical(_transpose, [x], out, static=(axes,))
    return run_physical(_transpose, [x], out, static=(axes,))


def moveaxis(x: DistArray, source, destination, /) -> DistArray:
    """Move axes `source` to positions `destination` (others keep their order).

    Layout: as permute_dims (the split travels with its axis); no communication.
    """
    x = ensure_array("moveaxis", x)
    src = normalize_axes(source, x.ndim, "source")
    dst = normalize_axes(destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError(f"source={source!r} and destination={destination!r} must have the "
                         "same number of axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def matrix_transpose(x: DistArray, /) -> DistArray:
    """Swap the last two axes. Layout: the split travels with its axis; no communication."""
    x = ensure_array("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs an array of rank >= 2, got shape {x.shape}")
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return permute_dims(x, axes)


# -- adding and removing unit axes ------------------------------------------------------------
def expand_dims(x: DistArray, /, axis=0) -> DistArray:
    """Insert unit axes at `axis` (an int or a tuple of positions in the output).

    Layout: the new axes are unsplit, the others keep their split; no communication.
    """
    x = ensure_array("expand_dims", x)
    single = isinstance(axis, (int, np.integer))
    n_out = x.ndim + (1 if single else len(axis))
    new_axes = sorted(normalize_axes(axis, n_out, "axis"))
    shape, split = list(x.shape), list(x.layout.split)
    for a in new_axes:
        shape.insert(a, 1)
        split.insert(a, ())
    out = make_out_layout(x.mesh, shape, split)
    if x.layout.has_halo:
        return apply_logical(_physical_reshape, [x], out, static=(tuple(shape),))
    return run_physical(_physical_reshape, [x], out, static=(out.physical_shape,))


def squeeze(x: DistArray, /, axis) -> DistArray:
    """Remove unit axes `axis` (ValueError if one of them is not of extent 1).

    Layout: the remaining axes keep their split. Local, unless a removed unit axis was itself
    split (then its one cell is taken from its owner by the logical path).
    """
    x = ensure_array("squeeze", x)
    axes = normalize_axes(axis, x.ndim, "axis")
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze axis={a} has extent {x.shape[a]}; only axes of extent "
                             "1 can be removed")
    keep = [a for a in range(x.ndim) if a not in axes]
    out = make_out_layout(x.mesh, [x.shape[a] for a in keep], [x.layout.split[a] for a in keep])
    if not x.layout.has_halo and not any(x.layout.split[a] for a in axes):
        return run_physical(_physical_reshape, [x], out, static=(out.physical_shape,))
    return apply_logical(_physical_reshape, [x], out, static=(out.shape,))


# -- flip and roll ----------------------------------------------------------------------------
def _flip(a, axes):
    return jnp.flip(a, axes)


def flip(x: DistArray, /, *, axis=None) -> DistArray:
    """Reverse the order of elements along `axis` (default: all axes).

    Layout:
      Same layout as x. Along unsplit axes the flip is local. Along a split axis the block order
      reverses: done on the logical array with the output pinned, so XLA moves each block to its
      mirror device (collective-permutes; padding never enters the result).
    """
    x = ensure_array("flip", x)
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim)
    lay = x.layout
    if not lay.has_halo and not any(lay.split[a] for a in axes):
        return run_physical(_flip, [x], lay, static=(axes,))
    return apply_logical(_flip, [x], lay.without_halo(), static=(axes,))


def _roll_blocks(block, names, parts, chunk, axis, shift, mesh):
    """Inside shard_map: roll an evenly blocked axis of length parts*chunk by `shift` cells.

    With shift = q*chunk + r, output block b is the last r cells of input block b-q-1 followed
    by the first chunk-r cells of block b-q: two slabs, each sent one way by ppermute.
    """
    q, r = divmod(shift % (parts * chunk), chunk)

    def send(slab, hops):
        if hops % parts == 0:
            return slab
        perm = [(j, (j + hops) % parts) for j in range(parts)]
        return compat.ppermute_blocks(slab, names, perm, mesh)
    head = jax.lax.slice_in_dim(block, 0, chunk - r, axis=axis)
    if r == 0:
        return send(head, q)
    tail = jax.lax.slice_in_dim(block, chunk - r, chunk, axis=axis)
    return jnp.concatenate([send(tail, q + 1), send(head, q)], axis=axis)


def _roll_split_axis(data, layout: Layout, axis: int, shift: int):
    """Roll a split axis of the physical (plain) array by `shift` (0 <= shift < n)."""
    names, parts, chunk = layout.split[axis], layout.parts(axis), layout.chunk(axis)
    n, padded = layout.shape[axis], layout.padded_shape[axis]

    def roll_padded(d, s):
        fn = compat.shard_map(
            lambda b: _roll_blocks(b, names, parts, chunk, axis, s, layout.mesh), mesh=layout.mesh,
            in_specs=(layout.spec,), out_specs=layout.spec)
        return fn(d)
    if n == padded:
        return roll_padded(data, shift)
    # Uneven: the wrap-around joins cell n-1 to cell 0, not padded-1 to 0. Cells i >= shift
    # come from the padded roll by shift, cells i < shift from the padded roll by shift - n;
    # neither reads padding for those cells.
    index = jax.lax.broadcasted_iota(np.int32, data.shape, axis)
    return jnp.where(index >= shift, roll_padded(data, shift),
                     roll_padded(data, (shift - n) % padded))


def _roll_physical(data, layout, shifts):
    for axis, s in shifts:
        if layout.split[axis]:
            data = _roll_split_axis(data, layout, axis, s)
        else:
            data = jnp.roll(data, s, axis=axis)
    return data


def _identity(a):
    return a


def _roll_flat(a, shift, shape):
    return jnp.roll(a.reshape(-1), shift).reshape(shape)


def roll(x: DistArray, /, shift, *, axis=None) -> DistArray:
    """Roll elements along `axis` by `shift` (ints, or tuples of equal length).

    Layout:
      Same layout as x. Along an unsplit axis the roll is local. Along a split axis it is a
      neighbour exchange: each device sends the slabs that wrap into other blocks with
      `lax.ppermute` (one or two collective-permutes per even axis; twice that for an uneven
      axis, whose wrap-around point is not a block boundary). No all-gather.
      With axis=None (roll of the flattened array) x is flattened block by block
      (engine/reshaping.py), rolled along its one split axis and put back the same way.
    """
    x = ensure_array("roll", x)
    if axis is None:
        if not isinstance(shift, (int, np.integer)):
            raise TypeError(f"shift={shift!r} must be an int when axis is None")
        size = max(x.size, 1)
        if x.ndim == 1:
            return roll(x, shift, axis=0)
        flat_layout = make_out_layout(x.mesh, (x.size,), [x.layout.used_mesh_axes])
        if x.ndim > 1 and reshaping.supported(x.layout, flat_layout):
            # flattened block by block, rolled by a neighbour exchange and put back in x's
            # layout block by block: XLA's partitioner all-gathers the flattened roll
            flat = DistArray._new(reshaping.reshape_fn(x.layout, flat_layout)(x.data),
                                  flat_layout)
            rolled = roll(flat, shift, axis=0)
            back = x.layout.without_halo()
            return DistArray._new(reshaping.reshape_fn(rolled.layout, back)(rolled.data), back)
        return apply_logical(_roll_flat, [x], x.layout.without_halo(),
                                    static=(int(shift) % size, x.shape))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, (int, np.integer)) else tuple(shift)
    if len(shifts) != len(axes):
        raise ValueError(f"shift={shift!r} and axis={axis!r} must have the same length")
    total: dict[int, int] = {}
    for a, s in zip(axes, shifts):
        a = normalize_axis(a, x.ndim)
        total[a] = total.get(a, 0) + operator.index(s)
    plan = tuple((a, s % x.shape[a]) for a, s in sorted(total.items())
                 if x.shape[a] and s % x.shape[a])
    lay = x.layout
    if lay.has_halo:
        x = apply_logical(_identity, [x], lay.without_halo())
        lay = x.layout
    if not plan:
        return x
    out = run_physical(_roll_physical, [x], lay, static=(lay, plan))
    settle(out.data)
    return out


# -- joining ----------------------------------------------------------------------------------
def _as_list(fname: str, arrays, argname="arrays") -> list[DistArray]:
    if isinstance(arrays, DistArray) or not isinstance(arrays, (list, tuple)) or not arrays:
        raise TypeError(f"{fname}: {argname} must be a non-empty tuple or list of arrays, got "
                        f"{type(arrays).__name__}")
    arrays = [ensure_array(fname, a, f"{argname}[{i}]") for i, a in enumerate(arrays)]
    return check_same_mesh(fname, arrays, argname)


def concat(arrays, /, *, axis=0) -> DistArray:
    """Join arrays along an existing axis (axis=None: flatten each first).

    Layout:
      The first array's split (axis=None: one axis split over every mesh axis the first array
      uses). Inputs in another layout are redistributed to it first. Along an unsplit axis
      each device joins its own blocks; along a split axis each output block is assembled from
      the input blocks it overlaps by a few fixed neighbour shifts (`lax.ppermute`), never an
      all-gather (see engine/joining.py).
    """
    arrays = _as_list("concat", arrays)
    first = arrays[0]
    # 0-d arrays may come from another mesh: they join the first distributed array's mesh
    mesh = next((a.mesh for a in arrays if a.ndim), first.mesh)
    arrays = [placed(a, mesh) for a in arrays]
    dtype = jnp.result_type(*[a.dtype for a in arrays])
    if axis is None:
        size = sum(a.size for a in arrays)
        names = tuple(n for a in first.layout.split for n in a)
        out = make_out_layout(mesh, (size,), (names,))
        flat = [a if a.ndim == 1 else reshape(a, (-1,)) for a in arrays]
        return joining.concat_arrays(flat, 0, out, dtype)
    nd = first.ndim
    if any(a.ndim != nd for a in arrays):
        raise ValueError(f"concat needs arrays of one rank, got shapes {[a.shape for a in arrays]}")
    if nd == 0:
        raise ValueError("concat of 0-d arrays needs axis=None")
    axis = normalize_axis(axis, nd)
    for a in arrays:
        if any(a.shape[i] != first.shape[i] for i in range(nd) if i != axis):
            raise ValueError(f"concat along axis {axis}: shapes {[a.shape for a in arrays]} "
                             "differ on another axis")
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = make_out_layout(first.mesh, shape, first.layout.split)
    return joining.concat_arrays(arrays, axis, out, dtype)


def stack(arrays, /, *, axis=0) -> DistArray:
    """Join arrays of one shape along a new axis.

    Layout: the new axis is unsplit, the others keep the first array's split; inputs in another
    layout are redistributed to it first, then each device stacks its own blocks.
    """
    arrays = _as_list("stack", arrays)
    first = arrays[0]
    if any(a.shape != first.shape for a in arrays):
        raise ValueError(f"stack needs arrays of one shape, got {[a.shape for a in arrays]}")
    arrays = [placed(a, first.mesh) for a in arrays]  # 0-d arrays may come from another mesh
    axis = normalize_axis(axis, first.ndim + 1)
    shape, split = list(first.shape), list(first.layout.split)
    shape.insert(axis, len(arrays))
    split.insert(axis, ())
    out = make_out_layout(first.mesh, shape, split)
    dtype = jnp.result_type(*[a.dtype for a in arrays])
    return joining.stack_arrays(arrays, axis, out, dtype)


def _unstack(a, axis):
    return tuple(jnp.moveaxis(a, axis, 0))


def unstack(x: DistArray, /, *, axis=0) -> tuple[DistArray, ...]:
    """Split `x` into a tuple of arrays along `axis`.

    Layout: each piece keeps the split of the other axes. Local along an unsplit axis; along a
    split axis each piece is read from its owner by the logical path.
    """
    x = ensure_array("unstack", x)
    axis = normalize_axis(axis, x.ndim)
    keep = [a for a in range(x.ndim) if a != axis]
    out = make_out_layout(x.mesh, [x.shape[a] for a in keep], [x.layout.split[a] for a in keep])
    outs = (out,) * x.shape[axis]
    if not outs:
        return ()
    if not x.layout.has_halo and not x.layout.split[axis]:
        return run_physical(_unstack, [x], outs, static=(axis,))
    return apply_logical(_unstack, [x], outs, static=(axis,))


# -- broadcasting -----------------------------------------------------------------------------
def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The shape that broadcasting `shapes` gives (ValueError when they do not broadcast)."""
    shapes = tuple(_shape_arg(s, "shapes") for s in shapes)
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"shapes {shapes} cannot be broadcast together") from None


def _broadcast(data, shape):
    return jnp.broadcast_to(data, shape)


def broadcast_to(x: DistArray, /, shape) -> DistArray:
    """Broadcast `x` to `shape`.

    Layout: existing axes that are not stretched keep their split; new and stretched axes are
    unsplit (replicated). Local unless a stretched unit axis was itself split.
    """
    x = ensure_array("broadcast_to", x)
    shape = _shape_arg(shape)
    lead = len(shape) - x.ndim
    if lead < 0 or any(n not in (1, m) for n, m in zip(x.shape, shape[lead:])):
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to shape={shape}")
    split = [()] * lead + [s if n == m else () for s, n, m in
                           zip(x.layout.split, x.shape, shape[lead:])]
    out = make_out_layout(x.mesh, shape, split)
    lost = any(s and n != m for s, n, m in zip(x.layout.split, x.shape, shape[lead:]))
    if not x.layout.has_halo and not lost:
        return run_physical(_broadcast, [x], out, static=(out.physical_shape,))
    return apply_logical(_broadcast, [x], out, static=(shape,))


def broadcast_arrays(*arrays) -> tuple[DistArray, ...]:
    """Broadcast arrays against each other. Layout: as broadcast_to, per array."""
    arrays = tuple(ensure_array("broadcast_arrays", a, f"arrays[{i}]")
                   for i, a in enumerate(arrays))
    arrays = tuple(check_same_mesh("broadcast_arrays", arrays))  # the mesh rule
    shape = broadcast_shapes(*[a.shape for a in arrays])
    # A tuple since Array API 2025.12 (a list before: see api/versions.py).
    return tuple(broadcast_to(a, shape) for a in arrays)


# -- tile and repeat --------------------------------------------------------------------------
def _tile(a, reps):
    return jnp.tile(a, reps)


def tile(x: DistArray, repetitions, /) -> DistArray:
    """Repeat the whole array `repetitions[i]` times along each axis.

    Layout: x's split (aligned to the trailing axes; prepended axes unsplit). Local when every
    split axis has repetition 1. Along a split axis the output is r copies of x joined: each
    output block is assembled from the input blocks it overlaps by ppermute rounds
    (engine/repeating.py), never an all-gather; below repeating.TILE_MIN_CELLS output cells
    XLA's program, faster there.
    """
    x = ensure_array("tile", x)
    reps = _shape_arg(repetitions, "repetitions")
    if any(r < 0 for r in reps):
        raise ValueError(f"repetitions={reps} must be >= 0")
    nd = max(x.ndim, len(reps))
    reps_full = (1,) * (nd - len(reps)) + reps
    split = [()] * (nd - x.ndim) + list(x.layout.split)
    in_shape = (1,) * (nd - x.ndim) + x.shape
    shape = [n * r for n, r in zip(in_shape, reps_full)]
    out = make_out_layout(x.mesh, shape, split)
    if not x.layout.has_halo and all(r == 1 for s, r in zip(split, reps_full) if s):
        return run_physical(_tile, [x], out, static=(reps_full,))
    if 0 in shape or math.prod(shape) < repeating.TILE_MIN_CELLS:
        return apply_logical(_tile, [x], out, static=(reps_full,))
    x = x if not x.layout.has_halo else apply_logical(_identity, [x], x.layout.without_halo())
    return DistArray._new(repeating.tile_fn(x.layout, out, reps_full)(x.data), out)


def _repeat(a, repeats, axis, total):
    if axis is None:
        a, axis = a.reshape(-1), 0
    return jnp.repeat(a, repeats, axis=axis, total_repeat_length=total)


def _repeat_each(a, counts, axis, total):
    return (_repeat(a, counts, axis, total),)


def repeat(x: DistArray, repeats, /, *, axis=None) -> DistArray:
    """Repeat each element `repeats` times (an int, or one count per element along `axis`).

    Layout: with `axis`, x's split; with axis=None the 1-D result is split over all of x's mesh
    axes. One count for all: each device repeats its own block and the cells move to the
    output's blocks by ppermute rounds (engine/repeating.py; x is first flattened block by
    block when axis is None): never an all-gather. Per-element counts: read to the host
    first (the output shape depends on them, so under jit they must be concrete: jax's
    ConcretizationTypeError otherwise), then every device builds the result whole from the
    replicated input inside shard_map (compaction.run_replicated): jnp.repeat with
    per-element counts is a cumulative sum plus a scatter, the family XLA's partitioner
    miscompiles on partly replicated layouts.
    """
    x = ensure_array("repeat", x)
    if axis is not None:
        axis = normalize_axis(axis, x.ndim)
    n = x.size if axis is None else x.shape[axis]
    if isinstance(repeats, (int, np.integer)):
        counts = int(repeats)
        if counts < 0:
            raise ValueError(f"repeats={counts} must be >= 0")
        host = None
    else:
        x, repeats = check_operand_meshes("repeat", (x, "x"), (repeats, "repeats"))
        compaction.concrete_count(repeats, "repeat with per-element counts")
        if isinstance(repeats, jax.core.Tracer):
            raise jax.errors.ConcretizationTypeError(
                repeats, "repeat with per-element counts: the output shape depends on them")
        host = np.asarray(repeats)
        if host.dtype.kind not in "iub":
            raise TypeError(f"repeats must hold integers, got dtype {host.dtype}")
        host = host.astype(np.int64).reshape(-1)
        if host.size not in (1, n):
            raise ValueError(f"repeats has {host.size} entries; need 1 or {n}")
        if (host < 0).any():
            raise ValueError("repeats must be >= 0")
        counts = int(host[0]) if host.size == 1 else None  # type: ignore[assignment]  # None: per-element
    total = n * counts if counts is not None else int(host.sum())
    if axis is None:
        names = tuple(nm for s in x.layout.split for nm in s)
        out = make_out_layout(x.mesh, (total,), (names,))
    else:
        shape = list(x.shape)
        shape[axis] = total
        out = make_out_layout(x.mesh, shape, x.layout.split)
    if counts is not None:
        if total == 0 or x.size == 0:
            return apply_logical(_repeat, [x], out, static=(counts, axis, total))
        if axis is None:
            x, axis = (reshape(x, (-1,), copy=True) if x.ndim != 1 else x), 0
        if x.layout.has_halo:
            x = apply_logical(_identity, [x], x.layout.without_halo())
        if x.layout.split != out.split:  # (a flattened x split otherwise than the result)
            return apply_logical(_repeat, [x], out, static=(counts, axis, total))
        return DistArray._new(repeating.repeat_fn(x.layout, out, counts, axis)(x.data), out)
    each = asarray(host, mesh=x.mesh, spec=())
    (result,) = compaction.run_replicated(_repeat_each, [x, each], (out,), static=(axis, total))
    return result
