"""Covers: darray/_src/api/versions.py, darray/_src/api/info.py, darray/_src/api/manipulation.py
Covers: darray/_src/api/set_functions.py, darray/_src/api/linalg.py
Covers: darray/_src/extras/creation_extra.py, darray/_src/distarray/array.py

Array API 2025.12 (and the older revisions still on offer), iteration and to_device."""
import array_api_compat
import helpers
import jax
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from scalar_check import assert_replicated_scalar

import darray

RNG = np.random.default_rng(7)
MESH = mesh_of((2, 4), ("x", "y"))
A = helpers.host(RNG.standard_normal((13, 7)))
TOL = helpers.tol(A.dtype)  # float64 data is float32 with x64 off
X = darray.asarray(A, mesh=MESH, spec=("x", "y"))


def test_version_and_older_namespaces():
    assert darray.__array_api_version__ == "2025.12"
    for version in (None, "2025.12"):
        assert X.__array_namespace__(api_version=version) is darray
    assert array_api_compat.array_namespace(X) is darray
    for version in ("2023.12", "2024.12"):
        old = X.__array_namespace__(api_version=version)
        assert old is X.__array_namespace__(api_version=version)  # one object per version
        assert old.__array_api_version__ == version
        assert old.sum is darray.sum and old.fft is darray.fft  # everything else is darray's
        got = old.broadcast_arrays(X, X[0])
        assert isinstance(got, list) and [g.shape for g in got] == [(13, 7)] * 2
        grids = old.meshgrid(X[:, 0], X[0])
        assert isinstance(grids, list)
        for g, ref in zip(grids, np.meshgrid(A[:, 0], A[0])):
            np.testing.assert_array_equal(np.asarray(g), ref)
        assert isinstance(old.__array_namespace_info__().devices(), list)
    with pytest.raises(ValueError, match=r"api_version='2021.12' is not supported; darray "
                                         r"implements the Array API 2025.12"):
        X.__array_namespace__(api_version="2021.12")


def test_tuples_where_2025_12_asks_for_them():
    got = darray.broadcast_arrays(X, X[0])
    assert isinstance(got, tuple)
    for g in got:
        np.testing.assert_array_equal(np.asarray(g), np.broadcast_to(A, (13, 7)) if g is got[0]
                                      else np.broadcast_to(A[0], (13, 7)))
        assert g.mesh == X.mesh
    grids = darray.meshgrid(X[:, 0], X[0], indexing="ij")
    assert isinstance(grids, tuple) and darray.meshgrid() == ()
    for g, ref in zip(grids, np.meshgrid(A[:, 0], A[0], indexing="ij")):
        np.testing.assert_array_equal(np.asarray(g), ref)
    devices = darray.__array_namespace_info__().devices()
    assert isinstance(devices, tuple) and devices[0] == darray.__array_namespace_info__(
        ).default_device()


def test_changed_functions_of_2025_12():
    e = darray.expand_dims(X, axis=(0, -1))
    np.testing.assert_array_equal(np.asarray(e), np.expand_dims(A, (0, -1)))
    assert e.shape == (1, 13, 7, 1) and e.layout.split == ((), ("x",), ("y",), ())
    p = darray.permute_dims(X, (-1, -2))
    np.testing.assert_array_equal(np.asarray(p), A.T)
    assert p.layout.split == (("y",), ("x",))
    s = darray.sort(X[:, 0])
    for side in ("left", "right"):
        k = darray.searchsorted(s, 0.25, side=side)
        assert_replicated_scalar(k, MESH, np.searchsorted(np.sort(A[:, 0]), 0.25, side=side))
    assert darray.broadcast_shapes((1, 7), (13, 1), ()) == np.broadcast_shapes((1, 7), (13, 1))


@pytest.mark.x64
def test_new_functions_of_2025_12():
    ints = darray.asarray(RNG.integers(0, 9, (13, 7)), mesh=MESH, spec=("x", "y"))
    pool = darray.asarray(np.array([1, 4, 7]), mesh=MESH)
    got = darray.isin(ints, pool)
    np.testing.assert_array_equal(np.asarray(got), np.isin(np.asarray(ints), [1, 4, 7]))
    assert got.layout.split == ints.layout.split
    inv = darray.isin(ints, pool, invert=True)
    np.testing.assert_array_equal(np.asarray(inv), ~np.isin(np.asarray(ints), [1, 4, 7]))
    m = RNG.standard_normal((6, 6))
    xm = darray.asarray(m, mesh=MESH)
    w = np.sort_complex(np.asarray(darray.linalg.eigvals(xm)))
    np.testing.assert_allclose(w, np.sort_complex(np.linalg.eigvals(m)), rtol=1e-9, atol=1e-9)
    vals, vecs = darray.linalg.eig(xm)
    v, V = np.asarray(vals), np.asarray(vecs)
    np.testing.assert_allclose(m @ V, V * v, rtol=1e-9, atol=1e-9)  # A V = V diag(w)


def test_iteration_over_axis_zero():
    rows = list(X)
    assert len(rows) == 13
    for row, ref in zip(rows, A):
        np.testing.assert_array_equal(np.asarray(row), ref)
        assert row.layout.split == (("y",),) and row.mesh == X.mesh
    cells = list(X[:, 3])
    assert [float(c) for c in cells] == A[:, 3].tolist()
    assert_replicated_scalar(cells[5], MESH, A[5, 3])
    for (_i, j), ref in zip(enumerate(X[0]), A[0]):
        assert float(j) == ref


def test_to_device_forms():
    assert X.to_device(X.device) is X
    same = X.to_device(MESH)
    assert same.layout == X.layout
    one = X.to_device(jax.devices()[3])
    np.testing.assert_array_equal(np.asarray(one), A)
    assert one.data.sharding.device_set == {jax.devices()[3]} and one.mesh.size == 1
    sub = mesh_of((2, 2), ("x", "y"), devices=jax.devices()[4:])
    moved = X.to_device(sub)
    np.testing.assert_array_equal(np.asarray(moved), A)
    assert moved.data.sharding.device_set == set(sub.devices.flat)
    assert moved.data.sharding.spec == moved.layout.spec
    spec = X.to_device(NamedSharding(MESH, P(None, "x")))
    np.testing.assert_array_equal(np.asarray(spec), A)
    assert spec.layout.split == ((), ("x",)) and spec.data.sharding.spec == spec.layout.spec
    resplit = X.to_device(NamedSharding(sub, P("y")))
    np.testing.assert_array_equal(np.asarray(resplit), A)
    assert resplit.layout.split == (("y",), ()) and resplit.mesh.size == 4
    back = one.to_device(X.device)  # from one device back onto the mesh
    np.testing.assert_array_equal(np.asarray(back), A)
    assert back.mesh == X.mesh
    with pytest.raises(ValueError, match=r"to_device\(stream=1\): darray has no streams"):
        X.to_device(MESH, stream=1)
    with pytest.raises(TypeError, match="device must be a jax.sharding.Mesh"):
        X.to_device("cpu:0")


@pytest.mark.x64
def test_setitem_and_clip_promotion_of_2025_12():
    """2025.12: a setitem value array is promoted to x's dtype (x's dtype never changes);
    Python scalars given to clip take x's dtype."""
    x = darray.asarray(np.arange(8, dtype=np.int32), mesh=MESH)
    x[2:4] = darray.asarray(np.array([-1, -2], np.int8), mesh=MESH)
    ref = np.arange(8, dtype=np.int32)
    ref[2:4] = [-1, -2]
    np.testing.assert_array_equal(np.asarray(x), ref)
    assert x.dtype == np.int32
    y = darray.asarray(A, mesh=MESH, spec=("x", "y"))
    y[0] = darray.asarray(A[1].astype(np.float32), mesh=MESH)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(y)[0], A[1].astype(np.float32).astype(np.float64))
    f32 = darray.asarray(A.astype(np.float32), mesh=MESH, spec=("x", "y"))
    c = darray.clip(f32, min=-0.5, max=1)
    assert c.dtype == np.float32 and c.layout == f32.layout
    np.testing.assert_array_equal(np.asarray(c), np.clip(A.astype(np.float32), -0.5, 1))
    i = darray.clip(x, min=0, max=5)
    assert i.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(i), np.clip(ref, 0, 5))
