"""Covers: darray/_src/linalg/tall_skinny.py

scikit-learn's PCA(svd_solver="full") through array_api_dispatch on a row-split tall matrix:
the SVD it asks for (`xp.linalg.svd(X, full_matrices=False)`) takes darray's TSQR path
(issue 50), and the fit equals scikit-learn's on numpy.

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
