"""Searching functions: argmax, argmin, count_nonzero, nonzero, searchsorted, where."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api import dtypes as _dt
from darray._src.api.common import apply_logical, check_array, masked_physical, valid_mask
from darray._src.api.elementwise import elementwise
from darray._src.api.statistical import highest, lowest, reduce
from darray._src.array import DistArray
from darray._src.placement import make_layout


# -- argmax / argmin ---------------------------------------------------------------------------
def _arg_kernel(data, layout, axes, keepdims, kind):
    if data.dtype == np.bool_:
        data = data.astype(np.int8)
    index_dtype = _dt.default_int()
    worst = lowest(data.dtype) if kind == "max" else highest(data.dtype)
    vals = masked_physical(data, layout, worst)
    best = (jnp.max if kind == "max" else jnp.min)(vals, axis=axes, keepdims=True)
    # The winning index is the smallest (logical, C-order) index holding the best value: a
    # second reduction, so both combine across devices with an all-reduce (no gather).
    strides = np.cumprod((1,) + tuple(layout.shape[a] for a in axes[::-1]))[:-1][::-1]
    index = functools.reduce(jnp.add, [
        jax.lax.broadcasted_iota(index_dtype, data.shape, a) * int(s)
        for a, s in zip(axes, strides)])
    none = np.iinfo(index_dtype).max
    mask = valid_mask(layout)
    if mask is not None:
        index = jnp.where(mask, index, none)
    hit = vals == best
    if data.dtype.kind == "f":
        # The first NaN wins, as in numpy. Found apart: the cross-device max/min all-reduce
        # may drop NaNs (measured on CPU).
        nan = jnp.isnan(vals)
        hit = jnp.where(jnp.any(nan, axis=axes, keepdims=True), nan, hit)
    return jnp.min(jnp.where(hit, index, none), axis=axes, keepdims=keepdims)


def _arg(x, axis, keepdims, kind):
    fname = "arg" + kind
    x = check_array(x)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{fname}: axis={axis!r} must be an int or None")
    if x.size == 0:
        raise ValueError(f"{fname} of an empty array (shape {x.shape}) has no answer")
    return reduce(x, _arg_kernel, axis, keepdims, kind, fname=fname, category="real numeric")


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


argmax.__doc__ += _ARG_DOC
argmin.__doc__ += _ARG_DOC


def _count_kernel(data, layout, axes, keepdims):
    nonzero = masked_physical(data != 0, layout, False)
    return jnp.sum(nonzero, axis=axes, keepdims=keepdims, dtype=_dt.default_int())


def count_nonzero(x, /, *, axis=None, keepdims=False) -> DistArray:
    """Number of nonzero (True) elements over `axis` (an int, tuple or None).

    Layout:
      As for darray.sum: one all-reduce over the mesh axes splitting the reduced axes.
    """
    return reduce(x, _count_kernel, axis, keepdims, fname="count_nonzero")


# -- data-dependent shapes ---------------------------------------------------------------------
def _nonzero_fn(logical, size):
    return jnp.nonzero(logical, size=size)


def nonzero(x, /) -> tuple[DistArray, ...]:
    """Indices of the nonzero elements, one 1-D array per axis (C order).

    Layout:
      Each output is a fresh 1-D array on x's mesh (default split). The count is found first
      (one all-reduce, read on the host, since the shape depends on it); XLA then compacts the
      indices, which moves data between devices.
    """
    x = check_array(x)
    if x.ndim == 0:
        raise ValueError("nonzero needs an array of rank >= 1, got a 0-d array")
    size = int(count_nonzero(x))
    layouts = tuple(make_layout((size,), mesh=x.mesh) for _ in range(x.ndim))
    outs = apply_logical(_nonzero_fn, [x], layouts, static=(size,))
    return tuple(o if o.dtype == _dt.default_int() else _cast_index(o) for o in outs)


def _cast_index(a: DistArray) -> DistArray:
    from darray._src.api.data_types import astype
    return astype(a, _dt.default_int())


def _searchsorted_fn(x1, x2, *rest):
    *sorter, side = rest
    if sorter:
        x1 = x1[sorter[0]]
    return jnp.searchsorted(x1, x2, side=side).astype(_dt.default_int())


def searchsorted(x1, x2, /, *, side="left", sorter=None) -> DistArray:
    """Indices where x2's elements would be inserted into the sorted 1-D x1.

    Args:
      x1: 1-D DistArray, sorted ascending unless `sorter` is given.
      x2: DistArray of values to place, or a Python scalar (Array API 2025.12; it takes
        x1's dtype and gives a 0-d result).
      side: "left" (first suitable index) or "right" (last).
      sorter: indices that sort x1 (1-D DistArray of integers) or None.

    Layout:
      x2's layout. Every device needs all of x1 (and sorter), which XLA replicates; x2 is
      never moved.
    """
    x1 = check_array(x1, "x1")
    if isinstance(x2, (bool, int, float, complex)):  # a scalar x2 (2025.12): x1's dtype
        from darray._src.api.creation import asarray
        x2 = asarray(x2, dtype=x1.dtype, device=x1.mesh)
    x2 = check_array(x2, "x2")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side={side!r}; use 'left' or 'right'")
    args = [x1, x2] + ([check_array(sorter, "sorter")] if sorter is not None else [])
    return apply_logical(_searchsorted_fn, args, x2.layout.without_halo(), static=(side,))


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
