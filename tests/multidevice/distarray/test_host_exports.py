"""Covers: darray/_src/distarray/array.py, darray/_src/layout/host.py

Host exports never look writeable, and pickling round-trips (issue 28, point 8).

A host array of a DistArray is a snapshot: a write into it could never reach the DistArray.
`np.asarray(x)` is therefore read-only (as jax.Array's is), `np.array(x)` (copy=True) is a
writeable copy, and code that writes into `np.asarray(output)` (scipy.ndimage) raises instead
of keeping zeros.
"""
import pickle

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.distarray import array as array_module

MESH = mesh_of((2, 4), ("x", "y"))
A = np.arange(13 * 7, dtype=np.float64).reshape(13, 7)


def _x():
    return darray.asarray(A, mesh=MESH, spec=("x", "y"))


def test_asarray_is_read_only_and_array_copies():
    x = _x()
    host = np.asarray(x)
    np.testing.assert_array_equal(host, A)
    assert not host.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        host[0, 0] = 5.0
    cast = np.asarray(x, dtype=np.float32)
    assert cast.dtype == np.float32 and not cast.flags.writeable
    mine = np.array(x)
    assert mine.flags.writeable
    mine[0, 0] = 5.0  # a copy of one's own: x is unchanged, as numpy's np.array(a)
    np.testing.assert_array_equal(np.asarray(x), A)
    assert x.__array__(copy=True).flags.writeable
    with pytest.raises(ValueError, match="copy=False.*no host memory to share"):
        np.asarray(x, copy=False)
    assert x.tolist() == A.tolist()
    assert memoryview(np.asarray(x)).readonly


def test_scipy_ndimage_output_distarray_raises_instead_of_losing_results():
    ndimage = pytest.importorskip("scipy.ndimage")
    out = darray.zeros((13, 7), device=MESH)
    # Without scipy's Array API dispatch it writes into np.asarray(out), which is read-only;
    # with it (SCIPY_ARRAY_API=1, set by whatever imported scipy first in this process, e.g.
    # benchmarks/bench_eager.py) it refuses a numpy input with a DistArray output. Either way
    # the call raises: the write is never silently lost.
    with pytest.raises((ValueError, TypeError), match="read-only|Multiple namespaces"):
        ndimage.gaussian_filter(A, 1.0, output=out)
    np.testing.assert_array_equal(np.asarray(out), np.zeros((13, 7)))  # nothing half-written
    ref = ndimage.gaussian_filter(A, 1.0)  # the supported spelling: the returned array
    np.testing.assert_allclose(np.asarray(ndimage.gaussian_filter(np.asarray(_x()), 1.0)), ref)


def test_dlpack_exports_are_read_only_or_private_copies():
    x = _x()
    imported = np.from_dlpack(x)  # DLPack 1.0: the read-only flag travels
    np.testing.assert_array_equal(imported, A)
    assert not imported.flags.writeable
    copied = np.from_dlpack(x, copy=True)
    assert copied.flags.writeable
    np.testing.assert_array_equal(copied, A)
    with pytest.raises(BufferError, match="DLPack 0.x"):  # cannot be told "read-only"
        x.__dlpack__()
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(max_version=(1, 0), copy=False)
    back = darray.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(back), A)


@pytest.mark.parametrize("spec, halo", [(("x", "y"), 0), (("y", None), 0), ((None, "x"), 1),
                                        ((("x", "y"), None), 0)])
def test_pickle_round_trips_values_and_layout(spec, halo):
    x = darray.asarray(A, mesh=MESH, spec=spec)
    if halo:
        x = x.halo(halo)
    y = pickle.loads(pickle.dumps(x))
    assert y.layout == x.layout, (y.layout, x.layout)
    assert y.device == x.device and y.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(y.data), np.asarray(x.data))  # ghosts included
    np.testing.assert_array_equal(np.asarray(y), A)
    assert y.data.sharding.is_equivalent_to(x.data.sharding, x.data.ndim)
    z = y + x  # usable with the original: same mesh, no resharding error
    np.testing.assert_array_equal(np.asarray(z), 2 * A)
    assert z.layout.split == x.layout.split


@pytest.mark.distributed_placement
def test_pickle_of_scalars_and_default_placement():
    s = darray.sum(_x())
    t = pickle.loads(pickle.dumps(s))
    assert t.shape == () and float(t) == A.sum()
    u = darray.arange(10.0)
    v = pickle.loads(pickle.dumps(u))
    assert v.layout == u.layout and v.mesh == darray.default_mesh()
    np.testing.assert_array_equal(np.asarray(v), np.arange(10.0))


def test_unpickle_without_the_devices_says_why():
    x = _x()
    fn, args = x.__reduce__()
    version, blocks, shape, split, halo, (ids, platform, names, sizes) = args
    assert version == 2
    missing = tuple(i + 1000 for i in ids)
    with pytest.raises(ValueError, match=r"no cpu device with id \[1000"):
        fn(version, blocks, shape, split, halo, (missing, platform, names, sizes))
    with pytest.raises(ValueError, match="format 99"):
        fn(99, blocks, shape, split, halo, (ids, platform, names, sizes))
    assert fn is array_module._unpickle


def test_unpickle_reads_format_1_with_its_identity_axis_order():
    x = _x()
    _, (_, blocks, shape, split, halo, where) = x.__reduce__()
    old = array_module._unpickle(1, blocks, shape, split, halo, tuple(range(len(shape))), where)
    assert old.layout == x.layout and old.data.sharding.spec == x.layout.spec
    np.testing.assert_array_equal(np.asarray(old), np.asarray(x))


def test_pickle_under_jit_is_refused():
    def f(a):
        pickle.dumps(a)
        return a
    with pytest.raises(TypeError, match="while it is traced"):
        jax.jit(f)(_x())
