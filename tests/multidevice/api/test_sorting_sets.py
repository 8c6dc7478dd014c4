"""Covers: darray/_src/api/sorting.py, darray/_src/api/set_functions.py

sort/argsort and the set functions against numpy (float64), with output layouts asserted."""
import jax
import numpy as np
import pytest
from helpers import mesh_of
from hypothesis import given, settings
from hypothesis import strategies as st

import darray

MESHES = [(8,), (2, 4), (4, 2), (1, 8)]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m)))
def mesh(request):
    return mesh_of(request.param)


def setup(mesh, shape=(7, 13, 3), seed=0):
    a = np.random.default_rng(seed).integers(0, 5, shape).astype(np.float64)
    a.flat[[0, 17]] = np.nan
    spec = ("x",) if len(mesh.axis_names) == 1 else ("x", "y")
    return a, darray.asarray(a, mesh=mesh, spec=spec)


def check(y, ref, split):
    np.testing.assert_array_equal(np.asarray(y), ref)
    assert y.layout.split == tuple(split), y.layout
    assert y.data.shape == y.layout.physical_shape


@pytest.mark.x64
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(mesh, axis, descending):
    a, x = setup(mesh)
    ref = np.sort(a, axis=axis)
    if descending:
        ref = np.flip(ref, axis=axis)  # NaNs first, as a reversed ascending sort
    check(darray.sort(x, axis=axis, descending=descending), ref, x.layout.split)
    idx = darray.argsort(x, axis=axis, descending=descending)
    if descending:
        # stable descending: equal values keep their original order
        ref_idx = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
        ref_idx = a.shape[axis] - 1 - ref_idx
    else:
        ref_idx = np.argsort(a, axis=axis, kind="stable")
    check(idx, ref_idx, x.layout.split)
    assert idx.dtype == np.int64


def test_sort_unsplit_axis_is_local(mesh):
    _, x = setup(mesh)
    hlo = jax.jit(lambda v: darray.sort(v, axis=2)).lower(x).compile().as_text()
    for op in ("all-gather", "all-to-all", "all-reduce", "collective-permute"):
        assert op not in hlo


@pytest.mark.x64
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 25), mesh_shape=st.sampled_from(MESHES), seed=st.integers(0, 9))
def test_sort_hypothesis(n, mesh_shape, seed):
    mesh = mesh_of(mesh_shape)
    a = np.random.default_rng(seed).standard_normal((n, 2))
    x = darray.asarray(a, mesh=mesh, spec=(mesh.axis_names[0],))
    check(darray.sort(x, axis=0), np.sort(a, axis=0), x.layout.split)
    check(darray.argsort(x, axis=0), np.argsort(a, axis=0, kind="stable"), x.layout.split)


def test_sort_errors(mesh):
    _, x = setup(mesh)
    with pytest.raises(ValueError, match="axis=3 is out of range"):
        darray.sort(x, axis=3)
    with pytest.raises(TypeError, match="sort: x must be an array"):
        darray.sort([1.0, 2.0, 3.0])


def test_unique_functions(mesh):
    a, x = setup(mesh)
    used = tuple(n for s in x.layout.split for n in s)
    vals = darray.unique_values(x)
    ref_vals = np.unique_values(a)  # numpy keeps each NaN distinct too
    check(vals, ref_vals, (used,))
    v, i, inv, c = darray.unique_all(x)
    ref = np.unique_all(a)
    check(v, ref.values, (used,))
    check(c, ref.counts, (used,))
    check(i, ref.indices, (used,))
    check(inv, ref.inverse_indices, x.layout.split)
    uc = darray.unique_counts(x)
    check(uc.counts, ref.counts, (used,))
    ui = darray.unique_inverse(x)
    check(ui.inverse_indices, ref.inverse_indices, x.layout.split)
    np.testing.assert_array_equal(np.asarray(ui.values)[np.asarray(ui.inverse_indices)], a)


@pytest.mark.x64
def test_unique_empty_and_jit(mesh):
    x = darray.asarray(np.zeros((0,)), mesh=mesh)
    assert darray.unique_values(x).shape == (0,)
    _, y = setup(mesh)
    with pytest.raises(jax.errors.ConcretizationTypeError, match="depends on the values"):
        jax.jit(darray.unique_values)(y)


def test_isin(mesh):
    a, x = setup(mesh)
    check(darray.isin(x, np.array([1.0, 3.0])), np.isin(a, [1.0, 3.0]), x.layout.split)
    test = darray.asarray(np.array([0.0, 4.0]), mesh=mesh)
    check(darray.isin(x, test, invert=True), np.isin(a, [0.0, 4.0], invert=True), x.layout.split)
