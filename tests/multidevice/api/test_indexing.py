"""Covers: darray/_src/api/indexing.py, darray/_src/engine/slicing.py

Indexing against numpy (float64) on uneven shapes and several meshes, with output layouts
asserted; scalar reads checked to move only the result (all-reduce of one cell, no gather)."""
import jax
import numpy as np
import pytest
from helpers import host, mesh_of
from hypothesis import given, settings
from hypothesis import strategies as st
from scalar_check import assert_replicated_scalar

import darray

MESHES = [(8,), (2, 4), (4, 2), (1, 8)]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m)))
def mesh(request):
    return mesh_of(request.param)


def setup(mesh, shape=(7, 13, 3)):
    a = host(np.random.default_rng(0).standard_normal(shape))  # the dtype darray holds
    spec = ("x",) if len(mesh.axis_names) == 1 else ("x", "y")
    return a, darray.asarray(a, mesh=mesh, spec=spec)


def check(y, ref, split=None, mesh=None):
    if np.ndim(ref) == 0:  # a scalar read returns a 0-d DistArray, data replicated
        assert (split is None or tuple(split) == ()) and mesh is not None
        assert_replicated_scalar(y, mesh, ref)
        return
    np.testing.assert_array_equal(np.asarray(y), ref)
    assert y.shape == ref.shape
    assert y.data.shape == y.layout.physical_shape
    if split is not None:
        assert y.layout.split == tuple(split), y.layout


BASIC = [
    ((3, 4, 2), ()),
    ((-1,), ("s1", "n")),
    ((slice(None), 5), ("s0", "n")),
    ((Ellipsis, 1), ("s0", "s1")),
    ((None, 2, Ellipsis, None), ("n", "s1", "n", "n")),
    ((slice(None), slice(None), slice(None, None, -2)), ("s0", "s1", "n")),
    ((6, 12, -1), ()),
    ((slice(1, 5),), ("s0", "s1", "n")),
    ((slice(None, None, -1), 2), ("s0", "n")),
    ((slice(None), slice(2, 11, 3), 0), ("s0", "s1")),
    ((slice(5, 2),), ("s0", "s1", "n")),
    ((slice(-8, 0, -1), 0), ("s0", "n")),  # empty with a negative step (start "before 0")
]


@pytest.mark.parametrize("key,split_names", BASIC, ids=[str(k) for k, _ in BASIC])
def test_basic_getitem(mesh, key, split_names):
    a, x = setup(mesh)
    table = {"s0": x.layout.split[0], "s1": x.layout.split[1], "n": ()}
    check(x[key], a[key], [table[s] for s in split_names], mesh=mesh)


def test_scalar_read_moves_only_the_result(mesh):
    a, x = setup(mesh)
    hlo = jax.jit(lambda v: v[3, 4, 2]).lower(x).compile().as_text()
    assert "all-gather" not in hlo
    # Only the one cell is reduced: every all-reduce in the program has a scalar operand.
    for line in hlo.splitlines():
        if "all-reduce(" in line and "=" in line:
            assert "[]" in line.split("=")[1].split("all-reduce")[0], line
    assert_replicated_scalar(x[3, 4, 2], mesh, a[3, 4, 2])


@settings(max_examples=15, deadline=None)
@given(i=st.integers(-7, 6), j=st.integers(-13, 12), start=st.integers(-9, 9),
       stop=st.integers(-9, 9), step=st.sampled_from([1, 2, -1, -3]),
       mesh_shape=st.sampled_from(MESHES))
def test_basic_getitem_hypothesis(i, j, start, stop, step, mesh_shape):
    mesh = mesh_of(mesh_shape)
    a, x = setup(mesh)
    check(x[i, j], a[i, j], mesh=mesh)
    check(x[start:stop:step, j], a[start:stop:step, j], mesh=mesh)
    check(x[i, start:stop:step], a[i, start:stop:step], mesh=mesh)
    check(x[i, j, 0], a[i, j, 0], mesh=mesh)


def test_integer_array_and_mask_getitem(mesh):
    a, x = setup(mesh)
    for key in [(np.array([0, 3, 6]),), (slice(None), np.array([1, 12, -1])),
                (np.array([1, 2]), np.array([3, 4])), (Ellipsis, np.array([0, 2])),
                (0, np.array([1, 2]), slice(None)), (a[:, :, 0] > 0,), (a > 0.5,), (True,)]:
        y = x[key]
        check(y, a[key])
        assert y.mesh == x.mesh
    mask = darray.asarray(a > 0, mesh=mesh, spec=x.layout.spec)
    check(x[mask], a[a > 0])
    idx = darray.asarray(np.array([6, 0, 2]), mesh=mesh)
    check(x[idx], a[[6, 0, 2]])


def test_getitem_errors(mesh):
    _, x = setup(mesh)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 7"):
        x[7]
    with pytest.raises(IndexError, match="too many indices: 4 given for an array of rank 3"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="at most one Ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError, match="is not accepted"):
        x["a"]
    with pytest.raises(IndexError, match="out of bounds for axis 1"):
        x[:, np.array([13])]
    with pytest.raises(jax.errors.ConcretizationTypeError, match="depends on the values"):
        jax.jit(lambda v: v[v > 0])(x)


def test_setitem(mesh):
    a, x = setup(mesh)
    cases = [((3, 4, 2), -1.0), ((slice(None), 5), 7.0), ((slice(1, 5),), np.ones((4, 13, 3))),
             ((a > 0,), 0.0), ((np.array([0, 3]),), -5.0),
             ((Ellipsis, slice(None, None, -1)), np.arange(3.0)), ((-1, slice(2, 9, 3)), 2.5)]
    for key, value in cases:
        y = darray._src.api.indexing.setitem(x, key, value)
        ref = a.copy()
        ref[key] = value
        check(y, ref, x.layout.split)
        np.testing.assert_array_equal(np.asarray(x), a)  # input untouched
    z = darray.DistArray._new(x.data, x.layout)
    z[2, 3] = darray.asarray(np.array([1.0, 2.0, 3.0]), mesh=mesh)
    ref = a.copy()
    ref[2, 3] = [1, 2, 3]
    check(z, ref, x.layout.split)
    with pytest.raises(ValueError, match="cannot be broadcast to the indexed shape"):
        z[1:3] = np.ones((3, 13, 3))


def test_setitem_mask_under_jit(mesh):
    a, x = setup(mesh)

    def f(v):
        v = darray.DistArray._new(v.data, v.layout)
        v[v > 0] = 0.0
        return v
    y = jax.jit(f)(x)
    check(y, np.where(a > 0, 0.0, a), x.layout.split)


def test_take_and_take_along_axis(mesh):
    a, x = setup(mesh)
    check(darray.take(x, np.array([0, 5, 12, 5]), axis=1), np.take(a, [0, 5, 12, 5], axis=1),
          x.layout.split)
    idx = np.argsort(a, axis=1)
    check(darray.take_along_axis(x, idx, axis=1), np.take_along_axis(a, idx, axis=1),
          x.layout.split)
    v = darray.asarray(a[:, 0, 0], mesh=mesh)
    check(darray.take(v, darray.asarray(np.array([6, 1]), mesh=mesh)), a[[6, 1], 0, 0])
    with pytest.raises(ValueError, match="take needs axis= for an array of rank 3"):
        darray.take(x, np.array([0]))
    with pytest.raises(TypeError, match="integer dtype"):
        darray.take(x, np.array([0.5]), axis=0)
