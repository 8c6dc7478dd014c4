"""Covers: darray/_src/extras/quantiles.py, darray/_src/extras/numpy_reductions.py
Covers: darray/_src/extras/creation_extra.py, darray/_src/api/manipulation.py

numpy's names and rules that other projects' code relies on (issue 28 point 8, issue 32
point 3), each against numpy (float64) with the result's layout asserted.
"""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

MESH = mesh_of((2, 4), ("x", "y"))
MESH8 = mesh_of((8,), ("d8",))
RNG = np.random.default_rng(28)
SX, SY = ("x",), ("y",)


def _with_nans():
    a = RNG.standard_normal((13, 7))
    a[RNG.random((13, 7)) < 0.3] = np.nan
    a[3, :] = np.nan  # an all-NaN row
    return a


A_NAN = _with_nans()
A = np.nan_to_num(A_NAN)


def _hlo(fn, *args):
    return jax.jit(lambda *a: fn(*a).data).lower(*args).compile().as_text()


# -- var/std: exact for constant data, whatever the split (empty blocks included) ------------
@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 9, 13, 17])
@pytest.mark.parametrize("value", [1.0, -3.25, 7.0, 0.5, 1e6])
def test_std_of_constant_data_is_exactly_zero_on_uneven_splits(n, value):
    a = np.full(n, value)
    assert np.std(a) == 0.0 and np.var(a, ddof=0) == 0.0
    x = darray.asarray(a, mesh=MESH8, spec=("d8",))
    assert float(darray.std(x)) == 0.0
    assert float(darray.var(x)) == 0.0
    assert float(darray.mean(x)) == value


@pytest.mark.parametrize("shape, spec, axis", [((3, 5), ("x", "y"), 0), ((3, 5), ("x", "y"), 1),
                                               ((5, 3), ("y", "x"), None),
                                               ((2, 3, 5), (None, "x", "y"), (1, 2))])
def test_std_of_constant_blocks_is_exactly_zero_along_axes(shape, spec, axis):
    a = np.ones(shape)
    x = darray.asarray(a, mesh=MESH, spec=spec)
    for fn in (darray.std, darray.var):
        got = fn(x, axis=axis)
        np.testing.assert_array_equal(np.asarray(got), np.zeros(np.std(a, axis=axis).shape))


def test_mean_divides_as_numpy_does():
    a = RNG.random(13) + 1.0  # no cancellation: only the summation order differs
    x = darray.asarray(a, mesh=MESH8, spec=("d8",))
    np.testing.assert_allclose(float(darray.mean(x)), a.mean(), rtol=1e-15)
    np.testing.assert_allclose(float(darray.std(x, ddof=1)), a.std(ddof=1), rtol=1e-14)
    np.testing.assert_allclose(float(darray.var(x, correction=1)), a.var(ddof=1), rtol=1e-14)
    with pytest.raises(ValueError, match="not both"):
        darray.std(x, ddof=1, correction=1)


# -- result_type: numpy scalars are strongly typed --------------------------------------------
@pytest.mark.parametrize("args", [(np.float64(1.0),), (np.complex128(1j),), (np.float32(1.0), 1.0),
                                  (darray.float32, np.float64(2.0)), (darray.float32, 2.0),
                                  (np.int8(1), 1), (np.float16(1), darray.float32)])
def test_result_type_of_numpy_scalars_follows_jax_numpy(args):
    assert darray.result_type(*args) == jnp.result_type(*args)
    with pytest.raises(ValueError, match="besides Python scalars"):
        darray.result_type(1.0, 2)


# -- argmax/argmin: only an empty searched axis is refused -------------------------------------
@pytest.mark.parametrize("shape, axis", [((0, 3), 1), ((3, 0), 0), ((2, 0, 5), 2), ((2, 0, 5), 0)])
@pytest.mark.parametrize("fn", ["argmax", "argmin"])
def test_arg_of_empty_array_with_nonempty_axis(shape, axis, fn):
    a = np.zeros(shape)
    x = darray.asarray(a, mesh=MESH, spec=SX + (None,) * (len(shape) - 1))
    got = getattr(darray, fn)(x, axis=axis)
    want = getattr(np, fn)(a, axis=axis)
    assert got.shape == want.shape and got.dtype == want.dtype
    kept = [s for i, s in enumerate(x.layout.split) if i != axis]
    assert list(got.layout.split) == kept, got.layout


@pytest.mark.parametrize("shape, axis", [((0, 3), 0), ((0,), None), ((3, 0), 1)])
def test_arg_of_empty_searched_axis_is_refused(shape, axis):
    x = darray.zeros(shape, device=MESH)
    with pytest.raises(ValueError, match="empty axis"):
        darray.argmax(x, axis=axis)
    with pytest.raises(ValueError):
        np.argmax(np.zeros(shape), axis=axis)


# -- NaN-ignoring reductions, distributed -----------------------------------------------------
NAN_FUNCS = ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd")


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("name", NAN_FUNCS)
def test_nan_reductions_match_numpy(name, axis):
    x = darray.asarray(A_NAN, mesh=MESH, spec=("x", "y"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy warns on the all-NaN row
        want = getattr(np, name)(A_NAN, axis=axis)
    got = getattr(darray, name)(x, axis=axis)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, equal_nan=True)
    assert got.shape == np.shape(want)
    split = {None: (), 0: (SY,), 1: (SX,), (0, 1): ()}[axis]
    assert got.layout.split == split, got.layout


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_nan_moments_ddof(name):
    x = darray.asarray(A_NAN, mesh=MESH, spec=("x", "y"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, name)(A_NAN, axis=1, ddof=1)
    for kw in ({"ddof": 1}, {"correction": 1}):
        got = getattr(darray, name)(x, axis=1, **kw)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanarg_matches_numpy_and_gives_minus_one_for_all_nan(name, axis):
    x = darray.asarray(A_NAN, mesh=MESH, spec=("x", "y"))
    got = np.asarray(getattr(darray, name)(x, axis=axis))
    want_jax = getattr(jnp, name)(jnp.asarray(A_NAN), axis=axis)
    np.testing.assert_array_equal(got, np.asarray(want_jax))  # -1 where all NaN, as jax
    if axis == 1:
        assert got[3] == -1
        rows = [i for i in range(13) if i != 3]
        np.testing.assert_array_equal(got[rows], getattr(np, name)(A_NAN[rows], axis=1))
    elif axis is None:
        assert int(got) == getattr(np, name)(A_NAN)


def test_nan_reductions_on_integers_are_the_plain_ones():
    a = np.arange(91).reshape(13, 7)
    x = darray.asarray(a, mesh=MESH, spec=("x", "y"))
    for name in ("nansum", "nanmax", "nanmin", "nanprod"):
        got = getattr(darray, name)(x, axis=0)
        want = getattr(np, name)(a, axis=0)
        np.testing.assert_array_equal(np.asarray(got), want)
        assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(darray.nanmean(x, axis=1)), np.nanmean(a, axis=1))


@pytest.mark.parametrize("name", ["nansum", "nanmax", "nanmean", "nanstd", "nanargmax"])
def test_nan_reductions_never_gather(name):
    x = darray.asarray(A_NAN, mesh=MESH, spec=("x", "y"))
    text = _hlo(lambda a: getattr(darray, name)(a, axis=0), x)
    assert "all-gather" not in text and "all-to-all" not in text
    assert "all-reduce" in text


# -- numpy's cumsum/cumprod, cross, median/quantile/percentile ---------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cumsum_cumprod_numpy_style(axis):
    b = A[:, :5] * 0.5 + 1.0
    x = darray.asarray(b, mesh=MESH, spec=("x", "y"))
    for name in ("cumsum", "cumprod"):
        got = getattr(darray, name)(x, axis=axis)
        np.testing.assert_allclose(np.asarray(got), getattr(np, name)(b, axis=axis), rtol=1e-12)
        method = getattr(x, name)(axis=axis)
        np.testing.assert_allclose(np.asarray(method), np.asarray(got), rtol=1e-15)
        if axis is not None:
            assert got.layout.split == x.layout.split
    i = darray.asarray(np.arange(10, dtype=np.int8), mesh=MESH8, spec=("d8",))
    assert darray.cumsum(i).dtype == np.cumsum(np.arange(10, dtype=np.int8)).dtype


def test_cumsum_moves_block_totals_only():
    x = darray.asarray(A, mesh=MESH, spec=("x", "y"))
    text = _hlo(lambda a: darray.cumsum(a, axis=0), x)
    assert "all-gather" not in text, "a split in two parts passes one total per row"
    for line in _hlo(lambda a: darray.cumsum(a, axis=1), x).splitlines():
        if " all-gather(" in line:  # the 4 block totals of each of a device's 7 rows
            assert line.split("=")[1].strip().startswith("f64[7,4"), line


def test_cross_is_numpys():
    v = RNG.standard_normal((13, 3))
    w = RNG.standard_normal((13, 3))
    x = darray.asarray(v, mesh=MESH, spec=(("x", "y"), None))
    y = darray.asarray(w, mesh=MESH, spec=(("x", "y"), None))
    got = darray.cross(x, y)
    np.testing.assert_allclose(np.asarray(got), np.cross(v, w), rtol=1e-12)
    assert got.layout.split == x.layout.split


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("q", [0.5, [0.0, 0.1, 0.5, 0.9, 1.0]])
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_numpy(axis, q, method):
    x = darray.asarray(A, mesh=MESH, spec=("x", "y"))
    got = darray.quantile(x, q, axis=axis, method=method)
    want = np.quantile(A, q, axis=axis, method=method)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    assert got.shape == want.shape
    if axis == 0:  # selected in place: the kept axis keeps its split
        assert got.layout.split[-1] == ("y",), got.layout


def test_median_percentile_and_their_communication():
    x = darray.asarray(A, mesh=MESH, spec=("x", "y"))
    np.testing.assert_allclose(np.asarray(darray.median(x, axis=0)), np.median(A, axis=0))
    np.testing.assert_allclose(float(darray.median(x)), np.median(A))
    got = darray.percentile(x, [25, 75], axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(got), np.percentile(A, [25, 75], axis=1,
                                                              keepdims=True))
    # reduced axes unsplit: local, no communication
    lanes = darray.asarray(A, mesh=MESH, spec=(("x", "y"), None))
    text = _hlo(lambda a: darray.median(a, axis=1), lanes)
    assert not any(op in text for op in ("all-gather", "all-to-all", "all-reduce"))
    # a split reduced axis: a selection in place (counts all-reduced), no data moved
    text = _hlo(lambda a: darray.median(a, axis=0), x)
    assert "all-to-all" not in text and "all-gather" not in text and "all-reduce" in text
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        darray.quantile(x, 1.5)
    with pytest.raises(ValueError, match="method='weibul'"):
        darray.quantile(x, 0.5, method="weibul")
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        darray.percentile(x, 101)


# -- moveaxis and friends take numpy and jax arrays, as jax.numpy does ------------------------
@pytest.mark.distributed_placement
@pytest.mark.parametrize("make", [np.asarray, jnp.asarray])
def test_manipulation_accepts_numpy_and_jax_arrays(make):
    a = np.arange(24.0).reshape(2, 3, 4)
    cases = [
        (lambda t: darray.moveaxis(t, 0, -1), lambda t: np.moveaxis(t, 0, -1)),
        (lambda t: darray.permute_dims(t, (2, 0, 1)), lambda t: np.transpose(t, (2, 0, 1))),
        (lambda t: darray.reshape(t, (6, 4)), lambda t: np.reshape(t, (6, 4))),
        (lambda t: darray.flip(t, axis=1), lambda t: np.flip(t, axis=1)),
        (lambda t: darray.expand_dims(t, axis=0), lambda t: np.expand_dims(t, 0)),
        (lambda t: darray.broadcast_to(t[0], (5, 3, 4)),
         lambda t: np.broadcast_to(t[0], (5, 3, 4))),
        (lambda t: darray.concat([t, t], axis=2), lambda t: np.concatenate([t, t], axis=2)),
        (lambda t: darray.roll(t, 1, axis=2), lambda t: np.roll(t, 1, axis=2)),
    ]
    for ours, ref in cases:
        got = ours(make(a))
        assert isinstance(got, darray.DistArray)
        np.testing.assert_array_equal(np.asarray(got), ref(a))
        assert got.mesh == darray.default_mesh()
    committed = darray.asarray(a, mesh=MESH, spec=(None, "x", "y"))
    mixed = darray.concat([committed, make(a)], axis=0)  # joins the committed operand's mesh
    assert mixed.mesh == committed.mesh
    np.testing.assert_array_equal(np.asarray(mixed), np.concatenate([a, a]))
    with pytest.raises(TypeError, match="got list"):
        darray.moveaxis([[1.0]], 0, 1)


# -- float16 ----------------------------------------------------------------------------------
def test_float16_through_creation_elementwise_and_reductions():
    assert darray.float16 == np.float16
    a = np.linspace(0, 2, 13).astype(np.float16)
    x = darray.asarray(a, mesh=MESH8, spec=("d8",))
    assert x.dtype == np.float16 and x.layout.split == (("d8",),)
    for make in (lambda: darray.ones(5, dtype=darray.float16),
                 lambda: darray.zeros((3, 4), dtype="float16"),
                 lambda: darray.full(3, 2.0, dtype=darray.float16),
                 lambda: darray.arange(5, dtype=darray.float16),
                 lambda: darray.linspace(0, 1, 5, dtype=darray.float16)):
        assert make().dtype == np.float16
    for name in ("sin", "exp", "sqrt", "abs", "floor"):
        got = getattr(darray, name)(x)
        assert got.dtype == np.float16
        np.testing.assert_allclose(np.asarray(got, np.float64),
                                   getattr(np, name)(a).astype(np.float64), rtol=2e-3)
    for name in ("sum", "mean", "max", "min", "std", "var"):
        got = getattr(darray, name)(x)
        assert got.dtype == getattr(np, name)(a).dtype == np.float16
        np.testing.assert_allclose(float(got), float(getattr(np, name)(a)), rtol=5e-3)
    assert int(darray.argmax(x)) == 12
    assert (x + x).dtype == np.float16 and (x + 1.0).dtype == np.float16
    assert darray.result_type(darray.float16, darray.float32) == np.float32
    assert darray.isdtype(darray.float16, "real floating")
    assert darray.finfo(darray.float16).eps == np.finfo(np.float16).eps
    assert darray.fft.rfft(x).dtype == jnp.fft.fft(jnp.asarray(a)).dtype == np.complex64
    np.testing.assert_allclose(np.asarray(darray.fft.rfft(x)), np.fft.rfft(a.astype(np.float64)),
                               atol=2e-2)
    # the standard's dtypes only, as jax.numpy lists them
    assert "float16" not in darray.__array_namespace_info__().dtypes()


# -- x.view(dtype), logspace, bool + bool -----------------------------------------------------
def test_view_reinterprets_and_writes_through():
    c = A[:, :4] + 1j * A[::-1, :4]
    x = darray.asarray(c, mesh=MESH, spec=("x", None))
    v = x.view(float)  # scipy's RBFInterpolator
    np.testing.assert_array_equal(np.asarray(v), c.view(float))
    assert v.layout.split == (SX, ())
    np.testing.assert_array_equal(np.asarray(v.view(complex)), c)
    v[0, 0] = 100.0  # a view, as numpy's: the write reaches x
    ref = c.copy()
    ref.view(float)[0, 0] = 100.0
    np.testing.assert_array_equal(np.asarray(x), ref)
    y = darray.asarray(A[:, :4], mesh=MESH, spec=("x", "y"))
    for dt in (np.int64, np.float32, np.uint8, np.complex128):
        got = y.view(dt)
        np.testing.assert_array_equal(np.asarray(got), A[:, :4].view(dt))
        assert got.layout.split == (SX, SY)
    b = np.array([True, False, True] * 3)
    bx = darray.asarray(b, mesh=MESH8, spec=("d8",))
    np.testing.assert_array_equal(np.asarray(bx.view(np.uint8)), b.view(np.uint8))
    with pytest.raises(ValueError, match="0-d array"):
        darray.sum(x).view(np.float32)
    with pytest.raises(ValueError, match="whole number"):
        darray.asarray(np.ones((3, 3)), device=MESH).view(np.complex128)


@pytest.mark.parametrize("args, kw", [((0, 2, 5), {}),
                                      ((0, 2, 7), {"base": 2.0, "endpoint": False}),
                                      ((1.0, 3.0, 13), {"dtype": darray.int64}),
                                      ((0, 1, 4), {"dtype": darray.float32}),
                                      ((0, 1j, 3), {}), ((-1, 1, 16), {"base": np.float64(3)})])
def test_logspace_matches_numpy(args, kw):
    got = darray.logspace(*args, **kw, device=MESH8)
    want = np.logspace(*args, **kw)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-15)  # XLA's pow vs libm's
    assert got.mesh == MESH8
    placed = darray.logspace(0, 3, 16, mesh=MESH, spec=(("x", "y"),))
    assert placed.layout.split == (("x", "y"),)
    with pytest.raises(TypeError, match="start=.*must be a scalar"):
        darray.logspace(np.zeros(2), 1, 3)


def test_boolean_add_and_multiply_are_logical():
    a = np.array([True, False, True, False, True] * 3)
    b = np.array([True, True, False, False, False] * 3)
    x = darray.asarray(a, mesh=MESH8, spec=("d8",))
    y = darray.asarray(b, mesh=MESH8, spec=("d8",))
    for got, want in ((x + y, a + b), (x * y, a * b), (darray.add(x, True), a + True),
                      (x + 1, a + 1)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
        assert got.layout.split == (("d8",),)
    with pytest.raises(TypeError, match="subtract"):
        darray.subtract(x, y)


# -- diag (scipy's RBFInterpolator) -----------------------------------------------------------
@pytest.mark.parametrize("k", [0, 2, -3])
def test_diag_builds_and_reads_diagonals_as_numpy(k):
    v = np.arange(13.0)
    x = darray.asarray(v, mesh=MESH, spec=SX)
    got = darray.diag(x, k)
    np.testing.assert_array_equal(np.asarray(got), np.diag(v, k))
    assert got.layout.split == (SX, ())
    a = np.arange(35.0).reshape(5, 7)
    y = darray.asarray(a, mesh=MESH, spec=("x", "y"))
    np.testing.assert_array_equal(np.asarray(darray.diag(y, k)), np.diag(a, k))
    with pytest.raises(ValueError, match="1-D .* or 2-D"):
        darray.diag(darray.zeros((2, 2, 2), device=MESH))
