"""Covers: darray/_src/engine/distributed_sort.py, darray/_src/api/sorting.py
Covers: darray/_src/engine/window_search.py
Covers: darray/_src/api/searching.py

sort / argsort along a split axis by the merge-split network, and searchsorted against a split
sorted x1, compared with numpy (float64 references, stable order with many ties, NaNs,
descending, -0.0 / +0.0) on uneven shapes over 8, 2x4 and 4x2 meshes, an axis split over two
mesh axes; the output layout is x's (x2's for searchsorted).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray as da
from darray._src.api import searching
from darray._src.base.dtypes import default_int
from darray._src.engine import distributed_sort

# (mesh shape, array shape, spec, axis): the sort axis split over one or two mesh axes,
# uneven everywhere, other axes split or not
CASES = [
    ((8,), (10007,), ("x",), 0),
    ((2, 4), (1001, 43), ("x", "y"), 0),
    ((2, 4), (43, 1001), ("x", "y"), 1),
    ((4, 2), (1001, 43), ("x", "y"), 0),
    ((2, 4), (19, 5003), (None, ("x", "y")), 1),
    ((4, 2), (5003, 3), (("y", "x"), None), 0),
]


@pytest.fixture(autouse=True)
def _network_for_small_arrays(monkeypatch):
    monkeypatch.setattr(distributed_sort, "MIN_BLOCK_ELEMENTS", 1)
    monkeypatch.setattr(distributed_sort, "WINDOW_MIN_ELEMENTS", 1)


def _ties(shape, dtype, seed=0):
    """Few distinct values (many ties), NaNs, signed zeros and infinities for floats."""
    rng = np.random.default_rng(seed)
    h = rng.integers(-3, 4, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        r = rng.random(shape)
        h[r < 0.05] = np.nan
        h[(r >= 0.05) & (r < 0.1)] = -0.0
        h[(r >= 0.1) & (r < 0.12)] = np.inf
        h[(r >= 0.12) & (r < 0.14)] = -np.inf
    return h


def _stable_desc_argsort(h, axis):
    # numpy's stable lexsort of (not NaN, negated value): NaNs first, ties in original order
    h = h.astype(np.float64)
    nan = np.isnan(h)
    return np.lexsort((np.where(nan, 0.0, -h), ~nan), axis=axis)


@pytest.mark.parametrize("mesh_shape,shape,spec,axis", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_sort_and_argsort_match_numpy(mesh_shape, shape, spec, axis, dtype):
    mesh = mesh_of(mesh_shape)
    h = _ties(shape, dtype)
    x = da.asarray(h, device=mesh, spec=spec)
    ref = np.sort(h.astype(np.float64), axis=axis, kind="stable")
    s = da.sort(x, axis=axis)
    np.testing.assert_array_equal(np.asarray(s).astype(np.float64), ref)
    a = da.argsort(x, axis=axis)
    np.testing.assert_array_equal(np.asarray(a), np.argsort(h, axis=axis, kind="stable"))
    assert a.dtype == default_int()
    d = da.argsort(x, axis=axis, descending=True)
    np.testing.assert_array_equal(np.asarray(d), _stable_desc_argsort(h, axis))
    sd = da.sort(x, axis=axis, descending=True)
    np.testing.assert_array_equal(np.asarray(sd).astype(np.float64), np.flip(ref, axis))
    for out in (s, a, d, sd):
        assert out.layout.split == x.layout.split
        assert out.data.sharding.spec == x.layout.spec


@pytest.mark.parametrize("mesh_shape,shape,spec,axis", CASES[:3])
def test_signed_zeros_and_nans_keep_jax_order(mesh_shape, shape, spec, axis):
    """The network reproduces jax.numpy's stable order bit for bit: the signs of equal zeros
    (original order ascending, reversed descending, as jax reverses its ascending sort)."""
    h = _ties(shape, np.float32, seed=3)
    x = da.asarray(h, device=mesh_of(mesh_shape), spec=spec)
    for desc in (False, True):
        got = np.asarray(da.sort(x, axis=axis, descending=desc))
        want = np.asarray(jnp.sort(h, axis=axis, descending=desc))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(got, want)


def test_complex_and_bool():
    mesh = mesh_of((8,))
    rng = np.random.default_rng(1)
    c = (rng.integers(0, 3, 3001) + 1j * rng.integers(0, 3, 3001)).astype(np.complex64)
    c[::97] = np.nan
    x = da.asarray(c, device=mesh, spec=("x",))
    np.testing.assert_array_equal(np.asarray(da.argsort(x)), np.asarray(jnp.argsort(c)))
    np.testing.assert_array_equal(np.asarray(da.sort(x)), np.sort(c, kind="stable"))
    b = rng.random(3001) < 0.5
    xb = da.asarray(b, device=mesh, spec=("x",))
    np.testing.assert_array_equal(np.asarray(da.sort(xb)), np.sort(b))
    np.testing.assert_array_equal(np.asarray(da.argsort(xb, descending=True)),
                                  _stable_desc_argsort(b.astype(np.float64), 0))


SEARCH = [
    ((8,), 10007, ("x",), (501,), ("x",)),
    ((8,), 10007, ("x",), (37, 5), None),
    ((2, 4), 5003, (("x", "y"),), (37, 51), ("y", "x")),
    ((4, 2), 5003, ("y",), (41, 9), ("x", None)),
    ((2, 4), 5003, (("y", "x"),), (), None),
    # x2 split on x1's mesh axes: the window search
    ((8,), 10007, ("x",), (10007,), ("x",)),
    ((2, 4), 5003, (("y", "x"),), (37, 51), ("x", "y")),
    ((2, 4), 5003, ("x",), (7, 403), (None, ("x", "y"))),
    ((4, 2), 5003, ("y",), (41, 9), ("x", "y")),
]


@pytest.mark.distributed_placement  # the 0-d x2 is placed on the mesh, not one device
@pytest.mark.parametrize("mesh_shape,n1,spec1,shape2,spec2", SEARCH)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_against_split_x1(mesh_shape, n1, spec1, shape2, spec2, side):
    mesh = mesh_of(mesh_shape)
    rng = np.random.default_rng(2)
    h1 = np.sort(rng.integers(0, 200, n1).astype(np.float64))
    h1[-20:] = np.nan  # NaNs sort last, as numpy places them
    h2 = rng.integers(-5, 205, shape2).astype(np.float64)
    if h2.ndim:
        h2.flat[::5] = np.nan
    x1 = da.asarray(h1, device=mesh, spec=spec1)
    x2 = da.asarray(h2, device=mesh, spec=spec2)
    got = da.searchsorted(x1, x2, side=side)
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(h1, h2, side=side))
    assert got.dtype == default_int()
    assert got.layout.split == x2.layout.split
    assert got.data.sharding.spec == x2.layout.spec


def test_int32_indices_with_x64_off():
    if jax.config.read("jax_enable_x64"):
        with jax.enable_x64(False):
            _int32_case()
    else:
        _int32_case()


def _int32_case():
    h = _ties((3001,), np.float32)
    x = da.asarray(h, device=mesh_of((8,)), spec=("x",))
    a = da.argsort(x)
    assert a.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(a), np.argsort(h, kind="stable"))
    s1 = da.sort(x)
    r = da.searchsorted(s1, x)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(r), np.searchsorted(np.sort(h), h))


WINDOW_KINDS = ["float32", "int32", "bool", "complex64", "int x1, float x2", "empty blocks"]


@pytest.mark.parametrize("kind", WINDOW_KINDS)
@pytest.mark.parametrize("side", ["left", "right"])
def test_window_search_dtypes_and_ties(kind, side):
    """The window search (x2 split on x1's axes) on numpy's order: ties, NaNs, signed zeros,
    infinities, bool and complex, promotion, and blocks with no logical cells."""
    mesh = mesh_of((2, 4))
    rng = np.random.default_rng(5)
    n1 = 9 if kind == "empty blocks" else 3001  # 9 over 8: blocks 5-7 hold only padding
    if kind in ("float32", "empty blocks"):
        h1 = np.sort(_ties(n1, np.float32, seed=1))
        h2 = _ties((13, 61), np.float32, seed=2)
    elif kind == "int32":
        h1, h2 = np.sort(rng.integers(-3, 4, n1).astype(np.int32)), rng.integers(-4, 5, (13, 61))
        h2 = h2.astype(np.int32)
    elif kind == "bool":
        h1, h2 = np.sort(rng.random(n1) < 0.3), rng.random((13, 61)) < 0.5
    elif kind == "complex64":
        h1 = np.sort((rng.integers(-2, 3, n1) + 1j * rng.integers(-2, 3, n1)).astype(np.complex64))
        h2 = (rng.integers(-3, 4, (13, 61)) + 1j * rng.integers(-3, 4, (13, 61)))
        h2 = h2.astype(np.complex64)
    else:
        h1 = np.sort(rng.integers(-50, 50, n1).astype(np.int32))
        h2 = (rng.integers(-110, 110, (13, 61)) / 2).astype(np.float32)
    x1 = da.asarray(h1, device=mesh, spec=(("x", "y"),))
    x2 = da.asarray(h2, device=mesh, spec=("y", "x"))
    assert not distributed_sort._shares_x2_block(x1.layout, x2.layout)
    got = da.searchsorted(x1, x2, side=side)
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(h1, h2, side=side))
    assert got.data.sharding.spec == x2.layout.spec


def test_replicated_search_dtypes_and_ties(monkeypatch):
    """The replicated path (small x1, or a sorter): its one-buffer binary search on numpy's
    order for ties, NaNs, signed zeros, infinities and complex values."""
    monkeypatch.setattr(distributed_sort, "MIN_BLOCK_ELEMENTS", 10 ** 9)
    monkeypatch.setattr(searching, "_ONE_BUFFER_SEARCH_CELLS", 0)  # the one-buffer search
    mesh = mesh_of((2, 4))
    rng = np.random.default_rng(7)
    h1 = np.sort(_ties(61, np.float32, seed=3))
    h2 = _ties((31, 45), np.float32, seed=4)
    c1 = np.sort((rng.integers(-2, 3, 61) + 1j * rng.integers(-2, 3, 61)).astype(np.complex64))
    c2 = (rng.integers(-3, 4, (31, 45)) + 1j * rng.integers(-3, 4, (31, 45)))
    for a, v in ((h1, h2), (c1, c2.astype(np.complex64)), (h1, np.asarray([], np.float32))):
        x1 = da.asarray(a, device=mesh, spec=(("x", "y"),))
        x2 = da.asarray(v, device=mesh, spec=("y", "x")[:v.ndim])
        assert not distributed_sort.searchable(x1.layout, x2.layout)
        for side in ("left", "right"):
            got = da.searchsorted(x1, x2, side=side)
            np.testing.assert_array_equal(np.asarray(got), np.searchsorted(a, v, side=side))
            assert got.layout.split == x2.layout.split
            if v.size:
                assert got.data.sharding.spec == x2.layout.spec


def test_small_blocks_keep_xla_path(monkeypatch):
    monkeypatch.setattr(distributed_sort, "MIN_BLOCK_ELEMENTS", 4096)
    monkeypatch.setattr(distributed_sort, "WINDOW_MIN_ELEMENTS", 3 << 15)
    lay = da.asarray(np.zeros(1000, np.float32), device=mesh_of((8,)), spec=("x",)).layout
    assert not distributed_sort.sortable(lay, 0)
    big = da.asarray(np.zeros(100003, np.float32), device=mesh_of((8,)), spec=("x",)).layout
    assert distributed_sort.sortable(big, 0)
    # searchsorted: the psum path from the same size, the window search (x2 split on x1's
    # axes) from WINDOW_MIN_ELEMENTS
    shared = da.asarray(np.zeros(7, np.float32), device=mesh_of((8,))).layout
    assert distributed_sort.searchable(big, shared)
    assert distributed_sort.searchable(big, big)
    mid = da.asarray(np.zeros(65557, np.float32), device=mesh_of((8,)), spec=("x",)).layout
    assert distributed_sort.searchable(mid, shared)
    assert not distributed_sort.searchable(mid, mid)
    assert not distributed_sort.searchable(lay, shared)
