"""numpy's reductions beyond the standard that libraries look up on a namespace (xarray's
duck-array code asks for ``xp.nanmax`` ...): the NaN-ignoring reductions, numpy-style
``cumsum``/``cumprod`` and ``cross``.

They run as darray's own reductions do (statistical.reduce): on the physical blocks, with
padding and NaNs replaced by the reduction's identity, and one all-reduce over the mesh axes
that split the reduced axes. Never a gather, and never numpy on the host.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from darray._src.api import linalg, statistical
from darray._src.api.manipulation import reshape
from darray._src.api.searching import nanargmax, nanargmin  # noqa: F401 - re-exported
from darray._src.api.statistical import highest, lowest, reduce, sum_dtype
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array, refuse_out
from darray._src.placement.physical import valid_mask


def _present(data, layout):
    """True on logical cells that are not NaN (padding and ghosts are not present)."""
    present = ~jnp.isnan(data)
    mask = valid_mask(layout)
    return present if mask is None else present & mask


def _fill_absent(data, layout, fill):
    return jnp.where(_present(data, layout), data, jnp.asarray(fill, data.dtype))


# -- kernels (module level: compilations are cached by identity) -------------------------------
def _nansum_kernel(data, layout, axes, keepdims, dtype):
    return jnp.sum(_fill_absent(data, layout, 0), axis=axes, keepdims=keepdims, dtype=dtype)


def _nanprod_kernel(data, layout, axes, keepdims, dtype):
    return jnp.prod(_fill_absent(data, layout, 1), axis=axes, keepdims=keepdims, dtype=dtype)


def _nanextreme_kernel(data, layout, axes, keepdims, kind):
    fill = lowest(data.dtype) if kind == "max" else highest(data.dtype)
    present = _present(data, layout)
    vals = jnp.where(present, data, jnp.asarray(fill, data.dtype))
    out = (jnp.max if kind == "max" else jnp.min)(vals, axis=axes, keepdims=keepdims)
    none = ~jnp.any(present, axis=axes, keepdims=keepdims)
    return jnp.where(none, jnp.asarray(np.nan, out.dtype), out)  # all-NaN slice: NaN


def _nanmoments_kernel(data, layout, axes, keepdims, dtype, correction, what):
    data = data.astype(dtype)
    present = _present(data, layout)
    count = jnp.sum(present, axis=axes, keepdims=True, dtype=data.real.dtype)
    mean = jnp.sum(jnp.where(present, data, 0), axis=axes, keepdims=True) / count
    if what == "mean":
        return mean if keepdims else jnp.squeeze(mean, axes)
    dev = jnp.where(present, data - mean, 0)
    sq = (dev * jnp.conj(dev)).real if dtype.kind == "c" else dev * dev
    dof = count - correction
    var = jnp.sum(sq, axis=axes, keepdims=True) / dof
    var = jnp.where(dof > 0, var, jnp.asarray(np.nan, var.dtype))  # numpy: NaN, not +-inf
    var = jnp.sqrt(var) if what == "std" else var
    return var if keepdims else jnp.squeeze(var, axes)


_LAYOUT = """
    Layout:
      x's layout without the reduced axes, as darray.sum: each device reduces its own cells
      (NaNs and padding replaced by the identity), one all-reduce over the mesh axes that
      split the reduced axes combines them; never a gather.
"""


def _floating(x) -> bool:
    return x.dtype.kind in "fc"


def nansum(x, /, *, axis=None, dtype=None, keepdims=False, out=None) -> DistArray:
    """Sum over `axis` treating NaNs as zero (numpy's nansum; dtype rules as darray.sum)."""
    x = ensure_array("nansum", x)
    refuse_out(out, "nansum")
    if not _floating(x):
        return statistical.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)
    return reduce(x, _nansum_kernel, axis, keepdims, sum_dtype(x.dtype, dtype, "nansum"),
                  fname="nansum")


def nanprod(x, /, *, axis=None, dtype=None, keepdims=False, out=None) -> DistArray:
    """Product over `axis` treating NaNs as one (numpy's nanprod)."""
    x = ensure_array("nanprod", x)
    refuse_out(out, "nanprod")
    if not _floating(x):
        return statistical.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)
    return reduce(x, _nanprod_kernel, axis, keepdims, sum_dtype(x.dtype, dtype, "nanprod"),
                  fname="nanprod")


def nanmax(x, /, *, axis=None, keepdims=False, out=None) -> DistArray:
    """Largest element over `axis`, NaNs ignored; a slice of NaNs only gives NaN (numpy's
    answer, without its RuntimeWarning). ValueError for an empty axis."""
    x = ensure_array("nanmax", x)
    refuse_out(out, "nanmax")
    if x.dtype.kind != "f":
        return statistical.max(x, axis=axis, keepdims=keepdims)
    return reduce(x, _nanextreme_kernel, axis, keepdims, "max", fname="nanmax",
                  category="real numeric", nonempty=True)


def nanmin(x, /, *, axis=None, keepdims=False, out=None) -> DistArray:
    """Smallest element over `axis`, NaNs ignored (as nanmax)."""
    x = ensure_array("nanmin", x)
    refuse_out(out, "nanmin")
    if x.dtype.kind != "f":
        return statistical.min(x, axis=axis, keepdims=keepdims)
    return reduce(x, _nanextreme_kernel, axis, keepdims, "min", fname="nanmin",
                  category="real numeric", nonempty=True)


def _moments(x, axis, dtype, keepdims, correction, what):
    dtype = np.dtype(dtype) if dtype is not None else (
        x.dtype if x.dtype.kind in "fc" else statistical.float_result_dtype(x.dtype))
    return reduce(x, _nanmoments_kernel, axis, keepdims, dtype, correction, what,
                  fname="nan" + what, category="numeric")


def nanmean(x, /, *, axis=None, dtype=None, keepdims=False, out=None) -> DistArray:
    """Mean over `axis` of the non-NaN elements; a slice of NaNs only gives NaN."""
    x = ensure_array("nanmean", x)
    refuse_out(out, "nanmean")
    return _moments(x, axis, dtype, keepdims, 0.0, "mean")


def nanvar(x, /, *, axis=None, dtype=None, keepdims=False, ddof=None, correction=0.0,
           out=None) -> DistArray:
    """Variance over `axis` of the non-NaN elements (two passes), divided by
    ``count - ddof``; NaN where that is <= 0 (numpy's answer)."""
    x = ensure_array("nanvar", x)
    refuse_out(out, "nanvar")
    return _moments(x, axis, dtype, keepdims,
                    statistical.check_correction(correction, ddof, "nanvar"), "var")


def nanstd(x, /, *, axis=None, dtype=None, keepdims=False, ddof=None, correction=0.0,
           out=None) -> DistArray:
    """Standard deviation: sqrt of `nanvar` with the same arguments."""
    x = ensure_array("nanstd", x)
    refuse_out(out, "nanstd")
    return _moments(x, axis, dtype, keepdims,
                    statistical.check_correction(correction, ddof, "nanstd"), "std")


for _f in (nansum, nanprod, nanmax, nanmin, nanmean, nanvar, nanstd):
    _f.__doc__ = (_f.__doc__ or "") + _LAYOUT


# -- numpy's cumulative functions and cross ---------------------------------------------------
def _numpy_cumulative(fn, x, axis, dtype, out, fname):
    x = ensure_array(fname, x)
    refuse_out(out, fname)
    if axis is None:  # numpy: over the flattened array
        x, axis = (reshape(x, (-1,)) if x.ndim != 1 else x), 0
    return fn(x, axis=axis, dtype=dtype)


def cumsum(x, /, axis=None, dtype=None, out=None) -> DistArray:
    """numpy's cumsum: darray.cumulative_sum, over the flattened array when axis is None.

    Layout: as cumulative_sum (each device scans its block; block totals are scanned across
    devices and added back; no gather). A flattened multi-dimensional x is reshaped first
    (see darray.reshape for its communication).
    """
    return _numpy_cumulative(statistical.cumulative_sum, x, axis, dtype, out, "cumsum")


def cumprod(x, /, axis=None, dtype=None, out=None) -> DistArray:
    """numpy's cumprod: darray.cumulative_prod, over the flattened array when axis is None.
    Layout as `cumsum`."""
    return _numpy_cumulative(statistical.cumulative_prod, x, axis, dtype, out, "cumprod")


def cross(x1, x2, /, *, axis=-1) -> DistArray:
    """numpy's cross for 3-vectors along `axis` (darray.linalg.cross, which the standard
    places in its linalg extension). Layout: as darray.linalg.cross."""
    return linalg.cross(x1, x2, axis=axis)
