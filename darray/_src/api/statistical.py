"""Statistical functions: sum, prod, mean, var, std, min, max, cumulative_sum, cumulative_prod.

Reductions never gather the array. They run on the physical array with the padding (and any
ghost cells) replaced by the reduction's identity (`masked_physical`), so a sum over an
unevenly split axis is exact, and XLA combines the per-device partial results with one
all-reduce over the mesh axes that split the reduced axes. The output keeps the input's layout
with the reduced axes removed (their mesh axes freed): the result is pinned there.
"""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api.creation import redistribute
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine import reduce_scatter, scanning
from darray._src.engine.apply import apply_logical, run_physical
from darray._src.engine.arguments import ensure_array
from darray._src.layout.axes import normalize_axes, normalize_axis
from darray._src.layout.layout import Layout
from darray._src.placement.physical import masked_physical, valid_mask
from darray._src.placement.placement import local_layout, local_mesh


# -- the shared reduction driver (also used by utility and searching) ---------------------------
def plain(x: DistArray) -> DistArray:
    """`x` without ghost cells, where physical index = logical index."""
    if not x.layout.has_halo:
        return x
    lay = x.layout
    target = Layout(lay.shape, lay.mesh, lay.split, ((0, 0),) * lay.ndim)
    return redistribute(x, target, None)


@functools.lru_cache(maxsize=1024)  # read on every eager reduction; Layouts are values
def reduced_layout(layout: Layout, axes, keepdims: bool) -> Layout:
    """The input layout with `axes` removed (or kept with length 1, unsplit)."""
    if keepdims:
        shape = tuple(1 if a in axes else n for a, n in enumerate(layout.shape))
        split = tuple(() if a in axes else s for a, s in enumerate(layout.split))
    else:
        shape = tuple(n for a, n in enumerate(layout.shape) if a not in axes)
        split = tuple(s for a, s in enumerate(layout.split) if a not in axes)
    nd = len(shape)
    return Layout(shape, layout.mesh, split, ((0, 0),) * nd)


def reduce(x, kernel, axis, keepdims: bool, *extra, fname: str, category: str = "any",
           nonempty: bool = False) -> DistArray:
    """Run `kernel(data, layout, axes, keepdims, *extra)` on x's physical data, compiled once.

    The kernel must mask padding itself (with `masked_physical` or `valid_mask`); its output
    must have the physical shape of `reduced_layout(layout, axes, keepdims)`.
    """
    x = ensure_array(fname, x)
    if category != "any" and x.dtype not in _dt.CATEGORIES[category]:
        raise TypeError(f"{fname}: x has dtype {x.dtype}, but {fname} accepts {category} "
                        "dtypes only")
    axes = tuple(range(x.ndim)) if axis is None else tuple(sorted(normalize_axes(axis, x.ndim)))
    if nonempty and any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{fname} of an empty axis has no identity (x has shape {x.shape}, "
                         f"axis={axis!r})")
    x = plain(x)
    static = (x.layout, axes, bool(keepdims)) + extra
    if x._layout.mesh is local_mesh():  # a small array: one jit on its one device
        data = _local_reduction(kernel, static)(x.data)
        return DistArray._new(data, local_layout(tuple(data.shape)))
    # a 0-d result leaves the mesh for one device in DistArray._new (placement.local_mesh)
    return run_physical(kernel, [x], reduced_layout(x.layout, axes, keepdims), static=static)


@program_cache(SMALL)
def _local_reduction(kernel, static):
    return jax.jit(lambda data: kernel(data, *static))


def _count(layout: Layout, axes) -> int:
    return math.prod(layout.shape[a] for a in axes)


def sum_dtype(dtype, requested, fname: str):
    """The standard's accumulator dtype: small signed ints and bool widen to the default int,
    unsigned ints to the default unsigned int; floats keep their dtype."""
    if requested is not None:
        return _dt.as_dtype(requested)
    # (this module defines `max`, so compare sizes by hand)
    if dtype == _dt.bool:
        return _dt.default_int()
    if dtype in _dt.SIGNED:
        return dtype if dtype.itemsize >= _dt.default_int().itemsize else _dt.default_int()
    if dtype in _dt.UNSIGNED:
        return dtype if dtype.itemsize >= _dt.default_uint().itemsize else _dt.default_uint()
    return dtype


def lowest(dtype):
    """The identity of max: -inf, the smallest integer, or False."""
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind == "b":
        return False
    return np.iinfo(dtype).min


def highest(dtype):
    if dtype.kind == "f":
        return np.inf
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max


# -- kernels (module-level, so compilations are cached by identity) ----------------------------
def _sum_kernel(data, layout, axes, keepdims, dtype):
    return jnp.sum(masked_physical(data, layout, 0), axis=axes, keepdims=keepdims, dtype=dtype)


def _prod_kernel(data, layout, axes, keepdims, dtype):
    return jnp.prod(masked_physical(data, layout, 1), axis=axes, keepdims=keepdims, dtype=dtype)


def _extreme(data, layout, axes, keepdims, reducer, fill):
    vals = masked_physical(data, layout, fill)
    out = reducer(vals, axis=axes, keepdims=keepdims)
    if data.dtype.kind == "f":
        # The cross-device max/min all-reduce may drop NaNs (measured on CPU): find them apart.
        out = jnp.where(jnp.any(jnp.isnan(vals), axis=axes, keepdims=keepdims), jnp.nan, out)
    return out


def _max_kernel(data, layout, axes, keepdims):
    return _extreme(data, layout, axes, keepdims, jnp.max, lowest(data.dtype))


def _min_kernel(data, layout, axes, keepdims):
    return _extreme(data, layout, axes, keepdims, jnp.min, highest(data.dtype))


def divide_by_count(total, n):
    """``total / n`` rounded once, as numpy divides a sum by its count.

    XLA turns a division by a constant into a product with its reciprocal, and LLVM may then
    fuse that product with a later subtraction into one FMA: in `var`, ``x - sum * (1/3)``
    for ``x = [1, 1, 1]`` gave 5.6e-17 instead of 0 (issue #28). A count XLA cannot see as a
    constant keeps a true, correctly rounded division, so a mean that is exact stays exact.
    """
    real = total.real.dtype if jnp.iscomplexobj(total) else total.dtype
    return total / jax.lax.optimization_barrier(jnp.asarray(n, real))


def _mean_kernel(data, layout, axes, keepdims, dtype):
    total = jnp.sum(masked_physical(data.astype(dtype), layout, 0), axis=axes, keepdims=keepdims)
    return divide_by_count(total, _count(layout, axes))


def _var_kernel(data, layout, axes, keepdims, dtype, correction, root):
    data = data.astype(dtype)
    n = _count(layout, axes)
    mean = divide_by_count(jnp.sum(masked_physical(data, layout, 0), axis=axes, keepdims=True), n)
    dev = data - mean
    mask = valid_mask(layout)
    if mask is not None:
        dev = jnp.where(mask, dev, 0)  # padding would otherwise add (garbage - mean)**2
    sq = (dev * jnp.conj(dev)).real if dtype.kind == "c" else dev * dev
    var = divide_by_count(jnp.sum(sq, axis=axes, keepdims=keepdims), n - correction)
    return jnp.sqrt(var) if root else var


# -- public reductions -------------------------------------------------------------------------
_LAYOUT = """
    Layout:
      x's layout without the reduced axes (kept unsplit with length 1 under keepdims); a full
      reduction gives a replicated 0-d DistArray. Communication: one all-reduce over the mesh
      axes that split the reduced axes; never a gather. Padding is masked, so uneven splits
      are exact.
"""


def reduced_count(shape, axis) -> int:
    """How many elements one result cell reduces (the product of the reduced axes' lengths)."""
    axes = range(len(shape)) if axis is None else normalize_axes(axis, len(shape))
    return math.prod(shape[a] for a in axes)


def _check_widened_count(x, axis, requested, fname):
    """A bool or small integer sum in the default integer: its count of terms (decided from the
    shape) must fit int32 with x64 off. A requested dtype is the caller's choice, as numpy's."""
    if requested is None and x.dtype.kind in "biu" and x.dtype.itemsize < 4:
        _dt.check_fits_default_int(fname, reduced_count(x.shape, axis),
                                   f"a sum of {x.dtype} values (of bool: the count of True)")


def sum(x, /, *, axis=None, dtype=None, keepdims=False, spec=None) -> DistArray:  # noqa: A001
    """Sum over `axis` (an int, a tuple of ints, or None for all axes).

    Args:
      x: DistArray of numeric dtype.
      axis: axes to reduce.
      dtype: accumulator/result dtype; default: the standard's (signed ints widen to the
        default integer dtype, unsigned ints to the default unsigned one, floats keep theirs).
      keepdims: keep reduced axes with length 1.
      spec: the result's split (a PartitionSpec-like tuple, one entry per result axis, as
        in darray.asarray); default: x's layout without the reduced axes. Splitting result
        axes over the mesh axes the reduction frees compiles to a reduce-scatter
        (``lax.psum_scatter``: each device receives only its block of the sum) instead of an
        all-reduce plus a slice; see engine/reduce_scatter.py.
    """
    x = ensure_array("sum", x)
    _check_widened_count(x, axis, dtype, "sum")
    # bool is summed as the default integer (numpy does too; the standard leaves it open)
    dtype = sum_dtype(x.dtype, dtype, "sum")
    if spec is None:
        return reduce(x, _sum_kernel, axis, keepdims, dtype, fname="sum")
    axes = tuple(range(x.ndim)) if axis is None else tuple(sorted(normalize_axes(axis, x.ndim)))
    x = plain(x)
    return reduce_scatter.sum_to(
        x, axes, bool(keepdims), dtype, reduced_layout(x.layout, axes, keepdims), spec,
        lambda: reduce(x, _sum_kernel, axis, keepdims, dtype, fname="sum"))


def prod(x, /, *, axis=None, dtype=None, keepdims=False) -> DistArray:
    """Product over `axis`; arguments and dtype rules as for `sum`."""
    x = ensure_array("prod", x)
    return reduce(x, _prod_kernel, axis, keepdims, sum_dtype(x.dtype, dtype, "prod"),
                  fname="prod")


def max(x, /, *, axis=None, keepdims=False) -> DistArray:  # noqa: A001
    """Largest element over `axis` (NaN propagates). ValueError for an empty axis."""
    return reduce(x, _max_kernel, axis, keepdims, fname="max", category="real numeric",
                  nonempty=True)


def min(x, /, *, axis=None, keepdims=False) -> DistArray:  # noqa: A001
    """Smallest element over `axis` (NaN propagates). ValueError for an empty axis."""
    return reduce(x, _min_kernel, axis, keepdims, fname="min", category="real numeric",
                  nonempty=True)


def float_result_dtype(dtype):
    return dtype if dtype.kind in "fc" else _dt.default_float()


def mean(x, /, *, axis=None, keepdims=False) -> DistArray:
    """Arithmetic mean over `axis` (x of floating dtype; integers give the default float)."""
    x = ensure_array("mean", x)
    return reduce(x, _mean_kernel, axis, keepdims, float_result_dtype(x.dtype), fname="mean",
                  category="numeric")


def check_correction(correction, ddof=None, fname="var"):
    """The degrees-of-freedom correction from the standard's `correction` or numpy's `ddof`
    (numpy 2 accepts both names, one at a time)."""
    if ddof is not None:
        if correction != 0.0:
            raise ValueError(f"{fname}: give ddof= (numpy's name) or correction= (the "
                             f"standard's), not both (got ddof={ddof!r}, "
                             f"correction={correction!r})")
        correction = ddof
    if isinstance(correction, bool) or not isinstance(correction, (int, float, np.integer,
                                                                   np.floating)) \
            or correction < 0:
        raise ValueError(f"{fname}: correction={correction!r} must be a real number >= 0 (0 "
                         "for the population, 1 for the sample estimate)")
    return float(correction)


def var(x, /, *, axis=None, correction=0.0, keepdims=False, ddof=None) -> DistArray:
    """Variance over `axis`: ``sum(|x - mean|**2) / (N - correction)``, computed in two passes.

    Args:
      x: DistArray of floating dtype (complex gives a real result).
      correction: degrees of freedom subtracted from N (0: population, 1: sample).
      ddof: numpy's name for `correction` (give one of them).
    """
    x = ensure_array("var", x)
    return reduce(x, _var_kernel, axis, keepdims, float_result_dtype(x.dtype),
                  check_correction(correction, ddof, "var"), False, fname="var",
                  category="numeric")


def std(x, /, *, axis=None, correction=0.0, keepdims=False, ddof=None) -> DistArray:
    """Standard deviation: sqrt of `var` with the same arguments."""
    x = ensure_array("std", x)
    return reduce(x, _var_kernel, axis, keepdims, float_result_dtype(x.dtype),
                  check_correction(correction, ddof, "std"), True, fname="std",
                  category="numeric")


for _f in (sum, prod, max, min, mean, var, std):
    _f.__doc__ = (_f.__doc__ or "") + _LAYOUT


# -- cumulative --------------------------------------------------------------------------------
_CUM = {"sum": (jnp.cumsum, 0), "prod": (jnp.cumprod, 1)}


def _with_initial(logical, axis, dtype, op):
    cum, identity = _CUM[op]
    body = cum(logical.astype(dtype), axis=axis)
    first = jnp.full(body.shape[:axis] + (1,) + body.shape[axis + 1:], identity, dtype)
    return jnp.concatenate([first, body], axis=axis)


def _cumulative(x, axis, dtype, include_initial, op):
    fname = "cumulative_" + op
    x = ensure_array(f"cumulative_{op}", x)
    if x.dtype not in _dt.CATEGORIES["numeric"] and x.dtype != _dt.bool:
        raise TypeError(f"{fname}: x has dtype {x.dtype}; numeric dtypes only")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{fname}: axis must be given for a {x.ndim}-D array (axis=None "
                             "is allowed for 1-D arrays only)")
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    if op == "sum":
        _check_widened_count(x, axis, dtype, fname)
    dtype = sum_dtype(x.dtype, dtype, fname)
    x = plain(x)
    shape = list(x.shape)
    shape[axis] += bool(include_initial)
    out = Layout(tuple(shape), x.mesh, x.layout.split, ((0, 0),) * x.ndim)
    if x.size == 0:  # nothing to scan: the identity prepended, or an empty result
        return apply_logical(_with_initial if include_initial else _plain_scan, [x], out,
                             static=(axis, dtype, op))
    # block by block: a local scan plus a scan of the block totals over collective-permutes
    # (engine/scanning.py); XLA's partitioner all-gathers the totals, and with include_initial
    # the whole axis
    fn = scanning.cumulative_fn(x.layout, out, axis, dtype, op, bool(include_initial))
    return DistArray._new(fn(x.data), out)


def _plain_scan(logical, axis, dtype, op):
    return _CUM[op][0](logical.astype(dtype), axis=axis)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) -> DistArray:
    """Running sum along `axis` (required unless x is 1-D).

    Args:
      x: DistArray of numeric dtype.
      axis: the axis to scan.
      dtype: result dtype; default as for `sum`.
      include_initial: prepend the identity (0), so the axis grows by one.

    Layout:
      x's layout. Each device scans its block; the block totals (one value per block and row)
      are scanned across the blocks of the axis by 1 + ceil(log2 p) collective-permutes and
      combined with the local scan: no all-gather, about one block of temporaries
      (engine/scanning.py). With include_initial the axis grows by one and each block's cells
      shift by ppermute rounds (engine/joining.py).
    """
    return _cumulative(x, axis, dtype, include_initial, "sum")


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False) -> DistArray:
    """Running product along `axis`; arguments and layout as for `cumulative_sum`
    (the identity prepended by include_initial is 1)."""
    return _cumulative(x, axis, dtype, include_initial, "prod")


def _count_kernel(data, layout, axes, keepdims):
    nonzero = masked_physical(data != 0, layout, False)
    return jnp.sum(nonzero, axis=axes, keepdims=keepdims, dtype=_dt.default_int())


def count_nonzero(x, /, *, axis=None, keepdims=False) -> DistArray:
    """Number of nonzero (True) elements over `axis` (an int, tuple or None).

    Layout:
      As for darray.sum: one all-reduce over the mesh axes splitting the reduced axes.
    """
    x = ensure_array("count_nonzero", x)
    _dt.check_fits_default_int("count_nonzero", reduced_count(x.shape, axis),
                               "the count of nonzero elements")
    return reduce(x, _count_kernel, axis, keepdims, fname="count_nonzero")
