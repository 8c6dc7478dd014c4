"""Covers: darray/_src/extras/blockwise.py

from_callback and fromfunction: blocks made where they live, no global host array."""
import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray

MESHES = [((8,), ("x",)), ((2, 4), ("x", "y")), ((2, 2, 2), ("z", ("x", "y")))]


def _mesh(sizes):
    return mesh_of(sizes, ("x", "y", "z")[:len(sizes)])


@pytest.mark.x64
@pytest.mark.parametrize("sizes,spec", MESHES)
def test_from_callback_matches_host_and_sees_only_logical_blocks(sizes, spec):
    host = np.random.default_rng(1).standard_normal((13, 10, 7))
    calls = []

    def cb(index):
        calls.append(index)
        assert all(isinstance(s, slice) and s.step is None for s in index)
        assert all(0 <= s.start < s.stop <= n for s, n in zip(index, host.shape))
        return host[index]

    mesh = _mesh(sizes)
    x = darray.from_callback(host.shape, np.float64, cb, mesh=mesh, spec=spec)
    assert x.shape == host.shape and x.dtype == np.float64
    assert x.data.sharding.spec == x.layout.spec and x.layout.mesh.shape == mesh.shape
    np.testing.assert_array_equal(np.asarray(x), host)
    # one call per distinct non-empty block, never more (replicas share the call)
    distinct = {tuple((s.start, s.stop) for s in idx) for idx in calls}
    assert len(calls) == len(distinct)
    n_blocks = np.prod([sum(1 for a, b in x.layout.blocks(ax) if b > a) for ax in range(3)])
    assert len(calls) == n_blocks


def test_from_callback_casts_and_skips_empty_blocks():
    # 9 cells over 8 devices: chunk 2, blocks 5..7 own nothing and are never requested
    calls = []
    x = darray.from_callback(9, np.int32, lambda idx: calls.append(idx) or
                             np.arange(idx[0].start, idx[0].stop, dtype=np.float64),
                             mesh=_mesh((8,)), spec=("x",))
    assert x.dtype == np.int32 and x.layout.spec == jax.sharding.PartitionSpec("x")
    np.testing.assert_array_equal(np.asarray(x), np.arange(9))
    assert sorted(c[0].start for c in calls) == [0, 2, 4, 6, 8]


def test_from_callback_replicated_and_zero_d():
    x = darray.from_callback((4, 3), np.float32, lambda idx: np.ones((4, 3)) * 2,
                             mesh=_mesh((8,)), spec=None)
    np.testing.assert_array_equal(np.asarray(x), np.full((4, 3), 2, np.float32))
    s = darray.from_callback((), np.float64, lambda idx: np.array(5.0), mesh=_mesh((8,)))
    assert s.shape == () and float(np.asarray(s)) == 5.0


def test_from_callback_errors_name_the_problem():
    mesh = _mesh((8,))
    with pytest.raises(ValueError, match=r"shape \(3,\).*must have the shape.*\(2,\)"):
        darray.from_callback(16, np.float64, lambda idx: np.zeros(3), mesh=mesh)
    with pytest.raises(TypeError, match="callback=.*must be callable"):
        darray.from_callback(16, np.float64, "nope", mesh=mesh)
    with pytest.raises(TypeError, match="dtype=None"):
        darray.from_callback(16, None, lambda idx: np.zeros(2), mesh=mesh)
    with pytest.raises(TypeError, match="dtype <U1"):
        darray.from_callback(16, np.float64, lambda idx: np.array(["a", "b"]), mesh=mesh)


@pytest.mark.x64
@pytest.mark.parametrize("sizes,spec", MESHES)
def test_fromfunction_matches_numpy(sizes, spec):
    fn = lambda i, j, k: i * 100.0 + j * 10.0 + k  # noqa: E731
    x = darray.fromfunction(fn, (13, 10, 7), dtype=np.float64, mesh=_mesh(sizes), spec=spec)
    assert x.shape == (13, 10, 7) and x.dtype == np.float64
    assert x.data.sharding.spec == x.layout.spec
    np.testing.assert_array_equal(np.asarray(x), np.fromfunction(fn, (13, 10, 7)))


def test_fromfunction_index_dtype_and_broadcast_result():
    x = darray.fromfunction(lambda i, j: (i % 3) == j, (11, 3), dtype=np.int32,
                            mesh=_mesh((2, 4)), spec=("y", "x"))
    np.testing.assert_array_equal(np.asarray(x), np.fromfunction(lambda i, j: (i % 3) == j,
                                                                 (11, 3), dtype=np.int32))
    assert x.dtype == np.bool_ and x.layout.split == (("y",), ("x",))
    c = darray.fromfunction(lambda i: 7, (5,), dtype=np.int64, mesh=_mesh((8,)))
    np.testing.assert_array_equal(np.asarray(c), np.full(5, 7))
    with pytest.raises(TypeError, match="fn=.*must be callable"):
        darray.fromfunction(3, (5,))
