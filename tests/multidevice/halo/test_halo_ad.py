"""Covers: darray/_src/halo/api.py, darray/_src/api/blocks.py
Covers: darray/_src/backends/jax/halo_exchange.py

AD through halo / halo_reduce / map_blocks: the VJP of the fill is the reduce and vice versa.

jaxDecomp's halo gradient applies the fill to the cotangent; these tests would catch that (the
non-symmetric forward-difference stencil has a gradient that differs from its fill).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from halo_reference import check_filled, reduce_reference
from helpers import mesh_of
from jax.sharding import PartitionSpec as P

import darray

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64


def _mesh(kind):
    if kind == "explicit":
        return mesh_of((2, 4), ("x", "y"), explicit=True)
    return mesh_of((2, 4), ("x", "y"))


MESH_KINDS = ["auto", "explicit"]


def forward_diff(b):
    """(D u)_i = u_{i+1} - u_i along axis 0 of a block with one hi ghost on axis 0."""
    return b[1:] - b[:-1]


def forward_diff_numpy(a):
    return np.roll(a, -1, axis=0) - a


def laplacian2(b):
    return b[:-2, 1:-1] + b[2:, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] - 4 * b[1:-1, 1:-1]


def laplacian2_numpy(a):
    return sum(np.roll(a, s, axis=k) for k in range(2) for s in (1, -1)) - 4 * a


def _make(kind, shape=(13, 10), seed=0):
    host = np.random.default_rng(seed).standard_normal(shape)
    return host, darray.asarray(host, mesh=_mesh(kind), spec=("x", "y"))


def _loss(x, w):
    d = darray.map_blocks(forward_diff, x.halo({0: (0, 1)}))
    return jnp.sum(w * d.to_jax())


@pytest.mark.parametrize("kind", MESH_KINDS)
@pytest.mark.parametrize("jit", [False, True])
def test_grad_through_stencil_matches_numpy(kind, jit):
    host, x = _make(kind)
    w = np.random.default_rng(1).standard_normal(host.shape)
    grad = jax.grad(_loss)
    g = (jax.jit(grad) if jit else grad)(x, jnp.asarray(w))
    # d/du sum(w * (u[i+1] - u[i])) = w[i-1] - w[i]   (D^T w, not D w)
    np.testing.assert_allclose(np.asarray(g), np.roll(w, 1, axis=0) - w, rtol=1e-12, atol=1e-12)
    assert isinstance(g, darray.DistArray) and g.layout == x.layout
    assert g.data.sharding.spec == P("x", "y")


@pytest.mark.parametrize("kind", MESH_KINDS)
def test_value_and_grad_laplacian_energy(kind):
    host, x = _make(kind, (16, 12))

    def energy(u):
        return 0.5 * jnp.sum(darray.map_blocks(laplacian2, u.halo(1)).to_jax() ** 2)
    value, g = jax.jit(jax.value_and_grad(energy))(x)
    lap = laplacian2_numpy(host)
    np.testing.assert_allclose(value, 0.5 * np.sum(lap ** 2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g), laplacian2_numpy(lap), rtol=1e-11, atol=1e-11)
    assert g.data.sharding.spec == P("x", "y")


@pytest.mark.parametrize("kind", MESH_KINDS)
@pytest.mark.parametrize("rule", ["periodic", "reflect", "edge"])
def test_vjp_of_fill_is_reduce_and_vjp_of_reduce_is_fill(kind, rule):
    host, x = _make(kind)
    y, pullback = jax.vjp(lambda a: a.halo((2, 1), boundary=rule), x)
    ybar_host = np.random.default_rng(2).standard_normal(y.data.shape)
    ybar = darray.DistArray._new(jax.device_put(jnp.asarray(ybar_host), y.data.sharding), y.layout)
    (xbar,) = pullback(ybar)
    assert xbar.layout == x.layout
    np.testing.assert_allclose(np.asarray(xbar), reduce_reference(ybar, rule), rtol=1e-12,
                               atol=1e-12)
    # and backwards: the VJP of the reduce is the fill
    r, pullback = jax.vjp(lambda a: a.halo_reduce(boundary=rule), ybar)
    assert r.layout == x.layout
    (back,) = pullback(x)
    assert back.layout == y.layout
    check_filled(back, host, rule)


@pytest.mark.parametrize("kind", MESH_KINDS)
def test_jvp_of_fill_and_reduce(kind):
    host, x = _make(kind)
    t_host = np.random.default_rng(3).standard_normal(host.shape)
    t = darray.asarray(t_host, mesh=_mesh(kind), spec=("x", "y"))
    y, ty = jax.jvp(lambda a: a.halo(1), (x,), (t,))
    check_filled(y, host, "periodic")
    check_filled(ty, t_host, "periodic")
    r, tr = jax.jit(lambda a, b: jax.jvp(lambda c: c.halo_reduce(), (a,), (b,)))(y, ty)
    np.testing.assert_allclose(np.asarray(tr), reduce_reference(ty, "periodic"), rtol=1e-12)
    assert tr.layout == x.layout and tr.data.sharding.spec == P("x", "y")


def test_jacfwd_small_periodic_laplacian():
    mesh = mesh_of((8,), ("d",))
    n = 16
    x = darray.asarray(np.zeros(n), mesh=mesh, spec=("d",))

    def f(u):
        return darray.map_blocks(lambda b: b[:-2] - 2 * b[1:-1] + b[2:], u.halo(1)).to_jax()
    jac = jax.jacfwd(f)(x)
    matrix = np.roll(np.eye(n), 1, 1) + np.roll(np.eye(n), -1, 1) - 2 * np.eye(n)
    # one Jacobian row per output cell; sharded, not gathered, along the output axis (the
    # stencil output was split) or the input, and the Layout says which (issue #28)
    assert not jac.data.sharding.is_fully_replicated
    assert jac.layout.split in ((("d",), ()), ((), ("d",)))
    assert jac.data.sharding.is_equivalent_to(jac.sharding, 2)
    np.testing.assert_allclose(np.asarray(jac), matrix, atol=1e-12)
    jac_rev = jax.jacrev(f)(x)
    assert jac_rev.layout.split == ((), ("d",))
    assert jac_rev.data.sharding.is_equivalent_to(jac_rev.sharding, 2)
    np.testing.assert_allclose(np.asarray(jac_rev), matrix, atol=1e-12)


def test_vmap_over_batch_of_fields():
    mesh = mesh_of((2, 4), ("x", "y"))
    host = np.random.default_rng(4).standard_normal((3, 8, 12))
    layout = darray.asarray(host[0], mesh=mesh, spec=("x", "y")).layout
    stacked = jnp.stack([darray.asarray(h, mesh=mesh, spec=("x", "y")).data for h in host])

    def lap_data(d):
        return darray.map_blocks(laplacian2, darray.DistArray._new(d, layout).halo(1)).data
    out = jax.vmap(lap_data)(stacked)
    for k in range(3):
        got = np.asarray(darray.DistArray._new(out[k], layout))
        np.testing.assert_allclose(got, laplacian2_numpy(host[k]), rtol=1e-12, atol=1e-12)
    # and vmap of a scalar parameter through grad
    x = darray.asarray(host[0], mesh=mesh, spec=("x", "y"))

    def loss(s):
        return jnp.sum(darray.map_blocks(lambda b: s * laplacian2(b), x.halo(1)).to_jax() ** 2)
    grads = jax.vmap(jax.grad(loss))(jnp.array([1.0, 2.0]))
    ref = 2 * np.array([1.0, 2.0]) * np.sum(laplacian2_numpy(host[0]) ** 2)
    np.testing.assert_allclose(np.asarray(grads), ref, rtol=1e-12)


def test_painting_gradient_is_fill():
    """Particle-mesh painting: d/d(deposit) of <field, reduce(deposit)> is field.halo()."""
    host, x = _make("auto", (16, 8))
    y0 = x.halo(1)

    def read(deposit):
        return jnp.sum(x.to_jax() * deposit.halo_reduce().to_jax())
    g = jax.grad(read)(darray.DistArray._new(jnp.zeros_like(y0.data), y0.layout))
    assert g.layout == y0.layout
    check_filled(g, host, "periodic")
