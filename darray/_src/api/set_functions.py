"""Array API set functions: unique_all, unique_counts, unique_inverse, unique_values, isin.

The number of unique values sets the output shape, so it is computed first (one compiled
sort-and-count whose only host transfer is one integer), then the results are computed with
that static size. NaNs are all distinct, as the Array API asks. The unique_* functions
therefore need concrete inputs (not traced under jit).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api import common
from darray._src.api._helpers import default_layout
from darray._src.array import DistArray


class UniqueAllResult(NamedTuple):
    values: DistArray
    indices: DistArray
    inverse_indices: DistArray
    counts: DistArray


class UniqueCountsResult(NamedTuple):
    values: DistArray
    counts: DistArray


class UniqueInverseResult(NamedTuple):
    values: DistArray
    inverse_indices: DistArray


def _count_distinct(a):
    flat = jnp.sort(a.reshape(-1))
    if flat.size == 0:
        return (jnp.zeros((), jnp.int64),)
    # NaN != NaN, so every NaN counts as its own value (equal_nan=False).
    return (1 + jnp.count_nonzero(flat[1:] != flat[:-1]),)


def _distinct(x: DistArray) -> int:
    x = common.check_array(x)
    if isinstance(x.data, jax.core.Tracer):
        raise NotImplementedError("unique_* need a concrete array: the number of unique values "
                                  "sets the output shape, which jit cannot trace")
    (count,) = common.apply_logical(_count_distinct, [x], (None,))
    return int(count)


def _unique_all(a, size):
    v, i, inv, c = jnp.unique_all(a, size=size)
    return v, i, inv.reshape(a.shape), c


def _unique_counts(a, size):
    return tuple(jnp.unique_counts(a, size=size))


def _unique_inverse(a, size):
    v, inv = jnp.unique_inverse(a, size=size)
    return v, inv.reshape(a.shape)


def _unique_values(a, size):
    return jnp.unique_values(a, size=size)


def unique_all(x: DistArray, /) -> UniqueAllResult:
    """Unique values of `x` with first-occurrence indices, inverse indices and counts.

    Returns:
      UniqueAllResult(values, indices, inverse_indices, counts); values sorted ascending.

    Layout:
      values, indices and counts are 1-D, split over the mesh axes x used; inverse_indices
      has x's layout. Logical path: XLA sorts the flattened array (it gathers it), then one
      integer (the count) goes to the host.
    """
    x = common.check_array(x)
    n = _distinct(x)
    flat = default_layout((n,), x.layout)
    outs = common.apply_logical(_unique_all, [x], (flat, flat, x.layout.without_halo(), flat),
                                static=(n,))
    return UniqueAllResult(*outs)


def unique_counts(x: DistArray, /) -> UniqueCountsResult:
    """Unique values of `x` and their counts. Layout: as unique_all."""
    x = common.check_array(x)
    n = _distinct(x)
    flat = default_layout((n,), x.layout)
    return UniqueCountsResult(*common.apply_logical(_unique_counts, [x], (flat, flat),
                                                    static=(n,)))


def unique_inverse(x: DistArray, /) -> UniqueInverseResult:
    """Unique values of `x` and, for each element of x, the index of its value.

    Layout: values as unique_all; inverse_indices in x's layout.
    """
    x = common.check_array(x)
    n = _distinct(x)
    flat = default_layout((n,), x.layout)
    return UniqueInverseResult(*common.apply_logical(
        _unique_inverse, [x], (flat, x.layout.without_halo()), static=(n,)))


def unique_values(x: DistArray, /) -> DistArray:
    """The sorted unique values of `x`. Layout: as unique_all's values."""
    x = common.check_array(x)
    n = _distinct(x)
    return common.apply_logical(_unique_values, [x], default_layout((n,), x.layout),
                                static=(n,))


def _isin(a, b, invert):
    return jnp.isin(a, b, invert=invert)


def isin(x1, x2, /, *, invert=False) -> DistArray:
    """For each element of x1, whether it occurs in x2 (negated with invert=True).

    Layout: x1's layout. Logical path: x2 is made available to every device (replicated),
    x1 stays where it is.
    """
    if not isinstance(x1, DistArray):
        if not isinstance(x2, DistArray):
            raise TypeError("isin needs at least one DistArray argument")
        x1 = common.apply_logical(_identity, [np.asarray(x1)],
                                  default_layout(np.shape(x1), x2.layout))
    x1 = common.check_array(x1, "x1")
    b = x2 if isinstance(x2, DistArray) else np.asarray(x2)
    return common.apply_logical(_isin, [x1, b], x1.layout.without_halo(),
                                static=(bool(invert),))


def _identity(a):
    return a
