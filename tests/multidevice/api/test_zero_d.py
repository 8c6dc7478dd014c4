"""Covers: darray/_src/api/statistical.py, darray/_src/distarray/array.py

0-d results are 0-d DistArrays: array-API code mixes them with arrays, Python and numpy
convert them, jit/vmap return them, and darray.grad / value_and_grad take them as losses."""
import array_api_compat
import helpers
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of
from scalar_check import assert_replicated_scalar

import darray
from darray._src.distarray.array import DistArray

RNG = np.random.default_rng(3)
MESH = mesh_of((2, 4), ("x", "y"))
A = helpers.host(RNG.standard_normal((13, 7)))
TOL = helpers.tol(A.dtype)  # float64 data is float32 with x64 off
X = darray.asarray(A, mesh=MESH, spec=("x", "y"))


def test_namespace_of_arrays_and_reduction_results():
    s = darray.sum(X)
    assert_replicated_scalar(s, MESH, A.sum(), rtol=TOL)
    assert array_api_compat.array_namespace(X, s) is darray
    assert array_api_compat.array_namespace(s) is darray
    assert array_api_compat.array_namespace(X[0, 0], darray.max(X, axis=0)) is darray


@pytest.mark.x64
def test_functions_take_reduction_results_where_arrays_go():
    s, m = darray.sum(X), darray.max(X)
    both = darray.stack([s, m])
    np.testing.assert_allclose(np.asarray(both), [A.sum(), A.max()], rtol=TOL)
    assert both.mesh == X.mesh and both.layout.split == ((),)
    cat = darray.concat([darray.reshape(s, (1,)), X[0]])
    np.testing.assert_allclose(np.asarray(cat), np.concatenate([[A.sum()], A[0]]), rtol=TOL)
    assert cat.layout.split == ((),) or cat.layout.split == (("y",),), cat.layout
    assert_replicated_scalar(darray.matmul(X[0], X[1]) * s, MESH, (A[0] @ A[1]) * A.sum(),
                             rtol=TOL)
    i = darray.argmax(X[:, 2])
    t = darray.take(X[:, 2], darray.reshape(i, (1,)))
    np.testing.assert_allclose(np.asarray(t), [A[:, 2].max()])
    ss = darray.sort(X[:, 0])
    k = darray.searchsorted(ss, darray.mean(X[:, 0]))
    assert_replicated_scalar(k, MESH, np.searchsorted(np.sort(A[:, 0]), A[:, 0].mean()))
    y = darray.where(X > darray.mean(X), X, darray.min(X))
    np.testing.assert_allclose(np.asarray(y), np.where(A > A.mean(), A, A.min()), rtol=TOL)
    assert y.layout == X.layout
    # zscore over everything, as scipy.stats writes it
    z = (X - darray.mean(X)) / darray.std(X)
    np.testing.assert_allclose(np.asarray(z), (A - A.mean()) / A.std(), rtol=100 * TOL)
    assert z.layout == X.layout


@pytest.mark.x64
def test_python_and_numpy_conversions():
    s = darray.sum(X)
    i = darray.argmax(X)
    b = darray.any(X > 2)
    assert float(s) == pytest.approx(A.sum(), rel=TOL)
    assert int(i) == A.argmax() and [0] * 100 != [] and list(range(100))[i] == A.argmax()
    assert bool(b) == bool((A > 2).any()) and (not b) == (not (A > 2).any())
    assert complex(s) == pytest.approx(complex(A.sum()))
    assert s.item() == pytest.approx(A.sum(), rel=TOL) and isinstance(s.item(), float)
    assert i.item() == A.argmax() and isinstance(i.item(), int)
    assert f"{s:.4f}" == f"{A.sum():.4f}" and f"{i}" == str(A.argmax())
    assert np.asarray(s).shape == () and np.asarray(s) == pytest.approx(A.sum(), rel=TOL)
    assert np.float64(2.0) * s == pytest.approx(2 * A.sum(), rel=TOL)
    j = s.to_jax()
    assert isinstance(j, jax.Array) and not isinstance(j, DistArray) and j.shape == ()
    with pytest.raises(TypeError, match="iteration over a 0-d DistArray"):
        iter(s)
    with pytest.raises(TypeError, match=r"len\(\) of a 0-d DistArray"):
        len(s)
    with pytest.raises(TypeError, match="index.. is not defined for dtype float64"):
        [1, 2][s]


def test_comparisons_and_arithmetic_with_python_scalars():
    s = darray.sum(X)
    t = A.sum()
    for got, want in ((s + 1, t + 1), (1 - s, 1 - t), (s * 2.5, t * 2.5), (3 / s, 3 / t),
                      (s ** 2, t ** 2), (-s, -t), (abs(s), abs(t))):
        assert_replicated_scalar(got, MESH, want, rtol=TOL)
    for got, want in ((s > 0, t > 0), (s == s, True), (s != 1.0, t != 1.0), (s <= float(s), True)):
        assert_replicated_scalar(got, MESH, want)
        assert bool(got) == bool(want)
    u = s.copy()
    u += 1.0  # in-place on a 0-d result rebinds it; s is unchanged
    assert float(u) == pytest.approx(t + 1, rel=TOL) and float(s) == pytest.approx(t, rel=TOL)


def test_jit_and_vmap_return_zero_d_distarrays():
    r = jax.jit(lambda x: darray.sum(x * x))(X)
    assert_replicated_scalar(r, MESH, (A * A).sum(), rtol=TOL)
    batch = darray.asarray(RNG.standard_normal((4, 13, 7)), mesh=MESH, spec=(None, "x", "y"))
    v = jax.vmap(lambda a: darray.sum(a))(batch)
    np.testing.assert_allclose(np.asarray(v), np.asarray(batch).sum(axis=(1, 2)), rtol=TOL)
    assert isinstance(v, DistArray) and v.shape == (4,)
    w = darray.vmap(lambda a: darray.max(a))(batch)
    np.testing.assert_allclose(np.asarray(w), np.asarray(batch).max(axis=(1, 2)))
    assert isinstance(w, DistArray) and w.shape == (4,)


# -- grad ----------------------------------------------------------------------------------
def test_plain_jax_grad_refuses_a_zero_d_distarray_loss():
    """The measurement behind darray.grad: JAX takes only jax scalars as a loss."""
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        jax.grad(lambda x: darray.sum(x * x))(X)
    g = jax.grad(lambda x: darray.sum(x * x).to_jax())(X)  # the documented manual unwrap
    np.testing.assert_allclose(np.asarray(g), 2 * A, rtol=TOL)


# under jit too (test_ad_matrix also runs darray.value_and_grad under jit in the default tier)
@pytest.mark.parametrize("jit", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_grad_and_value_and_grad(jit):
    wrap = jax.jit if jit else (lambda f: f)
    w = darray.asarray(RNG.standard_normal((13, 7)), mesh=MESH, spec=("x", "y"))
    wa = np.asarray(w)

    def loss(x, w):
        return darray.sum(darray.sin(x) * w)
    g = wrap(darray.grad(loss))(X, w)
    np.testing.assert_allclose(np.asarray(g), np.cos(A) * wa, rtol=TOL)
    assert g.layout == X.layout and g.data.sharding.spec == X.layout.spec
    gx, gw = wrap(darray.grad(loss, argnums=(0, 1)))(X, w)
    np.testing.assert_allclose(np.asarray(gw), np.sin(A), rtol=TOL)
    assert gx.layout == X.layout and gw.layout == w.layout
    value, g = wrap(darray.value_and_grad(loss))(X, w)
    assert_replicated_scalar(value, MESH, (np.sin(A) * wa).sum(), rtol=TOL)

    def with_aux(x):
        y = darray.sin(x)
        return darray.sum(y * y), (y, darray.max(y))
    g, (aux_y, aux_max) = wrap(darray.grad(with_aux, has_aux=True))(X)
    np.testing.assert_allclose(np.asarray(g), 2 * np.sin(A) * np.cos(A), rtol=TOL)
    assert aux_y.layout == X.layout
    assert_replicated_scalar(aux_max, MESH, np.sin(A).max(), rtol=TOL)
    (value, (aux_y, _)), g = wrap(darray.value_and_grad(with_aux, has_aux=True))(X)
    assert_replicated_scalar(value, MESH, (np.sin(A) ** 2).sum(), rtol=TOL)


def test_grad_options_and_errors():
    z = darray.asarray(A + 1j * A[::-1], mesh=MESH, spec=("x", "y"))
    g = darray.grad(lambda c: darray.sum(c * c), holomorphic=True)(z)
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(z), rtol=TOL)
    assert g.layout == z.layout
    n = darray.asarray(np.arange(8), mesh=MESH)
    gi = darray.grad(lambda x, k: darray.sum(x) * 2.0, argnums=(0, 1), allow_int=True)(X, n)
    assert gi[1].dtype == jax.dtypes.float0
    g = darray.grad(lambda x: jnp.sum(x.to_jax() ** 2))(X)  # a plain jax scalar loss works too
    np.testing.assert_allclose(np.asarray(g), 2 * A, rtol=TOL)
    with pytest.raises(TypeError, match=r"darray.grad: the function must return a 0-d "
                                        r"\(scalar\) loss, got a DistArray of shape \(13, 7\)"):
        darray.grad(lambda x: x * 2)(X)
    with pytest.raises(TypeError, match="has_aux=True needs the function to return a pair"):
        darray.value_and_grad(lambda x: darray.sum(x), has_aux=True)(X)


def test_methods_and_at_on_zero_d_results():
    s = darray.sum(X)
    t = A.sum()
    assert_replicated_scalar(s.at[()].set(2.0), MESH, 2.0)
    assert_replicated_scalar(s.at[...].add(1.0), MESH, t + 1.0, rtol=TOL)
    assert_replicated_scalar(s.reshape(1).sum(), MESH, t, rtol=TOL)
    assert_replicated_scalar(s.astype(darray.float32), MESH, np.float32(t), rtol=1e-6)
    assert s.tolist() == pytest.approx(t, rel=TOL) and s.item() == pytest.approx(t, rel=TOL)


@pytest.mark.x64
def test_creation_lengths_from_zero_d_results_keep_numpy_dtypes():
    # arange(argmax(v)) is int64 in numpy; the 0-d result's own type must decide, not a float
    i = darray.argmax(X[:, 2])
    r = darray.arange(i, mesh=MESH)
    expected = np.arange(np.argmax(A[:, 2]))
    assert r.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(r), expected)
    assert r.mesh == MESH
    f = darray.arange(darray.sum(X[:2, 0] * 0.0 + 1.0), mesh=MESH)
    assert f.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(f), np.arange(2.0))
