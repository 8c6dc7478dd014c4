"""Creation block by block: no process ever holds the global array.

`from_callback` asks a host function for each block a process's devices hold (the way to read a
file region by region, or to wrap an existing solver's per-rank output); `fromfunction`
evaluates a jax function of global indices on each device for its own block. Both work
unchanged in multi-process runs: each process only ever touches its own devices' blocks.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api.creation import default_dtype
from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.placing import check_dtype, created, shape_tuple
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.placement.placement import make_layout


def logical_ranges(layout: Layout, physical_index) -> tuple[slice, ...]:
    """The logical global cells (start, stop clipped to the shape) inside one physical block,
    given as the tuple of slices jax.make_array_from_callback hands out."""
    out = []
    for axis, sl in enumerate(physical_index):
        start, stop, _ = sl.indices(layout.physical_shape[axis])
        n = layout.shape[axis]
        out.append(slice(min(start, n), min(stop, n)))
    return tuple(out)


def from_callback(shape, dtype, callback, *, mesh=None, spec=None) -> DistArray:
    """A DistArray whose blocks come from a host function, one call per distinct block.

    Args:
      shape: the logical global shape (int or tuple of ints).
      dtype: the dtype of the result (the callback's blocks are cast to it).
      callback: ``callback(index) -> numpy array``; ``index`` is a tuple of slices (one per axis,
        step 1, global logical coordinates) and the result must have the shape those slices
        select. It is called only for the blocks this process's devices hold, once per distinct
        block (replicas share one call), and never for a block that owns no cells (the trailing
        block of an uneven split). Padding is darray's business: the callback never sees it.
      mesh, spec: where the array goes (as in `darray.asarray`).

    Returns:
      A DistArray of `shape` and `dtype`.

    Layout:
      As requested; no communication (each device receives its block from its own process).

    Example:
      >>> x = darray.from_callback((13, 10), darray.float32,
      ...                          lambda idx: np.ones([s.stop - s.start for s in idx]))
    """
    shape = shape_tuple(shape)
    dtype = check_dtype(dtype, "dtype")
    if dtype is None:
        raise TypeError("dtype=None is not accepted by from_callback; give the result dtype "
                        "(e.g. darray.float32)")
    if not callable(callback):
        raise TypeError(f"callback={callback!r} must be callable: callback(index) -> numpy "
                        "block, index a tuple of slices")
    layout = make_layout(shape, mesh, spec)
    padded = layout.physical_shape
    made: dict = {}

    def block(index):
        region = logical_ranges(layout, index)
        key = tuple((r.start, r.stop) for r in region)
        if key not in made:  # replicated devices ask for the same block; call once
            made[key] = _one_block(callback, region, dtype)
        want = tuple(len(range(*sl.indices(n))) for sl, n in zip(index, padded))
        piece = made[key]
        if piece.shape == want:
            return piece
        out = np.zeros(want, dtype)  # zero padding: deterministic, never read by ops
        out[tuple(slice(0, k) for k in piece.shape)] = piece
        return out

    data = jax.make_array_from_callback(padded, physical.sharding_of(layout), block)
    return created(data, layout)


def _one_block(callback, region, dtype) -> np.ndarray:
    want = tuple(r.stop - r.start for r in region)
    if 0 in want:
        return np.zeros(want, dtype)
    got = callback(region)
    try:
        arr = np.asarray(got)
    except (TypeError, ValueError) as err:
        raise TypeError(f"callback returned {type(got).__name__} for index {region}, which is "
                        f"not an array ({err}); return a numpy array of shape {want}") from None
    if arr.shape != want:
        raise ValueError(f"callback returned a block of shape {arr.shape} for index {region}; "
                         f"it must have the shape the index selects, {want}")
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"callback returned a block of dtype {arr.dtype} for index {region}; "
                        "return numbers (bool, integer, real or complex)")
    return np.asarray(arr, dtype=dtype, order="C")  # (ascontiguousarray makes 0-d 1-d)


def block_coordinates(layout: Layout, dtype):
    """Inside shard_map over layout.mesh: the global logical index of every cell of this
    device's (padded, halo-free) block, one broadcastable array per axis, in `dtype`.
    Padding cells get indices >= the axis length."""
    coords = []
    for axis in range(layout.ndim):
        chunk = layout.chunk(axis)
        index_dtype = np.int64 if jax.config.read("jax_enable_x64") else np.int32
        local = jax.lax.broadcasted_iota(index_dtype,
                                         tuple(chunk if a == axis else 1
                                               for a in range(layout.ndim)), axis)
        if layout.parts(axis) > 1:
            local = local + jax.lax.axis_index(layout.split[axis]).astype(local.dtype) * chunk
        coords.append(local.astype(dtype))
    return coords


def fromfunction(fn, shape, *, dtype=None, mesh=None, spec=None) -> DistArray:
    """``fn(*index_arrays)`` evaluated on every device for its own block, like
    `numpy.fromfunction`.

    Args:
      fn: a jax-traceable function of ``ndim`` index arrays (each holds the global index along
        its axis, broadcastable to the block, of dtype `dtype` as numpy does) returning an array
        broadcastable to the block. It must be elementwise in its inputs (a value may depend
        only on its own indices); it runs under jit inside shard_map.
      shape: the logical global shape.
      dtype: the dtype of the index arrays (default: the default floating dtype, as numpy);
        the result keeps the dtype ``fn`` returns.
      mesh, spec: where the array goes (as in `darray.asarray`).

    Returns:
      A DistArray of `shape`.

    Layout:
      As requested; no communication, no host array (each device computes its block).

    Example:
      >>> x = darray.fromfunction(lambda i, j: i * 10 + j, (13, 10), dtype=darray.int32)
    """
    if not callable(fn):
        raise TypeError(f"fn={fn!r} must be callable: fn(*index_arrays) -> array")
    shape = shape_tuple(shape)
    dtype = check_dtype(dtype) or default_dtype(0.0)
    layout = make_layout(shape, mesh, spec)
    data = _fromfunction_fn(fn, layout, dtype)()
    return created(data, layout)


@program_cache(MEDIUM)
def _fromfunction_fn(fn, layout: Layout, dtype):
    block = tuple(layout.chunk(a) for a in range(layout.ndim))

    def body():
        coords = block_coordinates(layout, dtype)
        out = jnp.asarray(fn(*coords))
        return jnp.broadcast_to(out, block) if out.shape != block else out

    mapped = compat.shard_map(body, mesh=layout.mesh, in_specs=(), out_specs=layout.spec,
                              check_vma=False)
    return jax.jit(mapped, out_shardings=physical.sharding_of(layout))
