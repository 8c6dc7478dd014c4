"""Indexing: `x[key]` and `x[key] = v` (`take`, `take_along_axis`: taking.py, re-exported).

Basic keys (ints, slices, Ellipsis, None) are normalised on the host into a static *plan* (one
entry per key item) plus the integer values, which are passed as runtime arguments so that
reading ``x[i, j]`` in a loop compiles once; slicing.py runs the plan on the blocks. Because
padding sits at the end of each split axis, physical index i is logical index i on a plain
layout, which lets reads and writes address the physical blocks directly.
"""
from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api.creation import asarray
from darray._src.api.manipulation import broadcast_to

# `take`, `take_along_axis` and `dynamic_slice` live in taking.py (this module reads keys);
# re-exported here, where the namespace and its callers have always found them
from darray._src.api.taking import dynamic_slice as dynamic_slice
from darray._src.api.taking import take as take
from darray._src.api.taking import take_along_axis as take_along_axis
from darray._src.base import compat
from darray._src.distarray.array import DistArray, settle
from darray._src.engine import compaction, exchange_gather, slicing, views
from darray._src.engine.apply import apply_logical
from darray._src.engine.arguments import ensure_array
from darray._src.engine.donation import donatable
from darray._src.engine.operands import check_operand_meshes, placed
from darray._src.layout.layout import Layout, default_layout, make_out_layout

_INT = "int"
_NEW = "new"


# -- key normalisation ------------------------------------------------------------------------
def _is_int(k) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _is_traced_int(k) -> bool:
    """A traced 0-d integer (``x[i]`` with `i` an argument of a jitted function): a basic index
    whose value is known only when the program runs."""
    if isinstance(k, DistArray):
        k = k.data
    return compat.is_tracer(k) and k.ndim == 0 and np.dtype(k.dtype).kind in "iu"


def is_array_like(k) -> bool:
    return isinstance(k, (DistArray, np.ndarray, jax.Array, list)) and not _is_traced_int(k)


def _as_tuple(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def check_item(k, position):
    if k is None or k is Ellipsis or isinstance(k, slice) or _is_int(k) or is_array_like(k) \
            or isinstance(k, (bool, np.bool_)) or _is_traced_int(k):
        return
    raise IndexError(f"index item {position} ({k!r}, of type {type(k).__name__}) is not "
                     "accepted; use ints, slices, ..., None, or integer/boolean arrays")


def expand_ellipsis(key: tuple, ndim: int) -> tuple:
    """Replace Ellipsis by full slices; IndexError for too many indices or two Ellipses."""
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError(f"an index can hold at most one Ellipsis, got {key!r}")
    consumed = sum(_consumes(k) for k in key if k is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices: {consumed} given for an array of rank {ndim}")
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        return key[:i] + (slice(None),) * (ndim - consumed) + key[i + 1:]
    return key + (slice(None),) * (ndim - consumed)


def _consumes(k) -> int:
    """Array axes an index item consumes."""
    if k is None or isinstance(k, (bool, np.bool_)):
        return 0
    if is_array_like(k):
        dtype = k.dtype if hasattr(k, "dtype") else np.asarray(k).dtype
        return (k.ndim if hasattr(k, "ndim") else np.ndim(k)) if dtype == np.bool_ else 1
    return 1


def _norm_int(i, n, axis) -> int:
    i = operator.index(i)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return i % n


def _traced_int(i, n):
    """JAX's reading of a traced index: negative counts from the end, then clamped into
    [0, n - 1] (as lax.dynamic_index_in_dim does; jnp indexing answers out-of-range reads so)."""
    if isinstance(i, DistArray):
        i = i.data
    i = jnp.where(i < 0, i + n, i)
    return jnp.clip(i, 0, max(n - 1, 0))


def _norm_slice(s: slice, n: int) -> tuple[int, int | None, int]:
    if any(compat.is_tracer(b) or (isinstance(b, DistArray) and compat.is_tracer(b.data))
           for b in (s.start, s.stop, s.step)):
        raise IndexError(f"slice bounds must be static (Python ints) to index with x[start:stop], "
                         f"got {s!r}: the result's length would depend on traced values. As in "
                         "JAX, take a window of static size at a traced start with "
                         "darray.dynamic_slice(x, (start,), (size,))")
    stop: int | None
    start, stop, step = s.indices(n)
    if not len(range(start, stop, step)):
        # empty: a negative step can leave start = -1 ("before index 0"), which a physical
        # read would take as the last cell
        return 0, 0, 1
    if step < 0 and stop < 0:
        stop = None  # "before index 0", which a literal -1 would not mean
    return start, stop, step


def _slice_len(start, stop, step, n) -> int:
    return len(range(start, -1 if stop is None else stop, step))


def _basic_plan(x: DistArray, key: tuple):
    """Static plan, runtime int values, output shape and split for a basic key."""
    lay = x.layout
    plan: list[tuple] = []
    ints: list = []
    shape: list[int] = []
    split: list[tuple[str, ...]] = []
    axis = 0
    for k in key:
        if k is None:
            plan.append((_NEW,))
            shape.append(1)
            split.append(())
            continue
        n = lay.shape[axis]
        if isinstance(k, slice):
            start, stop, step = _norm_slice(k, n)
            full = (start, stop, step) == (0, n, 1)
            # A whole split axis is slice(None) so physical reads keep its padded blocks.
            plan.append((None, None, None) if full else (start, stop, step))
            shape.append(_slice_len(start, stop, step, n))
            split.append(lay.split[axis])
        else:
            ints.append(_traced_int(k, n) if _is_traced_int(k) else _norm_int(k, n, axis))
            plan.append((_INT,))
        axis += 1
    return tuple(plan), ints, tuple(shape), tuple(split)


def _int_values(ints):
    """The runtime int arguments of a plan: a host array, or a traced one when an index is
    traced (then the read compiles into the caller's program)."""
    if any(compat.is_tracer(i) for i in ints):
        return jnp.stack([jnp.asarray(i, jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)
                          for i in ints])
    return np.asarray(ints, np.int64).reshape(-1)


def _explicit_plan(plan, lay: Layout):
    """The plan with whole-axis slices spelled out as (0, n, 1): a write must not touch padding
    (a value broadcast to the padded extent would not fit)."""
    out, axis = [], 0
    for p in plan:
        if p[0] == _NEW:
            out.append(p)
            continue
        out.append((0, lay.shape[axis], 1) if p == (None, None, None) else p)
        axis += 1
    return tuple(out)


# -- basic reads ------------------------------------------------------------------------------
def _index_tuple(plan, values):
    """jnp index tuple from a plan, the ints taken in order from `values`."""
    out, v, axis = [], 0, 0
    for p in plan:
        if p[0] == _NEW:
            out.append(None)
            continue
        if p[0] == _INT:
            out.append(values[v])
            v += 1
        else:
            out.append(slice(*p))
        axis += 1
    return tuple(out)


def _key_on_mesh(x: DistArray, key: tuple, fname: str, value=None) -> tuple:
    """The mesh rule for index arrays (and a written value), with x as the anchor: they are
    brought to x's mesh (operands.py), or LayoutError. An uncommitted x (made without
    mesh=/device=) goes to committed operands on other devices, and a small x to distributed
    ones, as an uncommitted jax.Array does (block-wise, never a gather). Returns (x, key)."""
    named = [(x, "x")] + [(k, f"key[{i}]") for i, k in enumerate(key)]
    if value is not None:
        named.append((value, "value"))
    x = check_operand_meshes(fname, *named, anchor=0)[0]  # placed() moves the others
    return x, tuple(placed(k, x.mesh) for k in key)


def _read_key_on_mesh(x: DistArray, key: tuple) -> tuple:
    """`_key_on_mesh` for a read."""
    return _key_on_mesh(x, key, "x[key]")


def getitem(x: DistArray, key) -> DistArray:
    """``x[key]`` for basic keys (ints, slices with any step, Ellipsis, None), integer arrays
    and boolean masks.

    Layout:
      Basic keys: surviving axes keep their split, new axes are unsplit. The read runs on the
      blocks and never gathers x (slicing.py): an int on a split axis is read by its owner and
      shared with one psum of the result (``x[3, 4, 5]`` moves one element); a slice of a split
      axis re-blocks it with a few ppermute shifts of output-sized buffers. Layouts with
      ghosts or a transposed order take the logical path. Integer-array and boolean-mask keys
      give the default layout for the output shape (layout.default_layout). One integer array
      along a split axis (other items whole slices, x of 96 Ki cells or more) is read by a ring of
      ppermutes (engine/exchange_gather.py; x is never gathered, the result moved block-wise
      into that layout); other advanced keys take the logical path. A boolean mask needs
      a concrete mask (its count sets the shape). A basic key gives a view of x
      (engine/views.py): writing it writes x, as in numpy. Under jit, an int may be a traced
      integer: read as JAX reads it (negative from the end, out-of-range clamped); slice
      bounds must stay static (see `dynamic_slice`).
    """
    x = ensure_array("getitem", x)
    key = _as_tuple(key)
    for pos, k in enumerate(key):
        check_item(k, pos)
    if any(is_array_like(k) or isinstance(k, (bool, np.bool_)) for k in key):
        return _advanced_get(*_read_key_on_mesh(x, key))
    result = _basic_get(x, key)
    if result.ndim == 0 and not any(k is Ellipsis for k in key):
        return result  # numpy answers a key of ints with a scalar, not a view
    return views.make_view(result, x, views.Step(lambda p: _basic_get(p, key),
                                                 lambda p, v: setitem(p, key, v)))


def _basic_get(x: DistArray, key: tuple) -> DistArray:
    key = expand_ellipsis(key, x.ndim)
    plan, ints, shape, split = _basic_plan(x, key)
    out = make_out_layout(x.mesh, shape, split)
    if x.layout.has_halo:
        return _logical_read(x, plan, ints, out)
    values = _int_values(ints)
    # on the blocks, no gather of x (slicing.py: left to XLA, x[2:5, 1] gathers all of x)
    return DistArray._new(settle(slicing.read_fn(x.layout, plan, out)(x.data, values)), out)


def _logical_read(x, plan, ints, out):
    values = _int_values(ints)
    return apply_logical(_logical_read_fn, [x, values], out, static=(plan,))


def _logical_read_fn(a, values, plan):
    return compaction.exact_read(
        lambda b, vals: b[_index_tuple(plan, [vals[i] for i in range(vals.shape[0])])],
        a, values)


# -- advanced keys ----------------------------------------------------------------------------
# Boolean masks never reach jnp.nonzero under the SPMD partitioner (XLA miscompiles it on partly
# replicated operands, see compaction.py): a mask becomes its nonzero index arrays, computed by
# compaction.compact (DistArray masks) or by numpy (host masks), before any gather or scatter.
def _mask_indices(mask) -> list:
    """The index arrays (one per mask axis) of a boolean mask, C order."""
    if isinstance(mask, DistArray):
        return list(compaction.compact(mask, with_indices=True))
    return [np.asarray(i, np.int64) for i in np.nonzero(np.asarray(mask))]


def _concrete_bool(flag) -> bool:
    """A 0-d boolean index acts like True/False (adds a unit or an empty axis): needs a value."""
    compaction.concrete_count(flag, "a 0-d boolean index")
    return bool(np.asarray(flag))


def advanced_parts(x: DistArray, key: tuple):
    """Split a key into a static template and its array operands (DistArrays or numpy)."""
    template: list[tuple] = []
    operands: list = []
    for k in key:
        if is_array_like(k):
            arr = k if isinstance(k, DistArray) else np.asarray(k)
            if arr.dtype == bool and arr.ndim == 0:
                template.append(("lit", _concrete_bool(arr)))
                continue
            if arr.dtype == bool:
                for index in _mask_indices(arr):
                    template.append(("array", len(operands)))
                    operands.append(index)
                continue
            if arr.dtype.kind in "iu" or (arr.dtype == bool and arr.ndim == 0):
                template.append(("array", len(operands)))
            else:
                raise IndexError(f"index arrays must be of integer or boolean dtype, got "
                                 f"{arr.dtype}")
            operands.append(arr)
        elif isinstance(k, slice):
            template.append(("slice", k.start, k.stop, k.step))
        elif k is None or k is Ellipsis or isinstance(k, (bool, np.bool_)):
            template.append(("lit", k if not isinstance(k, np.bool_) else bool(k)))
        else:
            template.append(("int", operator.index(k)))
    return tuple(template), operands


def build_key(template, operands):
    key = []
    for t in template:
        if t[0] == "array":
            key.append(operands[t[1]])
        elif t[0] == "slice":
            key.append(slice(*t[1:]))
        else:
            key.append(t[1])
    return tuple(key)


def _advanced_read(a, *rest):
    *operands, template = rest
    return compaction.exact_read(lambda b, *ops: b[build_key(template, ops)], a, *operands)


def check_advanced_bounds(x, key):
    """numpy-style IndexError for out-of-range concrete index arrays (jnp would clamp)."""
    expanded = expand_ellipsis(tuple(k for k in key), x.ndim) if Ellipsis in [
        k for k in key if not is_array_like(k)] else key
    axis = 0
    for k in expanded:
        if k is None or isinstance(k, (bool, np.bool_)):
            continue
        if isinstance(k, DistArray) and k.dtype == bool:
            if k.shape != x.shape[axis:axis + k.ndim]:
                raise IndexError(f"boolean index of shape {k.shape} does not match the "
                                 f"indexed axes {x.shape[axis:axis + k.ndim]}")
            axis += k.ndim
            continue
        if is_array_like(k) and not isinstance(k, DistArray):
            arr = np.asarray(k)
            if arr.dtype == bool:
                if arr.shape != x.shape[axis:axis + arr.ndim]:
                    raise IndexError(f"boolean index of shape {arr.shape} does not match the "
                                     f"indexed axes {x.shape[axis:axis + arr.ndim]}")
                axis += arr.ndim
                continue
            n = x.shape[axis]
            if arr.size and (arr.max() >= n or arr.min() < -n):
                raise IndexError(f"index array holds values out of bounds for axis {axis} "
                                 f"with size {n}")
        elif _is_int(k):
            _norm_int(k, x.shape[axis], axis)
        axis += 1


def _leading_mask(x: DistArray, key: tuple):
    """The mask of a key that is one boolean array over x's leading axes (``x[m]``,
    ``x[m, ...]``, ``x[m, :]``), as a DistArray on x's mesh; else None."""
    rest = key[1:]
    mask = key[0] if key else None
    if mask is None or not is_array_like(mask) or any(
            k is not Ellipsis and k != slice(None) for k in rest if not is_array_like(k)) \
            or any(is_array_like(k) for k in rest) or sum(k is Ellipsis for k in rest) > 1:
        return None
    if not isinstance(mask, DistArray):
        mask = np.asarray(mask)
        if mask.dtype != bool or mask.ndim == 0 or mask.shape != x.shape[:mask.ndim]:
            return None
        return asarray(mask, mesh=x.mesh, spec=x.layout.split[:mask.ndim])
    if mask.dtype != bool or mask.ndim == 0 or mask.shape != x.shape[:mask.ndim]:
        return None
    return mask


def _advanced_get(x: DistArray, key: tuple) -> DistArray:
    check_advanced_bounds(x, key)
    mask = _leading_mask(x, key)
    if mask is not None:
        # values and their positions compacted in one pass over the blocks
        (out,) = compaction.compact(mask, [x], with_indices=False)
        return out
    single = single_index_array(x, key)
    if single is not None:
        axis, idx = single
        shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
        # x's split kept, as `take` does (the index's first axis split as x's `axis`): the
        # ring computes into it and nothing moves after (the default layout moved x first,
        # a row over 3 blocks, issue 49)
        split = x.layout.split
        split = split[:axis] + (split[axis],) + ((),) * (idx.ndim - 1) + split[axis + 1:]
        return exchange_gather.gather(x, idx, axis, make_out_layout(x.mesh, shape, split))
    template, operands = advanced_parts(x, key)
    # a numpy index array is int64; with x64 off (JAX's default) JAX holds it as int32, and a
    # ShapeDtypeStruct asking for int64 would warn (jax 0.12)
    shapes = tuple([jax.ShapeDtypeStruct(x.shape, x.dtype)] + [
        jax.ShapeDtypeStruct(o.shape, jax.dtypes.canonicalize_dtype(o.dtype)) for o in operands])
    out = default_layout(_advanced_shape(shapes, template), x.layout)
    return apply_logical(_advanced_read, [x, *operands], out, static=(template,))


def _advanced_shape(shapes: tuple, template) -> tuple[int, ...]:
    """The result shape of `_advanced_read` on operands of `shapes`: eval_shape traces (about
    0.5 ms, half of a small array's eager ``x[idx]``), so the shape is cached where the
    template hashes."""
    try:
        return _cached_advanced_shape(shapes, template)
    except TypeError:  # an unhashable template
        return _advanced_shape_of(shapes, template)


def _advanced_shape_of(shapes: tuple, template) -> tuple[int, ...]:
    return tuple(jax.eval_shape(lambda a, *ops: _advanced_read(a, *ops, template),
                                *shapes).shape)


@functools.lru_cache(maxsize=512)  # plain data: a shape
def _cached_advanced_shape(shapes: tuple, template) -> tuple[int, ...]:
    return _advanced_shape_of(shapes, template)


def single_index_array(x: DistArray, key: tuple):
    """(axis, indices as a DistArray on x's mesh) when `key` is one integer array (of rank >= 1)
    along a split axis of x that the ring handles, every other item a whole slice or ...;
    else None."""
    arrays = [i for i, k in enumerate(key) if is_array_like(k)]
    if len(arrays) != 1 or sum(k is Ellipsis for k in key) > 1 or any(
            not is_array_like(k) and k is not Ellipsis and not _whole(k) for k in key):
        return None
    expanded = expand_ellipsis(key, x.ndim)
    axis = next(i for i, k in enumerate(expanded) if is_array_like(k))
    idx = expanded[axis]
    dtype = idx.dtype if hasattr(idx, "dtype") else np.asarray(idx).dtype
    if np.dtype(dtype).kind not in "iu" or np.ndim(idx) == 0 or not np.size(idx) \
            or not exchange_gather.applies(x, axis):
        return None
    if not isinstance(idx, DistArray):
        idx = asarray(np.asarray(idx), mesh=x.mesh)
    return axis, idx


def _whole(k) -> bool:
    return isinstance(k, slice) and k == slice(None)


# -- writes -----------------------------------------------------------------------------------
def value_operand(value, dtype):
    if isinstance(value, DistArray):
        return value
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return np.asarray(value, dtype)
    return np.asarray(value).astype(dtype)


def _advanced_write(a, value, *rest):
    *operands, template = rest
    return a.at[build_key(template, operands)].set(jnp.asarray(value).astype(a.dtype))


def _mask_write(a, mask, value):
    mask = mask.reshape(mask.shape + (1,) * (a.ndim - mask.ndim))
    return jnp.where(mask, jnp.asarray(value).astype(a.dtype), a)


def _basic_write(a, value, values, plan):
    key = _index_tuple(plan, [values[i] for i in range(values.shape[0])])
    return a.at[key].set(jnp.asarray(value).astype(a.dtype))


def setitem(x: DistArray, key, value, *, donate: bool = False) -> DistArray:
    """``x`` with ``x[key]`` replaced by `value` (broadcast); `x` itself is not modified
    (`DistArray.__setitem__` rebinds the name to the result). ``donate=True``
    (``x[key] = value``, which rebinds x at once): a basic-key write may take over x's buffer
    when nothing else can read it (engine/donation.py), deleting x's old data.

    Layout:
      x's layout. Basic keys write the physical blocks in place of the logical cells (no
      communication for a scalar value; an array value is brought to the key's read layout
      and shifted to the blocks that own its cells, slicing.py: x is never gathered).
      A boolean mask of x's leading shape with a scalar value is an elementwise select (local,
      works under jit). One integer array along a split axis (x of 96 Ki cells or more): the
      (index, value) blocks travel round a ring and each owner writes its cells
      (engine/exchange_gather.py; which of repeated indices wins is unspecified, as in JAX).
      Other advanced keys use the logical path.
    """
    x = ensure_array("setitem", x)
    key = _as_tuple(key)
    for pos, k in enumerate(key):
        check_item(k, pos)
    x, key = _key_on_mesh(x, key, "x[key] = value", value)
    val = placed(value_operand(value, x.dtype), x.mesh)
    if any(is_array_like(k) or isinstance(k, (bool, np.bool_)) for k in key):
        mask = _leading_mask(x, key)
        if mask is not None and np.ndim(val) == 0:
            # an elementwise select: local, no data-dependent shape (works under jit)
            return apply_logical(_mask_write, [x, mask, val], x.layout.without_halo())
        if mask is not None:
            return compaction.expand(x, mask, val)
        check_advanced_bounds(x, key)
        single = single_index_array(x, key)
        if single is not None:
            return _ring_update(x, single, val, "set")
        template, operands = advanced_parts(x, key)
        return apply_logical(_advanced_write, [x, val, *operands],
                                    x.layout.without_halo(), static=(template,))
    key = expand_ellipsis(key, x.ndim)
    if any(_is_traced_int(k) for k in key):
        raise IndexError("x[i] = value with a traced index i is not supported: JAX drops an "
                         "out-of-range write where a clamped index would write another cell. "
                         "Write darray.where(darray.arange(n) == i, value, x) (a select), or "
                         "index with a Python int")
    plan, ints, shape, _ = _basic_plan(x, key)
    plan = _explicit_plan(plan, x.layout)
    if np.ndim(val) and not _broadcasts_to(np.shape(val), shape):
        raise ValueError(f"value of shape {np.shape(val)} cannot be broadcast to the indexed "
                         f"shape {shape}")
    values = np.asarray(ints, np.int64).reshape(-1)
    if x.layout.has_halo:
        return apply_logical(_basic_write, [x, val, values], x.layout.without_halo(),
                                    static=(plan,))
    vlay = val.layout if isinstance(val, DistArray) else None
    vdata = val.data if isinstance(val, DistArray) else val
    # block-local writes; the value moves by shifts (slicing.py), x is never gathered
    # (after vdata: a value holding x's own data makes x's buffer shared, so not donated)
    donate = donate and val is not x and donatable(x, x.layout)
    write = slicing.write_fn(x.layout, plan, vlay, tuple(shape), donate)
    return DistArray._new(write(x.data, vdata, values), x.layout)


def _ring_update(x: DistArray, single, val, how: str) -> DistArray:
    """x with ``x[(:,) * axis + (indices,)]`` combined with `val` by a ring
    (engine/exchange_gather.py): the value is broadcast to the indexed shape, x never
    gathered."""
    axis, idx = single
    shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    if not isinstance(val, DistArray) and np.ndim(val) == 0:
        return exchange_gather.scatter(x, idx, val, axis, how)
    if not _broadcasts_to(np.shape(val), shape):
        raise ValueError(f"value of shape {np.shape(val)} cannot be broadcast to the indexed "
                         f"shape {shape}")
    if not isinstance(val, DistArray):
        val = asarray(np.broadcast_to(np.asarray(val), shape), mesh=x.mesh)
    elif val.shape != shape:
        val = broadcast_to(val, shape)
    return exchange_gather.scatter(x, idx, val, axis, how)


def ring_update(x: DistArray, keys: tuple, value, how: str):
    """`x.at[keys].<how>(value)` by the ring when `keys` is one integer array along a split
    axis (single_index_array), else None. `value` is x's dtype (value_operand) on x's mesh."""
    single = single_index_array(x, keys)
    if single is None:
        return None
    if how in ("divide", "power") and x.dtype.kind not in "fc":
        return None  # JAX's integer divide/power change the dtype: left to the logical path
    return _ring_update(x, single, value, how)


def _broadcasts_to(src, dst) -> bool:
    try:
        return np.broadcast_shapes(tuple(src), tuple(dst)) == tuple(dst)
    except ValueError:
        return False
