"""Covers: darray/_src/engine/views.py, darray/_src/engine/slicing.py
Covers: darray/_src/placement/physical.py

numpy's mutation semantics on DistArrays (issue #19, items 1 and 2): writes from many threads
are never lost, and basic-index / permute_dims / reshape results are views that write through
to their base and show its later writes. Each check runs the same steps on numpy (float64) and
compares; layouts and shardings of the results are asserted."""
from __future__ import annotations

import threading

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.placement.physical import sharding_of

MESHES = {"slab": ((8,), ("d",)), "pencil": ((2, 4), ("x", "y"))}


def _mesh(name):
    shape, names = MESHES[name]
    return mesh_of(shape, names, explicit=True)


def _split_first(host, mesh):
    spec = (mesh.axis_names[0],) + (None,) * (host.ndim - 1)
    return darray.asarray(host, mesh=mesh, spec=spec)


def _check(x, reference, layout=None):
    np.testing.assert_array_equal(np.asarray(x), reference)
    assert x.sharding == sharding_of(x.layout)
    if layout is not None:
        assert x.layout == layout


@pytest.mark.parametrize("mesh", MESHES)
def test_threads_writing_slices_lose_nothing(mesh):
    """40 threads each write their own row (sklearn pairwise_distances(n_jobs=...) pattern)."""
    x = _split_first(np.zeros((40, 13)), _mesh(mesh))
    layout = x.layout
    barrier = threading.Barrier(8)

    def write(rows):
        barrier.wait()
        for i in rows:
            x[i] = np.full(13, i + 1.0)
    threads = [threading.Thread(target=write, args=(range(k, 40, 8),)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _check(x, np.repeat(np.arange(1.0, 41.0)[:, None], 13, axis=1), layout)


def test_threads_in_place_operators_lose_nothing():
    x = _split_first(np.zeros(13), _mesh("slab"))

    def bump():
        nonlocal x
        for _ in range(10):
            x += 1.0
    threads = [threading.Thread(target=bump) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _check(x, np.full(13, 60.0))


@pytest.mark.parametrize("mesh", MESHES)
def test_slice_writes_through_to_base(mesh):
    host = np.arange(13.0 * 6).reshape(13, 6)
    x, ref = _split_first(host, _mesh(mesh)), host.copy()
    layout = x.layout
    v, rv = x[2:9], ref[2:9]
    v += 100.0
    rv += 100.0
    _check(x, ref, layout)
    v[1:3, ::2] = -1.0
    rv[1:3, ::2] = -1.0
    _check(x, ref, layout)
    _check(v, rv)
    row, rrow = x[4], ref[4]        # an int on axis 0 of a 2-D array: a view, as in numpy
    row[...] = 7.0
    rrow[...] = 7.0
    _check(x, ref, layout)


def test_view_reads_base_writes_and_views_of_views():
    host = np.arange(20.0)
    x, ref = _split_first(host, _mesh("slab")), host.copy()
    v, rv = x[3:15], ref[3:15]
    w, rw = v[2:8:2], rv[2:8:2]
    x[5] = -5.0
    ref[5] = -5.0
    _check(v, rv)
    _check(w, rw)
    w *= 10.0
    rw *= 10.0
    _check(x, ref)
    _check(v, rv)
    del v, rv                       # the view of a view still reaches the first base
    w[0] = 1234.0
    rw[0] = 1234.0
    _check(x, ref)


def test_permute_dims_and_reshape_are_views():
    """scipy.signal's _split: swapaxes, slice, swapaxes back, then `part += other`."""
    xp = darray
    host = np.arange(4.0 * 6 * 5).reshape(4, 6, 5)
    x, ref = _split_first(host, _mesh("pencil")), host.copy()
    part = xp.permute_dims(xp.permute_dims(x, (1, 0, 2))[2:5], (1, 0, 2))
    rpart = np.transpose(np.transpose(ref, (1, 0, 2))[2:5], (1, 0, 2))
    part += 1000.0
    rpart += 1000.0
    _check(x, ref)
    r = xp.reshape(x, (24, 5))
    rr = ref.reshape(24, 5)
    r[3:7] = 0.0
    rr[3:7] = 0.0
    _check(x, ref)
    t = x.mT
    t[..., 0] = -3.0
    np.swapaxes(ref, -1, -2)[..., 0] = -3.0
    _check(x, ref)


def test_copies_stay_copies():
    host = np.arange(12.0)
    x = _split_first(host, _mesh("slab"))
    for copy in (x.copy(), darray.asarray(x, copy=True), x[np.array([1, 2, 3])],
                 darray.reshape(x, (3, 4), copy=True), x + 0.0):
        copy[...] = -1.0
    scalar = x[3]                   # a key of ints only: numpy gives a scalar, not a view
    scalar += 1.0
    _check(x, host)


def test_view_never_keeps_its_base_alive():
    import gc
    import weakref
    x = _split_first(np.arange(16.0), _mesh("slab"))
    v = x[2:6]
    base = weakref.ref(x)
    del x
    gc.collect()
    assert base() is None
    v += 1.0                        # the base is gone: nobody can see it, nothing is lost
    _check(v, np.arange(2.0, 6.0) + 1.0)


def test_under_jit_results_are_plain_arrays():
    x = _split_first(np.arange(16.0), _mesh("slab"))

    @jax.jit
    def f(a):
        v = a[2:6]
        v += 1.0                     # rebinds v only: a traced program is functional
        return a, v
    a, v = f(x)
    _check(a, np.arange(16.0))
    _check(v, np.arange(2.0, 6.0) + 1.0)
    _check(x, np.arange(16.0))
