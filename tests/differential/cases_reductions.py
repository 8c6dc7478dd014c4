"""Reductions (every axis choice), cumulative, searching, sorting, set functions, utility."""
from __future__ import annotations

import diff_support as ds
import numpy as np
from diff_registry import Case, Example, axis_param, one_array, reduced_length, register
from hypothesis import strategies as st

import darray

F, C, R, N, A = ds.FLOATS, ds.COMPLEX, ds.REAL, ds.NUMERIC, ds.ALL


def _reduce_params(allow_tuple=True, correction=False):
    def params(draw, shape):
        axis = axis_param(draw, len(shape), allow_tuple=allow_tuple)
        p = {"axis": axis, "keepdims": draw(st.booleans()),
             "_scale": reduced_length(shape, axis)}
        if correction:
            p["correction"] = draw(st.sampled_from([0.0, 1.0]))
        return p
    return params


def _np_var(x, axis=None, keepdims=False, correction=0.0):
    return np.var(x, axis=axis, keepdims=keepdims, correction=correction)


def _np_std(x, axis=None, keepdims=False, correction=0.0):
    return np.std(x, axis=axis, keepdims=keepdims, correction=correction)


register(
    Case("sum", one_array(N, "real", params=_reduce_params()), darray.sum, np.sum, 16.0),
    Case("prod", one_array(N, "pm1", params=_reduce_params()), darray.prod, np.prod, 16.0),
    Case("max", one_array(R, "int", allow_zero=False, params=_reduce_params()), darray.max,
         np.max, None),
    Case("min", one_array(R, "int", allow_zero=False, params=_reduce_params()), darray.min,
         np.min, None),
    Case("mean", one_array(F + C, "real", allow_zero=False, params=_reduce_params()),
         darray.mean, np.mean, 16.0),
    Case("var", one_array(F, "real", allow_zero=False, params=_reduce_params(correction=True)),
         darray.var, _np_var, 64.0),
    Case("std", one_array(F, "real", allow_zero=False, params=_reduce_params(correction=True)),
         darray.std, _np_std, 64.0),
    Case("all", one_array(A, "int", params=_reduce_params()), darray.all, np.all, None),
    Case("any", one_array(A, "int", params=_reduce_params()), darray.any, np.any, None),
    Case("count_nonzero", one_array(A, "int", params=_reduce_params()), darray.count_nonzero,
         np.count_nonzero, None),
)


def _arg_params(draw, shape):
    return {"axis": axis_param(draw, len(shape), allow_tuple=False),
            "keepdims": draw(st.booleans())}


register(
    Case("argmax", one_array(R, "int", allow_zero=False, params=_arg_params), darray.argmax,
         np.argmax, None),
    Case("argmin", one_array(R, "int", allow_zero=False, params=_arg_params), darray.argmin,
         np.argmin, None),
    Case("nonzero", one_array(A, "int"), darray.nonzero, np.nonzero, None, weight=3),
)


def _cumulative_params(draw, shape):
    axis = None if len(shape) == 1 and draw(st.booleans()) else \
        axis_param(draw, len(shape), allow_none=False, allow_tuple=False)
    n = shape[0] if axis is None else shape[axis]
    return {"axis": axis, "include_initial": draw(st.booleans()), "_scale": max(n, 1)}


def _np_cumulative(op):
    def ref(x, axis=None, include_initial=False):
        return op(x, axis=axis, include_initial=include_initial)
    return ref


register(
    Case("cumulative_sum", one_array(N, "real", params=_cumulative_params), darray.cumulative_sum,
         _np_cumulative(np.cumulative_sum), 16.0),
    Case("cumulative_prod", one_array(N, "pm1", params=_cumulative_params),
         darray.cumulative_prod, _np_cumulative(np.cumulative_prod), 16.0),
)


def _diff_params(draw, shape):
    return {"axis": axis_param(draw, len(shape), allow_none=False, allow_tuple=False),
            "n": draw(st.integers(1, 2))}


register(Case("diff", one_array(N, "int", params=_diff_params), darray.diff, np.diff, None))


# -- sorting ---------------------------------------------------------------------------------
def _sort_params(draw, shape):
    return {"axis": axis_param(draw, len(shape), allow_none=False, allow_tuple=False),
            "descending": draw(st.booleans()), "stable": draw(st.booleans())}


def _np_sort(x, axis=-1, descending=False, stable=True):
    out = np.sort(x, axis=axis, stable=True)
    return np.flip(out, axis=axis) if descending else out


def _np_argsort(x, axis=-1, descending=False, stable=True):
    if not descending:
        return np.argsort(x, axis=axis, stable=True)
    # descending and stable: ties keep their original order
    n = x.shape[axis]
    return np.flip(n - 1 - np.argsort(np.flip(x, axis=axis), axis=axis, stable=True), axis=axis)


def _argsort_params(draw, shape):
    p = _sort_params(draw, shape)
    p["stable"] = True  # ties (int-valued data) have one right answer only when stable
    return p


register(
    Case("sort", one_array(R, "int", params=_sort_params), darray.sort, _np_sort, None),
    Case("argsort", one_array(R, "int", params=_argsort_params), darray.argsort, _np_argsort,
         None),
)


# -- searching with several operands ---------------------------------------------------------
@st.composite
def _where_example(draw):
    mesh = draw(ds.meshes)
    s = draw(ds.shapes(1, 3))
    dtype = draw(st.sampled_from(A))
    cond = draw(ds.operand(mesh, ds.broadcast_partner(draw, s), "bool"))
    x1 = draw(ds.operand(mesh, s, dtype, "int"))
    x2 = draw(ds.operand(mesh, ds.broadcast_partner(draw, s), dtype, "int"))
    return Example(mesh, [cond, x1, x2])


@st.composite
def _searchsorted_example(draw):
    mesh = draw(ds.meshes)
    n = draw(ds.extents())
    dtype = draw(st.sampled_from(R))
    x1 = draw(ds.operand(mesh, (n,), dtype, "int"))
    x2 = draw(ds.operand(mesh, draw(ds.shapes(1, 2)), dtype, "int"))
    params = {"side": draw(st.sampled_from(["left", "right"]))}
    if draw(st.booleans()):
        params["sorter"] = ds.Operand(np.argsort(x1.host, stable=True), mesh,
                                      draw(ds.specs(mesh, 1)))
    else:
        x1.host = np.sort(x1.host)
    return Example(mesh, [x1, x2], params)


def _dist_sorter(x1, x2, side, sorter=None):
    return darray.searchsorted(x1, x2, side=side,
                               sorter=None if sorter is None else sorter.dist())


def _np_searchsorted(x1, x2, side, sorter=None):
    return np.searchsorted(x1, x2, side=side, sorter=None if sorter is None else sorter.host)


register(
    Case("where", _where_example(), darray.where, np.where, None),
    Case("searchsorted", _searchsorted_example(), _dist_sorter, _np_searchsorted, None),
)


# -- set functions ---------------------------------------------------------------------------
def _np_unique_all(x):
    v, idx, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    return v, idx, inv.reshape(x.shape), cnt


def _np_unique_inverse(x):
    v, inv = np.unique(x, return_inverse=True)
    return v, inv.reshape(x.shape)


def _np_unique_counts(x):
    return np.unique(x, return_counts=True)


@st.composite
def _isin_example(draw):
    mesh = draw(ds.meshes)
    dtype = draw(st.sampled_from(R))
    x1 = draw(ds.operand(mesh, draw(ds.shapes(1, 3)), dtype, "int"))
    x2 = draw(ds.operand(mesh, draw(ds.shapes(1, 2)), dtype, "int"))
    return Example(mesh, [x1, x2], {"invert": draw(st.booleans())})


register(
    Case("unique_values", one_array(R, "int"), darray.unique_values, np.unique, None),
    Case("unique_counts", one_array(R, "int"), darray.unique_counts, _np_unique_counts, None),
    Case("unique_inverse", one_array(R, "int"), darray.unique_inverse, _np_unique_inverse, None),
    Case("unique_all", one_array(R, "int"), darray.unique_all, _np_unique_all, None),
    Case("isin", _isin_example(), darray.isin, np.isin, None),
)


# -- numpy's names beyond the standard (xarray and others look them up on the namespace) -------
def _np_moment(fn):
    def ref(x, axis=None, keepdims=False, correction=0.0):
        return fn(x, axis=axis, keepdims=keepdims, ddof=correction)
    return ref


def _numpy_cumulative_params(draw, shape):
    return {"axis": axis_param(draw, len(shape), allow_tuple=False),
            "_scale": max(int(np.prod(shape)), 1)}


# numpy's every method (darray.quantile's METHODS): "nearest" once rounded half-way down
QUANTILE_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                    "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
                    "normal_unbiased", "lower", "higher", "midpoint", "nearest")


def _quantile_params(draw, shape):
    p = _reduce_params()(draw, shape)
    p["q"] = draw(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]))
    p["method"] = draw(st.sampled_from(QUANTILE_METHODS))
    return p


def _percentile_params(draw, shape):
    p = _quantile_params(draw, shape)
    p["q"] = 100 * p["q"]
    return p


register(
    Case("nansum", one_array(N, "real", params=_reduce_params()), darray.nansum, np.nansum,
         16.0),
    Case("nanprod", one_array(N, "pm1", params=_reduce_params()), darray.nanprod, np.nanprod,
         16.0),
    Case("nanmax", one_array(F, "int", allow_zero=False, params=_reduce_params()),
         darray.nanmax, np.nanmax, None),
    Case("nanmin", one_array(F, "int", allow_zero=False, params=_reduce_params()),
         darray.nanmin, np.nanmin, None),
    Case("nanmean", one_array(F, "real", allow_zero=False, params=_reduce_params()),
         darray.nanmean, np.nanmean, 16.0),
    Case("nanvar", one_array(F, "real", allow_zero=False, params=_reduce_params(correction=True)),
         darray.nanvar, _np_moment(np.nanvar), 64.0),
    Case("nanstd", one_array(F, "real", allow_zero=False, params=_reduce_params(correction=True)),
         darray.nanstd, _np_moment(np.nanstd), 64.0),
    Case("nanargmax", one_array(F, "int", allow_zero=False, params=_arg_params),
         darray.nanargmax, np.nanargmax, None),
    Case("nanargmin", one_array(F, "int", allow_zero=False, params=_arg_params),
         darray.nanargmin, np.nanargmin, None),
    Case("cumsum", one_array(N, "real", params=_numpy_cumulative_params), darray.cumsum,
         np.cumsum, 16.0),
    Case("cumprod", one_array(N, "pm1", params=_numpy_cumulative_params), darray.cumprod,
         np.cumprod, 16.0),
    Case("median", one_array(F, "real", allow_zero=False, params=_reduce_params()),
         darray.median, np.median, 16.0),
    Case("quantile", one_array(F, "real", allow_zero=False, params=_quantile_params),
         darray.quantile, np.quantile, 16.0),
    Case("percentile", one_array(F, "real", allow_zero=False, params=_percentile_params),
         darray.percentile, np.percentile, 16.0),
    Case("nanmedian", one_array(F, "real", allow_zero=False, params=_reduce_params()),
         darray.nanmedian, np.nanmedian, 16.0),
    Case("nanquantile", one_array(F, "real", allow_zero=False, params=_quantile_params),
         darray.nanquantile, np.nanquantile, 16.0),
    Case("nanpercentile", one_array(F, "real", allow_zero=False, params=_percentile_params),
         darray.nanpercentile, np.nanpercentile, 16.0),
)
