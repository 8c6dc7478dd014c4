"""Covers: darray/_src/halo/api.py, darray/_src/plans/halo_plan.py

The Dirichlet ghost rules of halo: "antisymmetric" = -np.pad(mode="symmetric") and
"antireflect" = -np.pad(mode="reflect") in the ghosts, their adjoint (halo_reduce), gradients,
and the refusal of widths with nothing to mirror."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft
from halo_reference import block_windows
from helpers import mesh_of

import darray

ODD = {"antisymmetric": "symmetric", "antireflect": "reflect"}
MESHES = {(8,): ("d",), (2, 4): ("x", "y")}


def make(shape, mesh_shape, spec, seed=0):
    host = np.random.default_rng(seed).standard_normal(shape)
    mesh = mesh_of(mesh_shape, MESHES[mesh_shape])
    return host, darray.asarray(host, mesh=mesh, spec=spec)


def odd_pad(a, widths, rules):
    """np.pad axis by axis, ghosts of the odd rules negated (the issue's definition)."""
    for axis, ((lo, hi), rule) in enumerate(zip(widths, rules)):
        pads = [(0, 0)] * a.ndim
        pads[axis] = (lo, hi)
        if rule in ODD:
            body = np.pad(a, pads, mode=ODD[rule])
            sign = np.concatenate([-np.ones(lo), np.ones(a.shape[axis]), -np.ones(hi)])
            a = body * sign.reshape([-1 if i == axis else 1 for i in range(a.ndim)])
        else:
            a = np.pad(a, pads, mode={"periodic": "wrap"}.get(rule, rule))
    return a


def check_filled(y, host, rules):
    ref = odd_pad(host, y.layout.halo, rules)
    data = np.asarray(y.data)
    count = 0
    for blk, padded, phys in block_windows(y.layout):
        np.testing.assert_array_equal(data[phys], ref[padded], err_msg=f"block {blk}")
        count += 1
    assert count > 0


@pytest.mark.x64
@pytest.mark.parametrize("rule", sorted(ODD))
@pytest.mark.parametrize("n", [16, 13, 7, 4])
@pytest.mark.parametrize("width", [1, 2, 3])
def test_fill_1d_mesh(rule, n, width):
    host, x = make((n, 5), (8,), ("d",))
    y = x.halo(width, boundary=rule)
    assert y.layout.halo == ((width, width), (width, width))
    assert y.layout.split == (("d",), ())
    assert y.data.sharding.spec == x.data.sharding.spec
    check_filled(y, host, (rule, rule))
    np.testing.assert_array_equal(np.asarray(y), host)


@pytest.mark.x64
@pytest.mark.parametrize("shape", [(8, 16, 4), (7, 13, 3)])
def test_fill_pencil_mixed_rules(shape):
    rules = ("antisymmetric", "antireflect", "periodic")
    host, x = make(shape, (2, 4), ("x", "y"))
    y = x.halo(((2, 1), 1, 2), boundary=rules)
    assert y.layout.split == (("x",), ("y",), ())
    check_filled(y, host, rules)


@pytest.mark.x64
def test_odd_mirror_is_what_the_sine_transforms_assume():
    """A sine series sampled at cell centres (a DST-II field: scipy's dst type 2 diagonalises
    it) continues across both walls as the antisymmetric ghosts; one sampled on the nodes with
    walls at index 0 and n-1 (a DST-I field on its interior) continues as the antireflect
    ghosts. The series is evaluated past the ends for the reference."""
    n, w = 13, 3
    coef = np.random.default_rng(3).standard_normal(n)
    waves = np.pi * np.arange(1, n + 1)
    mesh = mesh_of((8,), ("d",))

    def series(t, period):
        return np.array([np.sum(coef * np.sin(waves * s / period)) for s in t])
    # cell centres t = j + 1/2: odd about t = 0 and t = n
    wide = series(np.arange(-w, n + w) + 0.5, n)
    cells = wide[w:w + n]
    scale = np.r_[np.full(n - 1, n), 2 * n]
    np.testing.assert_allclose(scipy.fft.dst(cells, type=2), scale * coef, atol=1e-9)
    y = darray.asarray(cells, mesh=mesh, spec=("d",)).halo(w, boundary="antisymmetric")
    check_filled(y, cells, ("antisymmetric",))
    ref = odd_pad(cells, ((w, w),), ("antisymmetric",))
    np.testing.assert_allclose(ref, wide, atol=1e-12)
    # nodes t = j on [0, n-1]: zero on the walls, odd about them
    m = n - 2
    coef = coef[:m]
    waves = waves[:m]
    wide = series(np.arange(-w, n + w), n - 1)
    nodes = wide[w:w + n]
    np.testing.assert_allclose(nodes[[0, -1]], 0, atol=1e-12)
    np.testing.assert_allclose(scipy.fft.dst(nodes[1:-1], type=1), (n - 1) * coef, atol=1e-9)
    y = darray.asarray(nodes, mesh=mesh, spec=("d",)).halo(w, boundary="antireflect")
    check_filled(y, nodes, ("antireflect",))
    np.testing.assert_allclose(odd_pad(nodes, ((w, w),), ("antireflect",)), wide, atol=1e-12)


@pytest.mark.parametrize("rule", sorted(ODD))
@pytest.mark.parametrize("mesh_shape,shape,spec", [((8,), (13, 3), ("d",)),
                                                   ((2, 4), (6, 9, 3), ("x", "y"))])
@pytest.mark.x64
def test_reduce_is_the_adjoint(rule, mesh_shape, shape, spec):
    """<fill(x), y> == <x, reduce(y)> over owned and ghost cells, and reduce against a numpy
    scatter with signs."""
    host, x = make(shape, mesh_shape, spec, seed=5)
    y0 = x.halo(2, boundary=rule)
    yh = np.random.default_rng(6).standard_normal(y0.data.shape)
    y = darray.DistArray._new(jax.device_put(jnp.asarray(yh), y0.data.sharding), y0.layout)
    r = y.halo_reduce(boundary=rule)
    assert r.layout == x.layout and r.data.sharding.spec == x.data.sharding.spec
    valid = np.zeros(y0.data.shape, bool)
    for _, _, phys in block_windows(y0.layout):
        valid[phys] = True
    lhs = np.sum(np.where(valid, np.asarray(y0.data) * yh, 0.0))
    rhs = np.sum(host * np.asarray(r))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    # numpy reference: fold each block's window back with the fill's index map and signs
    index = np.arange(np.prod(shape)).reshape(shape)
    idx_pad = odd_pad(index.astype(float) + 1, y0.layout.halo, (rule,) * len(shape))
    expect = np.zeros(np.prod(shape))
    for _, padded, phys in block_windows(y0.layout):
        src = idx_pad[padded]
        np.add.at(expect, np.abs(src).astype(int).ravel() - 1, (np.sign(src) * yh[phys]).ravel())
    np.testing.assert_allclose(np.asarray(r), expect.reshape(shape), rtol=1e-12, atol=1e-12)


@pytest.mark.x64
def test_gradient_through_an_odd_stencil():
    """d/dx of sum((D x)^2) for a forward difference with an antisymmetric wall, against the
    dense numpy matrix of the same stencil; the gradient keeps the layout."""
    n = 13
    host, x = make((n, 4), (8,), ("d",), seed=2)

    def loss(u):
        d = darray.map_blocks(lambda b: b[1:, :] - b[:-1, :], u.halo({0: (0, 1)},
                                                                   boundary="antisymmetric"))
        return darray.sum(d * d)
    g = darray.grad(loss)(x)
    assert g.layout == x.layout
    assert g.data.sharding.spec == x.data.sharding.spec
    # dense: ghost x[n] = -x[n-1], so (Dx)_{n-1} = -2 x[n-1]
    D = -np.eye(n) + np.eye(n, k=1)
    D[n - 1, n - 1] = -2.0
    np.testing.assert_allclose(np.asarray(g), 2 * D.T @ (D @ host), rtol=1e-12)


@pytest.mark.parametrize("rule,n,width", [("antisymmetric", 3, 4), ("antireflect", 3, 3),
                                          ("antireflect", 1, 1)])
def test_width_beyond_the_mirror_is_refused(rule, n, width):
    _, x = make((n, 4), (8,), ("d",))
    cells = n - (rule == 'antireflect')
    with pytest.raises(darray.LayoutError, match=rf"boundary='{rule}'.*only {cells} cell"):
        x.halo(width, boundary=rule)


def test_bool_refused():
    x = darray.asarray(np.ones((8, 2), bool), mesh=mesh_of((8,), ("d",)),
                       spec=("d",))
    with pytest.raises(TypeError, match="antisymmetric.*bool"):
        x.halo(1, boundary="antisymmetric")
