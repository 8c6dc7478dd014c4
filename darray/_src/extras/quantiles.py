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
from darray._src.api.manipulation import expand_dims
from darray._src.api.statistical import reduced_layout
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import run_physical
from darray._src.engine.arguments import ensure_array
from darray._src.layout.axes import normalize_axes
from darray._src.layout.layout import Layout, make_out_layout

METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_kernel(data, q, q_shape, axes, keepdims, method):
    qs = jnp.asarray(np.asarray(q, np.float64).reshape(q_shape))
    if data.dtype.kind not in "fc":
        data = data.astype(jnp.result_type(float))
    return jnp.quantile(data, qs.astype(data.dtype), axis=axes or None, method=method,
                        keepdims=keepdims)


def _local_lanes(x: DistArray, axes) -> DistArray:
    """x with the reduced axes unsplit (their mesh axes moved to the longest kept axis)."""
    lay = x.layout
    if not lay.has_halo and not any(lay.split[a] for a in axes):
        return x
    kept = [a for a in range(x.ndim) if a not in axes]
    freed = tuple(name for a in axes for name in lay.split[a])
    split = [() if a in axes else lay.split[a] for a in range(x.ndim)]
    if kept and freed:
        longest = max(kept, key=lambda a: x.shape[a])
        split[longest] = tuple(split[longest]) + freed
    return redistribute(x, make_out_layout(lay.mesh, x.shape, split), None)


def quantile(x, /, q, axis=None, *, method="linear", keepdims=False, out=None,
             overwrite_input=False, weights=None) -> DistArray:
    """numpy's quantile: the `q`-th quantiles of x over `axis` (q in [0, 1]).

    Args:
      x: DistArray of real numeric dtype (integers give the default float).
      q: a scalar or array of quantiles (host values), each in [0, 1].
      axis: an int, a tuple of ints, or None (all axes).
      method: one of "linear" (default), "lower", "higher", "midpoint", "nearest".
      keepdims: keep the reduced axes with length 1.

    Returns:
      Shape ``q.shape + reduced shape``; NaN in a lane gives NaN.

    Layout:
      The q axes (if any) unsplit, then x's layout without the reduced axes; see the module
      docstring for the communication (none, one all-to-all, or a gather for axis=None).
    """
    x = ensure_array("quantile", x)
    for name, value in (("out", out), ("weights", weights)):
        if value is not None:
            raise TypeError(f"quantile: {name}= is not supported (got {value!r})")
    if method not in METHODS:
        raise ValueError(f"quantile: method={method!r} is not accepted; use one of {METHODS}")
    if x.dtype.kind not in "biuf":
        raise TypeError(f"quantile: x has dtype {x.dtype}; real numeric dtypes only")
    qa = np.asarray(q, dtype=np.float64)
    if not np.all((qa >= 0) & (qa <= 1)):
        raise ValueError(f"quantile: q={q!r} must lie in [0, 1] (percentile takes [0, 100])")
    del overwrite_input  # darray never overwrites its input
    axes = tuple(range(x.ndim)) if axis is None else tuple(sorted(normalize_axes(axis, x.ndim)))
    if not axes and x.ndim:  # axis=(): every cell is its own lane (numpy's answer: x itself)
        return quantile(expand_dims(x, axis=x.ndim), qa, axis=x.ndim, method=method)
    x = _local_lanes(x, axes)
    red = reduced_layout(x.layout, axes, keepdims)
    k = qa.ndim
    out_layout = Layout(qa.shape + red.shape, red.mesh, ((),) * k + red.split,
                        ((0, 0),) * (k + red.ndim))
    static = (tuple(qa.ravel().tolist()), qa.shape, axes, bool(keepdims), method)
    # every reduced lane is whole on its device now, padding only on kept axes
    return run_physical(_quantile_kernel, [x], out_layout, static=static)


def percentile(x, /, q, axis=None, *, method="linear", keepdims=False, out=None,
               overwrite_input=False, weights=None) -> DistArray:
    """numpy's percentile: `quantile` with q in [0, 100] (divided by 100 as numpy does)."""
    qa = np.asarray(q, dtype=np.float64)
    if not np.all((qa >= 0) & (qa <= 100)):
        raise ValueError(f"percentile: q={q!r} must lie in [0, 100]")
    return quantile(x, np.true_divide(qa, 100), axis, method=method, keepdims=keepdims,
                    out=out, overwrite_input=overwrite_input, weights=weights)


def median(x, /, axis=None, *, keepdims=False, out=None, overwrite_input=False) -> DistArray:
    """numpy's median: the 0.5 quantile ("linear": the mean of the two middle values for an
    even count). Layout and communication as `quantile`."""
    return quantile(x, 0.5, axis, keepdims=keepdims, out=out, overwrite_input=overwrite_input)
