"""Utility functions: all, any, diff."""
from __future__ import annotations

import operator

import jax.numpy as jnp

from darray._src.api.statistical import plain, reduce
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import apply_logical
from darray._src.engine.arguments import ensure_array
from darray._src.layout.axes import normalize_axis
from darray._src.layout.layout import Layout
from darray._src.placement.physical import masked_physical


def _all_kernel(data, layout, axes, keepdims):
    return jnp.all(masked_physical(data != 0, layout, True), axis=axes, keepdims=keepdims)


def _any_kernel(data, layout, axes, keepdims):
    return jnp.any(masked_physical(data != 0, layout, False), axis=axes, keepdims=keepdims)


_LAYOUT = """
    Layout:
      x's layout without the reduced axes (see darray.sum); one all-reduce over the mesh axes
      that split the reduced axes, never a gather; padding is masked.
"""


def all(x, /, *, axis=None, keepdims=False) -> DistArray:  # noqa: A001
    """Whether every element over `axis` is nonzero/True (an int, tuple or None)."""
    return reduce(x, _all_kernel, axis, keepdims, fname="all")


def any(x, /, *, axis=None, keepdims=False) -> DistArray:  # noqa: A001
    """Whether some element over `axis` is nonzero/True (an int, tuple or None)."""
    return reduce(x, _any_kernel, axis, keepdims, fname="any")


all.__doc__ = (all.__doc__ or "") + _LAYOUT
any.__doc__ = (any.__doc__ or "") + _LAYOUT


def _diff_fn(*args):
    *arrays, axis, n, has_prepend, has_append = args
    it = iter(arrays)
    x = next(it)
    parts = ([next(it)] if has_prepend else []) + [x] + ([next(it)] if has_append else [])
    parts = [jnp.broadcast_to(p, x.shape[:axis] + (p.shape[axis] if p.ndim else 1,)
                              + x.shape[axis + 1:]) for p in parts]
    return jnp.diff(jnp.concatenate(parts, axis=axis) if len(parts) > 1 else x, n=n, axis=axis)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None) -> DistArray:
    """The n-th forward difference along `axis`: out[i] = x[i+1] - x[i], applied n times.

    Args:
      x: DistArray of numeric dtype.
      axis: the axis to difference (default: the last).
      n: how many times (>= 0).
      prepend, append: values joined to x along `axis` first (arrays matching x's other axes,
        or scalars).

    Layout:
      x's split with the axis shortened by n (lengthened by prepend/append). Each block needs
      n cells of its neighbour: XLA exchanges them (collective-permute), no gather.
    """
    x = ensure_array("diff", x)
    if x.ndim == 0:
        raise ValueError("diff needs an array of rank >= 1, got a 0-d array")
    axis = normalize_axis(axis, x.ndim)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"n={n!r} must be an int") from None
    if n < 0:
        raise ValueError(f"n={n} must be >= 0")
    extras = [e for e in (prepend, append) if e is not None]
    length = x.shape[axis] + sum(e.shape[axis] if getattr(e, "ndim", 0) else 1 for e in extras)
    shape = x.shape[:axis] + (max(length - n, 0),) + x.shape[axis + 1:]
    lay = x.layout
    out = Layout(shape, lay.mesh, lay.split, ((0, 0),) * x.ndim)
    return apply_logical(_diff_fn, [plain(x)] + extras, out,
                         static=(axis, n, prepend is not None, append is not None))
