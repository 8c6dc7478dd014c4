"""Covers: darray/_src/engine/compaction_rows.py, darray/_src/engine/distinct.py
Covers: darray/_src/api/set_functions.py

Selections along a split axis that stay split (issue 50's scikit-learn LDA: per-class rows
X[y == k] and the unique labels of a row-split label array), against numpy, with the output
layouts and the compiled programs' temporaries asserted.
"""
import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.engine import compaction, compaction_rows, distinct

MESHES = {"8": (8,), "2x4": (2, 4), "4x2": (4, 2)}


def _mesh(name):
    return mesh_of(MESHES[name]) if name == "8" else mesh_of(MESHES[name], ("x", "y"))


def _rows(n, cols, seed=0):
    """Rows of integers with signed zeros and a NaN (a selection moves bits, never sums)."""
    a = np.random.default_rng(seed).integers(-3, 4, (n, cols)).astype(np.float32)
    a[1, 0], a[2, -1] = -0.0, np.nan
    return a


def _same_bits(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


# (mesh, rows, cols, X spec, mask spec, share of rows kept)
SLOW = pytest.mark.slow
ROW_CASES = [
    ("8", 1001, 5, ("x", None), ("x",), 0.01),   # few hits: a block feeds many output blocks
    ("2x4", 1001, 67, ("x", "y"), ("x",), 0.3),  # columns split too
    pytest.param("8", 1001, 5, ("x", None), ("x",), 0.5, marks=SLOW),
    pytest.param("8", 203, 3, ("x", None), ("x",), 1.0, marks=SLOW),
    pytest.param("2x4", 403, 7, (("x", "y"), None), (("x", "y"),), 0.6, marks=SLOW),
    pytest.param("4x2", 101, 45, ("y", "x"), ("y",), 0.5, marks=SLOW),
]


@pytest.mark.parametrize("mesh_name,n,cols,spec,mask_spec,share", ROW_CASES)
def test_boolean_rows_stay_split(mesh_name, n, cols, spec, mask_spec, share):
    mesh = _mesh(mesh_name)
    host = _rows(n, cols)
    keep = np.random.default_rng(1).random(n) < share
    keep[1] = keep[2] = True
    x = darray.asarray(host, mesh=mesh, spec=spec)
    mask = darray.asarray(keep, mesh=mesh, spec=mask_spec)
    got = x[mask]
    _same_bits(got, host[keep])
    assert got.layout.split == (tuple(np.atleast_1d(spec[0])) if isinstance(spec[0], str)
                                else tuple(spec[0]),) + tuple(got.layout.split[1:])
    assert got.layout.split[1:] == x.layout.split[1:]
    (rows,) = darray.nonzero(mask)
    np.testing.assert_array_equal(np.asarray(rows), np.nonzero(keep)[0])
    assert rows.layout.split == mask.layout.split


def test_boolean_rows_none_and_vector():
    mesh = _mesh("8")
    v = darray.asarray(np.arange(1001.0), mesh=mesh, spec=("x",))
    got = v[v > 990.5]
    np.testing.assert_array_equal(np.asarray(got), np.arange(991.0, 1001.0))
    assert got.layout.split == (("x",),)
    empty = v[v > 5000]
    assert empty.shape == (0,) and empty.layout.split == (("x",),)


def test_plan_shifts():
    # blocks of 10 cells keeping 10, 0, 0, 10 hits: out blocks of 5; block 0 -> 0, 1;
    # block 3 -> 2, 3 (shifts -1, 0)
    assert compaction_rows.plan_shifts(np.array([10, 0, 0, 10])) == (5, (-1, 0, 1))
    assert compaction_rows.plan_shifts(np.array([3, 3, 3, 3])) == (3, (0,))


@pytest.mark.parametrize("n", [1, 127, 128, 129, 16385 + 77])  # one to three levels of rows
def test_running_count_is_exact(n):
    hits = np.random.default_rng(n).random(n) < 0.7
    got = jax.jit(compaction_rows.running_count)(hits)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.cumsum(hits))


def _temps(fn, *args):
    compiled = fn.lower(*args).compile()
    m = compiled.memory_analysis()
    block = max(m.argument_size_in_bytes, m.output_size_in_bytes)
    return m.temp_size_in_bytes / block, compiled.as_text().count("all-gather")


@pytest.mark.parametrize("mesh_name,spec,mask_spec", [
    ("8", ("x", None), ("x",)),
    pytest.param("2x4", ("x", "y"), ("x",), marks=SLOW),
    pytest.param("4x2", (("x", "y"), None), (("x", "y"),), marks=SLOW)])
def test_row_compaction_memory(mesh_name, spec, mask_spec):
    """<= 3 blocks of temporaries and no all-gather; the general kernel this replaces for 1-D
    masks held a result-sized buffer per device (4.2 blocks at this size on 8)."""
    mesh = _mesh(mesh_name)
    n = 10007
    x = darray.asarray(_rows(n, 61), mesh=mesh, spec=spec)
    keep = np.random.default_rng(2).random(n) < 0.5
    mask = darray.asarray(keep, mesh=mesh, spec=mask_spec)
    counts = compaction_rows.block_counts(mask)
    np.testing.assert_array_equal(counts.sum(), keep.sum())
    _, shifts = compaction_rows.plan_shifts(counts)
    fn, lays = compaction_rows._rows_fn(mask.layout, (x.layout,), int(counts.sum()), shifts,
                                        False)
    blocks, gathers = _temps(fn, counts.astype(np.int32), mask.data, x.data)
    assert blocks <= 3 and gathers == 0, (blocks, gathers)
    assert lays[0].split[0] == mask.layout.split[0]
    if mesh_name == "8":
        old, _ = compaction._compact_fn(mask.layout, (x.layout,), int(counts.sum()), False)
        assert _temps(old, mask.data, x.data)[0] > blocks


@pytest.fixture
def distributed_unique(monkeypatch):
    monkeypatch.setattr(distinct, "MIN_CELLS", 0)  # the cases are small


# (mesh, shape, spec, values drawn from [-3, high))
UNIQUE_CASES = [
    ("2x4", (37, 23), ("x", "y"), 7),
    pytest.param("8", (1001,), ("x",), 5, marks=SLOW),
    pytest.param("8", (1001,), ("x",), 100000, marks=SLOW),  # nearly all distinct
    pytest.param("2x4", (37, 23), (None, "y"), 7, marks=SLOW),  # replicated over x
    pytest.param("4x2", (101,), (("x", "y"),), 3, marks=SLOW),
]


@pytest.mark.parametrize("mesh_name,shape,spec,high", UNIQUE_CASES)
def test_unique_of_split_integers(distributed_unique, mesh_name, shape, spec, high):
    host = np.random.default_rng(3).integers(-3, high, shape).astype(np.int32)
    x = darray.asarray(host, mesh=_mesh(mesh_name), spec=spec)
    assert distinct.applies(x)
    values, index, inverse, counts = np.unique(host, return_index=True, return_inverse=True,
                                               return_counts=True)
    got = darray.unique_all(x)
    np.testing.assert_array_equal(np.asarray(got.values), values)
    np.testing.assert_array_equal(np.asarray(got.indices), index)
    np.testing.assert_array_equal(np.asarray(got.inverse_indices), inverse.reshape(shape))
    np.testing.assert_array_equal(np.asarray(got.counts), counts)
    assert got.inverse_indices.layout.split == x.layout.split
    assert got.values.layout.split == (x.layout.used_mesh_axes,)
    np.testing.assert_array_equal(np.asarray(darray.unique_values(x)), values)
    np.testing.assert_array_equal(np.asarray(darray.unique_counts(x).counts), counts)
    inv = darray.unique_inverse(x)
    np.testing.assert_array_equal(np.asarray(inv.inverse_indices), inverse.reshape(shape))
    assert inv.inverse_indices.layout.split == x.layout.split


def test_unique_paths_by_size_and_dtype():
    mesh = _mesh("8")
    small = darray.asarray(np.arange(100) % 3, mesh=mesh, spec=("x",))
    floats = darray.asarray(np.zeros(distinct.MIN_CELLS), mesh=mesh, spec=("x",))
    large = darray.asarray(np.arange(distinct.MIN_CELLS) % 3, mesh=mesh, spec=("x",))
    assert not distinct.applies(small) and not distinct.applies(floats)
    assert distinct.applies(large)
    np.testing.assert_array_equal(np.asarray(darray.unique_values(large)), [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(darray.unique_values(small)), [0, 1, 2])


def test_unique_programs_memory(distributed_unique):
    """The per-device sort and the finishing lookups hold <= 3 blocks, no all-gather of x
    (the merge gathers only the per-device distinct values)."""
    mesh = _mesh("2x4")
    x = darray.asarray(np.random.default_rng(4).integers(0, 5, (1001, 203)).astype(np.int32),
                       mesh=mesh, spec=("x", "y"))
    lay = x.layout
    blocks, gathers = _temps(distinct._local_fn(lay), x.data)
    assert blocks <= 3 and gathers == 0, blocks
    buf, counts = distinct._local_fn(lay)(x.data)
    merged, n = distinct._merge_fn(lay, int(np.max(np.asarray(counts))))(buf, counts)
    fn, _ = distinct._finish_fn(lay, int(n), ("values", "inverse", "counts"))
    blocks, gathers = _temps(fn, x.data, merged)
    assert blocks <= 3 and gathers == 0, blocks
    assert jax.device_count() == 8
