"""`take`, `take_along_axis` and `dynamic_slice`: integer positions along one axis.

Along a split axis, `take` and `take_along_axis` read by a ring of ppermutes (take_along_axis
over 8 devices or more: by all-to-alls onto another axis; engine/exchange_gather.py) and never
gather x; otherwise, and for arrays under the ring's size
threshold, on the logical path (XLA's partitioner). Split from indexing.py (``x[key]``).
"""
from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.distarray.array import DistArray
from darray._src.engine import compaction, exchange_gather
from darray._src.engine.apply import apply_logical
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_operand_meshes
from darray._src.layout.axes import normalize_axis
from darray._src.layout.layout import make_out_layout


# -- take -------------------------------------------------------------------------------------
def _wrap(idx, n):
    """Negative indices count from the end, as in the Array API."""
    return jnp.where(idx < 0, idx + n, idx)


def _take(a, idx, axis):
    return compaction.exact_read(lambda b, i: jnp.take(b, i, axis=axis, mode="clip"), a,
                                 _wrap(idx, a.shape[axis]))


def take(x: DistArray, indices, /, *, axis=None) -> DistArray:
    """Elements of `x` at integer `indices` (1-D) along `axis` (optional for 1-D x).

    Layout: x's split on every axis (the taken axis keeps its mesh axes at its new length).
    Along a split axis (x of 96 Ki cells or more), x's blocks or the index requests travel round a
    ring of ppermutes (engine/exchange_gather.py): x is never gathered, about 3 blocks per
    device. Otherwise the logical path: XLA reads the taken cells from their owners.
    """
    x = ensure_array("take", x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take needs axis= for an array of rank {x.ndim}")
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    idx = ensure_array("take_along_axis", indices, "indices")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"indices must have an integer dtype, got {idx.dtype}")
    if idx.ndim != 1:
        raise ValueError(f"indices must be 1-D, got shape {idx.shape}")
    x, idx = check_operand_meshes("take", (x, "x"), (idx, "indices"))
    shape = list(x.shape)
    shape[axis] = idx.shape[0]
    out = make_out_layout(x.mesh, shape, x.layout.split)
    if exchange_gather.applies(x, axis) and idx.size:
        return exchange_gather.gather(x, idx, axis, out)
    return apply_logical(_take, [x, idx], out, static=(axis,))


def _take_along(a, idx, axis):
    return compaction.exact_read(
        lambda b, i: jnp.take_along_axis(b, i, axis=axis, mode="clip"), a,
        _wrap(idx, a.shape[axis]))


def take_along_axis(x: DistArray, indices, /, *, axis=-1) -> DistArray:
    """Pick values along `axis` at `indices` (same rank as x, broadcast on the other axes).

    Layout: x's split where the output shape equals x's, else the indices'. Along a split axis
    (x of 96 Ki cells or more, indices of x's extent on the other axes), never gathering x
    (engine/exchange_gather.py): split over 8 devices or more, all-to-alls move the split onto
    another long enough axis and each device picks from whole columns; otherwise a ring of
    ppermutes moves x's blocks or the index requests. Else the logical path.
    """
    x = ensure_array("take_along_axis", x)
    axis = normalize_axis(axis, x.ndim)
    idx = ensure_array("take_along_axis", indices, "indices")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"indices must have an integer dtype, got {idx.dtype}")
    if idx.ndim != x.ndim:
        raise ValueError(f"indices must have x's rank {x.ndim}, got shape {idx.shape}")
    x, idx = check_operand_meshes("take_along_axis", (x, "x"), (idx, "indices"))
    shape = list(np.broadcast_shapes(tuple(n for i, n in enumerate(x.shape) if i != axis),
                                     tuple(n for i, n in enumerate(idx.shape) if i != axis)))
    shape.insert(axis, idx.shape[axis])
    like = x if tuple(shape) == x.shape or not isinstance(idx, DistArray) else idx
    out = make_out_layout(x.mesh, shape, like.layout.split)
    if exchange_gather.applies(x, axis) and idx.size and all(
            n == m for a, (n, m) in enumerate(zip(x.shape, idx.shape)) if a != axis):
        return exchange_gather.gather(x, idx, axis, out, along=True)
    return apply_logical(_take_along, [x, idx], out, static=(axis,))


# -- a window at a traced start ------------------------------------------------------------------
def dynamic_slice(x: DistArray, start_indices, slice_sizes) -> DistArray:
    """`jax.lax.dynamic_slice` for a DistArray: the window of static shape `slice_sizes` at
    `start_indices`, which may be traced (``x[i:i + k]`` inside `jax.jit`, where slice bounds
    must be static).

    Args:
      x: DistArray.
      start_indices: one integer per axis (Python ints, 0-d integer arrays or tracers).
        As in JAX, a negative start counts from the end, and a start is clamped so that the
        window fits in the array.
      slice_sizes: one static int per axis, 0 <= size <= x.shape[axis].

    Layout:
      x's split on every axis (at the window's length). Logical path: XLA's partitioner
      reads the window at its runtime offset, which gathers each split axis whose window it
      cannot place statically (a window of a split axis is read from all of its blocks).
    """
    x = ensure_array("dynamic_slice", x)
    starts, sizes = tuple(start_indices), tuple(slice_sizes)
    if len(starts) != x.ndim or len(sizes) != x.ndim:
        raise ValueError(f"dynamic_slice: start_indices ({len(starts)} given) and slice_sizes "
                         f"({len(sizes)} given) need one entry per axis of x (x has shape "
                         f"{x.shape})")
    try:
        sizes = tuple(operator.index(n) for n in sizes)
    except TypeError:
        raise TypeError(f"dynamic_slice: slice_sizes={slice_sizes!r} must be static ints (the "
                        "result's shape)") from None
    for axis, (n, m) in enumerate(zip(sizes, x.shape)):
        if not 0 <= n <= m:
            raise ValueError(f"dynamic_slice: slice_sizes[{axis}]={n} must be in 0..{m} "
                             f"(x.shape[{axis}])")
    dtype = jnp.int64 if jax.config.read("jax_enable_x64") else jnp.int32
    start = jnp.stack([jnp.asarray(s.data if isinstance(s, DistArray) else s, dtype)
                       for s in starts]) if starts else jnp.zeros((0,), dtype)
    out = make_out_layout(x.mesh, sizes, x.layout.split)
    return apply_logical(_dynamic_slice_fn, [x, start], out, static=(sizes,))


def _dynamic_slice_fn(a, start, sizes):
    return jax.lax.dynamic_slice(a, [start[i] for i in range(len(sizes))], sizes)
