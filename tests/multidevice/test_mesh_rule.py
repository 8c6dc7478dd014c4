"""The one rule for operands on different meshes (api/operands.py, docs/architecture.md):
DistArrays of rank >= 1 on different meshes raise LayoutError naming the function, both meshes
and the call that moves an array; scalars, numpy/jax arrays and 0-d arrays go where the arrays
are. Checked for every multi-operand family."""
import jax
import numpy as np
import pytest

import darray
from darray._src import compat
from darray._src.api import indexing
from darray._src.errors import LayoutError

A = compat.make_auto_mesh((8,), ("x",))
B = compat.make_auto_mesh((2, 4), ("x", "y"))
# the same axis names and sizes as A over the devices in another order: another place
C = compat.make_auto_mesh((8,), ("x",), devices=jax.devices()[::-1])


def on(mesh, a, spec=None):
    return darray.asarray(a, mesh=mesh, spec=spec)


V = np.arange(8.0)
M = np.arange(64.0).reshape(8, 8) / 64 + np.eye(8)

# (family, function of (array on A, array on B)); each raises under the rule
CALLS = {
    "add": lambda a, b: darray.add(a, b),
    "operator": lambda a, b: a * b,
    "where": lambda a, b: darray.where(a > 0, a, b),
    "clip": lambda a, b: darray.clip(a, b, None),
    "isin": lambda a, b: darray.isin(a, b),
    "take": lambda a, b: darray.take(a, darray.astype(b, darray.int64)),
    "take_along_axis": lambda a, b: darray.take_along_axis(a, darray.astype(b, darray.int64)),
    "getitem": lambda a, b: a[darray.astype(b, darray.int64)],
    "getitem_mask": lambda a, b: a[b > 3],
    "setitem": lambda a, b: indexing.setitem(a, (slice(None),), b),
    "searchsorted": lambda a, b: darray.searchsorted(a, b),
    "concat": lambda a, b: darray.concat([a, b]),
    "stack": lambda a, b: darray.stack([a, b]),
    "vecdot": lambda a, b: darray.vecdot(a, b),
    "tensordot": lambda a, b: darray.tensordot(a, b, axes=1),
    "outer": lambda a, b: darray.linalg.outer(a, b),
    "matmul": lambda a, b: a @ b,
    "cross": lambda a, b: darray.linalg.cross(on(A, np.ones(3)), on(B, np.ones(3))),
    "solve": lambda a, b: darray.linalg.solve(on(A, M), b),
    "broadcast_arrays": lambda a, b: darray.broadcast_arrays(a, b),
    "meshgrid": lambda a, b: darray.meshgrid(a, b),
    "repeat": lambda a, b: darray.repeat(a, darray.astype(b, darray.int64), axis=0),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_different_meshes_raise(name):
    a, b = on(A, V), on(B, V % 3)
    with pytest.raises(LayoutError) as info:
        CALLS[name](a, b)
    msg = str(info.value)
    assert "Mesh(x:8; devices 0..7)" in msg and "Mesh(x:2, y:4; devices 0..7)" in msg, msg
    assert ".to_device(" in msg and "darray.asarray(" in msg, msg
    assert isinstance(info.value, ValueError)


def test_message_names_function_and_arguments():
    a, b = on(A, V), on(B, V)
    with pytest.raises(LayoutError, match=r"^add: x1 lives on Mesh\(x:8; devices 0..7\) but x2 "
                                          r"on Mesh\(x:2, y:4; devices 0..7\).*x2 = "
                                          r"x2.to_device\(x1.device\)"):
        darray.add(a, b)
    with pytest.raises(LayoutError, match=r"^matmul: x1 .* but x2"):
        darray.matmul(on(A, M), on(B, M))
    with pytest.raises(LayoutError, match=r"^concat: arrays\[0\] .* but arrays\[1\]"):
        darray.concat([a, b])


def test_same_names_other_device_order_is_another_mesh():
    a, c = on(A, V), on(C, V)
    with pytest.raises(LayoutError, match=r"devices \[7, 6, 5"):
        a + c
    # the fix the message gives works and computes on x1's mesh
    y = a + c.to_device(a.device)
    np.testing.assert_array_equal(np.asarray(y), V + V)
    assert y.mesh == A


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
    mesh = jax.make_mesh((2, 4), ("x", "y"))      # Explicit axes on new jax
    x = darray.asarray(np.ones((8, 4)), mesh=mesh)
    assert x.device == mesh
    y = darray.zeros((3,), device=x.device)
    assert y.device == mesh and y.mesh == x.mesh
    # arrays made with the Explicit mesh and with its Auto twin are on the same mesh
    z = darray.asarray(np.ones((8, 4)), mesh=compat.auto_twin(mesh))
    np.testing.assert_array_equal(np.asarray(x + z), np.full((8, 4), 2.0))
    auto = compat.make_auto_mesh((8,), ("d",))
    assert darray.asarray(np.ones(8), mesh=auto).device == auto


def test_default_mesh_arrays_report_the_default_device_after_an_explicit_d_mesh_exists():
    # jax interns meshes: the Auto twin of an Explicit ('d',) mesh over all devices IS darray's
    # default mesh, so a mesh made elsewhere in the process must not become every default
    # array's `.device` (this broke test_namespace_info depending on test order)
    explicit = jax.make_mesh((jax.device_count(),), ("d",))
    darray.asarray(np.arange(8.0), mesh=explicit)
    x = darray.asarray(np.arange(13.0))
    assert x.device == darray.__array_namespace_info__().default_device()
    assert x.device is darray.default_mesh()
    np.testing.assert_array_equal(np.asarray(x), np.arange(13.0))
