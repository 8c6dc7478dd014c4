"""Binning: bincount and histogram of a distributed array into a small replicated result.

Each device counts its own block into a full-length bin vector (a local scatter-add; padding
and ghost cells go to an index past the end, which the scatter drops), and one `psum` over the
mesh axes that split the input adds the vectors: one all-reduce of the bins, never a gather of
the input. The result is replicated on every device of the input's mesh.

The number of bins of `bincount` depends on the values (numpy: ``max(x) + 1``). Eagerly it is
read first (one min/max reduction, whose minimum also refuses negative values as numpy does);
under `jax.jit` shapes must be static, so `length=` is required there (JAX's jnp.bincount has
the same argument and the same rule).
"""
from __future__ import annotations

import builtins
import operator
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.api.statistical import plain
from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_operand_meshes
from darray._src.engine.placing import redistribute
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.placement import physical


# -- the shared counting program -------------------------------------------------------------
def _count_blocks(index, weights, layout: Layout, length: int, dtype):
    """Inside jit: replicated bin vector of `length` from the physical int array `index`
    (entries outside [0, length) are dropped) and optional physical `weights`."""
    names = layout.used_mesh_axes
    spec = layout.spec

    def local(i, *w):
        upd = w[0].reshape(-1).astype(dtype) if w else jnp.ones((), dtype)
        counts = jnp.zeros(length, dtype).at[i.reshape(-1)].add(upd, mode="drop")
        return jax.lax.psum(counts, names) if names else counts
    args = (index,) if weights is None else (index, weights)
    return compat.shard_map(local, mesh=layout.mesh, in_specs=(spec,) * len(args),
                            out_specs=PartitionSpec())(*args)


def _is_tracing(*arrays) -> bool:
    """Whether a DistArray among `arrays` holds a tracer (its values are unknown here)."""
    return any(isinstance(a, DistArray) and isinstance(a.data, jax.core.Tracer) for a in arrays)


def _replicated(length: int, mesh) -> Layout:
    return make_out_layout(mesh, (length,), [()])


def _drop_padding(index, layout: Layout, length: int):
    """Padding and ghost cells point past the last bin, so the scatter drops them."""
    mask = physical.valid_mask(layout)
    return index if mask is None else jnp.where(mask, index, length)


@program_cache(SMALL)
def _bincount_fn(layout: Layout, w_layout, length: int, dtype):
    out = _replicated(length, layout.mesh)

    def run(x, *w):
        x = physical.constrain(x, layout)
        w = tuple(physical.constrain(v, w_layout) for v in w)
        # negative values count in bin 0, as jnp.bincount (eagerly they were refused before)
        index = _drop_padding(jnp.maximum(x.astype(_index_dtype(length)), 0), layout, length)
        counts = _count_blocks(index, w[0] if w else None, layout, length, dtype)
        return physical.constrain(counts, out)
    return jax.jit(run)


def _index_dtype(length: int):
    return np.int64 if length >= 2**31 - 1 and jax.config.read("jax_enable_x64") else np.int32


@program_cache(SMALL)
def _extremes_fn(layout: Layout):
    """(min, max) of the logical cells: one program, one all-reduce each."""
    def run(x):
        x = physical.constrain(x, layout)
        mask = physical.valid_mask(layout)
        hi_fill, lo_fill = _extreme_fills(x.dtype)
        lo = jnp.min(x if mask is None else jnp.where(mask, x, hi_fill))
        hi = jnp.max(x if mask is None else jnp.where(mask, x, lo_fill))
        return _nan_if_any_nan(x, mask, lo, hi)
    return jax.jit(run)


def _nan_if_any_nan(x, mask, lo, hi):
    """(lo, hi), both NaN when a logical cell of `x` is NaN. A distributed min/max does not
    propagate NaN reliably (XLA's cross-device min/max all-reduce may drop it, so the answer
    would depend on the mesh); a logical-or all-reduce of ``isnan`` does."""
    if x.dtype.kind != "f":
        return lo, hi
    nan = jnp.isnan(x) if mask is None else jnp.isnan(x) & mask
    bad = jnp.any(nan)
    return jnp.where(bad, jnp.nan, lo), jnp.where(bad, jnp.nan, hi)


def _extreme_fills(dtype):
    """Fills for padding under min and max (the identities)."""
    if dtype.kind == "f":
        return np.inf, -np.inf
    if dtype.kind == "b":
        return True, False
    info = np.iinfo(dtype)
    return info.max, info.min


def _weights(weights, x: DistArray, fname: str):
    """`weights` as a DistArray in x's layout (one resharding when it lives elsewhere)."""
    if weights is None:
        return None
    weights = ensure_array(fname, weights, "weights")
    if weights.shape != x.shape:
        raise ValueError(f"{fname}: weights has shape {weights.shape} but the input has "
                         f"shape {x.shape}; they must match")
    if weights.dtype == _dt.bool or weights.dtype.kind not in "iufc":
        raise TypeError(f"{fname}: weights has dtype {weights.dtype}; numeric dtypes only")
    x, weights = check_operand_meshes(fname, (x, "x"), (weights, "weights"))
    weights = plain(weights)
    if weights.layout != x.layout:
        weights = redistribute(weights, x.layout, None)
    return weights


def _count_dtype(weights):
    return _dt.default_int() if weights is None else weights.dtype


# -- bincount --------------------------------------------------------------------------------
def bincount(x, /, weights=None, minlength=0, *, length=None) -> DistArray:
    """Number of occurrences of each value in the non-negative integer array `x` (numpy's
    ``np.bincount``; ``out[i]`` sums ``weights`` where ``x == i`` when weights are given).

    Args:
      x: DistArray of integer (or bool) dtype. numpy takes 1-D input; here any rank is counted
        as ``x.ravel()`` would be (reshaping a distributed array to 1-D first would move data).
      weights: None, or a numeric DistArray of x's shape (moved to x's layout if it differs).
      minlength: the result has at least this many bins.
      length: the exact number of bins, static. Required under `jax.jit` (the result's shape
        may not depend on traced values); values >= length are then dropped and negative
        values count in bin 0, as in ``jnp.bincount``. Eagerly, when omitted, the length is
        ``max(minlength, max(x) + 1)`` and negative values raise ValueError, as in numpy.

    Returns:
      A replicated 1-D DistArray: default integer dtype, or weights' dtype.

    Layout:
      Replicated on x's mesh. Communication: each device counts its block, then one
      all-reduce of the bins over the mesh axes that split x; eagerly without `length`, one
      more (min, max) all-reduce first. Never a gather of x.
    """
    x = ensure_array("bincount", x)
    if x.dtype.kind not in "iub":
        raise TypeError(f"bincount: x has dtype {x.dtype}; bincount counts non-negative "
                        "integers (integer or bool dtypes)")
    minlength = _nonneg_int(minlength, "minlength")
    weights = _weights(weights, x, "bincount")
    x = plain(x)
    if length is None:
        if _is_tracing(x, weights):
            raise ValueError(
                "bincount under jax.jit needs a static length=: the number of bins would be "
                "max(x) + 1, a traced value. Pass length=<int> (values >= length are dropped, "
                "as in jnp.bincount) or call bincount outside jit")
        length = minlength
        if x.size:
            lo, hi = (int(v) for v in _extremes_fn(x.layout)(x.data))
            if lo < 0:
                raise ValueError(f"bincount: x holds the negative value {lo}; numpy's "
                                 "bincount counts non-negative integers only")
            length = builtins.max(minlength, hi + 1)
    else:
        length = builtins.max(_nonneg_int(length, "length"), minlength)
    dtype = _count_dtype(weights)
    fn = _bincount_fn(x.layout, None if weights is None else weights.layout, length,
                      np.dtype(dtype))
    args = (x.data,) if weights is None else (x.data, weights.data)
    return DistArray._new(fn(*args), _replicated(length, x.mesh))


def _nonneg_int(value, name: str) -> int:
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}={value!r} must be a non-negative int") from None
    if v < 0:
        raise ValueError(f"{name}={v} must be a non-negative int")
    return v


# -- histogram -------------------------------------------------------------------------------
def _uniform_index(v, edges, nbins: int):
    """numpy's bin of each value for equal-width bins: the index from the scaled offset,
    corrected by one comparison with the edges on each side (np.histogram's own rule, so
    values on an edge land where numpy puts them)."""
    first, last = edges[0], edges[-1]
    norm = nbins / (last - first)
    idx = jnp.clip(((v - first) * norm).astype(np.int32), 0, nbins - 1)
    idx = idx - (v < edges[idx]).astype(np.int32)
    idx = idx + ((v >= edges[idx + 1]) & (idx != nbins - 1)).astype(np.int32)
    return idx


def _edges_index(v, edges, nbins: int):
    """Bin i holds edges[i] <= v < edges[i+1]; the last bin also holds v == edges[-1]."""
    idx = jnp.searchsorted(edges, v, side="right").astype(np.int32) - 1
    return jnp.where(v == edges[-1], nbins - 1, idx)


_CHUNKS = 8  # pieces of a block binned one after the other: their temporaries are an eighth


def _binned_in_chunks(data, weights, edges, layout: Layout, nbins: int, uniform: bool,
                      dtype):
    """Inside jit: the replicated counts of `data` (physical, `layout`, no halo) in the bins of
    `edges`. Each device bins its block in `_CHUNKS` pieces (a loop), so the values in the
    edges' dtype, their bin indices and the padding mask exist for one piece at a time: made
    for the whole block they were 4.5 blocks of temporaries (float32 data, float64 edges)."""
    names = layout.used_mesh_axes
    padded = [a for a in range(layout.ndim)
              if layout.split[a] and layout.chunk(a) * layout.parts(a) != layout.shape[a]]

    def local(block, edges, *w):
        flat = block.reshape(-1)
        wflat = w[0].reshape(-1) if w else None
        n = flat.shape[0]
        size = max(1, -(-n // _CHUNKS))
        starts = {}
        for a in padded:
            b = jnp.zeros((), np.int32)
            for m in layout.split[a]:
                b = b * layout.mesh_shape[m] + jax.lax.axis_index(m)
            starts[a] = b * layout.chunk(a)

        def piece(t, counts):
            first = jnp.minimum(t * size, n - size)  # the last piece ends at the block's end
            pos = first + jnp.arange(size, dtype=np.int32)
            ok = pos >= t * size  # cells of the piece before it were counted already
            for a in padded:  # padding cells of an uneven split
                stride = int(np.prod(block.shape[a + 1:]))
                local_index = (pos // stride) % block.shape[a]
                ok = ok & (local_index + starts[a] < layout.shape[a])
            v = jax.lax.dynamic_slice(flat, (first,), (size,)).astype(edges.dtype)
            ok = ok & (v >= edges[0]) & (v <= edges[-1])  # NaN is never kept, as in numpy
            idx = jnp.where(ok, (_uniform_index if uniform else _edges_index)(v, edges, nbins),
                            nbins)
            upd = (jax.lax.dynamic_slice(wflat, (first,), (size,)).astype(dtype)
                   if wflat is not None else jnp.ones((), dtype))
            return counts.at[idx].add(upd, mode="drop")

        counts = jax.lax.fori_loop(0, -(-n // size), piece, jnp.zeros(nbins, dtype))
        return jax.lax.psum(counts, names) if names else counts

    args = (data, edges) if weights is None else (data, edges, weights)
    specs = (layout.spec, PartitionSpec()) + ((layout.spec,) if weights is not None else ())
    return compat.shard_map(local, mesh=layout.mesh, in_specs=specs,
                            out_specs=PartitionSpec(), check_vma=False)(*args)


@program_cache(SMALL)
def _histogram_fn(layout: Layout, w_layout, nbins: int, uniform: bool, traced_range: bool,
                  dtype, density: bool):
    out = _replicated(nbins, layout.mesh)
    out_edges = _replicated(nbins + 1, layout.mesh)

    def run(a, edges_or_range, *w):
        v = physical.constrain(a, layout).astype(edges_or_range.dtype)
        w = tuple(physical.constrain(x, w_layout) for x in w)
        if traced_range:  # under jit with range=None: min and max of the data, in-program
            mask = physical.valid_mask(layout)
            lo = jnp.min(v if mask is None else jnp.where(mask, v, jnp.inf))
            hi = jnp.max(v if mask is None else jnp.where(mask, v, -jnp.inf))
            # a NaN in the data: NaN edges (numpy raises; a traced value cannot), so the
            # answer is visibly not a histogram rather than one of the NaN-free blocks
            lo, hi = _nan_if_any_nan(v, mask, lo, hi)
            bad_range = ~(jnp.isfinite(lo) & jnp.isfinite(hi))
            lo, hi = jnp.where(lo == hi, lo - 0.5, lo), jnp.where(lo == hi, hi + 0.5, hi)
            edges = jnp.linspace(lo, hi, nbins + 1, dtype=edges_or_range.dtype)
        else:
            edges = edges_or_range
        if not layout.has_halo and (not w or w_layout == layout) and a.size:
            counts = _binned_in_chunks(physical.constrain(a, layout), w[0] if w else None,
                                       edges, layout, nbins, uniform, dtype)
        else:
            idx = (_uniform_index if uniform else _edges_index)(v, edges, nbins)
            keep = (v >= edges[0]) & (v <= edges[-1])  # NaN is never kept, as in numpy
            idx = _drop_padding(jnp.where(keep, idx, nbins), layout, nbins)
            counts = _count_blocks(idx, w[0] if w else None, layout, nbins, dtype)
        if density:
            counts = counts / (jnp.sum(counts) * jnp.diff(edges))
        if traced_range:
            # numpy raises here; a traced value cannot, so the counts are made visibly invalid
            # (all zero looked like an empty histogram) and the running program says why
            counts = jnp.where(bad_range, _invalid_count(counts.dtype), counts)
            jax.debug.callback(_warn_bad_range, bad_range)
        return physical.constrain(counts, out), physical.constrain(edges, out_edges)
    return jax.jit(run)


HISTOGRAM_RANGE_MESSAGE = (
    "histogram: under jit with range=None, a holds NaN or an infinity, so the autodetected "
    "range is not finite (numpy raises); the counts are invalid (-1, or NaN for float "
    "counts) and the edges NaN. Pass range=(min, max) (NaN and values outside it are ignored) "
    "or drop the non-finite values")


def _invalid_count(dtype):
    """What marks a count as not a count: NaN for floating counts (weights, density), -1 for
    signed integers, the largest value for unsigned ones."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.array(np.nan, dtype)
    if dtype.kind == "u":
        return np.array(np.iinfo(dtype).max, dtype)
    if dtype.kind == "b":
        return np.array(False)
    return np.array(-1, dtype)


def _warn_bad_range(bad) -> None:
    # printed by the running program (an exception raised inside a host callback leaves
    # XLA:CPU's runtime unusable), as darray.particles reports an overflow
    if bool(bad):
        print(f"HistogramWarning: {HISTOGRAM_RANGE_MESSAGE}", file=sys.stderr, flush=True)


def _edges_dtype(a_dtype):
    """numpy's: the input's float dtype; integers get the default float."""
    return np.dtype(a_dtype) if a_dtype.kind == "f" else np.dtype(_dt.default_float())


def _check_range(range_):
    try:
        lo, hi = (float(v) for v in range_)
    except (TypeError, ValueError):
        raise TypeError(f"range={range_!r} must be None or a (min, max) pair of numbers") \
            from None
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"range={range_!r} must be finite")
    if lo > hi:
        raise ValueError(f"range={range_!r}: max must be larger than min")
    return lo, hi


def _edges(bins, range_, x: DistArray, dtype):
    """(edges as a numpy array or None when they must be computed in-program, nbins,
    uniform). Eagerly the range comes from one (min, max) reduction, like numpy's."""
    if isinstance(bins, str):
        raise TypeError(f"bins={bins!r}: darray.histogram takes an int or an increasing "
                         "sequence of edges (numpy's estimator names are not supported)")
    if np.ndim(bins) == 0:
        try:
            nbins = operator.index(bins)
        except TypeError:
            raise TypeError(f"bins={bins!r} must be an int or a 1-D sequence of edges") from None
        if nbins < 1:
            raise ValueError(f"bins={nbins} must be a positive int")
        if range_ is not None:
            lo, hi = _check_range(range_)
        elif _is_tracing(x):
            return None, nbins, True
        elif x.size == 0:
            lo, hi = 0.0, 1.0  # numpy's range for empty input
        else:
            lo, hi = (v.item() for v in _extremes_fn(x.layout)(x.data))
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ValueError(f"histogram: a holds non-finite values, so the autodetected "
                                 f"range of [{lo}, {hi}] is not finite (numpy raises too); "
                                 "pass range=(min, max) (values outside it and NaN are "
                                 "ignored) or drop the non-finite values")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        return np.linspace(lo, hi, nbins + 1, dtype=dtype), nbins, True
    if isinstance(bins, DistArray):
        bins = np.asarray(bins)
    edges = np.asarray(bins)
    if edges.ndim != 1 or edges.size < 2:
        raise ValueError(f"bins must be an int or a 1-D sequence of at least 2 edges, got "
                         f"shape {edges.shape}")
    if edges.dtype.kind not in "iuf":
        raise TypeError(f"bins has dtype {edges.dtype}; edges must be real numbers")
    if np.any(edges[:-1] > edges[1:]):
        where = int(np.argmax(edges[:-1] > edges[1:]))
        raise ValueError(f"bins must increase monotonically: bins[{where}]={edges[where]} > "
                         f"bins[{where + 1}]={edges[where + 1]}")
    if edges.dtype.kind == "f":
        # float edges keep their precision, as numpy's and jax.numpy's do: float64 edges with
        # float32 data bin (and come back) in float64 where x64 allows it
        dtype = np.dtype(jax.dtypes.canonicalize_dtype(np.promote_types(dtype, edges.dtype)))
    return edges.astype(dtype), edges.size - 1, False


def histogram(a, bins=10, range=None, weights=None, density=None):
    """The histogram of the values of `a` (numpy's ``np.histogram``, over the flattened array).

    Args:
      a: DistArray of a real dtype, any rank.
      bins: an int (that many equal-width bins over `range`) or a 1-D increasing sequence of
        edges (equal consecutive edges are allowed, a decreasing pair raises ValueError).
        Bin i holds ``edges[i] <= v < edges[i+1]``; the last bin also holds its right edge.
      range: (min, max) for int `bins`; default the data's min and max (one extra all-reduce
        eagerly; inside jit computed in the same program). Values outside are ignored, and
        so is NaN. With ``range=None`` and a NaN (or infinity) in `a`, numpy's error: eagerly a
        ValueError; under ``jax.jit`` (no exception can come from a traced value) the edges
        come back all NaN and every count invalid (-1; NaN for float counts), never a range
        taken from part of `a`, and the running program prints a ``HistogramWarning``.
      weights: None, or a numeric DistArray of a's shape: each value adds its weight.
      density: divide by ``sum(counts) * diff(edges)`` (a probability density).

    Returns:
      ``(counts, edges)``, both replicated 1-D DistArrays: counts of the default integer
      dtype (weights' dtype with weights; float with density), edges of a's float dtype.

    Layout:
      Replicated on a's mesh. Communication: each device bins its own block, then one
      all-reduce of the bins (plus one of (min, max) when `range` is None). Never a gather
      of `a`.
    """
    a = ensure_array("histogram", a, "a")
    if a.dtype.kind not in "iuf" or a.dtype == _dt.bool:
        raise TypeError(f"histogram: a has dtype {a.dtype}; real numeric dtypes only")
    weights = _weights(weights, a, "histogram")
    a = plain(a)
    dtype = _edges_dtype(a.dtype)
    edges, nbins, uniform = _edges(bins, range, a, dtype)
    traced_range = edges is None
    count_dtype = np.dtype(_count_dtype(weights))
    fn = _histogram_fn(a.layout, None if weights is None else weights.layout, nbins, uniform,
                       traced_range, count_dtype, bool(density))
    second = np.zeros(2, dtype) if traced_range else edges
    args = (a.data, second) if weights is None else (a.data, second, weights.data)
    counts, edges_out = fn(*args)
    return (DistArray._new(counts, _replicated(nbins, a.mesh)),
            DistArray._new(edges_out, _replicated(nbins + 1, a.mesh)))
