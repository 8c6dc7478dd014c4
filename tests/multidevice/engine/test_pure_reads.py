"""Covers: darray/_src/distarray/array.py

The array is a value (issue 36, part 1): reading an attribute never runs a program.

``shape``, ``dtype``, ``ndim``, ``size``, ``layout`` and ``repr`` come from the Layout: on a
view whose base was written since (the view re-reads its base only where its data is read), on
a Jacobian nest JAX rebuilt (its settled Layout is computed, not applied) and on small arrays.
A read is caught running a program two ways: jax's caches are cleared first, so any dispatch
would compile (counted with compat.count_compilations), and no new device array may appear.
"""
from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray import fft as dfft
from darray._src.base import compat
from darray._src.distarray.array import REBUILT, DistArray

READS = ("shape", "dtype", "ndim", "size", "layout", "repr")


def _read_all(x):
    return [repr(x) if name == "repr" else getattr(x, name) for name in READS]


def assert_reads_are_pure(x):
    """Every metadata read of `x` compiles and dispatches nothing and settles nothing."""
    stored, pending = x._stored, x._pending
    jax.clear_caches()  # any program a read ran would compile now
    live = len(jax.live_arrays())
    with compat.count_compilations() as compiled:
        first = _read_all(x)
        second = _read_all(x)
    assert compiled.count == 0, f"an attribute read compiled {compiled.count} program(s)"
    assert len(jax.live_arrays()) == live, "an attribute read made device arrays"
    assert x._stored is stored and x._pending is pending, "an attribute read settled x"
    assert first == second
    return dict(zip(READS, first))


@pytest.fixture
def mesh():
    return mesh_of((2, 4), ("x", "y"))


@pytest.mark.x64
@pytest.mark.parametrize("make", ["slice", "reshape", "transpose"])
def test_views_read_nothing_after_their_base_was_written(mesh, make):
    host = np.arange(8 * 12, dtype=np.float64).reshape(8, 12)
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    v = {"slice": lambda: x[2:7], "reshape": lambda: darray.reshape(x, (96,)),
         "transpose": lambda: x.T}[make]()
    ref = {"slice": lambda h: h[2:7], "reshape": lambda h: h.reshape(96),
           "transpose": lambda h: h.T}[make]
    layout = v.layout
    x[0] = -1.0  # the base is written: v is now stale
    host[0] = -1.0
    meta = assert_reads_are_pure(v)
    assert meta["layout"] == layout and meta["shape"] == ref(host).shape
    assert meta["dtype"] == np.float64 and meta["size"] == ref(host).size
    np.testing.assert_array_equal(np.asarray(v), ref(host))  # a data read does re-read the base
    assert v.layout == layout


def test_a_jacobian_nest_reads_its_settled_layout_without_settling(mesh):
    host = np.random.default_rng(3).standard_normal((4, 8, 4))
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    for jac in (jax.jacfwd, jax.jacrev):
        J = jac(lambda a: dfft.fftn(a).real)(x)
        assert J._pending is REBUILT and type(J._stored) is DistArray  # a nest, unread
        meta = assert_reads_are_pure(J)
        assert meta["shape"] == (4, 8, 4, 4, 8, 4) and meta["ndim"] == 6
        _ = J.data  # the data read settles it: into the Layout the reads gave
        assert type(J._stored) is not DistArray and J._pending is None
        assert J.layout == meta["layout"]
        assert J.data.sharding.is_equivalent_to(J.sharding, 6)


def test_small_and_zero_d_arrays_read_nothing(mesh):
    with darray.config_context(small_array_cells=1024):
        small = darray.asarray(np.arange(6.0).reshape(2, 3))
        assert_reads_are_pure(small)
        assert_reads_are_pure(small[0:1])  # a small view
        total = darray.sum(darray.asarray(np.ones((64, 64)), device=mesh, spec=("x", "y")))
        # a 0-d array's repr prints its value: a host copy of one cell, no program
        assert assert_reads_are_pure(total)["repr"].startswith("DistArray(4096.0")


def test_distarray_is_not_constructed_directly(mesh):
    x = darray.asarray(np.ones(8), device=mesh, spec=("x",))
    with pytest.raises(TypeError, match="darray.asarray"):
        DistArray(x.data, x.layout)
    with pytest.raises(ValueError, match="physical shape"):
        DistArray._new(x.data[:4], x.layout)
    # the pytree path rebuilds around anything JAX hands it, unchecked
    treedef = jax.tree.structure(x)
    for leaf in (None, object(), jax.ShapeDtypeStruct((8,), np.float64)):
        y = jax.tree.unflatten(treedef, [leaf])
        assert type(y) is DistArray and y._stored is leaf and y.layout == x.layout
