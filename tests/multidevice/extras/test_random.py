"""Covers: darray/_src/extras/random.py

darray.random: the same field on every mesh, made in place, with the right statistics."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.extras import random as rnd

SHAPE = (13, 10, 7)  # uneven on every mesh below


def _mesh(sizes, devices=None):
    return mesh_of(sizes, ("x", "y", "z")[:len(sizes)], devices=devices)


PLACES = [
    (lambda: _mesh((1,), jax.devices()[:1]), None),
    (lambda: _mesh((8,)), ("x",)),
    (lambda: _mesh((8,)), (None, None, "x")),
    (lambda: _mesh((2, 4)), ("x", "y")),
    (lambda: _mesh((2, 4)), (None, "y", "x")),
    (lambda: _mesh((2, 2, 2)), ("z", ("x", "y"))),
]

BIG = (37, 21, 13)  # 10101 samples, uneven on every mesh


def _draws_on(places, fn, shape, **kw):
    """The same draw on each place; asserts layout and sharding, returns the host arrays."""
    out = []
    for make_mesh, spec in places:
        mesh = make_mesh()
        x = fn(jax.random.key(1234), shape=shape, mesh=mesh, spec=spec, **kw)
        assert x.shape == shape and x.layout.mesh.shape == mesh.shape
        assert x.data.sharding.spec == x.layout.spec
        out.append(np.asarray(x))
    for host in out[1:]:
        np.testing.assert_array_equal(host, out[0])
    return out[0]


def _ks_statistic(samples, cdf):
    xs = np.sort(samples.ravel())
    n = xs.size
    c = cdf(xs)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


NORMAL_CDF = np.vectorize(lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2))))


@pytest.mark.x64
def test_normal_identical_on_every_mesh_with_normal_statistics():
    places = [PLACES[0], PLACES[5]]  # 1 device vs (2,2,2); the slow tier tries every place
    x = _draws_on(places, darray.random.normal, BIG, dtype=np.float64)
    n = x.size
    assert x.dtype == np.float64
    assert abs(x.mean()) < 4 / math.sqrt(n)
    assert abs(x.var() - 1) < 4 * math.sqrt(2 / n)
    assert _ks_statistic(x, NORMAL_CDF) < 1.63 / math.sqrt(n)  # KS test at 1 %


def test_uniform_identical_with_uniform_statistics_and_bounds():
    lo, hi = -2.0, 3.0
    x = _draws_on([PLACES[4]], darray.random.uniform, BIG, dtype=np.float32,
                  minval=lo, maxval=hi)
    n = x.size
    assert x.dtype == np.float32 and x.min() >= lo and x.max() < hi
    assert abs(x.mean() - (lo + hi) / 2) < 4 * (hi - lo) / math.sqrt(12 * n)
    assert abs(x.var() - (hi - lo) ** 2 / 12) < 0.05 * (hi - lo) ** 2 / 12
    assert _ks_statistic(x, lambda v: (v - lo) / (hi - lo)) < 1.63 / math.sqrt(n)


@pytest.mark.x64
def test_integers_identical_with_uniform_counts():
    x = _draws_on([PLACES[3]], darray.random.integers, BIG, low=-3, high=9)
    assert x.dtype == np.int64 and x.min() == -3 and x.max() == 8
    counts = np.bincount(x.ravel() + 3, minlength=12)
    expected = x.size / 12
    assert ((counts - expected) ** 2 / expected).sum() < 24.7  # chi-square, 11 dof, 1 %


@pytest.mark.x64
def test_complex_normal_statistics():
    c = np.asarray(darray.random.normal(jax.random.key(0), BIG, np.complex128, mesh=(8,)))
    n = c.size
    assert c.dtype == np.complex128
    assert abs(np.mean(np.abs(c) ** 2) - 1) < 4 * math.sqrt(1 / n)
    assert abs(np.var(c.real) - 0.5) < 4 * math.sqrt(0.5 / n)
    assert abs(np.mean(c.real * c.imag)) < 2 / math.sqrt(n)  # independent parts
    assert _ks_statistic(c.real * math.sqrt(2), NORMAL_CDF) < 1.63 / math.sqrt(n)


DRAWS = [
    ("normal", dict(dtype=np.float64)),
    ("normal", dict(dtype=np.float32)),
    ("normal", dict(dtype=np.complex64)),
    ("uniform", dict(dtype=np.float64, minval=-2.0, maxval=3.0)),
    ("integers", dict(low=-2**40, high=2**40, dtype=np.int64)),
    ("integers", dict(low=3, dtype=np.uint8)),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,kw", DRAWS, ids=[f"{n}-{np.dtype(k['dtype']).name}"
                                                for n, k in DRAWS])
def test_bitwise_identical_on_every_mesh_all_dtypes(name, kw):
    first = _draws_on(PLACES, getattr(darray.random, name), SHAPE, **kw)
    assert first.dtype == np.dtype(kw["dtype"]) and np.unique(first).size > 2


def test_keys_shapes_and_raw_keys():
    mesh = _mesh((8,))
    a = np.asarray(darray.random.normal(jax.random.key(1), (6, 4), mesh=mesh))
    b = np.asarray(darray.random.normal(jax.random.key(2), (6, 4), mesh=mesh))
    c = np.asarray(darray.random.normal(jax.random.key(1), (4, 6), mesh=mesh))
    raw = np.asarray(darray.random.normal(jax.random.PRNGKey(1), (6, 4), mesh=mesh))
    assert not np.any(a == b) and not np.any(np.isin(a, c))
    np.testing.assert_array_equal(a, raw)
    s = darray.random.uniform(jax.random.key(3), (), mesh=mesh)
    assert s.shape == () and 0 <= float(np.asarray(s)) < 1


@pytest.mark.x64
def test_generated_in_place_without_communication():
    layout = darray.zeros(SHAPE, mesh=_mesh((2, 4)), spec=("x", "y")).layout
    fn = rnd._generator(layout, ("normal", np.dtype(np.float64)), np.dtype(np.float64))
    hlo = fn.lower(jnp.zeros(2, np.uint32)).compile().as_text()
    for op in ("all-gather", "all-to-all", "collective-permute", "all-reduce"):
        assert op not in hlo


def test_mulmod32_matches_python():
    rng = np.random.default_rng(0)
    for m in (3, 1000, 2**31 - 1, 2**32 - 5):
        a = rng.integers(0, m, 64, dtype=np.uint64).astype(np.uint32)
        b = int(rng.integers(0, m))
        got = np.asarray(rnd._mulmod32(jnp.asarray(a), np.uint32(b), m))
        np.testing.assert_array_equal(got, [(int(v) * b) % m for v in a])


def test_errors_name_the_argument():
    key = jax.random.key(0)
    with pytest.raises(TypeError, match="key must be a jax.random key"):
        darray.random.normal(0, (3,))
    with pytest.raises(ValueError, match="minval < maxval"):
        darray.random.uniform(key, (3,), minval=1.0, maxval=1.0)
    with pytest.raises(ValueError, match=r"\[0, 300\) does not fit dtype uint8"):
        darray.random.integers(key, 300, shape=(3,), dtype=np.uint8)
    with pytest.raises(TypeError, match="integers: dtype=.*float64.*not an integer"):
        darray.random.integers(key, 3, shape=(3,), dtype=np.float64)
    with pytest.raises(TypeError, match="normal: dtype=.*int32.*not accepted"):
        darray.random.normal(key, (3,), np.int32)
    with pytest.raises(ValueError, match="too large for darray.random"):
        darray.random.normal(key, (2**32, 1))


@pytest.mark.x64
def test_integers_full_ranges():
    x = np.asarray(darray.random.integers(jax.random.key(4), 0, 2**64, (300,),
                                          dtype=np.uint64, mesh=(8,)))
    assert x.dtype == np.uint64 and x.max() > 2**63 and np.unique(x).size == 300
    y = np.asarray(darray.random.integers(jax.random.key(4), -2**31, 2**31, (300,),
                                          dtype=np.int32, mesh=(8,)))
    assert y.dtype == np.int32 and y.min() < -2**30 and y.max() > 2**30
