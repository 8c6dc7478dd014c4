"""Covers: darray/_src/extras/binning.py

bincount and histogram on distributed arrays, against numpy in float64: replicated results,
one all-reduce of the bins (HLO), no gather of the input."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import collectives, mesh_of

import darray

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

MESHES = {(8,): ("d",), (2, 4): ("x", "y")}
# (shape, mesh, spec): even, uneven, pencil even, pencil uneven, partly replicated
LAYOUTS = [((16, 5), (8,), ("d",)), ((13, 5), (8,), ("d",)), ((8, 12), (2, 4), ("x", "y")),
           ((7, 9), (2, 4), ("x", "y")), ((11, 6), (2, 4), ("y", None))]


def put(host, mesh_shape, spec):
    return darray.asarray(host, mesh=mesh_of(mesh_shape, MESHES[mesh_shape]), spec=spec)


def assert_replicated(r, mesh_shape, length):
    assert r.shape == (length,)
    assert r.layout.split == ((),)
    assert r.data.sharding.is_fully_replicated
    assert r.mesh.shape == mesh_of(mesh_shape, MESHES[mesh_shape]).shape


# -- bincount ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,mesh_shape,spec", LAYOUTS)
def test_bincount_matches_numpy(shape, mesh_shape, spec):
    host = np.random.default_rng(0).integers(0, 23, size=shape)
    x = put(host, mesh_shape, spec)
    r = darray.bincount(x)
    assert_replicated(r, mesh_shape, host.max() + 1)
    assert r.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(r), np.bincount(host.ravel()))
    w_host = np.random.default_rng(1).standard_normal(shape)
    rw = darray.bincount(x, weights=put(w_host, mesh_shape, spec), minlength=40)
    assert_replicated(rw, mesh_shape, 40)
    assert rw.dtype == np.float64
    np.testing.assert_allclose(np.asarray(rw), np.bincount(host.ravel(), w_host.ravel(), 40),
                               rtol=1e-12, atol=1e-12)


def test_bincount_1d_uneven_and_weights_in_another_layout():
    host = np.random.default_rng(2).integers(0, 9, size=13)
    x = put(host, (8,), ("d",))
    w_host = np.random.default_rng(3).standard_normal(13)
    w = darray.asarray(w_host, mesh=mesh_of((8,), ("d",)), spec=(None,))  # replicated weights
    r = darray.bincount(x, w)
    np.testing.assert_allclose(np.asarray(r), np.bincount(host, w_host), rtol=1e-12)
    assert_replicated(r, (8,), host.max() + 1)


def test_bincount_haloed_input_counts_owned_cells_only():
    host = np.random.default_rng(4).integers(0, 5, size=(13, 4))
    x = put(host, (8,), ("d",)).halo(2)
    np.testing.assert_array_equal(np.asarray(darray.bincount(x)), np.bincount(host.ravel()))


def test_bincount_jit_needs_length_and_compiles_to_one_all_reduce():
    host = np.random.default_rng(5).integers(0, 30, size=(16, 8))
    x = put(host, (2, 4), ("x", "y"))
    w = put(np.ones((16, 8)), (2, 4), ("x", "y"))
    f = jax.jit(lambda a, b: darray.bincount(a, weights=b, length=25))
    out = f(x, w)
    # values >= length are dropped, as in jnp.bincount
    np.testing.assert_array_equal(np.asarray(out), np.bincount(host.ravel(), minlength=30)[:25])
    assert out.data.sharding.is_fully_replicated
    text = jax.jit(lambda a, b: darray.bincount(darray.DistArray._new(a, x.layout),
                                                weights=darray.DistArray._new(b, w.layout),
                                                length=25).data).lower(
        x.data, w.data).compile().as_text()
    assert collectives(text) == ["all-reduce"], collectives(text)
    with pytest.raises(ValueError, match=r"bincount under jax.jit needs a static length="):
        jax.jit(lambda a: darray.bincount(a))(x)


def test_bincount_errors():
    x = put(np.array([0, 3, -2, 1]), (8,), (None,))
    with pytest.raises(ValueError, match=r"negative value -2"):
        darray.bincount(x)
    with pytest.raises(TypeError, match=r"x has dtype float64"):
        darray.bincount(put(np.ones(4), (8,), (None,)))
    y = put(np.array([0, 3, 2, 1]), (8,), (None,))
    with pytest.raises(ValueError, match=r"weights has shape \(3,\)"):
        darray.bincount(y, weights=put(np.ones(3), (8,), (None,)))
    # numpy weights follow the argument policy: placed as darray.asarray places them
    np.testing.assert_array_equal(np.asarray(darray.bincount(y, weights=np.ones(4))),
                                  np.bincount([0, 3, 2, 1], weights=np.ones(4)))
    with pytest.raises(TypeError, match=r"bincount: weights must be an array"):
        darray.bincount(y, weights=[1.0, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"minlength=-1 must be a non-negative int"):
        darray.bincount(y, minlength=-1)


def test_bincount_empty_and_bool():
    e = put(np.zeros(0, np.int64), (8,), (None,))
    np.testing.assert_array_equal(np.asarray(darray.bincount(e, minlength=3)), np.zeros(3))
    b = np.array([True, False, True, True, False, True, True, False, False])
    np.testing.assert_array_equal(np.asarray(darray.bincount(put(b, (8,), ("d",)))),
                                  np.bincount(b))


# -- histogram --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,mesh_shape,spec", LAYOUTS)
def test_histogram_int_bins(shape, mesh_shape, spec):
    host = np.random.default_rng(6).standard_normal(shape)
    a = put(host, mesh_shape, spec)
    for kwargs in ({}, {"bins": 7}, {"bins": 5, "range": (-1.0, 0.5)}):
        counts, edges = darray.histogram(a, **kwargs)
        ref_c, ref_e = np.histogram(host, **kwargs)
        np.testing.assert_array_equal(np.asarray(counts), ref_c)
        np.testing.assert_allclose(np.asarray(edges), ref_e, rtol=1e-15, atol=1e-15)
        assert_replicated(counts, mesh_shape, len(ref_c))
        assert_replicated(edges, mesh_shape, len(ref_e))
        assert counts.dtype == np.int64 and edges.dtype == np.float64


def test_histogram_values_on_edges_match_numpy():
    # integers falling exactly on equal-width edges (and the right end), numpy's rule
    host = np.arange(-10, 31, dtype=np.float64).reshape(41, 1) * 0.1
    a = put(host, (8,), ("d",))
    for bins in (3, 7, 10, 41):
        c, e = darray.histogram(a, bins=bins)
        rc, re_ = np.histogram(host, bins=bins)
        np.testing.assert_array_equal(np.asarray(c), rc)
        np.testing.assert_array_equal(np.asarray(e), re_)
    ints = np.random.default_rng(7).integers(0, 10, size=(13, 3))
    c, e = darray.histogram(put(ints, (8,), ("d",)), bins=9)
    np.testing.assert_array_equal(np.asarray(c), np.histogram(ints, bins=9)[0])


@pytest.mark.parametrize("shape,mesh_shape,spec", LAYOUTS[1::2])
def test_histogram_edges_weights_density(shape, mesh_shape, spec):
    rng = np.random.default_rng(8)
    host = np.round(rng.standard_normal(shape), 1)  # many values on the edges below
    w_host = rng.standard_normal(shape)
    a, w = put(host, mesh_shape, spec), put(w_host, mesh_shape, spec)
    edges = [-2.0, -0.5, -0.5, 0.0, 0.1, 0.3, 1.5]  # uneven, with a repeated edge
    c, e = darray.histogram(a, bins=edges, weights=w)
    rc, re_ = np.histogram(host, bins=edges, weights=w_host)
    np.testing.assert_allclose(np.asarray(c), rc, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(e), re_)
    assert c.dtype == np.float64
    c, _ = darray.histogram(a, bins=edges)
    np.testing.assert_array_equal(np.asarray(c), np.histogram(host, bins=edges)[0])
    d, _ = darray.histogram(a, bins=6, range=(-1, 1), density=True)
    np.testing.assert_allclose(np.asarray(d), np.histogram(host, 6, (-1, 1), density=True)[0],
                               rtol=1e-12)


def test_histogram_nan_outside_range_and_constant_input():
    host = np.array([0.5, np.nan, 2.0, -3.0, 0.25, 0.75, 1.0, 0.0, 0.5, 0.9, 1.1])
    a = put(host, (8,), ("d",))
    c, _ = darray.histogram(a, bins=4, range=(0, 1))
    np.testing.assert_array_equal(np.asarray(c), np.histogram(host, 4, (0, 1))[0])
    const = np.full((13, 2), 3.0)
    c, e = darray.histogram(put(const, (8,), ("d",)), bins=3)
    rc, re_ = np.histogram(const, bins=3)
    np.testing.assert_array_equal(np.asarray(c), rc)
    np.testing.assert_allclose(np.asarray(e), re_)


def test_histogram_hlo_one_all_reduce_no_gather():
    host = np.random.default_rng(9).standard_normal((13, 10))
    a = put(host, (2, 4), ("x", "y"))
    w = put(np.abs(host), (2, 4), ("x", "y"))
    f = jax.jit(lambda d, v: darray.histogram(darray.DistArray._new(d, a.layout), bins=16,
                                              range=(-2, 2),
                                              weights=darray.DistArray._new(v, w.layout))[0].data)
    text = f.lower(a.data, w.data).compile().as_text()
    assert collectives(text) == ["all-reduce"], collectives(text)
    ref = np.histogram(host, 16, (-2, 2), weights=np.abs(host))[0]
    np.testing.assert_allclose(np.asarray(f(a.data, w.data)), ref, rtol=1e-12)


def test_histogram_under_jit_range_from_data():
    host = np.random.default_rng(10).standard_normal((13, 4))
    a = put(host, (8,), ("d",))
    c, e = jax.jit(lambda x: darray.histogram(x, bins=9))(a)
    rc, re_ = np.histogram(host, bins=9)
    np.testing.assert_array_equal(np.asarray(c), rc)
    np.testing.assert_allclose(np.asarray(e), re_, rtol=1e-14)
    assert c.data.sharding.is_fully_replicated


def test_histogram_errors():
    a = put(np.arange(8.0), (8,), ("d",))
    with pytest.raises(ValueError, match=r"bins must increase monotonically: bins\[1\]=2.0 > "
                                         r"bins\[2\]=1.0"):
        darray.histogram(a, bins=[0.0, 2.0, 1.0, 3.0])
    with pytest.raises(ValueError, match=r"bins=0 must be a positive int"):
        darray.histogram(a, bins=0)
    with pytest.raises(TypeError, match=r"bins='auto'"):
        darray.histogram(a, bins="auto")
    with pytest.raises(ValueError, match=r"max must be larger than min"):
        darray.histogram(a, range=(2, 1))
    with pytest.raises(ValueError, match=r"range=.* must be finite"):
        darray.histogram(a, range=(0, np.inf))
    with pytest.raises(ValueError, match=r"autodetected range of \[nan, nan\] is not finite"):
        darray.histogram(put(np.array([0.0, np.nan]), (8,), (None,)))
    with pytest.raises(TypeError, match=r"a has dtype complex128"):
        darray.histogram(put(np.ones(3, complex), (8,), (None,)))


# -- the radial power spectrum of docs/numerical.md ----------------------------------------------
def power_spectrum(u):
    """Shell-averaged |u_k|^2 of a real field on a periodic n^d grid (docs/numerical.md)."""
    uk = darray.fft.fftn(u)
    n = u.shape[0]

    def kmag(*i):
        return jnp.sqrt(sum(jnp.where(a > n // 2, a - n, a) ** 2 for a in i))
    shells = darray.astype(darray.round(darray.fromfunction(
        kmag, uk.shape, mesh=uk.mesh, spec=uk.layout.spec)), darray.int64)
    power = darray.abs(uk) ** 2
    return darray.bincount(shells, weights=power) / darray.bincount(shells)


def test_radial_power_spectrum_example():
    n = 12
    host = np.random.default_rng(11).standard_normal((n, n, n))
    u = put(host, (2, 4), ("x", "y"))
    spec = power_spectrum(u)
    k = np.fft.fftfreq(n) * n
    kk = np.sqrt(k[:, None, None] ** 2 + k[None, :, None] ** 2 + k[None, None, :] ** 2)
    shells = np.round(kk).astype(int).ravel()
    p = np.abs(np.fft.fftn(host)).ravel() ** 2
    ref = np.bincount(shells, p) / np.bincount(shells)
    np.testing.assert_allclose(np.asarray(spec), ref, rtol=1e-12)
    assert spec.data.sharding.is_fully_replicated


# -- NaN in the data (issue 38: the range came from the NaN-free blocks, mesh-dependent) ------
@pytest.mark.parametrize("shape,mesh_shape,spec", LAYOUTS)
def test_histogram_nan_data_matches_numpy(shape, mesh_shape, spec, capfd):
    host = np.random.default_rng(7).standard_normal(shape)
    host.flat[3] = np.nan
    a = put(host, mesh_shape, spec)
    with pytest.raises(ValueError, match=r"autodetected range of \[nan, nan\]"):
        np.histogram(host, bins=5)
    with pytest.raises(ValueError, match=r"autodetected range of \[nan, nan\].*range="):
        darray.histogram(a, bins=5)
    # under jit: NaN edges, never a range from part of the data; the counts are visibly
    # invalid (they were all 0, an empty histogram), and the program says why (issue 53)
    capfd.readouterr()
    counts, edges = jax.jit(lambda x: darray.histogram(x, bins=5))(a)
    assert_replicated(edges, mesh_shape, 6)
    assert_replicated(counts, mesh_shape, 5)
    assert np.isnan(np.asarray(edges)).all()
    np.testing.assert_array_equal(np.asarray(counts), -1)
    err = capfd.readouterr().err
    assert "HistogramWarning" in err and "range=(min, max)" in err, err
    dens, _ = jax.jit(lambda x: darray.histogram(x, bins=5, density=True))(a)
    assert np.isnan(np.asarray(dens)).all()
    assert "HistogramWarning" in capfd.readouterr().err
    # finite data under jit: numpy's counts and no message
    finite = put(np.nan_to_num(host), mesh_shape, spec)
    counts, edges = jax.jit(lambda x: darray.histogram(x, bins=5))(finite)
    ref_c, ref_e = np.histogram(np.nan_to_num(host), bins=5)
    np.testing.assert_array_equal(np.asarray(counts), ref_c)
    np.testing.assert_allclose(np.asarray(edges), ref_e, rtol=1e-6)
    assert "HistogramWarning" not in capfd.readouterr().err
    # explicit range and an edges array: NaN is ignored, as numpy does
    for kwargs in ({"bins": 5, "range": (-1.0, 1.5)}, {"bins": [-3.0, -0.5, 0.0, 0.1, 3.0]}):
        c, e = darray.histogram(a, **kwargs)
        ref_c, ref_e = np.histogram(host, **kwargs)
        assert_replicated(c, mesh_shape, ref_c.size)
        np.testing.assert_array_equal(np.asarray(c), ref_c)
        np.testing.assert_allclose(np.asarray(e), ref_e, rtol=1e-15)
