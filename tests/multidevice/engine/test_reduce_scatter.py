"""Covers: darray/_src/engine/reduce_scatter.py, darray/_src/api/statistical.py

darray.sum(..., spec=...): a sum over a split axis whose result is split again over the
freed mesh axes compiles to a reduce-scatter (lax.psum_scatter), with no all-reduce; other
specs are honoured by a resharding. Values against numpy in float64, layouts asserted."""
from __future__ import annotations

import helpers
import jax
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import PartitionSpec as P

import darray

MESHES = {(8,): ("d",), (2, 4): ("x", "y")}


def put(host, mesh_shape, spec):
    return darray.asarray(host, mesh=mesh_of(mesh_shape, MESHES[mesh_shape]),
                          spec=spec)


def collectives(x, **kw):
    f = jax.jit(lambda d: darray.sum(darray.DistArray._new(d, x.layout), **kw).data)
    return helpers.collectives(f.lower(x.data).compile().as_text())


@pytest.mark.parametrize("shape,mesh_shape,in_spec,kw,out_spec", [
    ((16, 32), (8,), ("d", None), {"axis": 0}, ("d",)),
    ((13, 21), (8,), ("d", None), {"axis": 0}, ("d",)),            # uneven in and out
    ((8, 12, 6), (2, 4), ("x", "y"), {"axis": 1}, ("x", "y")),     # y freed -> output axis 1
    ((8, 12, 6), (2, 4), ("x", "y"), {"axis": 1}, (("x", "y"), None)),  # subdivide x's blocks
    ((16, 8, 5), (2, 4), ("x", "y"), {"axis": (0, 1)}, (("x", "y"),)),  # both freed, one axis
    ((16, 8, 5), (2, 4), ("x", "y"), {"axis": (0, 1), "keepdims": True}, (None, None, ("x", "y"))),
])
@pytest.mark.x64
def test_sum_scatter_is_a_reduce_scatter(shape, mesh_shape, in_spec, kw, out_spec):
    host = np.random.default_rng(0).standard_normal(shape)
    x = put(host, mesh_shape, in_spec)
    r = darray.sum(x, **kw, spec=out_spec)
    ref = host.sum(axis=kw["axis"], keepdims=kw.get("keepdims", False))
    np.testing.assert_allclose(np.asarray(r), ref, rtol=1e-12, atol=1e-12)
    want = darray.Layout.create(ref.shape, x.mesh, out_spec)
    assert r.layout == want
    assert r.data.sharding.spec == want.spec
    found = collectives(x, **kw, spec=out_spec)
    assert "reduce-scatter" in found and "all-reduce" not in found, found
    assert "all-gather" not in found
    # the default (no spec) is the all-reduce this replaces
    assert "all-reduce" in collectives(x, **kw)


@pytest.mark.x64
def test_int_dtype_and_partly_scattered():
    host = np.random.default_rng(1).integers(-5, 5, size=(8, 16, 4)).astype(np.int32)
    x = put(host, (2, 4), ("x", "y"))
    # x and y freed; y scatters output axis 0, x is summed with psum
    r = darray.sum(x, axis=(0, 1), spec=("y",))
    np.testing.assert_array_equal(np.asarray(r), host.sum(axis=(0, 1)))
    assert r.dtype == np.int64 and r.layout.split == (("y",),)
    found = collectives(x, axis=(0, 1), spec=("y",))
    assert "reduce-scatter" in found and "all-gather" not in found, found


@pytest.mark.parametrize("shape,in_spec,kw,out_spec", [
    ((13, 10), ("x", "y"), {"axis": 1}, (("x", "y"),)),   # 13 over 2 then 8: blocks straddle
    ((12, 10), ("x", None), {"axis": 1}, (("x", "y"),)),  # y split nothing in x
    ((12, 10), ("x", "y"), {"axis": 1}, (None,)),         # replicate the result
    ((12, 10), ("x", "y"), {"axis": 1}, ("x",)),          # the default itself
])
@pytest.mark.x64
def test_other_specs_are_honoured(shape, in_spec, kw, out_spec):
    host = np.random.default_rng(2).standard_normal(shape)
    x = put(host, (2, 4), in_spec)
    r = darray.sum(x, **kw, spec=out_spec)
    np.testing.assert_allclose(np.asarray(r), host.sum(**kw), rtol=1e-12)
    want = darray.Layout.create(r.shape, x.mesh, out_spec)
    assert r.layout == want and r.data.sharding.spec == want.spec


@pytest.mark.x64
def test_gradient_through_the_scatter():
    host = np.random.default_rng(3).standard_normal((16, 32))
    x = put(host, (8,), ("d", None))
    w = np.random.default_rng(4).standard_normal(32)
    wd = put(w, (8,), ("d",))
    g = darray.grad(lambda a: darray.sum(darray.sum(a, axis=0, spec=("d",)) * wd))(x)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(w, (16, 32)), rtol=1e-12)
    assert g.layout == x.layout
    assert g.data.sharding.spec == P("d")


@pytest.mark.x64
def test_haloed_input_and_errors():
    host = np.random.default_rng(5).standard_normal((16, 8))
    x = put(host, (8,), ("d", None)).halo(1)
    r = darray.sum(x, axis=0, spec=("d",))
    np.testing.assert_allclose(np.asarray(r), host.sum(0), rtol=1e-12)
    with pytest.raises(darray.LayoutError, match=r"spec"):
        darray.sum(x, axis=0, spec=("d", None, None))
    with pytest.raises(darray.LayoutError, match=r"'z'"):
        darray.sum(x, axis=0, spec=("z",))
