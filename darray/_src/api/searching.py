"""Searching functions: argmax, argmin, nonzero, searchsorted, where (count_nonzero, a
reduction, is in statistical.py)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.api.creation import asarray
from darray._src.api.elementwise import elementwise
from darray._src.api.statistical import highest, lowest, reduce, reduced_layout
from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine import compaction, distributed_sort, window_search
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_operand_meshes
from darray._src.placement import physical


# -- argmax / argmin ---------------------------------------------------------------------------
def _arg_kernel(data, layout, axes, keepdims, kind, skip_nan=False):
    """argmax/argmin as one variadic reduction of (value, index) pairs per device, each pair
    made as the reduction reads its cell (padding and, for nanarg*, NaNs become the worst
    value at an index no cell has): no masked copy of the block, no index array and no
    second pass is kept (they were 3-4 blocks together). Across devices, two all-reduces
    (the best value, then the smallest index holding it): no gather."""
    if data.dtype == np.bool_:
        data = data.astype(np.int8)
    names = tuple(n for a in axes for n in layout.split[a])
    if not any(layout.split):
        return _arg_block(data, layout, axes, keepdims, kind, skip_nan, {}, ())
    out = reduced_layout(layout, axes, keepdims)
    used = layout.used_mesh_axes

    def body(block):
        at = {n: jax.lax.axis_index(n) for n in used}
        return _arg_block(block, layout, axes, keepdims, kind, skip_nan, at, names)

    return compat.shard_map(body, mesh=layout.mesh, in_specs=(layout.spec,),
                            out_specs=out.spec, check_vma=False)(data)


def _arg_block(block, layout, axes, keepdims, kind, skip_nan, at, names):
    """The (value, index) reduction of one device's block (`at`: its mesh coordinates), the
    partial results combined over mesh axes `names`."""
    index_dtype = _dt.default_int()
    worst = lowest(block.dtype) if kind == "max" else highest(block.dtype)
    none = np.iinfo(index_dtype).max
    floating = block.dtype.kind == "f"
    skip_nan = skip_nan and floating
    strides = dict(zip(axes, np.cumprod((1,) + tuple(layout.shape[a]
                                                     for a in axes[::-1]))[:-1][::-1]))
    index, keep = None, None
    for a in range(block.ndim):
        g = jax.lax.broadcasted_iota(index_dtype, block.shape, a)
        if layout.split[a]:
            b = jnp.zeros((), index_dtype)
            for n in layout.split[a]:
                b = b * layout.mesh_shape[n] + at[n].astype(index_dtype)
            g = g + b * layout.chunk(a)
            if layout.chunk(a) * layout.parts(a) != layout.shape[a]:
                ok = g < layout.shape[a]
                keep = ok if keep is None else keep & ok
        if a in strides:
            term = g * int(strides[a])
            index = term if index is None else index + term
    if skip_nan:
        keep = ~jnp.isnan(block) if keep is None else keep & ~jnp.isnan(block)
    vals = block if keep is None else jnp.where(keep, block, jnp.asarray(worst, block.dtype))
    if keep is not None:
        index = jnp.where(keep, index, jnp.asarray(none, index_dtype))
    nan_wins = floating and not skip_nan

    def pick(a, b):
        (av, ai), (bv, bi) = a, b
        better = (av > bv) if kind == "max" else (av < bv)
        first = (av == bv) & (ai < bi)
        if nan_wins:  # the first NaN wins, as in numpy
            a_nan, b_nan = jnp.isnan(av), jnp.isnan(bv)
            better = (a_nan & ~b_nan) | (~a_nan & ~b_nan & better)
            first = first | (a_nan & b_nan & (ai < bi))
        take_a = better | first
        return jnp.where(take_a, av, bv), jnp.where(take_a, ai, bi)

    init = (jnp.asarray(worst, vals.dtype), jnp.asarray(none, index_dtype))
    best, found = jax.lax.reduce((vals, index), init, pick, tuple(axes))
    if names:
        # two all-reduces; NaNs apart (a max/min all-reduce may drop them, measured on CPU)
        nan = jnp.isnan(best) if nan_wins else None
        if nan is not None:
            best = jnp.where(nan, jnp.asarray(worst, best.dtype), best)
        top = (jax.lax.pmax if kind == "max" else jax.lax.pmin)(best, names)
        hit = best == top
        if nan is not None:
            hit = jnp.where(jax.lax.pmax(nan.astype(np.int8), names) > 0, nan, hit)
        found = jax.lax.pmin(jnp.where(hit, found, jnp.asarray(none, index_dtype)), names)
    if keepdims:
        found = jnp.expand_dims(found, tuple(axes))
    if skip_nan:
        # a slice of NaNs only has no answer: -1, as jax.numpy.nanargmax gives
        return jnp.where(found == none, jnp.asarray(-1, index_dtype), found)
    return found


def _arg(x, axis, keepdims, kind, skip_nan=False):
    fname = ("nanarg" if skip_nan else "arg") + kind
    x = ensure_array(("nan" if skip_nan else "") + "arg" + kind, x)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{fname}: axis={axis!r} must be an int or None")
    # the largest index: the flat one of the last element for axis=None
    n = x.size if axis is None else x.shape[int(axis) % x.ndim] if x.ndim else 1
    _dt.check_fits_default_int(fname, n - 1, "the index" if axis is not None else
                               "the flat (C-order) index")
    # numpy's rule: only an empty searched axis has no answer ((0, 3) along axis 1 gives (0,))
    return reduce(x, _arg_kernel, axis, keepdims, kind, bool(skip_nan), fname=fname,
                  category="real numeric", nonempty=True)


_ARG_DOC = """

    Args:
      x: DistArray of real numeric dtype.
      axis: the axis to search, or None for the flattened (C-order) array.
      keepdims: keep the searched axis with length 1.

    Returns:
      DistArray of the default integer dtype; ties and NaNs give the first occurrence.

    Layout:
      x's layout without the searched axis. Each device finds its best value and index; two
      all-reduces (value, then smallest index holding it) combine them: no gather.
"""


def argmax(x, /, *, axis=None, keepdims=False) -> DistArray:
    """Index of the largest element along `axis`."""
    return _arg(x, axis, keepdims, "max")


def argmin(x, /, *, axis=None, keepdims=False) -> DistArray:
    """Index of the smallest element along `axis`."""
    return _arg(x, axis, keepdims, "min")


def nanargmax(x, /, *, axis=None, keepdims=False) -> DistArray:
    """numpy's nanargmax: index of the largest element along `axis`, NaNs ignored. A slice of
    NaNs only gives -1 (jax.numpy's answer; numpy raises)."""
    return _arg(x, axis, keepdims, "max", skip_nan=True)


def nanargmin(x, /, *, axis=None, keepdims=False) -> DistArray:
    """numpy's nanargmin: index of the smallest element along `axis`, NaNs ignored. A slice of
    NaNs only gives -1 (jax.numpy's answer; numpy raises)."""
    return _arg(x, axis, keepdims, "min", skip_nan=True)


for _f in (argmax, argmin, nanargmax, nanargmin):
    _f.__doc__ = (_f.__doc__ or "") + _ARG_DOC


# -- data-dependent shapes ---------------------------------------------------------------------
def nonzero(x, /) -> tuple[DistArray, ...]:
    """Indices of the nonzero elements, one 1-D array per axis (C order).

    Layout:
      Each output is 1-D, split over the mesh axes x uses. The count is found first (one
      all-reduce, read on the host, since the shape depends on it; so x must be concrete, not
      traced under jit). The compaction runs on the physical blocks (compaction.compact): each
      device ranks its own nonzeros and one reduce-scatter delivers them, never
      jnp.nonzero under the SPMD partitioner, which XLA miscompiles on partly replicated
      layouts.
    """
    x = ensure_array("nonzero", x)
    if x.ndim == 0:
        raise ValueError("nonzero needs an array of rank >= 1, got a 0-d array")
    # the count of nonzeros and each one's rank among them are default integers
    _dt.check_fits_default_int("nonzero", x.size, "the count of nonzero elements")
    return compaction.compact(x, with_indices=True)


# From this many cells of x2 per device the replicated search runs the one-buffer binary
# search (window_search.count_in_prefix); below, jnp.searchsorted, whose scan buffers are small
# there and which ran faster on small arrays (1.3x against 1.9-3.3x jnp on one device at 2^12
# cells, benchmarks/bench_speed_guard.py --small).
_ONE_BUFFER_SEARCH_CELLS = 1 << 15


@program_cache(MEDIUM)
def _searchsorted_fn(x1_lay, x2_lay, sorter_lay, side):
    """x1 (and sorter) whole on every device, x2 on its own blocks, inside shard_map: the
    search is local, and no data-dependent search is handed to the partitioner."""
    whole = PartitionSpec()
    out_lay = x2_lay.without_halo()
    extra = () if sorter_lay is None else (whole,)

    def body(x1, x2_block, *sorter):
        x2_block = physical.strip_ghosts(x2_block, x2_lay)
        if sorter:
            x1 = x1[sorter[0]]
        if x1.shape[0] >= 2 ** 31 or x2_block.size < _ONE_BUFFER_SEARCH_CELLS:
            return jnp.searchsorted(x1, x2_block, side=side).astype(_dt.default_int())
        # a binary search with one buffer per value: jnp.searchsorted's scan held 5 blocks
        # of x2 (x64 off, a (1001, 403) x2 against 61 cells; issue 49's memory rule)
        dtype = jnp.result_type(x1.dtype, x2_block.dtype)
        found = window_search.count_in_prefix(
            x1, x1.shape[0], x2_block,
            lambda cell: window_search.before(cell, x2_block, side,
                                              distributed_sort._value_lt_eq, dtype))
        return found.astype(_dt.default_int())

    fn = compat.shard_map(body, mesh=x2_lay.mesh, in_specs=(whole, x2_lay.spec) + extra,
                          out_specs=out_lay.spec, check_vma=False)

    def run(d1, d2, *ds):
        x1 = compat.constrain(physical.to_logical(d1, x1_lay), x2_lay.mesh, whole)
        rest = [compat.constrain(physical.to_logical(d, sorter_lay), x2_lay.mesh, whole)
                for d in ds]
        return physical.constrain(fn(x1, physical.constrain(d2, x2_lay), *rest), out_lay)
    return jax.jit(run), out_lay


def searchsorted(x1, x2, /, *, side="left", sorter=None) -> DistArray:
    """Indices where x2's elements would be inserted into the sorted 1-D x1.

    Args:
      x1: 1-D DistArray, sorted ascending unless `sorter` is given.
      x2: DistArray of values to place, or a Python scalar (Array API 2025.12; it takes
        x1's dtype and gives a 0-d result).
      side: "left" (first suitable index) or "right" (last).
      sorter: indices that sort x1 (1-D DistArray of integers) or None.

    Layout:
      x2's layout; x2 is never moved. A split x1 (without `sorter`) is never gathered: when
      x2's block is the same on all of x1's devices, each device counts the elements of its
      x1 block before each x2 value and one psum adds the counts; when x2 is split on x1's
      mesh axes (x1 of 96 Ki elements or more), x1 is read one cell in P at a time, each
      such column about a block (engine/window_search.py). Else, and for an unsplit or
      small x1 or a `sorter`, x1 is replicated and each device searches for its own block
      (inside shard_map).
    """
    x1 = ensure_array("searchsorted", x1, "x1")
    if _dt.is_weak_scalar(x2):  # a Python scalar x2 (2025.12): x1's dtype
        x2 = asarray(x2, dtype=x1.dtype, device=x1.mesh)
    x2 = ensure_array("searchsorted", x2, "x2")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side={side!r}; use 'left' or 'right'")
    _dt.check_fits_default_int("searchsorted", x1.shape[0], "the insertion index")
    sorters = [] if sorter is None else [ensure_array("searchsorted", sorter, "sorter")]
    args = [x1, x2] + sorters
    args = list(check_operand_meshes("searchsorted", *zip(args, ("x1", "x2", "sorter"))))
    x1, x2 = args[:2]
    if len(args) == 3 and (args[2].ndim != 1 or args[2].shape != x1.shape):
        raise ValueError(f"searchsorted: sorter must have x1's shape {x1.shape}, got "
                         f"{args[2].shape}")
    if len(args) == 2 and distributed_sort.searchable(x1.layout, x2.layout):
        data, out = distributed_sort.searchsorted_split(x1.data, x1.layout, x2.data,
                                                        x2.layout, side)
        return DistArray._new(data, out)
    fn, out = _searchsorted_fn(x1.layout, x2.layout,
                               args[2].layout if len(args) == 3 else None, side)
    return DistArray._new(fn(x1.data, x2.data, *[a.data for a in args[2:]]), out)


def where(condition, x1, x2, /) -> DistArray:
    """x1 where condition is True, else x2 (all three broadcast).

    Args:
      condition: boolean DistArray (or numpy/jax array if x1 or x2 is a DistArray).
      x1, x2: DistArrays, Python scalars or numpy/jax arrays.

    Layout:
      As for elementwise functions: the first DistArray operand's layout; no communication
      when all DistArray operands share it.
    """
    dtype = getattr(condition, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.bool_:
        raise TypeError(f"where: condition must be a boolean array, got "
                        f"{type(condition).__name__} of dtype {dtype}")
    return elementwise("where", jnp.where, (condition, x1, x2), ("condition", "x1", "x2"))
