"""Covers: darray/_src/distarray/array.py, darray/_src/engine/views.py

Other people's mutation idioms on DistArrays (issue #19, items 1 and 2), through the real
libraries: scikit-learn's threaded `pairwise_distances(n_jobs=2)` writes blocks of one output
from worker threads; scipy.signal's `oaconvolve` adds overlaps through views
(`ret_overpart += overpart`). Both against the numpy result (float64), outputs distributed."""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")

from clients_harness import require  # noqa: E402

import darray  # noqa: E402

pytestmark = pytest.mark.clients


def _distributed(host):
    return darray.asarray(host, spec=("d",) + (None,) * (host.ndim - 1))


@pytest.mark.parametrize("n_jobs", [1, 2, 4])
def test_pairwise_distances_threads(n_jobs):
    sklearn = require("sklearn")
    pairwise_distances = require("sklearn.metrics").pairwise_distances
    rng = np.random.default_rng(0)
    host = rng.standard_normal((37, 5))
    expected = pairwise_distances(host, n_jobs=1)
    with sklearn.config_context(array_api_dispatch=True):
        got = pairwise_distances(_distributed(host), n_jobs=n_jobs)
    assert isinstance(got, darray.DistArray)
    assert got.sharding.mesh.size == 8
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape_a, shape_b", [(17, 5), (64, 9), (100, 31), (13, 13)])
def test_oaconvolve_writes_through_views(shape_a, shape_b):
    signal = require("scipy.signal")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    expected = signal.fftconvolve(a, b)
    got = signal.oaconvolve(_distributed(a), _distributed(b))
    assert isinstance(got, darray.DistArray)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-9, atol=1e-9)


def test_oaconvolve_2d_axes():
    signal = require("scipy.signal")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((24, 19)), rng.standard_normal((5, 7))
    expected = signal.fftconvolve(a, b, mode="same")
    got = signal.oaconvolve(_distributed(a), _distributed(b), mode="same")
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-9, atol=1e-9)
