"""Covers: darray/_src/engine/operands.py

The one rule for operands on different meshes (engine/operands.py, docs/architecture.md), JAX's
committed/uncommitted placement: arrays on darray's default mesh (made without mesh=/device=)
move to where the committed operands are; committed arrays on the same devices are resharded
onto the first one's mesh; committed arrays on different sets of devices raise LayoutError
naming the function, both meshes and the call that moves an array; scalars, numpy/jax arrays
and 0-d arrays go where the arrays are. Checked for every multi-operand family."""
import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.api import indexing
from darray._src.base import compat
from darray._src.base.errors import LayoutError

A = mesh_of((8,), ("x",))
B = mesh_of((2, 4), ("x", "y"))
# the same axis names and sizes as A over the devices in another order: the same devices
C = mesh_of((8,), ("x",), devices=jax.devices()[::-1])
# two halves of the devices: other sets of devices
LO = mesh_of((4,), ("x",), devices=jax.devices()[:4])
HI = mesh_of((4,), ("x",), devices=jax.devices()[4:])


def on(mesh, a, spec=None):
    return darray.asarray(a, mesh=mesh, spec=spec)


V = np.arange(8.0)
M = np.arange(64.0).reshape(8, 8) / 64 + np.eye(8)


def _setitem(xp, a, b):
    if xp is np:
        a = a.copy()
        a[:] = b
        return a
    return indexing.setitem(a, (slice(None),), b)


# (family, function of (xp, first array, second array)): np gives the reference
CALLS = {
    "add": lambda xp, a, b: xp.add(a, b),
    "operator": lambda xp, a, b: a * b,
    "where": lambda xp, a, b: xp.where(a > 2, a, b),
    "clip": lambda xp, a, b: xp.clip(a, b, None),
    "isin": lambda xp, a, b: xp.isin(a, b),
    "take": lambda xp, a, b: xp.take(a, xp.astype(b, xp.int64)),
    "take_along_axis": lambda xp, a, b: xp.take_along_axis(a, xp.astype(b, xp.int64), axis=0),
    "getitem": lambda xp, a, b: a[xp.astype(b, xp.int64)],
    "getitem_mask": lambda xp, a, b: a[b > 1],
    "setitem": _setitem,
    "searchsorted": lambda xp, a, b: xp.searchsorted(a, b),
    "concat": lambda xp, a, b: xp.concat([a, b]),
    "stack": lambda xp, a, b: xp.stack([a, b]),
    "vecdot": lambda xp, a, b: xp.vecdot(a, b),
    "tensordot": lambda xp, a, b: xp.tensordot(a, b, axes=1),
    "outer": lambda xp, a, b: xp.linalg.outer(a, b),
    "matmul": lambda xp, a, b: a @ b,
    "solve": lambda xp, a, b: xp.linalg.solve(a[:, None] * 0 + xp.asarray(M), b),
    "broadcast_arrays": lambda xp, a, b: xp.broadcast_arrays(a, b),
    "meshgrid": lambda xp, a, b: xp.meshgrid(a, b),
    "repeat": lambda xp, a, b: xp.repeat(a, xp.astype(b, xp.int64), axis=0),
}


def _leaves(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


@pytest.mark.x64
@pytest.mark.parametrize("name", list(CALLS))
def test_committed_on_other_devices_raise(name):
    a, b = on(LO, V), on(HI, V % 3)
    with pytest.raises(LayoutError) as info:
        CALLS[name](darray, a, b)
    msg = str(info.value)
    assert "Mesh(x:4; devices 0..3)" in msg and "Mesh(x:4; devices 4..7)" in msg, msg
    assert ".to_device(" in msg and "darray.asarray(" in msg, msg
    assert isinstance(info.value, ValueError)


@pytest.mark.x64
@pytest.mark.parametrize("name", list(CALLS))
def test_committed_on_the_same_devices_are_resharded(name):
    # as jit does: the call runs on the first committed operand's mesh
    want = CALLS[name](np, V, V % 3)
    got = CALLS[name](darray, on(A, V), on(B, V % 3))
    for g, w in zip(_leaves(got), _leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)
        if g.ndim:
            assert g.mesh == A, (g.mesh, name)


@pytest.mark.x64
@pytest.mark.parametrize("name", list(CALLS))
def test_uncommitted_moves_to_the_committed_operand(name):
    # darray.asarray without mesh=/device= is uncommitted: in either position it joins the
    # committed array, even on another set of devices
    want = CALLS[name](np, V, V % 3)
    for a, b in ((on(HI, V), darray.asarray(V % 3)), (darray.asarray(V), on(HI, V % 3))):
        got = CALLS[name](darray, a, b)
        for g, w in zip(_leaves(got), _leaves(want), strict=True):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)
            if g.ndim:
                assert g.mesh == HI, (g.mesh, name)


@pytest.mark.distributed_placement
def test_indexing_runs_where_the_committed_indexed_array_is():
    x = darray.asarray(V)                       # uncommitted, default mesh
    idx = on(B, np.array([7, 0, 3]))             # committed, same devices
    y = x[idx]
    np.testing.assert_array_equal(np.asarray(y), V[[7, 0, 3]])
    assert y.mesh == B  # x joins its committed index, as an uncommitted jax.Array does
    y = on(A, V)[idx]
    np.testing.assert_array_equal(np.asarray(y), V[[7, 0, 3]])
    assert y.mesh == A  # a committed x stays; its index is resharded onto it
    # an uncommitted x goes to index arrays committed to another set of devices, as an
    # uncommitted jax.Array does
    y = x[on(HI, np.array([7, 0, 3, 1]))]
    np.testing.assert_array_equal(np.asarray(y), V[[7, 0, 3, 1]])
    assert y.mesh == HI
    with pytest.raises(LayoutError, match="devices 4..7"):
        on(LO, V)[on(HI, np.array([7, 0, 3, 1]))]  # a committed x stays: another set of devices


@pytest.mark.parametrize("small", [True, False])
def test_uncommitted_array_written_with_committed_values_moves_to_them(small):
    # scipy's cumulative_simpson / derivative: out = xp.empty(shape) (no device=), then
    # out[k] = value with value (or an index array) on a (2, 4) mesh. Small, the output lives
    # on one device under the shipped placement; either way it is uncommitted and moves.
    host = np.arange(130.0).reshape(13, 10) / 8  # exact in float32 (x64 off)
    x = on(B, host, ("x", "y"))
    with darray.config_context(small_array_cells=1 << 16 if small else 0):
        out = darray.zeros((13, 10), dtype=x.dtype)
        idx = darray.zeros(13, dtype=darray.int64)
    assert (out.mesh.size == 1) is small
    out[1:] = x[:-1]
    want = np.zeros((13, 10))
    want[1:] = host[:-1]
    np.testing.assert_array_equal(np.asarray(out), want)
    assert out.mesh == B and out.layout.split == (("x",), ("y",))
    idx[on(B, np.array([2, 5]), ("x",))] = 1  # written by committed index arrays
    assert idx.mesh == B
    np.testing.assert_array_equal(np.asarray(idx), np.isin(np.arange(13), [2, 5]))
    # a committed array written with values committed elsewhere still raises
    with pytest.raises(LayoutError, match="devices 4..7"):
        on(LO, V)[:] = on(HI, V)


def test_creation_without_placement_is_uncommitted_sklearn_pattern():
    # scikit-learn's f1_score: labels on a (2, 4) mesh, a helper from xp.zeros(n) (no device=)
    labels = on(B, np.array([0, 2, 1, 1, 0, 2, 2, 1, 0, 1, 2, 0, 1]), ("x",))
    counts = darray.zeros(3, dtype=darray.int64)
    picked = darray.take(counts + 1, labels)
    np.testing.assert_array_equal(np.asarray(picked), np.ones(13))
    assert picked.mesh == B and picked.layout.split == (("x", "y"),)  # take keeps x's split


def test_message_names_function_and_arguments():
    a, b = on(LO, V), on(HI, V)
    with pytest.raises(LayoutError, match=r"^add: x1 lives on Mesh\(x:4; devices 0..3\) but x2 "
                                          r"on Mesh\(x:4; devices 4..7\).*x2 = "
                                          r"x2.to_device\(x1.device\)"):
        darray.add(a, b)
    with pytest.raises(LayoutError, match=r"^matmul: x1 .* but x2"):
        darray.matmul(on(LO, M), on(HI, M))
    with pytest.raises(LayoutError, match=r"^concat: arrays\[0\] .* but arrays\[1\]"):
        darray.concat([a, b])


def test_same_names_other_device_order_is_resharded():
    a, c = on(A, V), on(C, V)
    y = a + c                                   # the same devices: resharded onto x1's mesh
    np.testing.assert_array_equal(np.asarray(y), V + V)
    assert y.mesh == A
    y = c + a
    np.testing.assert_array_equal(np.asarray(y), V + V)
    assert y.mesh == C
    # the fix the message of a refused call gives works and computes on x1's mesh
    lo, hi = on(LO, V), on(HI, V)
    y = lo + hi.to_device(lo.device)
    np.testing.assert_array_equal(np.asarray(y), V + V)
    assert y.mesh == LO


def test_scalars_host_and_0d_arrays_go_where_the_array_is():
    a = on(B, V, ("y",))
    zero_d = darray.sum(on(A, V))            # a 0-d result computed on mesh A
    for other, ref in [(2.0, V + 2.0), (np.arange(8.0), V + V), (jax.numpy.arange(8.0), V + V),
                       (zero_d, V + V.sum()), (on(A, np.float64(3.0)), V + 3.0)]:
        for y, r in ((a + other, ref), (other + a, ref)):
            np.testing.assert_array_equal(np.asarray(y), r)
            assert y.mesh == B and y.layout.split == (("y",),)
    # indices, searched values and set operands: also 0-d and host ones
    np.testing.assert_array_equal(np.asarray(darray.take(a, np.array([7, 0]))), V[[7, 0]])
    np.testing.assert_array_equal(np.asarray(darray.isin(a, on(A, np.float64(3.0)))), V == 3.0)
    np.testing.assert_array_equal(np.asarray(darray.searchsorted(a, on(A, np.float64(2.5)))),
                                  np.searchsorted(V, 2.5))
    y = indexing.setitem(a, (1,), on(A, np.float64(-1.0)))
    np.testing.assert_array_equal(np.asarray(y), np.where(np.arange(8) == 1, -1.0, V))
    assert y.mesh == B


def test_device_is_the_mesh_the_user_passed():
    mesh = mesh_of((2, 4), ("x", "y"), explicit=True)      # Explicit axes on new jax
    x = darray.asarray(np.ones((8, 4)), mesh=mesh)
    assert x.device == mesh
    y = darray.zeros((3,), device=x.device)
    assert y.device == mesh and y.mesh == x.mesh
    # arrays made with the Explicit mesh and with its Auto twin are on the same mesh
    z = darray.asarray(np.ones((8, 4)), mesh=compat.auto_twin(mesh))
    np.testing.assert_array_equal(np.asarray(x + z), np.full((8, 4), 2.0))
    auto = mesh_of((8,), ("d",))
    assert darray.asarray(np.ones(8), mesh=auto).device == auto


@pytest.mark.distributed_placement
def test_default_mesh_arrays_report_the_default_device_after_an_explicit_d_mesh_exists():
    # jax interns meshes: the Auto twin of an Explicit ('d',) mesh over all devices IS darray's
    # default mesh, so a mesh made elsewhere in the process must not become every default
    # array's `.device` (this broke test_namespace_info depending on test order)
    explicit = mesh_of((jax.device_count(),), ("d",), explicit=True)
    darray.asarray(np.arange(8.0), mesh=explicit)
    x = darray.asarray(np.arange(13.0))
    assert x.device == darray.__array_namespace_info__().default_device()
    assert x.device is darray.default_mesh()
    np.testing.assert_array_equal(np.asarray(x), np.arange(13.0))
