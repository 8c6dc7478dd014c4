"""Covers: darray/_src/distarray/array.py, darray/_src/fft/api.py, darray/_src/api/blocks.py

Issue 5's matrix: no sharding is ever lost under AD, with no annotation in user code.

For fftn, ifftn, rfftn, irfftn, the halo fill (through a stencil) and the halo reduce, each of
grad (real sum), grad (squared norm), value_and_grad, jvp, vjp, jacfwd and jacrev, eager and
under jit, on Explicit (`jax.make_mesh`) and Auto meshes, under Shardy and GSPMD: values equal a
dense single-device reference and every result is distributed like the array it belongs to.
"""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
import darray.fft as dfft

SHAPE = (4, 4, 4)      # even: physical == logical, so Jacobians compare cell by cell
HALF = (4, 4, 3)       # rfftn's k-space shape for SHAPE


# -- the ops, as real -> real functions of DistArrays, and their dense references ---------------
def _mix(y):
    """A real function of a complex result that sees both parts (jacrev needs real outputs)."""
    return darray.real(y) + 0.5 * darray.imag(y)


def _mix_ref(y):
    return jnp.real(y) + 0.5 * jnp.imag(y)


def _stencil(block):
    """Non-symmetric forward differences on the interior: its adjoint is not itself, so a wrong
    halo gradient (the fill applied to the cotangent) cannot pass."""
    c = block[1:-1, 1:-1, 1:-1]
    return 3.0 * block[2:, 1:-1, 1:-1] + block[1:-1, 2:, 1:-1] - block[1:-1, 1:-1, :-2] - 2.0 * c


def _stencil_ref(x):
    return 3.0 * jnp.roll(x, -1, 0) + jnp.roll(x, -1, 1) - jnp.roll(x, 1, 2) - 2.0 * x


def _block_index_lists(layout):
    """Per axis, for each block, the global cells of the block with one ghost each side."""
    lists = []
    for axis, n in enumerate(layout.shape):
        lists.append([np.arange(s - 1, e + 1) % n for s, e in layout.blocks(axis)])
    return lists


def _reduce_ref_factory(layout):
    blocks = list(itertools.product(*_block_index_lists(layout)))

    def ref(x):
        out = jnp.zeros_like(x)
        for idx in blocks:
            ix = jnp.ix_(*[jnp.asarray(i) for i in idx])
            out = out.at[ix].add(x[ix] ** 2)
        return out
    return ref


OPS = {
    "fftn": (SHAPE, lambda x: _mix(dfft.fftn(x)), lambda x: _mix_ref(jnp.fft.fftn(x))),
    "ifftn": (SHAPE, lambda x: _mix(dfft.ifftn(x)), lambda x: _mix_ref(jnp.fft.ifftn(x))),
    "rfftn": (SHAPE, lambda x: _mix(dfft.rfftn(x)), lambda x: _mix_ref(jnp.fft.rfftn(x))),
    "irfftn": (HALF, lambda x: dfft.irfftn(darray.astype(x, darray.complex128), s=SHAPE),
               lambda x: jnp.fft.irfftn(x.astype(jnp.complex128), s=SHAPE)),
    "halo_fill": (SHAPE, lambda x: darray.map_blocks(_stencil, x.halo(1)), _stencil_ref),
    "halo_reduce": (SHAPE, lambda x: darray.map_blocks(lambda b: b * b, x.halo(1)).halo_reduce(),
                    None),
}
TRANSFORMS = ["grad_sum", "grad_sqnorm", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev"]


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(params=["shardy", "gspmd"])
def partitioner(request):
    before = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", request.param == "shardy")
    yield request.param
    jax.config.update("jax_use_shardy_partitioner", before)


def assert_distributed(leaf):
    """Spread over all 8 devices and neither single-device nor fully replicated."""
    sharding = leaf.sharding
    assert len(sharding.device_set) == 8, sharding
    assert not sharding.is_fully_replicated, sharding


def assert_dist_like(result, layout):
    assert isinstance(result, darray.DistArray), type(result)
    assert result.layout == layout
    assert result.data.sharding.spec == layout.spec
    assert_distributed(result.data)


def _jac_leaf(j):
    leaves = jax.tree_util.tree_leaves(j)
    assert len(leaves) == 1
    return leaves[0]


# -- the matrix ---------------------------------------------------------------------------------
@pytest.mark.x64
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("mesh_kind", ["explicit", "auto"])
def test_ad_keeps_distribution(op, transform, mode, mesh_kind, partitioner):
    shape, f, ref = OPS[op]
    mesh = mesh_of((2, 4), explicit=mesh_kind == "explicit")
    rng = np.random.default_rng(abs(hash((op, transform))) % 2**32)
    host = rng.standard_normal(shape)
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    if ref is None:
        ref = _reduce_ref_factory(x.layout)
    xr = jnp.asarray(host)
    wrap = jax.jit if mode == "jit" else (lambda g: g)
    tol = dict(rtol=1e-9, atol=1e-9)

    if transform in ("grad_sum", "grad_sqnorm", "value_and_grad"):
        if transform == "grad_sum":
            loss, loss_ref = (lambda a: darray.sum(f(a))), (lambda a: jnp.sum(ref(a)))
        else:
            loss = lambda a: darray.sum(f(a) * f(a))  # noqa: E731
            loss_ref = lambda a: jnp.sum(ref(a) ** 2)  # noqa: E731
        if transform == "value_and_grad":
            # darray's losses are 0-d DistArrays: darray.value_and_grad unwraps them
            value, g = wrap(darray.value_and_grad(loss))(x)
            value_ref, g_ref = jax.value_and_grad(loss_ref)(xr)
            assert isinstance(value, darray.DistArray) and value.shape == ()
            np.testing.assert_allclose(np.asarray(value), np.asarray(value_ref), **tol)
        else:
            g = wrap(darray.grad(loss))(x)
            g_ref = jax.grad(loss_ref)(xr)
        assert_dist_like(g, x.layout)
        np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), **tol)

    elif transform == "jvp":
        t_host = rng.standard_normal(shape)
        t = darray.asarray(t_host, mesh=mesh, spec=("x", "y"))
        y, ty = wrap(lambda a, b: jax.jvp(f, (a,), (b,)))(x, t)
        y_ref, ty_ref = jax.jvp(ref, (xr,), (jnp.asarray(t_host),))
        assert_dist_like(ty, y.layout)
        np.testing.assert_allclose(np.asarray(y), np.asarray(y_ref), **tol)
        np.testing.assert_allclose(np.asarray(ty), np.asarray(ty_ref), **tol)

    elif transform == "vjp":
        y = f(x)
        ct_host = rng.standard_normal(y.shape)
        ct = darray.asarray(ct_host, mesh=mesh, spec=y.layout.spec)
        ct = darray.DistArray._new(ct.data, y.layout)  # the cotangent carries y's exact layout

        def pull(a, c):
            _, back = jax.vjp(f, a)
            return back(c)[0]
        g = wrap(pull)(x, ct)
        _, back_ref = jax.vjp(ref, xr)
        assert_dist_like(g, x.layout)
        np.testing.assert_allclose(np.asarray(g), np.asarray(back_ref(jnp.asarray(ct_host))[0]),
                                   **tol)

    else:
        jac = wrap(jax.jacfwd(f) if transform == "jacfwd" else jax.jacrev(f))(x)
        jac_ref = (jax.jacfwd if transform == "jacfwd" else jax.jacrev)(ref)(xr)
        leaf = _jac_leaf(jac)
        y = f(x)
        assert leaf.shape == y.layout.physical_shape + x.layout.physical_shape
        assert_distributed(leaf)
        # without halo, logical cell i sits at physical index i (padding is at the end)
        logical = np.asarray(leaf)[tuple(slice(0, n) for n in y.shape + shape)]
        np.testing.assert_allclose(logical, np.asarray(jac_ref), **tol)


# -- adjoint (dot-product) tests for every linear op ------------------------------------------
@pytest.mark.parametrize("mesh_shape, spec", [((8,), ("x",)), ((2, 4), ("x", "y")),
                                              ((4, 2), ("x", "y"))])
@pytest.mark.x64
@pytest.mark.parametrize("shape", [(8, 6, 4), (13, 10, 7)])
def test_linear_ops_are_adjoint(mesh_shape, spec, shape):
    """<A x, y> == <x, A^T y> with A^T from jax.vjp: the transposes darray runs are right."""
    mesh = mesh_of(mesh_shape, ("x", "y")[: len(mesh_shape)])
    rng = np.random.default_rng(7)
    x_host = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    x = darray.asarray(x_host, mesh=mesh, spec=spec)
    xr = darray.asarray(x_host.real.copy(), mesh=mesh, spec=spec)
    cases = {
        "fftn": (x, dfft.fftn),
        "ifftn": (x, dfft.ifftn),
        "rfftn": (xr, dfft.rfftn),
        "halo": (xr, lambda a: a.halo(1)),
        "halo_reduce": (xr.halo(1), lambda a: a.halo_reduce()),
    }
    for name, (arg, op) in cases.items():
        y, back = jax.vjp(op, arg)
        ct_host = rng.standard_normal(y.data.shape)
        if np.iscomplexobj(np.asarray(y.data)):
            ct_host = ct_host + 1j * rng.standard_normal(y.data.shape)
        ct = darray.DistArray._new(jax.device_put(ct_host.astype(y.data.dtype), y.data.sharding),
                                   y.layout)
        (g,) = back(ct)
        assert g.layout == arg.layout, name
        # bilinear products (jax's transpose of a complex-linear map does not conjugate) over
        # the physical arrays, where padding and ghosts take part consistently
        lhs = np.sum(np.asarray(ct.data) * np.asarray(y.data))
        rhs = np.sum(np.asarray(g.data) * np.asarray(arg.data))
        if not np.iscomplexobj(np.asarray(arg.data)):
            lhs = lhs.real  # a real -> complex map: JAX's VJP is the real part of the transpose
        np.testing.assert_allclose(lhs, rhs, rtol=1e-9, err_msg=name)
