"""Covers: darray/_src/linalg/tall_skinny.py

scikit-learn's estimators built on a tall SVD, through array_api_dispatch on a row-split tall
matrix (issue 50's "real users"): PCA(svd_solver="full"), Ridge(solver="svd") and
LinearDiscriminantAnalysis. The SVD each asks for (`xp.linalg.svd(X, full_matrices=False)`)
takes darray's tall-skinny path, U stays split by rows, and every fit equals scikit-learn's on
numpy. Ridge(solver="cholesky") is refused by scikit-learn itself under array-API dispatch
(a strict xfail: the day scikit-learn accepts it, the xpass fails and this test must assert
the fit instead). Timings: benchmarks/bench_sklearn.py.

Run: python3 -m pytest -o addopts="" -m clients -q tests/clients/test_sklearn_tall_skinny.py
"""
import time

import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.linalg import tall_skinny

pytestmark = [pytest.mark.clients, pytest.mark.x64]


def test_pca_full_on_a_row_split_matrix_uses_tsqr(monkeypatch):
    sklearn = pytest.importorskip("sklearn")  # the clients extra installs it
    from sklearn.decomposition import PCA

    rows, cols = 8 * 1024 + 3, 24  # uneven: 8 blocks of 1025 rows, the last 1020
    rng = np.random.default_rng(0)
    host = rng.standard_normal((rows, cols)) @ rng.standard_normal((cols, cols))
    x = darray.asarray(host, mesh=mesh_of((8,)), spec=("x",))
    taken = []
    original = tall_skinny.svd
    monkeypatch.setattr(tall_skinny, "svd", lambda *a: taken.append(a) or original(*a))

    t0 = time.perf_counter()
    ref = PCA(n_components=5, svd_solver="full").fit(host)
    t_numpy = time.perf_counter() - t0
    t0 = time.perf_counter()
    with sklearn.config_context(array_api_dispatch=True):
        fit = PCA(n_components=5, svd_solver="full").fit(x)
    t_darray = time.perf_counter() - t0
    print(f"\nPCA full {rows}x{cols}: numpy {t_numpy:.3f} s, darray (first call, compiles) "
          f"{t_darray:.3f} s")

    assert taken, "PCA's svd did not reach the tall-skinny path"
    np.testing.assert_allclose(np.asarray(fit.singular_values_), ref.singular_values_,
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fit.explained_variance_ratio_),
                               ref.explained_variance_ratio_, rtol=1e-12)
    # components up to sign, which scikit-learn fixes (svd_flip) from U or Vh alike
    np.testing.assert_allclose(np.abs(np.asarray(fit.components_)), np.abs(ref.components_),
                               atol=1e-10)
    np.testing.assert_allclose(np.asarray(fit.transform(x)), ref.transform(host), atol=1e-9)


ROWS, COLS = 8 * 1024 + 3, 24  # uneven: 8 blocks of 1025 rows, the last 1020


def _tall_case(seed=0):
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((ROWS, COLS)) @ rng.standard_normal((COLS, COLS))
    labels = (host[:, 0] > 0).astype(np.int64) + (host[:, 1] > 1).astype(np.int64)
    host[:, 2] += labels  # class means differ, as LDA assumes
    target = host @ rng.standard_normal(COLS) + 0.1 * rng.standard_normal(ROWS)
    mesh = mesh_of((8,))
    return host, target, labels, [darray.asarray(v, mesh=mesh, spec=("x",))
                                  for v in (host, target, labels)]


def _spy_svd(monkeypatch):
    """Record the tall-skinny SVDs taken and the layout of each U they return."""
    taken = []
    original = tall_skinny.svd

    def spy(x, full_matrices):
        out = original(x, full_matrices)
        taken.append((x.layout, None if out is None else out[0].layout))
        return out
    monkeypatch.setattr(tall_skinny, "svd", spy)
    return taken


def test_ridge_svd_on_a_row_split_matrix_uses_the_tall_svd(monkeypatch):
    sklearn = pytest.importorskip("sklearn")
    from sklearn.linear_model import Ridge

    host, target, _, (x, y, _) = _tall_case()
    taken = _spy_svd(monkeypatch)
    ref = Ridge(alpha=1.0, solver="svd").fit(host, target)
    with sklearn.config_context(array_api_dispatch=True):
        fit = Ridge(alpha=1.0, solver="svd").fit(x, y)
        predicted = fit.predict(x)
    assert taken and all(u == lay for lay, u in taken), taken  # U split by rows like X
    np.testing.assert_allclose(np.asarray(fit.coef_), ref.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(float(fit.intercept_), ref.intercept_, rtol=1e-10, atol=1e-12)
    assert isinstance(predicted, darray.DistArray) and predicted.layout.split == (("x",),)
    np.testing.assert_allclose(np.asarray(predicted), ref.predict(host), rtol=1e-10, atol=1e-9)


@pytest.mark.xfail(strict=True, raises=ValueError, reason=(
    "scikit-learn 1.9's _ridge_regression refuses every solver but 'svd' under array-API "
    "dispatch to a non-numpy namespace (\"only supports solver 'svd'\")"))
def test_ridge_cholesky_on_a_row_split_matrix():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.linear_model import Ridge

    host, target, _, (x, y, _) = _tall_case()
    ref = Ridge(alpha=1.0, solver="cholesky").fit(host, target)
    with sklearn.config_context(array_api_dispatch=True):
        fit = Ridge(alpha=1.0, solver="cholesky").fit(x, y)
    np.testing.assert_allclose(np.asarray(fit.coef_), ref.coef_, rtol=1e-10, atol=1e-12)


def test_ridge_cholesky_without_dispatch_fits_a_distarray_on_the_host():
    """Without array-API dispatch scikit-learn reads X and y with np.asarray: the DistArrays are
    gathered to one host array (darray's explicit __array__) and the fit is numpy's. This is
    the only way Ridge(solver="cholesky") takes a DistArray today (see the strict xfail above);
    the coefficients come back as numpy arrays, equal to the numpy fit."""
    pytest.importorskip("sklearn")
    from sklearn.linear_model import Ridge

    host, target, _, (x, y, _) = _tall_case(2)
    ref = Ridge(alpha=1.0, solver="cholesky").fit(host, target)
    fit = Ridge(alpha=1.0, solver="cholesky").fit(x, y)
    assert isinstance(fit.coef_, np.ndarray)
    np.testing.assert_allclose(fit.coef_, ref.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fit.intercept_, ref.intercept_, rtol=1e-12, atol=1e-12)


def test_lda_on_a_row_split_matrix_uses_the_tall_svd(monkeypatch):
    sklearn = pytest.importorskip("sklearn")
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as LDA

    host, _, labels, (x, _, y) = _tall_case(1)
    taken = _spy_svd(monkeypatch)
    ref = LDA(solver="svd").fit(host, labels)
    with sklearn.config_context(array_api_dispatch=True):
        fit = LDA(solver="svd").fit(x, y)
        predicted = fit.predict(x)
    assert taken and taken[0][1] == taken[0][0], taken  # the within-class SVD: U split by rows
    for name in ("means_", "coef_", "intercept_", "explained_variance_ratio_"):
        np.testing.assert_allclose(np.asarray(getattr(fit, name)), getattr(ref, name),
                                   rtol=1e-9, atol=1e-10, err_msg=name)
    np.testing.assert_array_equal(np.asarray(predicted), ref.predict(host))
