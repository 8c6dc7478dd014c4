"""numpy's order statistics: quantile, percentile, median and their nan-variants.

An order statistic is a selection, not a sum, so the two layouts of the reduced axes take two
paths, neither of which gathers:

- reduced axes unsplit: each device sorts its own lanes and picks the positions, no
  communication (padding sits on split axes only, so every lane it holds is whole);
- some reduced axis split (axis=None of a split array included): a distributed selection
  (_select). The rank wanted is found by bisection on the bits of a sort key, one round per
  bit; each round counts, on every device, its values below a candidate and all-reduces the
  counts per lane. Nothing is moved or sorted; the temporaries stay within about 2.5 blocks per
  device (they were 12-16 blocks when the lanes were made local by an all-to-all, or gathered
  for axis=None). It costs one pass over the block per bit of the dtype (32 for float32, 64
  for float64) and rank wanted.

Both paths give numpy's answer exactly: the positions are numpy's formulas for its 13 methods
(_positions) and the interpolation its _lerp.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api.statistical import plain, reduced_layout
from darray._src.base import dtypes as _dt
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import run_physical
from darray._src.engine.arguments import ensure_array
from darray._src.layout.axes import normalize_axes
from darray._src.layout.layout import Layout
from darray._src.placement.physical import valid_mask

# numpy's methods, in its documentation's order: Hyndman & Fan's nine, then numpy's older four
METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest")
# methods that pick one element of the lane: the result keeps x's dtype (numpy's rule)
DISCRETE = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
# (alpha, beta) of Hyndman & Fan's continuous methods: virtual index n*q + alpha + q*(1 -
# alpha - beta) - 1
_ALPHA_BETA = {"interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5),
               "weibull": (0.0, 0.0), "median_unbiased": (1 / 3.0, 1 / 3.0),
               "normal_unbiased": (3 / 8.0, 3 / 8.0)}


def _positions(xp, n, q, method):
    """Where the `q`-quantiles of a sorted lane of `n` values lie, by numpy's formulas.

    Returns (lo, hi, gamma): the result is lerp(lane[lo], lane[hi], gamma), numpy's _lerp, or
    lane[lo] when gamma is None (the discrete methods). `xp` is numpy (n known on the host: the
    float64 positions numpy computes, whatever x64 says) or jax.numpy (n counted per lane on the
    device, the nan-variants). `n` and `q` broadcast against each other.
    """
    if xp is jnp:
        # XLA fuses a product and a following sum into one fused multiply-add, which skips the
        # rounding of the product that numpy does: 5 * 0.3 - 1.5 gives -5.6e-17 there, 0.0 in
        # numpy, and a tie becomes no tie. A max between them (every product here is >= 0 where
        # it matters: a lane of no values gives NaN whatever the positions) keeps the rounded
        # product; an optimization_barrier does not (XLA fuses across it on CPU).
        def mul(a, b):
            return jnp.maximum(a * b, 0.0)
    else:
        def mul(a, b):
            return a * b
    nq = mul(n, q)
    if method in ("inverted_cdf", "closest_observation"):
        v = nq - 1 if method == "inverted_cdf" else nq - 1 - 0.5
        prev = xp.floor(v)
        take_prev = v - prev == 0
        if method == "closest_observation":  # ties go to the even order statistic
            take_prev = take_prev & (prev % 2 == 1)
        idx = xp.maximum(xp.where(take_prev, prev, prev + 1), 0)
        return idx, idx, None
    if method in ("lower", "higher", "nearest"):
        # numpy's np.around rounds half to even: position 1.5 is element 2, 2.5 element 2
        rnd = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.round}[method]
        idx = rnd(mul(n - 1, q))
        return idx, idx, None
    if method == "linear":  # (n - 1) q, not the alpha-beta form: numpy's rounding
        v = mul(n - 1, q)
    elif method == "midpoint":
        v = 0.5 * (xp.floor(mul(n - 1, q)) + xp.ceil(mul(n - 1, q)))
    elif method == "averaged_inverted_cdf":
        v = nq - 1
    else:
        alpha, beta = _ALPHA_BETA[method]
        v = nq + (alpha + mul(q, 1 - alpha - beta)) - 1
    # numpy's _get_indexes: past the last value both neighbours are the last (index -1), before
    # the first both are the first; gamma is measured from that adjusted neighbour, as numpy's
    above = v >= n - 1
    prev = xp.where(above, -1.0, xp.where(v < 0, 0.0, xp.floor(v)))
    nxt = xp.where(above, -1.0, xp.where(v < 0, 0.0, xp.floor(v) + 1))
    gamma = v - prev
    if method == "averaged_inverted_cdf":
        gamma = xp.where(gamma == 0, 0.5, 1.0)
    elif method == "midpoint":
        gamma = xp.where(v % 1 == 0, 0.0, 0.5)
    last = n - 1
    return xp.where(prev < 0, last, prev), xp.where(nxt < 0, last, nxt), gamma


def _lerp(a, b, t):
    """numpy's _lerp, operation for operation (its answers at infinities included)."""
    diff = b - a
    return jnp.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


def result_dtype(dtype, method) -> np.dtype:
    """numpy's: a discrete method keeps x's dtype, the others give x's float dtype (the default
    float for integers and bools)."""
    dtype = np.dtype(dtype)
    if method in DISCRETE or dtype.kind == "f":
        return dtype
    return np.dtype(jnp.result_type(float))


def _as_lanes(data, axes):
    """data with the reduced axes last, merged into one: shape kept + (n,)."""
    kept = [a for a in range(data.ndim) if a not in axes]
    lanes = jnp.transpose(data, kept + list(axes))
    return lanes.reshape(lanes.shape[:len(kept)] + (-1,))


def _finish(vals, q_shape, shape, axes, keepdims):
    """vals of shape kept + (nq,) to numpy's q.shape + reduced shape."""
    vals = jnp.moveaxis(vals, -1, 0)
    red = [1 if a in axes else n for a, n in enumerate(shape) if keepdims or a not in axes]
    return vals.reshape(tuple(q_shape) + tuple(red))


def _quantile_kernel(data, q, q_shape, axes, keepdims, method, skip_nans):
    out_dtype = result_dtype(data.dtype, method)
    lanes = _as_lanes(data, axes)
    n = lanes.shape[-1]
    srt = jnp.sort(lanes, axis=-1)  # NaNs sort last
    qa = np.asarray(q, np.float64)
    floating = data.dtype.kind == "f"
    if skip_nans:
        # per lane count of values: positions computed on the device, in the widest float
        count = jnp.sum(~jnp.isnan(lanes), axis=-1, keepdims=True,
                        dtype=np.int32 if n < 2**31 else None)  # see _count_dtype
        fdt = jnp.result_type(float)
        lo, hi, gamma = _positions(jnp, count.astype(fdt), jnp.asarray(qa, fdt), method)
        lo = jnp.clip(lo, 0, n - 1).astype(int)
        hi = jnp.clip(hi, 0, n - 1).astype(int)
        missing = count == 0  # an all-NaN lane: NaN (numpy's answer, without its warning)
    else:
        lo, hi, gamma = _positions(np, n, qa, method)
        lo, hi = lo.astype(np.int64), hi.astype(np.int64)
        gamma = None if gamma is None else jnp.asarray(gamma)
        missing = jnp.isnan(srt[..., -1:]) if floating else None  # numpy: a NaN in, NaN out
    a = jnp.take_along_axis(srt, jnp.broadcast_to(lo, srt.shape[:-1] + (qa.size,)), axis=-1)
    if gamma is None:
        vals = a.astype(out_dtype)
    else:
        b = jnp.take_along_axis(srt, jnp.broadcast_to(hi, srt.shape[:-1] + (qa.size,)), axis=-1)
        vals = _lerp(a.astype(out_dtype), b.astype(out_dtype), gamma.astype(out_dtype))
    if missing is not None:
        vals = jnp.where(missing, jnp.asarray(np.nan, out_dtype), vals)
    return _finish(vals, q_shape, data.shape, axes, keepdims)


def _median_kernel(data, axes, keepdims, skip_nans):
    """numpy's median: the mean of the two middle values ((a + b) / 2, as np.mean of two),
    the middle value itself for an odd count."""
    out_dtype = result_dtype(data.dtype, "linear")
    lanes = _as_lanes(data, axes)
    n = lanes.shape[-1]
    srt = jnp.sort(lanes, axis=-1)
    if skip_nans:
        count = jnp.sum(~jnp.isnan(lanes), axis=-1, keepdims=True,
                        dtype=np.int32 if n < 2**31 else None)  # see _count_dtype
        lo = jnp.clip((count - 1) // 2, 0, n - 1)
        hi = jnp.clip(count // 2, 0, n - 1)
        missing = count == 0
    else:
        lo = jnp.full(srt.shape[:-1] + (1,), (n - 1) // 2)
        hi = jnp.full(srt.shape[:-1] + (1,), n // 2)
        missing = jnp.isnan(srt[..., -1:]) if data.dtype.kind == "f" else None
    a = jnp.take_along_axis(srt, lo, axis=-1).astype(out_dtype)
    b = jnp.take_along_axis(srt, hi, axis=-1).astype(out_dtype)
    vals = jnp.where(lo == hi, a, (a + b) / 2)
    if missing is not None:
        vals = jnp.where(missing, jnp.asarray(np.nan, out_dtype), vals)
    return _finish(vals, (), data.shape, axes, keepdims)


def _keys(data):
    """Unsigned integer keys whose order is numpy's sort order of `data` (NaNs last)."""
    dt = np.dtype(data.dtype)
    if dt.kind == "b":
        return data.astype(jnp.uint8)
    if dt.kind == "u":
        return data
    ut = np.dtype(f"uint{8 * dt.itemsize}")
    bits = jax.lax.bitcast_convert_type(data, ut)
    sign = ut.type(1 << (8 * dt.itemsize - 1))
    if dt.kind == "i":  # two's complement: flipping the sign bit orders them as unsigned
        return bits ^ sign
    # IEEE floats: negatives reversed (all bits flipped), positives above them (sign set)
    key = jnp.where((bits & sign) != 0, ~bits, bits | sign)
    return jnp.where(jnp.isnan(data), jnp.asarray(np.iinfo(ut).max, ut), key)


def _from_keys(key, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return key.astype(dt)
    if dt.kind == "u":
        return key
    ut = key.dtype
    sign = np.dtype(ut).type(1 << (8 * dt.itemsize - 1))
    if dt.kind == "i":
        return jax.lax.bitcast_convert_type(key ^ sign, dt)
    bits = jnp.where((key & sign) != 0, key ^ sign, ~key)
    return jax.lax.bitcast_convert_type(bits, dt)


def _count_dtype(layout, axes):
    """int32 for lanes under 2^31 values, even with x64 on: XLA:CPU materialises the count's
    dtype for every element it counts, and int64 there doubled the temporaries of float32
    data (3.4 blocks per device instead of 2.4)."""
    n = math.prod(layout.shape[a] for a in axes)
    return np.dtype(np.int32) if n < 2**31 else _dt.default_int()


def _select(data, layout, axes, ks):
    """The ks-th smallest values (0-based ranks, numpy's sort order) of each lane over `axes`.

    ks: integer array (m,) + the kept shape with the reduced axes as length 1. Bisection on the
    bits of the sort key, top bit first: a candidate stays when fewer than k + 1 values lie
    below it. Each round is a compare fused into a count over the reduced axes, which XLA
    partitions as a local count plus an all-reduce of the per-lane counts: the data is never
    moved nor sorted, and the temporaries stay about one block (the keys) per device.
    """
    ut = jax.eval_shape(_keys, data).dtype
    width = 8 * np.dtype(ut).itemsize
    mask = valid_mask(layout)
    count_dtype = _count_dtype(layout, axes)

    def one(k):
        def round_(i, r):
            bit = jnp.left_shift(jnp.asarray(1, ut), (width - 1 - i).astype(ut))
            cand = r | bit
            # the keys are recomputed in each round, fused into the count: never stored
            below = _keys(data) < cand
            if mask is not None:
                below = below & mask
            n_below = jnp.sum(below, axis=axes, keepdims=True, dtype=count_dtype)
            return jnp.where(n_below <= k, cand, r)
        return jax.lax.fori_loop(0, width, round_, jnp.zeros(k.shape, ut))

    # one rank after another (lax.map): m ranks at once would hold m compares of a block
    r = jax.lax.map(one, ks.astype(count_dtype))
    return _from_keys(r, data.dtype)


def _lane_counts(data, layout, axes, skip_nans):
    """(values per lane, NaN present per lane), kept shape with reduced axes of length 1."""
    mask = valid_mask(layout)
    nan = jnp.isnan(data) if data.dtype.kind == "f" else jnp.zeros(data.shape, bool)
    if mask is not None:
        nan = nan & mask
    valid = ~nan if mask is None else (mask & ~nan)
    count = jnp.sum(valid, axis=axes, keepdims=True, dtype=_count_dtype(layout, axes))
    return count, jnp.any(nan, axis=axes, keepdims=True)


def _select_quantile_kernel(data, layout, q, q_shape, axes, keepdims, method, skip_nans):
    out_dtype = result_dtype(data.dtype, method)
    n = math.prod(layout.shape[a] for a in axes)
    qa = np.asarray(q, np.float64)
    count, has_nan = _lane_counts(data, layout, axes, skip_nans)
    kshape = (qa.size,) + (1,) * data.ndim
    if skip_nans:
        fdt = jnp.result_type(float)
        lo, hi, gamma = _positions(jnp, count[None].astype(fdt),
                                   jnp.asarray(qa, fdt).reshape(kshape), method)
        lo = jnp.clip(lo, 0, n - 1)
        hi = jnp.clip(hi, 0, n - 1)
        missing = count == 0
    else:
        lo, hi, gamma = _positions(np, n, qa, method)
        lo, hi = jnp.asarray(lo.astype(np.int64).reshape(kshape)), \
            jnp.asarray(hi.astype(np.int64).reshape(kshape))
        gamma = None if gamma is None else jnp.asarray(gamma.reshape(kshape))
        missing = has_nan if data.dtype.kind == "f" else None
    kept = count.shape
    lo = jnp.broadcast_to(lo, (qa.size,) + kept)
    if gamma is None:
        vals = _select(data, layout, axes, lo).astype(out_dtype)
    else:
        hi = jnp.broadcast_to(hi, (qa.size,) + kept)
        both = _select(data, layout, axes, jnp.concatenate([lo, hi])).astype(out_dtype)
        vals = _lerp(both[:qa.size], both[qa.size:], gamma.astype(out_dtype))
    if missing is not None:
        vals = jnp.where(missing[None], jnp.asarray(np.nan, out_dtype), vals)
    if not keepdims:
        vals = jnp.squeeze(vals, tuple(a + 1 for a in axes))
    return vals.reshape(tuple(q_shape) + vals.shape[1:])


def _select_median_kernel(data, layout, axes, keepdims, skip_nans):
    out_dtype = result_dtype(data.dtype, "linear")
    n = math.prod(layout.shape[a] for a in axes)
    count, has_nan = _lane_counts(data, layout, axes, skip_nans)
    if skip_nans:
        lo = jnp.clip((count - 1) // 2, 0, n - 1)
        hi = jnp.clip(count // 2, 0, n - 1)
        missing = count == 0
    else:
        lo = jnp.full(count.shape, (n - 1) // 2)
        hi = jnp.full(count.shape, n // 2)
        missing = has_nan if data.dtype.kind == "f" else None
    both = _select(data, layout, axes, jnp.stack([lo, hi])).astype(out_dtype)
    a, b = both[0], both[1]
    vals = jnp.where(lo == hi, a, (a + b) / 2)
    if missing is not None:
        vals = jnp.where(missing, jnp.asarray(np.nan, out_dtype), vals)
    return vals if keepdims else jnp.squeeze(vals, axes)


_MEDIAN = "<median>"  # numpy's median: not one of quantile's methods (see _median_kernel)


def _order_statistic(fname, x, q, axis, method, keepdims, out, weights, skip_nans):
    x = ensure_array(fname, x)
    for name, value in (("out", out), ("weights", weights)):
        if value is not None:
            raise TypeError(f"{fname}: {name}= is not supported (got {value!r})")
    if method is not _MEDIAN and method not in METHODS:
        raise ValueError(f"{fname}: method={method!r} is not accepted; use one of {METHODS}")
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{fname}: x has dtype {x.dtype}; real numeric dtypes only")
    if skip_nans and x.dtype.kind != "f":
        skip_nans = False  # nothing to skip: numpy's nan-variants answer as the plain ones
    qa = np.asarray(q, dtype=np.float64)
    axes = tuple(range(x.ndim)) if axis is None else tuple(sorted(normalize_axes(axis, x.ndim)))
    if not axes and x.ndim:  # axis=(): every cell is its own lane (numpy's answer: x itself)
        from darray._src.api.manipulation import expand_dims
        return _order_statistic(fname, expand_dims(x, axis=x.ndim), qa, x.ndim, method,
                                False, None, None, skip_nans)
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{fname}: x has shape {x.shape}, an empty lane along axis={axis!r}; "
                         f"lanes of one value or more only")
    # the reduced count (and a rank within it) must fit the default integer
    _dt.check_fits_default_int(fname, math.prod(x.shape[a] for a in axes), "a lane's count")
    select = any(x.layout.split[a] for a in axes)
    x = plain(x)  # no ghost cells: physical index = logical index
    red = reduced_layout(x.layout, axes, keepdims)
    k = 0 if method is _MEDIAN else qa.ndim
    out_layout = Layout(qa.shape[:k] + red.shape, red.mesh, ((),) * k + red.split,
                        ((0, 0),) * (k + red.ndim))
    if select:  # a split reduced axis: selection in place (see _select), no data moved
        if method is _MEDIAN:
            return run_physical(_select_median_kernel, [x], out_layout,
                                static=(x.layout, axes, bool(keepdims), skip_nans))
        static = (x.layout, tuple(qa.ravel().tolist()), qa.shape, axes, bool(keepdims), method,
                  skip_nans)
        return run_physical(_select_quantile_kernel, [x], out_layout, static=static)
    # every reduced lane is whole on its device now, padding only on kept axes
    if method is _MEDIAN:
        return run_physical(_median_kernel, [x], out_layout,
                            static=(axes, bool(keepdims), skip_nans))
    static = (tuple(qa.ravel().tolist()), qa.shape, axes, bool(keepdims), method, skip_nans)
    return run_physical(_quantile_kernel, [x], out_layout, static=static)


def _check_q(fname, q, top):
    qa = np.asarray(q, dtype=np.float64)
    if not np.all((qa >= 0) & (qa <= top)):
        hint = " (percentile takes [0, 100])" if top == 1 else ""
        raise ValueError(f"{fname}: q={q!r} must lie in [0, {top}]{hint}")
    return qa if top == 1 else np.true_divide(qa, 100)


_DOC = """

    Args:
      x: DistArray of real numeric dtype.
      q: a scalar or array of {what} (host values), each in [0, {top}].
      axis: an int, a tuple of ints, or None (all axes).
      method: one of numpy's 13: "inverted_cdf", "averaged_inverted_cdf",
        "closest_observation", "interpolated_inverted_cdf", "hazen", "weibull", "linear"
        (default), "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint",
        "nearest" ("nearest" rounds a half-way position to the even one, as numpy does).
      keepdims: keep the reduced axes with length 1.

    Returns:
      Shape ``q.shape + reduced shape``. The dtype is x's for the discrete methods
      (inverted_cdf, closest_observation, lower, higher, nearest) and x's float dtype (the
      default float for integers) for the others. {nans}

    Layout:
      The q axes (if any) unsplit, then x's layout without the reduced axes. Reduced axes
      unsplit: no communication; split: a distributed selection, all-reducing per-lane counts
      (one per bit of the dtype), never a gather (see the module docstring).
"""
_NANS = "A NaN in a lane gives NaN, as numpy."
_SKIP = ("NaNs are skipped, each lane's positions computed from its count of values; a lane "
         "of NaNs only gives NaN (numpy's answer, without its RuntimeWarning: darray does not "
         "read results back to the host to decide on a warning).")


def quantile(x, /, q, axis=None, *, method="linear", keepdims=False, out=None,
             overwrite_input=False, weights=None) -> DistArray:
    """numpy's quantile: the `q`-th quantiles of x over `axis` (q in [0, 1])."""
    del overwrite_input  # darray never overwrites its input
    return _order_statistic("quantile", x, _check_q("quantile", q, 1), axis, method, keepdims,
                            out, weights, False)


def percentile(x, /, q, axis=None, *, method="linear", keepdims=False, out=None,
               overwrite_input=False, weights=None) -> DistArray:
    """numpy's percentile: `quantile` with q in [0, 100] (divided by 100 as numpy does)."""
    del overwrite_input
    return _order_statistic("percentile", x, _check_q("percentile", q, 100), axis, method,
                            keepdims, out, weights, False)


def nanquantile(x, /, q, axis=None, *, method="linear", keepdims=False, out=None,
                overwrite_input=False, weights=None) -> DistArray:
    """numpy's nanquantile: `quantile` of the non-NaN values of each lane."""
    del overwrite_input
    return _order_statistic("nanquantile", x, _check_q("nanquantile", q, 1), axis, method,
                            keepdims, out, weights, True)


def nanpercentile(x, /, q, axis=None, *, method="linear", keepdims=False, out=None,
                  overwrite_input=False, weights=None) -> DistArray:
    """numpy's nanpercentile: `percentile` of the non-NaN values of each lane."""
    del overwrite_input
    return _order_statistic("nanpercentile", x, _check_q("nanpercentile", q, 100), axis,
                            method, keepdims, out, weights, True)


for _f, _what, _top, _nans in ((quantile, "quantiles", 1, _NANS),
                               (percentile, "percentiles", 100, _NANS),
                               (nanquantile, "quantiles", 1, _SKIP),
                               (nanpercentile, "percentiles", 100, _SKIP)):
    _f.__doc__ = (_f.__doc__ or "") + _DOC.format(what=_what, top=_top, nans=_nans)


def median(x, /, axis=None, *, keepdims=False, out=None, overwrite_input=False) -> DistArray:
    """numpy's median: the middle value of each lane, the mean of the two middle values for an
    even count; a NaN in a lane gives NaN. Float dtype as `quantile`'s "linear". Layout and
    communication as `quantile`."""
    del overwrite_input
    return _order_statistic("median", x, 0.5, axis, _MEDIAN, keepdims, out, None, False)


def nanmedian(x, /, axis=None, *, keepdims=False, out=None, overwrite_input=False) -> DistArray:
    """numpy's nanmedian: `median` of the non-NaN values of each lane; a lane of NaNs only
    gives NaN (numpy's answer, without its RuntimeWarning). Layout as `quantile`."""
    del overwrite_input
    return _order_statistic("nanmedian", x, 0.5, axis, _MEDIAN, keepdims, out, None, True)
