"""Covers: darray/_src/fft/api.py, darray/_src/backends/jax/fft_exec.py

Autodiff through darray.fft: values against analytic/numpy references, results stay sharded.

Meshes: an Auto mesh and a `jax.make_mesh` mesh (Explicit axis types, which darray converts to
its Auto twin). Every transform is run eagerly and under jit.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of, rand

import darray
import darray.fft as dfft
from darray._src.distarray.array import DistArray
from darray._src.placement.physical import masked_physical

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

SHAPE = (8, 6, 4)


@pytest.fixture(scope="module", params=["auto", "explicit"])
def mesh(request):
    if request.param == "auto":
        return mesh_of((2, 4), ("x", "y"))
    return mesh_of((2, 4), ("x", "y"), explicit=True)  # Explicit axis types in current jax


@pytest.fixture(params=["eager", "jit"])
def wrap(request):
    return (lambda f: f) if request.param == "eager" else jax.jit


def place(a, mesh):
    return darray.asarray(a, mesh=mesh, spec=("x", "y"))


def assert_sharded_like(g: DistArray, x: DistArray):
    assert isinstance(g, DistArray) and g.layout == x.layout
    assert g.data.sharding.is_equivalent_to(x.sharding, g.data.ndim)
    assert len(g.data.sharding.device_set) == 8 and not g.data.sharding.is_fully_replicated


def assert_distributed(arr):
    sharding = arr.sharding
    assert len(sharding.device_set) == 8 and not sharding.is_fully_replicated, sharding


def lsum(values, d: DistArray):
    """Sum over the logical cells of a physical array in `d`'s layout (padding is garbage and
    masked out; only an all-reduce, as a darray reduction does)."""
    return jnp.sum(masked_physical(values, d.layout, 0))


def test_grad_real_sum_and_squared_norm(mesh, wrap):
    a = rand(SHAPE)
    x = place(a, mesh)
    n = a.size

    def real_sum(v):
        y = dfft.fftn(v)
        return lsum(y.data.real, y)

    def sq_norm(v):
        y = dfft.fftn(v)
        return lsum(jnp.abs(y.data) ** 2, y)

    g = wrap(jax.grad(real_sum))(x)
    ref = np.zeros(SHAPE)
    ref[0, 0, 0] = n  # sum_k Re X_k = n * x_0
    np.testing.assert_allclose(np.asarray(g), ref, atol=1e-10)
    assert_sharded_like(g, x)

    val, g = wrap(jax.value_and_grad(sq_norm))(x)
    np.testing.assert_allclose(val, n * np.sum(a ** 2), rtol=1e-12)  # Parseval
    np.testing.assert_allclose(np.asarray(g), 2 * n * a, rtol=1e-12)
    assert_sharded_like(g, x)


def test_grad_real_transforms(mesh, wrap):
    a = rand(SHAPE, seed=1)
    x = place(a, mesh)
    w = rand(SHAPE[:-1] + (SHAPE[-1] // 2 + 1,), seed=2)

    wd = _physical_like(w, dfft.rfftn(x), np.float64)

    def weighted(v):
        y = dfft.rfftn(v)
        return lsum(wd * jnp.abs(y.data) ** 2, y)

    g = wrap(jax.grad(weighted))(x)
    ref = jax.grad(lambda v: jnp.sum(w * jnp.abs(jnp.fft.rfftn(v)) ** 2))(jnp.asarray(a))
    np.testing.assert_allclose(np.asarray(g), np.asarray(ref), rtol=1e-10, atol=1e-10)
    assert_sharded_like(g, x)

    # irfftn(rfftn(v)) is the identity: its gradient of sum(v * b) is b.
    b = rand(SHAPE, seed=3)
    bd = place(b, mesh).data

    def roundtrip(v):
        z = dfft.irfftn(dfft.rfftn(v), s=SHAPE)
        return lsum(z.data * bd, z)

    g = wrap(jax.grad(roundtrip))(x)
    np.testing.assert_allclose(np.asarray(g), b, rtol=1e-10, atol=1e-12)
    assert_sharded_like(g, x)


def test_jvp_and_vjp(mesh, wrap):
    a, t = rand(SHAPE, np.complex128, seed=4), rand(SHAPE, np.complex128, seed=5)
    x, tx = place(a, mesh), place(t, mesh)
    y, ty = wrap(lambda p, q: jax.jvp(dfft.fftn, (p,), (q,)))(x, tx)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(a), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(np.asarray(ty), np.fft.fftn(t), rtol=1e-12, atol=1e-10)
    assert ty.layout == y.layout
    assert_distributed(ty.data)

    y, pullback = jax.vjp(dfft.fftn, x)
    c = rand(SHAPE, np.complex128, seed=6)
    ct = DistArray._new(_physical_like(c, y), y.layout)  # a cotangent in y's k-space layout
    (xb,) = wrap(pullback)(ct)
    # fftn is linear and symmetric: its transpose is fftn itself.
    np.testing.assert_allclose(np.asarray(xb), np.fft.fftn(c), rtol=1e-10,
                               atol=1e-9)
    assert_sharded_like(xb, x)


def test_jacfwd_and_jacrev_small(mesh, wrap):
    shape = (4, 4, 2)
    a = rand(shape, seed=7)
    x = place(a, mesh)
    layout = x.layout

    def f(data):
        y = dfft.fftn(DistArray._new(data, layout))
        return masked_physical(y.data.real, y.layout, 0)

    # Reference: the real part of the DFT matrix applied along each axis.
    eye = np.eye(a.size).reshape((a.size,) + shape)
    ref = np.fft.fftn(eye, axes=(1, 2, 3)).real.reshape((a.size,) + shape)
    ref = np.moveaxis(ref.reshape(shape + shape), range(3), range(3, 6)).reshape(shape + shape)
    ref = np.moveaxis(ref, range(3, 6), range(3))
    for jac in (jax.jacfwd, jax.jacrev):
        J = wrap(jac(f))(x.data)
        assert_distributed(J)
        J = J[tuple(slice(0, n) for n in shape)]  # logical output cells (input is even)
        assert J.shape == shape + shape
        np.testing.assert_allclose(np.asarray(J), ref, atol=1e-10)


def test_vmap_over_physical_batches(mesh):
    a = rand((3,) + SHAPE, np.complex128, seed=8)
    layout = place(a[0], mesh).layout
    stacked = jnp.stack([place(a[i], mesh).data for i in range(3)])
    out = jax.jit(jax.vmap(lambda d: dfft.fftn(DistArray._new(d, layout)).data))(stacked)
    np.testing.assert_allclose(np.asarray(out), np.fft.fftn(a, axes=(1, 2, 3)), rtol=1e-10,
                               atol=1e-9)
    assert_distributed(out)


def _dot(u, v):
    return np.sum(np.asarray(u) * np.asarray(v))


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_adjoint_dot_product(mesh, name):
    """<A x, y> == <x, A^T y> with the pullback as A^T (real part for the real transforms)."""
    kshape = SHAPE[:-1] + (SHAPE[-1] // 2 + 1,)
    if name in ("fftn", "ifftn"):
        fn = getattr(dfft, name)
        x, y = rand(SHAPE, np.complex128, seed=10), rand(SHAPE, np.complex128, seed=11)
        xd = place(x, mesh)
        ax, pullback = jax.vjp(fn, xd)
        yd = DistArray._new(_physical_like(y, ax), ax.layout)
        (xt,) = pullback(yd)
        np.testing.assert_allclose(_dot(ax, yd), _dot(xd, xt), rtol=1e-10)
        ref = np.fft.fftn(x) if name == "fftn" else np.fft.ifftn(x)
        np.testing.assert_allclose(np.asarray(ax), ref, rtol=1e-10, atol=1e-12)
        assert_sharded_like(xt, xd)
    elif name == "rfftn":
        x = rand(SHAPE, seed=12)
        xd = place(x, mesh)
        ax, pullback = jax.vjp(dfft.rfftn, xd)
        y = rand(kshape, np.complex128, seed=13)
        yd = DistArray._new(_physical_like(y, ax), ax.layout)
        (xt,) = pullback(yd)
        np.testing.assert_allclose(np.real(_dot(ax, y)), _dot(x, xt), rtol=1e-10)
        assert_sharded_like(xt, xd)
    else:
        c = rand(kshape, np.complex128, seed=15)
        cd = dfft.rfftn(place(rand(SHAPE, seed=16), mesh))
        cd = DistArray._new(_physical_like(c, cd), cd.layout)
        ax, pullback = jax.vjp(lambda v: dfft.irfftn(v, s=SHAPE), cd)
        z = rand(SHAPE, seed=17)
        (ct,) = pullback(place(z, mesh))
        np.testing.assert_allclose(_dot(ax, z), np.real(_dot(c, ct)), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(ax), np.fft.irfftn(c, s=SHAPE, axes=(0, 1, 2)),
                                   rtol=1e-10, atol=1e-12)
        assert_sharded_like(ct, cd)


def _physical_like(host, like: DistArray, dtype=None):
    """Host values placed in `like`'s layout (padding zero)."""
    from darray._src.placement import physical
    return physical.host_to_physical(np.asarray(host, dtype or like.dtype), like.layout)


@pytest.mark.parametrize("spec", [(None, "x", "y"), ("x", "y")])
def test_vmap_over_distarray(mesh, spec):
    """vmap straight over a DistArray (the mapped axis must be even: vmap maps over the
    physical array, padding included). A split batch axis needs darray.vmap: plain jax.vmap
    would all-gather it and is refused (issue #28)."""
    a = rand((4,) + SHAPE, np.complex128, seed=9)
    x = darray.asarray(a, mesh=mesh, spec=spec)
    vmap = jax.vmap if spec[0] is None else darray.vmap
    if spec[0] is not None:
        with pytest.raises(ValueError, match=r"darray\.vmap"):
            jax.vmap(dfft.fftn)(x)
    y = vmap(dfft.fftn)(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(a, axes=(1, 2, 3)), rtol=1e-10,
                               atol=1e-9)
    assert y.shape == a.shape and y.data.shape == y.layout.physical_shape
    assert y.data.sharding.is_equivalent_to(y.sharding, y.ndim)
    assert_distributed(y.data)
    z = jax.jit(vmap(lambda v: dfft.ifftn(dfft.fftn(v))))(x)
    np.testing.assert_allclose(np.asarray(z), a, rtol=1e-10, atol=1e-12)
    assert z.layout.split[1:] == x.layout.split[1:]
    assert z.data.sharding.is_equivalent_to(z.sharding, z.ndim)
    assert_distributed(z.data)
