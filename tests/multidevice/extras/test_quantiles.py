"""Covers: darray/_src/extras/quantiles.py

quantile, percentile, median and their nan-variants against numpy: every interpolation method
numpy offers, on split and unsplit, even and uneven layouts, in every real dtype (issue 49:
method="nearest" once rounded a half-way position down, 12 of 200 random cases wrong).
"""
import warnings

import jax
import numpy as np
import pytest

import darray
from darray._src.extras.quantiles import DISCRETE, METHODS
from tests.helpers import assert_layout, canonical_dtype, collective_counts, host, mesh_of, tol

MESH2 = mesh_of((2, 4))
MESH1 = mesh_of((8,), ("d",))
DTYPES = (np.float64, np.float32, np.float16, np.int64, np.int32, np.int8, np.uint8, np.bool_)
FUNCS = {"quantile": (darray.quantile, np.quantile, 1.0),
         "percentile": (darray.percentile, np.percentile, 100.0),
         "nanquantile": (darray.nanquantile, np.nanquantile, 1.0),
         "nanpercentile": (darray.nanpercentile, np.nanpercentile, 100.0)}


def _spec(rng, mesh, ndim):
    """A random split: each mesh axis on a random array axis, or on none."""
    spec = [[] for _ in range(ndim)]
    for name in mesh.axis_names:
        a = int(rng.integers(-1, ndim))
        if a >= 0:
            spec[a].append(name)
    return tuple(tuple(s) or None for s in spec)


def _data(rng, shape, dtype, nans):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        # few distinct values: ties between lane values, as well as between positions
        return rng.integers(0, 9, shape).astype(dtype)
    a = rng.integers(-20, 20, shape) / 4 if rng.random() < 0.3 else rng.standard_normal(shape)
    a = a.astype(dtype)
    if nans:
        a[rng.random(shape) < 0.25] = np.nan
    return a


def _qs(rng, n, scale):
    """Some random q and some that land exactly half-way between two positions for a lane of
    n values ((n - 1) q = k + 1/2, dyadic, so exact in float32 and float64 alike)."""
    qs = list(rng.random(2))
    d = 1 << int(np.ceil(np.log2(max(n - 1, 1))))  # (n-1)/d <= 1: k + 1/2 over a power of two
    qs += [min((int(rng.integers(0, max(n - 1, 1))) + 0.5) / d, 1.0), 0.0, 1.0, 0.5]
    return np.asarray(qs) * scale


def _case(seed):
    rng = np.random.default_rng(seed)
    mesh = MESH1 if rng.random() < 0.5 else MESH2
    ndim = int(rng.integers(1, 4))
    # lanes of 5 and 9 make (n - 1) q = k + 1/2 exact for q = (2k+1)/8 and (2k+1)/16
    shape = tuple(int(rng.choice([1, 2, 3, 5, 7, 9, 11])) for _ in range(ndim))
    dtype = DTYPES[seed % len(DTYPES)]
    name = list(FUNCS)[(seed // len(DTYPES)) % len(FUNCS)]
    method = METHODS[seed % len(METHODS)]
    if dtype == np.bool_ and method not in DISCRETE:  # numpy refuses to interpolate bools
        method = DISCRETE[seed % len(DISCRETE)]
    choice = int(rng.integers(0, 3))
    axis = None if choice == 0 else (int(rng.integers(0, ndim)) if choice == 1 else
                                     tuple(sorted(set(rng.integers(0, ndim, 2).tolist()))))
    return rng, mesh, shape, np.dtype(dtype), name, method, axis


def _check(got, want, out_dtype, x):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert_layout(got, mesh=x.layout.mesh)
    g = np.asarray(got)
    if got.dtype.kind in "biu":  # one element of the lane: exact
        np.testing.assert_array_equal(g, want)
    else:
        # float16 interpolates in float16 (numpy: in float64 for an array q)
        t = max(tol(out_dtype), 4 * float(np.finfo(out_dtype).eps))
        np.testing.assert_allclose(g, want.astype(np.float64), rtol=t, atol=t, equal_nan=True)


@pytest.mark.parametrize("seed", range(200))
def test_quantiles_match_numpy_on_random_cases(seed):
    rng, mesh, shape, dtype, name, method, axis = _case(seed)
    fn, ref, scale = FUNCS[name]
    dtype = canonical_dtype(dtype)
    a = host(_data(rng, shape, dtype, nans=dtype.kind == "f" and rng.random() < 0.6))
    x = darray.asarray(a, mesh=mesh, spec=_spec(rng, mesh, len(shape)))
    reduced = range(len(shape)) if axis is None else np.atleast_1d(axis)
    n = int(np.prod([shape[i] for i in reduced]))
    q = _qs(rng, n, scale)
    keepdims = bool(rng.random() < 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "All-NaN slice encountered"
        want = ref(a, q, axis=axis, method=method, keepdims=keepdims)
    got = fn(x, q, axis=axis, method=method, keepdims=keepdims)
    assert got.layout.split[:1] == ((),), "the q axis is never split"
    # dtype: x's for a discrete method, its float dtype else (numpy's rule, x64 permitting)
    assert got.dtype == (dtype if method in DISCRETE else
                         (dtype if dtype.kind == "f" else canonical_dtype(np.float64)))
    _check(got, want, got.dtype, x)


@pytest.mark.parametrize("n", [3, 5, 9])
def test_nearest_rounds_half_way_to_even(n):
    """Position (n - 1) q = k + 1/2 gives element k or k + 1, whichever is even (np.around)."""
    a = np.arange(float(n)) * 10
    x = darray.asarray(host(a), mesh=MESH1, spec=("d",))
    for k in range(n - 1):
        q = (k + 0.5) / (n - 1)
        want = np.quantile(a, q, method="nearest")
        assert want == 10 * (k if k % 2 == 0 else k + 1)
        assert float(darray.quantile(x, q, method="nearest")) == want, (n, k)
        assert float(darray.percentile(x, 100 * q, method="nearest")) == np.percentile(
            a, 100 * q, method="nearest")


@pytest.mark.distributed_placement  # asserts a full reduction stays on x's mesh
@pytest.mark.parametrize("spec", [("x", "y"), (None, ("x", "y")), (("y", "x"), None)])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_median_and_nanmedian_match_numpy(spec, axis):
    rng = np.random.default_rng(7)
    a = host(rng.standard_normal((11, 6)))
    a[rng.random(a.shape) < 0.3] = np.nan
    a[4, :] = np.nan  # an all-NaN row
    x = darray.asarray(a, mesh=MESH2, spec=spec)
    clean = darray.asarray(np.nan_to_num(a), mesh=MESH2, spec=spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want_nan = np.nanmedian(a, axis=axis, keepdims=True)
    got = darray.nanmedian(x, axis=axis, keepdims=True)
    _check(got, want_nan, got.dtype, x)
    _check(darray.median(x, axis=axis), np.median(a, axis=axis), a.dtype, x)
    _check(darray.median(clean, axis=axis), np.median(np.nan_to_num(a), axis=axis), a.dtype,
           clean)
    ints = darray.asarray(np.arange(66).reshape(11, 6) % 7, mesh=MESH2, spec=spec)
    _check(darray.nanmedian(ints, axis=axis), np.nanmedian(np.arange(66).reshape(11, 6) % 7,
                                                           axis=axis), got.dtype, ints)


def test_all_nan_lanes_give_nan_without_a_warning():
    a = host(np.full((4, 5), np.nan))
    a[1, 2] = 3.0
    x = darray.asarray(a, mesh=MESH2, spec=("x", "y"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # darray decides not to warn: no host read-back
        got = np.asarray(darray.nanquantile(x, [0.25, 0.5], axis=1))
        med = np.asarray(darray.nanmedian(x, axis=1))
    np.testing.assert_array_equal(np.isnan(got), [[True, False, True, True]] * 2)
    assert got[0, 1] == got[1, 1] == 3.0
    np.testing.assert_array_equal(med, [np.nan, 3.0, np.nan, np.nan])


def test_bad_arguments_are_named():
    x = darray.asarray(host(np.arange(6.0)), mesh=MESH1, spec=("d",))
    with pytest.raises(ValueError, match=r"nanquantile: method='nearst' .*nearest"):
        darray.nanquantile(x, 0.5, method="nearst")
    with pytest.raises(ValueError, match=r"nanpercentile: q=120 must lie in \[0, 100\]"):
        darray.nanpercentile(x, 120)
    with pytest.raises(TypeError, match="nanmedian: out="):
        darray.nanmedian(x, out=x)


# -- order statistics without gathering (issue 49: 12-16 blocks per device before) ------------
def _temp_blocks(fn, x):
    """XLA's temporaries per device over the larger of a device's input and output blocks."""
    compiled = jax.jit(lambda a: fn(a).data).lower(x).compile()
    out = jax.eval_shape(lambda a: fn(a).data, x)
    ndev = x.layout.mesh.size
    block = max(x.data.size * x.data.dtype.itemsize, np.prod(out.shape) * out.dtype.itemsize)
    return compiled.memory_analysis().temp_size_in_bytes / (block / ndev), compiled.as_text()


@pytest.mark.parametrize("shape, mesh, spec", [
    ((101, 67, 45), MESH2, ("x", "y", None)),   # uneven, 2-D mesh
    ((104, 68, 48), MESH2, ("x", "y", None)),   # even
    ((37, 203, 19), MESH1, (None, "d", None)),  # uneven, 1-D mesh
])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_order_statistics_hold_three_blocks_and_gather_nothing(shape, mesh, spec, axis):
    a = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    x = darray.asarray(a, mesh=mesh, spec=spec)
    calls = {"median": lambda v: darray.median(v, axis=axis),
             "quantile": lambda v: darray.quantile(v, [0.1, 0.5, 0.9], axis=axis,
                                                   method="nearest"),
             "nanpercentile": lambda v: darray.nanpercentile(v, 30, axis=axis)}
    for name, fn in calls.items():
        blocks, text = _temp_blocks(fn, x)
        assert blocks <= 3.0, (name, axis, blocks)
        counts = collective_counts(text)
        assert counts["all-gather"] == 0 and counts["all-to-all"] == 0, (name, counts)
    got = darray.quantile(x, [0.1, 0.5, 0.9], axis=axis, method="nearest")
    assert_layout(got)
    assert got.layout.split[1:] == tuple(s for i, s in enumerate(x.layout.split)
                                         if axis is not None and i != axis), got.layout
    np.testing.assert_array_equal(np.asarray(got), np.quantile(a, [0.1, 0.5, 0.9], axis=axis,
                                                               method="nearest"))
