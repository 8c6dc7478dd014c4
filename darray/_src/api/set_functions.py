"""Array API set functions: unique_all, unique_counts, unique_inverse, unique_values, isin.

The number of unique values sets the output shape, so it is computed first (one compiled
sort-and-count whose only host transfer is one integer), then the results are computed with
that static size. NaNs are all distinct, as the Array API asks. The unique_* functions
therefore need concrete inputs: under jit they raise jax's ConcretizationTypeError (a shape
cannot depend on values there); eagerly they accept everything numpy does.

Split integer arrays of engine/distinct.py's MIN_CELLS cells or more take engine/distinct.py:
each device sorts its own block, only the per-device distinct values meet. Every other kernel
here runs on replicated operands inside shard_map (compaction.run_replicated): XLA's
partitioner miscompiles the data-dependent compaction inside jnp.unique on partly replicated
layouts (see compaction.py).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api.creation import asarray
from darray._src.api.statistical import plain
from darray._src.distarray.array import DistArray
from darray._src.engine import compaction, distinct, membership
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_operand_meshes, same_mesh
from darray._src.layout.layout import default_layout


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
    compaction.concrete_count(x, "unique_*")
    (count,) = compaction.run_replicated(_count_distinct, [x], (None,))
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
    return (jnp.unique_values(a, size=size),)


def unique_all(x: DistArray, /) -> UniqueAllResult:
    """Unique values of `x` with first-occurrence indices, inverse indices and counts.

    Returns:
      UniqueAllResult(values, indices, inverse_indices, counts); values sorted ascending.

    Layout:
      values, indices and counts are 1-D, split over the mesh axes x used; inverse_indices
      has x's layout. Every device sorts the whole array (gathered once), then one integer (the
      count) goes to the host.
    """
    x = ensure_array("unique_all", x)
    if distinct.applies(x):
        return UniqueAllResult(*distinct.unique(x, ("values", "indices", "inverse", "counts")))
    n = _distinct(x)
    flat = default_layout((n,), x.layout)
    outs = compaction.run_replicated(_unique_all, [x],
                                     (flat, flat, x.layout.without_halo(), flat), static=(n,))
    return UniqueAllResult(*outs)


def unique_counts(x: DistArray, /) -> UniqueCountsResult:
    """Unique values of `x` and their counts. Layout: as unique_all."""
    x = ensure_array("unique_counts", x)
    if distinct.applies(x):
        return UniqueCountsResult(*distinct.unique(x, ("values", "counts")))
    n = _distinct(x)
    flat = default_layout((n,), x.layout)
    return UniqueCountsResult(*compaction.run_replicated(_unique_counts, [x], (flat, flat),
                                                         static=(n,)))


def unique_inverse(x: DistArray, /) -> UniqueInverseResult:
    """Unique values of `x` and, for each element of x, the index of its value.

    Layout: values as unique_all; inverse_indices in x's layout.
    """
    x = ensure_array("unique_inverse", x)
    if distinct.applies(x):
        return UniqueInverseResult(*distinct.unique(x, ("values", "inverse")))
    n = _distinct(x)
    flat = default_layout((n,), x.layout)
    return UniqueInverseResult(*compaction.run_replicated(
        _unique_inverse, [x], (flat, x.layout.without_halo()), static=(n,)))


def unique_values(x: DistArray, /) -> DistArray:
    """The sorted unique values of `x`. Layout: as unique_all's values."""
    x = ensure_array("unique_values", x)
    if distinct.applies(x):
        return distinct.unique(x, ("values",))[0]
    n = _distinct(x)
    (out,) = compaction.run_replicated(_unique_values, [x], (default_layout((n,), x.layout),),
                                       static=(n,))
    return out


def _isin(block, b, invert):
    return jnp.isin(block, b, invert=invert)


def isin(x1, x2, /, *, invert=False) -> DistArray:
    """For each element of x1, whether it occurs in x2 (negated with invert=True).

    Numpy's semantics: NaN is in nothing, -0.0 equals 0.0, x1 and x2 are compared in their
    promoted dtype.

    Layout: x1's layout. Neither array is gathered: each device sorts its block of x2, and the
    sorted blocks travel around a ring of devices (lax.ppermute over the mesh axes splitting
    x2); each device looks its block of x1 up in every visiting block (engine/membership.py).
    A non-distributed x2 is replicated.
    """
    if not isinstance(x1, DistArray) and not isinstance(x2, DistArray):
        x1 = ensure_array("isin", x1, "x1")  # the argument policy: placed as asarray
    x1, x2 = check_operand_meshes("isin", (x1, "x1"), (x2, "x2"))
    # where the call runs: the DistArray of rank >= 1 if any, else the DistArray given
    dists = [a for a in (x1, x2) if isinstance(a, DistArray)]
    like = next((a for a in dists if a.ndim), dists[0])
    if not isinstance(x1, DistArray) or not same_mesh(x1.mesh, like.mesh):
        x1 = asarray(np.asarray(x1), mesh=like.mesh, spec=default_layout(
            np.shape(x1), like.layout).split)
    x1 = ensure_array("isin", x1, "x1")
    if isinstance(x2, DistArray) and x2.ndim and same_mesh(x2.mesh, x1.mesh):
        b = x2
    else:
        b = _on(x2, x1.mesh)
    dtype = np.result_type(x1.dtype, b.dtype)  # numpy's promotion: int64 with float32 is
    if jax.dtypes.canonicalize_dtype(dtype) != dtype:  # float64 (x64 off: JAX's promotion)
        dtype = jnp.result_type(x1.dtype, b.dtype)
    if dtype.kind not in "biuf" or x1.size == 0 or b.size == 0:
        # complex values have no order to search in; empty operands need no ring
        return compaction.blockwise_with_whole(_isin, x1, [b], static=(bool(invert),))
    if dtype.kind == "b":
        dtype = np.dtype(np.uint8)
    x1, b = plain(x1), plain(b)
    fn = membership.isin_fn(x1.layout, b.layout, dtype, bool(invert))
    return DistArray._new(fn(x1.data, b.data), x1.layout)


def _on(value, mesh) -> DistArray:
    """A non-distributed operand (or 0-d array) placed on `mesh`, replicated."""
    if isinstance(value, DistArray):
        value = value.to_jax() if value.ndim else np.asarray(value)
    return asarray(value, mesh=mesh, spec=())
