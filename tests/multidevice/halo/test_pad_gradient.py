"""Covers: darray/_src/extras/stencils.py

pad and gradient against numpy in float64 on even and uneven layouts: layouts asserted, HLO
with neighbour exchanges only (no all-gather), gradients through both."""
from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from helpers import collectives, mesh_of

import darray

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

MESHES = {(8,): ("d",), (2, 4): ("x", "y")}
LAYOUTS = [((16, 5), (8,), ("d",)), ((13, 5), (8,), ("d",)), ((5, 3), (8,), ("d",)),
           ((8, 12), (2, 4), ("x", "y")), ((7, 9), (2, 4), ("x", "y")),
           ((6, 11), (2, 4), (None, ("x", "y")))]
MODES = ("constant", "edge", "wrap", "reflect", "symmetric")


def put(host, mesh_shape, spec):
    return darray.asarray(host, mesh=mesh_of(mesh_shape, MESHES[mesh_shape]),
                          spec=spec)


# -- pad --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,mesh_shape,spec", LAYOUTS)
@pytest.mark.parametrize("mode", MODES)
def test_pad_matches_numpy(shape, mesh_shape, spec, mode):
    host = np.random.default_rng(0).standard_normal(shape)
    x = put(host, mesh_shape, spec)
    widths = [1, (2, 3), ((0, 4), (1, 0)), ((11, 2), (3, 13))]  # the last wider than axes
    for w in widths:
        kw = {"constant_values": ((1.5, -2.0), (3.0, 4.0))} if mode == "constant" else {}
        r = darray.pad(x, w, mode, **kw)
        ref = np.pad(host, w, mode, **kw)
        assert r.shape == ref.shape
        assert r.layout.split == x.layout.split and not r.layout.has_halo
        assert r.data.sharding.spec == x.data.sharding.spec
        np.testing.assert_array_equal(np.asarray(r), ref, err_msg=f"{mode} {w}")


def test_pad_scalar_constant_int_and_complex_dtypes():
    host = np.arange(26).reshape(13, 2)
    r = darray.pad(put(host, (8,), ("d",)), 2, constant_values=-1)
    np.testing.assert_array_equal(np.asarray(r), np.pad(host, 2, constant_values=-1))
    assert r.dtype == host.dtype
    c = host + 1j * host[::-1]
    r = darray.pad(put(c, (8,), ("d",)), (1, 2), "reflect")
    np.testing.assert_array_equal(np.asarray(r), np.pad(c, (1, 2), "reflect"))


def test_pad_haloed_input_and_empty_axis():
    host = np.random.default_rng(1).standard_normal((13, 4))
    x = put(host, (8,), ("d",)).halo(1)
    np.testing.assert_array_equal(np.asarray(darray.pad(x, 2, "wrap")),
                                  np.pad(host, 2, "wrap"))
    e = put(np.zeros((0, 3)), (8,), (None,))
    r = darray.pad(e, 1, constant_values=2.0)
    np.testing.assert_array_equal(np.asarray(r), np.pad(np.zeros((0, 3)), 1, constant_values=2))


def test_pad_hlo_neighbour_exchange_only():
    x = put(np.zeros((64, 16)), (2, 4), ("x", "y"))
    for mode in ("reflect", "wrap", "constant"):
        f = jax.jit(lambda d, m=mode: darray.pad(darray.DistArray._new(d, x.layout), 2, m).data)
        found = collectives(f.lower(x.data).compile().as_text())
        assert found and set(found) == {"collective-permute"}, (mode, found)


def test_pad_gradient_is_the_adjoint():
    n = 13
    host = np.random.default_rng(2).standard_normal(n)
    x = put(host, (8,), ("d",))
    weights = np.random.default_rng(3).standard_normal(n + 5)
    w = put(weights, (8,), ("d",))
    g = darray.grad(lambda a: darray.sum(darray.pad(a, (3, 2), "symmetric") ** 2 * w))(x)
    assert g.layout == x.layout
    P = np.stack([np.pad(e, (3, 2), "symmetric") for e in np.eye(n)], axis=1)
    np.testing.assert_allclose(np.asarray(g), P.T @ (2 * weights * (P @ host)), rtol=1e-12)


def test_pad_errors():
    x = put(np.ones((8, 3)), (8,), ("d",))
    with pytest.raises(ValueError, match=r"mode='linear_ramp' is not supported; use one of"):
        darray.pad(x, 1, "linear_ramp")
    with pytest.raises(ValueError, match=r"pad_width=-1 must be non-negative"):
        darray.pad(x, -1)
    with pytest.raises(TypeError, match=r"pad_width=1.5 must hold integers"):
        darray.pad(x, 1.5)
    with pytest.raises(ValueError, match=r"pad_width=\(1, 2, 3\) must be a number, a "):
        darray.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match=r"cannot extend the empty axis 0 with mode='reflect'"):
        darray.pad(put(np.ones((0, 3)), (8,), (None,)), 1, "reflect")


# -- gradient ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,mesh_shape,spec", LAYOUTS)
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(shape, mesh_shape, spec, edge_order):
    rng = np.random.default_rng(4)
    host = rng.standard_normal(shape)
    x = put(host, mesh_shape, spec)
    coords = np.cumsum(rng.random(shape[0]) + 0.1)
    cases = [((), {}), ((0.5,), {}), ((coords, 0.25), {}), ((coords,), {"axis": 0}),
             ((2.0,), {"axis": -1}), ((), {"axis": (1, 0)}), ((), {"axis": (1,)})]
    for args, kw in cases:
        got = darray.gradient(x, *args, edge_order=edge_order, **kw)
        ref = np.gradient(host, *args, edge_order=edge_order, **kw)
        if isinstance(ref, np.ndarray):
            assert isinstance(got, darray.DistArray)
            got, ref = (got,), (ref,)
        assert isinstance(got, tuple) and len(got) == len(ref)
        for g, r in zip(got, ref):
            assert g.layout == x.layout.without_halo()
            assert g.data.sharding.spec == x.data.sharding.spec
            np.testing.assert_allclose(np.asarray(g), r, rtol=1e-11, atol=1e-11,
                                       err_msg=f"{args} {kw}")


def test_gradient_1d_int_and_complex():
    ints = np.array([1, 4, 9, 16, 25, 36, 49, 64, 81, 100, 121, 144, 169])
    g = darray.gradient(put(ints, (8,), ("d",)))
    assert g.dtype == np.float64
    np.testing.assert_allclose(np.asarray(g), np.gradient(ints), rtol=1e-14)
    c = np.exp(1j * np.linspace(0, 3, 13))
    g = darray.gradient(put(c, (8,), ("d",)), 0.25, edge_order=2)
    np.testing.assert_allclose(np.asarray(g), np.gradient(c, 0.25, edge_order=2), rtol=1e-12)


def test_gradient_hlo_face_sized_permutes_only():
    x = put(np.zeros((64, 16)), (2, 4), ("x", "y"))
    for eo in (1, 2):
        f = jax.jit(lambda d, e=eo: darray.gradient(darray.DistArray._new(d, x.layout), axis=0,
                                                    edge_order=e).data)
        text = f.lower(x.data).compile().as_text()
        found = collectives(text)
        assert found and set(found) == {"collective-permute"}, found
        faces = re.findall(r"= \w+\[([\d,]*)\][^ ]* collective-permute(?:-start)?\(", text)
        assert all(s.split(",")[0] == str(eo) for s in faces), faces


def test_gradient_vjp_against_the_dense_stencil():
    n = 13
    host = np.random.default_rng(5).standard_normal(n)
    x = put(host, (8,), ("d",))
    cot = np.random.default_rng(6).standard_normal(n)
    _, pull = jax.vjp(lambda a: darray.gradient(a, 0.3, edge_order=2), x)
    (g,) = pull(put(cot, (8,), ("d",)))
    assert g.layout == x.layout
    G = np.stack([np.gradient(e, 0.3, edge_order=2) for e in np.eye(n)], axis=1)
    np.testing.assert_allclose(np.asarray(g), G.T @ cot, rtol=1e-12, atol=1e-12)


def test_gradient_errors():
    x = put(np.ones((8, 3)), (8,), ("d",))
    with pytest.raises(ValueError, match=r"edge_order=3 must be 1 or 2"):
        darray.gradient(x, edge_order=3)
    with pytest.raises(ValueError, match=r"axis 1 has 2 cells; at least edge_order \+ 1 = 3"):
        darray.gradient(put(np.ones((8, 2)), (8,), ("d",)), edge_order=2)
    with pytest.raises(ValueError, match=r"coordinates for axis 0 must be 1-D of length 8"):
        darray.gradient(x, np.arange(5.0), axis=0)
    with pytest.raises(TypeError, match=r"one spacing per axis in axis \(2\); got 3"):
        darray.gradient(x, 1.0, 2.0, 3.0)
