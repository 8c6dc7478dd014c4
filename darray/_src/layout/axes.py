"""Checking axis and length arguments: one wording of the errors for every module."""
from __future__ import annotations

import operator

import numpy as np

from darray._src.base.errors import AxisError as AxisError
from darray._src.base.errors import LayoutError as LayoutError


def normalize_axis(axis, ndim: int, argname: str = "axis", *, context: str = "") -> int:
    """A non-negative axis for rank `ndim`; `context` (e.g. "fft: ") prefixes the message."""
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{context}{argname}={axis!r} must be an int") from None
    if not -ndim <= a < ndim:
        raise AxisError(f"{context}{argname}={a} is out of range for an array of rank {ndim}; "
                        f"accepted: {-ndim} <= {argname} < {ndim}")
    return a % ndim


def normalize_axes(axes, ndim: int, argname: str = "axis") -> tuple[int, ...]:
    """Non-negative, distinct axes from an int or a sequence of ints."""
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = tuple(normalize_axis(a, ndim, argname) for a in axes)
    if len(set(out)) != len(out):
        raise AxisError(f"{argname}={tuple(axes)!r} repeats an axis; give each axis once")
    return out


def positive_length(n, argname: str = "n", *, context: str = "") -> int:
    """A transform or sequence length >= 1."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{context}{argname}={n!r} must be an int") from None
    if n < 1:
        raise ValueError(f"{context}{argname}={n} must be a positive length")
    return n
