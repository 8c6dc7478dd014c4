"""Covers: darray/_src/base/dtypes.py, darray/_src/api/statistical.py, darray/_src/api/searching.py

Counts, sizes and indices past int32 (issue 49): exact with x64 on; with x64 off (JAX's
default, int32 the default integer) an OverflowError naming jax_enable_x64, never a wrapped
value. Small arrays reach the check through a lowered limit (dtypes.INT32_LIMIT); one slow test
runs a real 1291^3 one-byte array.
"""
import jax
import numpy as np
import pytest

import darray
from darray._src.base import dtypes
from tests.helpers import assert_layout, mesh_of

MESH = mesh_of((2, 4))
LIMIT = 1000
X64 = jax.config.read("jax_enable_x64")


@pytest.fixture
def low_limit(monkeypatch):
    monkeypatch.setattr(dtypes, "INT32_LIMIT", LIMIT)


def _ops(a, x):
    """(name, darray call, numpy reference) of everything whose result counts or indexes."""
    flat = int(np.argmax(a.astype(np.int16)))
    xi = x if a.dtype != np.bool_ else darray.astype(x, darray.int8)  # argmax refuses bool
    return [
        ("count_nonzero", lambda: darray.count_nonzero(x), np.count_nonzero(a)),
        ("sum", lambda: darray.sum(x), np.sum(a, dtype=np.int64)),
        ("argmax", lambda: darray.argmax(xi), flat),
        ("argmin", lambda: darray.argmin(xi), int(np.argmin(a.astype(np.int16)))),
        ("nonzero", lambda: darray.nonzero(x)[0], np.nonzero(a)[0]),
        ("cumulative_sum", lambda: darray.cumulative_sum(darray.reshape(x, (-1,)))[-1],
         np.sum(a, dtype=np.int64)),
    ]


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8])
def test_past_the_limit_raises_without_x64_and_is_exact_with_it(low_limit, dtype):
    rng = np.random.default_rng(3)
    a = (rng.integers(0, 3, (11, 13, 9)) > 0).astype(dtype)  # 1287 elements > LIMIT
    a[7, 5, 3] = 2 if dtype != np.bool_ else True  # the one maximum (bool: the first True)
    x = darray.asarray(a, mesh=MESH, spec=("x", None, "y"))
    for name, call, want in _ops(a, x):
        if X64:
            got = call()
            # the default int, or uint for an unsigned sum (the standard's accumulator)
            assert got.dtype in (np.int64, np.uint64), (name, got.dtype)
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)
        else:
            match = rf"{name}: .*128[67], past 1000.*jax_enable_x64"
            with pytest.raises(OverflowError, match=match):
                call()


def test_within_the_limit_nothing_changes(low_limit):
    """The check is decided from shapes: a reduced axis (or array) at or under the limit runs,
    x64 or not; a sum with a dtype asked for, or of a wide dtype, is the caller's choice."""
    a = np.ones((11, 13, 9), np.bool_)
    x = darray.asarray(a, mesh=MESH, spec=("x", None, "y"))
    got = darray.count_nonzero(x, axis=(0, 2))  # 99 terms each
    assert_layout(got, split=((),))
    np.testing.assert_array_equal(np.asarray(got), np.count_nonzero(a, axis=(0, 2)))
    xi = darray.astype(x, darray.int8)
    np.testing.assert_array_equal(np.asarray(darray.argmax(xi, axis=1)), np.argmax(a, axis=1))
    assert int(darray.sum(x, dtype=darray.int32)) == a.size
    assert int(darray.sum(darray.astype(x, darray.int32))) == a.size
    assert float(darray.mean(darray.astype(x, darray.float32))) == 1.0  # counted in float
    small = darray.asarray(a[:5, :5, :5], mesh=MESH, spec=("x", None, "y"))  # 125 elements
    assert int(darray.count_nonzero(small)) == 125
    assert int(darray.argmax(darray.astype(small, darray.int8))) == 0


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_flat_indices_and_size_based_means_past_the_limit(low_limit, dtype):
    """Flat (C-order) indices of a flattened array, whose blocks the block-wise reshape
    builds, and means divided by a size past the limit: exact with x64 on; with x64 off the
    indices raise and the means (counted in floating point) stay right."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 7, (11, 13, 9)).astype(dtype)  # 1287 elements > LIMIT
    a[10, 12, 3] = 9  # the maximum, at flat index 1281
    x = darray.asarray(a, mesh=MESH, spec=("x", "y", None))
    flat = darray.reshape(x, (-1,))
    assert_layout(flat, split=(("x", "y"),))
    mean = darray.mean(darray.astype(x, darray.float64 if X64 else darray.float32))
    np.testing.assert_allclose(float(mean), a.astype(np.float64).mean(), rtol=1e-6)
    var = darray.var(darray.astype(x, darray.float64 if X64 else darray.float32), axis=None)
    np.testing.assert_allclose(float(var), a.astype(np.float64).var(), rtol=1e-5)
    if not X64:
        for name, call in (("argmax", lambda: darray.argmax(flat)),
                           ("nonzero", lambda: darray.nonzero(flat))):
            with pytest.raises(OverflowError, match=rf"{name}: .*1287|{name}: .*128[67]"):
                call()
        return
    got = darray.argmax(flat)
    assert got.dtype == np.int64 and int(got) == 1281 == int(np.argmax(a))
    np.testing.assert_array_equal(np.asarray(darray.nonzero(flat)[0]), np.nonzero(a.ravel())[0])
    np.testing.assert_array_equal(np.asarray(flat), a.ravel())


def test_searchsorted_index_past_the_limit(low_limit):
    a = np.arange(LIMIT + 5, dtype=np.int16)
    x1 = darray.asarray(a, mesh=MESH, spec=(("x", "y"),))
    x2 = darray.asarray(np.array([3, LIMIT + 4], np.int16), mesh=MESH, spec=(None,))
    if X64:
        np.testing.assert_array_equal(np.asarray(darray.searchsorted(x1, x2, side="right")),
                                      np.searchsorted(a, [3, LIMIT + 4], side="right"))
    else:
        with pytest.raises(OverflowError, match="searchsorted: .*jax_enable_x64"):
            darray.searchsorted(x1, x2)


def _available_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_real_1291_cubed_one_byte_array():
    """2,151,685,171 elements (2.15 GB as bool or int8) on 8 devices: the issue's numbers."""
    n = 1291
    mesh = mesh_of((8,), ("d",))
    if X64 and _available_bytes() < 24 * 2**30:
        # XLA:CPU materialises the int64 count of every element: count_nonzero and sum hold
        # 8 one-byte blocks per device, argmax 9 (measured at 131^3), 17 GB at 1291^3
        pytest.skip("needs 24 GiB free with x64 on (int64 temporaries, 8 bytes per element)")
    x = darray.ones((n, n, n), dtype=darray.bool, mesh=mesh, spec=("d", None, None))
    if not X64:  # decided from the shape: raised before any program runs
        for call in (darray.count_nonzero, darray.sum, darray.nonzero,
                     lambda v: darray.argmax(darray.astype(v, darray.int8))):
            with pytest.raises(OverflowError, match="2151685.* jax_enable_x64"):
                call(x)
        return
    assert int(darray.count_nonzero(x)) == n ** 3
    assert int(darray.sum(x)) == n ** 3
    del x
    i8 = darray.zeros((n, n, n), dtype=darray.int8, mesh=mesh, spec=("d", None, None))
    i8 = i8.at[1290, 1290, 1289].set(5)  # flat index 2151685169, the issue's
    assert int(darray.argmax(i8)) == 2151685169
