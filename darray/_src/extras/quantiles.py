"""numpy's order statistics: quantile, percentile, median (jax.numpy's methods).

An order statistic needs each reduced lane whole on one device (a selection or a sort), so,
unlike darray.sum, these move data when the reduced axes are split:

- reduced axes unsplit: each device computes the quantiles of its own lanes, no
  communication (padding sits on split axes only, so every lane it holds is whole);
- reduced axes split and some axis kept: one resharding (XLA's all-to-all) first makes the
  reduced axes local, handing their mesh axes to the longest kept axis, which then stays split
  over them in the result;
- every axis reduced (axis=None) of a split array: no axis is left to hold the split, and XLA
  gathers the array on each device to sort it (as darray.sort along a split axis).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from darray._src.api.creation import redistribute
from darray._src.api.statistical import reduced_layout
from darray._src.distarray.array import DistArray
from darray._src.engine import common
from darray._src.engine.common import is_plain, make_out_layout, normalize_axes, run_physical
from darray._src.layout.layout import Layout

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
        count = jnp.sum(~jnp.isnan(lanes), axis=-1, keepdims=True)
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
        count = jnp.sum(~jnp.isnan(lanes), axis=-1, keepdims=True)
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


def _local_lanes(x: DistArray, axes) -> DistArray:
    """x with the reduced axes unsplit (their mesh axes moved to the longest kept axis)."""
    lay = x.layout
    if is_plain(lay) and not any(lay.split[a] for a in axes):
        return x
    kept = [a for a in range(x.ndim) if a not in axes]
    freed = tuple(name for a in axes for name in lay.split[a])
    split = [() if a in axes else lay.split[a] for a in range(x.ndim)]
    if kept and freed:
        longest = max(kept, key=lambda a: x.shape[a])
        split[longest] = tuple(split[longest]) + freed
    return redistribute(x, make_out_layout(lay.mesh, x.shape, split), None)


_MEDIAN = "<median>"  # numpy's median: not one of quantile's methods (see _median_kernel)


def _order_statistic(fname, x, q, axis, method, keepdims, out, weights, skip_nans):
    x = common.ensure_array(fname, x)
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
    x = _local_lanes(x, axes)
    red = reduced_layout(x.layout, axes, keepdims)
    k = 0 if method is _MEDIAN else qa.ndim
    out_layout = Layout(qa.shape[:k] + red.shape, red.mesh, ((),) * k + red.split,
                        ((0, 0),) * (k + red.ndim))
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
      The q axes (if any) unsplit, then x's layout without the reduced axes; see the module
      docstring for the communication (none, one all-to-all, or a gather for axis=None).
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
