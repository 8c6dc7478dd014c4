"""Covers: darray/_src/api/transforms.py, darray/_src/placement/rebuilt.py

Jacobians and other transformed outputs are ordinary DistArrays (issue #28, point 1).

JAX builds a Jacobian of a DistArray function of a DistArray as a nest of pytrees,
``DistArray(DistArray(leaf, input layout), output layout)``, and a Hessian three deep. Each is
one DistArray whose Layout matches its data: output axes, then input axes, each split as the
data is (see darray/_src/placement/rebuilt.py). Values against single-device jax.numpy (float64).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of, tol

import darray
import darray.fft as dfft
from darray import DistArray


@pytest.fixture(scope="module")
def mesh():
    return mesh_of((2, 4), ("x", "y"))


def assert_matches_data(a, want, distributed=True):
    """a is one DistArray whose Layout says how its data is stored, with want's values."""
    assert isinstance(a, DistArray)
    before = a.layout  # reading the Layout computes the settled one and settles nothing
    _ = a.data  # the first data read settles what JAX rebuilt
    assert not isinstance(a._stored, DistArray)
    assert a.layout == before
    assert a.data.shape == a.layout.physical_shape
    assert a.data.sharding.is_equivalent_to(a.sharding, a.ndim), (a.layout, a.data.sharding)
    assert not distributed or not a.data.sharding.is_fully_replicated
    # float32 with x64 off: sums of a few terms, summed in another order than jax.numpy's
    np.testing.assert_allclose(np.asarray(a), want, rtol=tol(a.dtype), atol=tol(a.dtype))


def fft_real(x):
    return dfft.fftn(x).real


def fft_real_ref(x):
    return jnp.fft.fftn(x).real


def cube(x):
    return darray.sum(x * x * x)


def cube_ref(x):
    return jnp.sum(x * x * x)


SHAPES = [(8, 8, 8), (6, 5, 4)]  # even, and uneven (padded) on both split axes


@pytest.mark.parametrize("shape, how", [(s, h) for s in SHAPES for h in ("jacfwd", "jacrev")]
                         + [((6, 5, 4), "jit(jacfwd)"), ((8, 8, 8), "jit(jacrev)")])
@pytest.mark.x64
def test_jacobian_is_one_distarray_and_every_function_takes_it(mesh, shape, how):
    host = np.random.default_rng(1).standard_normal(shape)
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    transform = jax.jacfwd if how.endswith("jacfwd)") or how == "jacfwd" else jax.jacrev
    jac = transform(fft_real)
    J = (jax.jit(jac) if how.startswith("jit") else jac)(x)
    ref = np.asarray(jax.jacfwd(fft_real_ref)(jnp.asarray(host)))
    assert J.shape == shape + shape
    assert_matches_data(J, ref)
    # output axes, then input axes: each keeps its own split unless the other side uses it
    out_split, in_split = dfft.fftn(x).layout.split, x.layout.split
    assert all(s in ((), o) for s, o in zip(J.layout.split, out_split + in_split))
    # the calls, which raised TypeError or replicated
    assert_matches_data(darray.sum(J, axis=5), ref.sum(axis=5))
    assert_matches_data(J * 2, ref * 2)
    assert_matches_data(J[1], ref[1])
    n = int(np.prod(shape))
    assert_matches_data(darray.reshape(J, (n, n)), ref.reshape(n, n))
    assert_matches_data(jax.jit(lambda j: darray.sum(j * j, axis=(0, 1)))(J),
                        (ref * ref).sum(axis=(0, 1)))


def test_reshape_of_a_jacobian_moves_no_more_than_an_all_to_all(mesh):
    """Before: the Layout claimed the last input axis split while the data was split on the
    input's first axes, and reshape "Involuntarily fully rematerialized" (all-gathered) J."""
    x = darray.asarray(np.random.default_rng(2).standard_normal((8, 8, 8)), device=mesh,
                       spec=("x", "y"))
    for J in (jax.jacfwd(fft_real)(x), jax.jacrev(fft_real)(x)):
        _ = J.data  # read first: an unread Jacobian handed to jit is settled by the rule inside
        hlo = jax.jit(lambda j: darray.reshape(j, (512, 512))).lower(J).compile().as_text()
        assert "all-gather" not in hlo
        for op in ("sum", "mul", "getitem"):
            f = {"sum": lambda j: darray.sum(j, axis=5), "mul": lambda j: j * 2,
                 "getitem": lambda j: j[1]}[op]
            hlo = jax.jit(f).lower(J).compile().as_text()
            assert "all-gather" not in hlo and "all-to-all" not in hlo, op


@pytest.mark.x64
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("jit", [False, True])
def test_hessian_and_gradient_jacobian(mesh, shape, jit):
    host = np.random.default_rng(3).standard_normal(shape)
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    wrap = jax.jit if jit else (lambda f: f)
    H = wrap(jax.hessian(cube))(x)  # a nest three deep: 0-d loss, input, input
    assert H.shape == shape + shape
    assert_matches_data(H, np.asarray(jax.hessian(cube_ref)(jnp.asarray(host))))
    g = wrap(jax.jacrev(cube))(x)  # the Jacobian of a 0-d loss has the input's layout
    assert g.layout == x.layout
    assert_matches_data(g, 3 * host ** 2)


@pytest.mark.x64
@pytest.mark.parametrize("shape", SHAPES)
def test_jvp_and_vjp_of_darray_grad(mesh, shape):
    host = np.random.default_rng(4).standard_normal(shape)
    t_host = np.random.default_rng(5).standard_normal(shape)
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    t = darray.asarray(t_host, device=mesh, spec=("x", "y"))
    g = darray.grad(cube)
    primal, tangent = jax.jvp(g, (x,), (t,))
    out, pullback = jax.vjp(g, x)
    (cot,) = pullback(t)
    for a, want in ((primal, 3 * host ** 2), (tangent, 6 * host * t_host),
                    (out, 3 * host ** 2), (cot, 6 * host * t_host)):
        assert a.layout == x.layout
        assert_matches_data(a, want)


@pytest.mark.parametrize("shape", SHAPES)
def test_jacobians_with_a_plain_jax_side(mesh, shape):
    """A plain jax output gives leading plain axes, a plain jax input trailing ones. (The
    plain side is as JAX shards it: `to_jax()` of an uneven array may come back replicated.)"""
    host = np.random.default_rng(6).standard_normal(shape)
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    xj = jnp.asarray(host)
    for jac in (jax.jacfwd, jax.jacrev):
        J = jac(lambda a: darray.sum(a * a, axis=0).to_jax())(x)
        assert_matches_data(J, np.asarray(jac(lambda a: jnp.sum(a * a, axis=0))(xj)),
                            distributed=False)
        J = jac(lambda a: darray.asarray(a, device=mesh, spec=("x", "y")) ** 2)(xj)
        assert_matches_data(J, np.asarray(jac(lambda a: a ** 2)(xj)), distributed=False)


@pytest.mark.x64
def test_unread_nest_passes_through_jit(mesh):
    """A Jacobian handed to jit before darray read it is settled inside the trace (pinned to
    the rule's Layout) and comes out consistent."""
    host = np.random.default_rng(7).standard_normal((6, 5, 4))
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    J = jax.jacrev(fft_real)(x)
    assert isinstance(J._stored, DistArray)  # nothing has read it yet
    ref = np.asarray(jax.jacrev(fft_real_ref)(jnp.asarray(host)))
    out = jax.jit(lambda j: j * 3.0)(J)
    assert_matches_data(out, 3 * ref)
    assert_matches_data(J, ref)


def test_nested_vmap_of_a_jacobian_keeps_the_batch_split():
    """darray.vmap over a split batch axis of jacfwd: the batch stays split, the Jacobian of
    each member is laid out as its data."""
    mesh = mesh_of((2, 2, 2), ("c", "x", "y"))
    host = np.random.default_rng(8).standard_normal((2, 4, 6))
    xs = darray.asarray(host, device=mesh, spec=("c", "x", "y"))
    f = lambda a: darray.sin(a) * darray.sum(a)  # noqa: E731
    for wrap in (lambda g: g, jax.jit):
        J = wrap(darray.vmap(jax.jacfwd(f)))(xs)
        ref = np.asarray(jax.vmap(jax.jacfwd(lambda a: jnp.sin(a) * jnp.sum(a)))(
            jnp.asarray(host)))
        assert J.shape == (2, 4, 6, 4, 6) and J.layout.split[0] == ("c",)
        assert_matches_data(J, ref)


def test_jacobian_across_two_meshes_says_so(mesh):
    other = mesh_of((8,), ("d",))
    x = darray.asarray(np.ones((8, 4)), device=mesh, spec=("x", "y"))
    J = jax.jacfwd(lambda a: darray.asarray(a * 2, device=other, spec=("d",)))(x)
    with pytest.raises(darray.LayoutError, match="two meshes"):
        _ = J.layout
