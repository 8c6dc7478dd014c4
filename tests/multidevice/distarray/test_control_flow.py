"""Covers: darray/_src/distarray/array.py

lax.scan, while_loop, fori_loop and cond with DistArray carries (issue #28, point 5).

A body that returns its carry in another layout than it received cannot be fixed behind the
user's back (JAX traces the loop before darray sees the mismatch), so JAX's pytree-metadata
error carries the one-line fix. Each test applies that fix and compares with jax.numpy.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
import darray.fft as dfft

FIX = r"darray\.asarray\(new, device=c\.device, spec=c\.layout\.spec\)"


@pytest.fixture(scope="module")
def mesh():
    return mesh_of((2, 4), ("x", "y"))


@pytest.fixture(scope="module")
def host():
    return np.random.default_rng(5).standard_normal((8, 12))


def _turn(c, mesh):
    """One step that changes the layout: the transpose-free way, a reshard to another split."""
    return darray.asarray(c * 0.5 + 1.0, device=mesh, spec=("y", "x"))


def _reference_steps(a, n):
    for _ in range(n):
        a = a * 0.5 + 1.0
    return a


def _assert_same_place(out, like, want):
    assert out.layout == like.layout
    assert out.data.sharding.is_equivalent_to(like.sharding, like.ndim)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12)


@pytest.mark.x64
@pytest.mark.parametrize("jit", [False, True])
def test_scan_carry_in_another_layout_names_the_fix(mesh, host, jit):
    x = darray.asarray(host, device=mesh, spec=("x", "y"))

    def bad(c, _):
        return _turn(c, mesh), None

    def good(c, _):
        new = _turn(c, mesh)
        return darray.asarray(new, device=c.device, spec=c.layout.spec), None

    def run(body):
        return jax.lax.scan(body, x, None, length=3)[0]
    if jit:
        run = jax.jit(run, static_argnums=0)
    with pytest.raises(TypeError, match=r"(?s)pytree structure.*darray: the carry enters the "
                                        r"loop body split \(x, y\).*leaves it split \(y, x\).*"
                                        + FIX + r".*here spec=\('x', 'y'\)"):
        run(bad)
    _assert_same_place(run(good), x, _reference_steps(host, 3))


@pytest.mark.x64
def test_while_and_fori_loop_name_the_fix(mesh, host):
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    with pytest.raises(TypeError, match="while_loop body.*(?s:.*)" + FIX):
        jax.lax.while_loop(lambda c: False, lambda c: _turn(c, mesh), x)
    with pytest.raises(TypeError, match=FIX):
        jax.lax.fori_loop(0, 2, lambda i, c: _turn(c, mesh), x)

    def body(i, c):
        return darray.asarray(_turn(c, mesh), device=c.device, spec=c.layout.spec)
    _assert_same_place(jax.lax.fori_loop(0, 2, body, x), x, _reference_steps(host, 2))
    count = jax.lax.while_loop(lambda s: s[0] < 4,
                               lambda s: (s[0] + 1, body(0, s[1])), (0, x))
    _assert_same_place(count[1], x, _reference_steps(host, 4))


def test_tuple_carry_names_the_component(mesh, host):
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    with pytest.raises(TypeError, match=r"the carry at \[1\] enters"):
        jax.lax.scan(lambda c, _: ((c[0] + 1, _turn(c[1], mesh)), None), (jnp.zeros(()), x),
                     None, length=2)


def test_halo_carry_names_the_halo(mesh, host):
    x = darray.asarray(host, device=mesh, spec=("x", "y")).halo(1)
    with pytest.raises(TypeError, match=r"halo \(\(1, 1\), \(1, 1\)\).*\.halo\(\[\(1, 1\), "
                                        r"\(1, 1\)\]\)"):
        # a reshard to the same split drops the ghosts
        jax.lax.scan(lambda c, _: (darray.asarray(c * 2.0, device=c.device,
                                                  spec=c.layout.spec), None), x, None, length=2)


@pytest.mark.x64
@pytest.mark.parametrize("jit", [False, True])
def test_cond_branches_in_two_layouts_name_the_fix(mesh, host, jit):
    x = darray.asarray(host, device=mesh, spec=("x", "y"))

    def run(pred, fix):
        def other(c):
            r = _turn(c, mesh)
            return darray.asarray(r, device=c.device, spec=c.layout.spec) if fix else r
        return jax.lax.cond(pred, lambda c: c * 0.5 + 1.0, other, x)
    if jit:
        run = jax.jit(run, static_argnums=1)
    with pytest.raises(TypeError, match=r"(?s)branch outputs.*darray: true_fun returns an "
                                        r"array split \(x, y\).*false_fun one split \(y, x\).*"
                                        r"in false_fun, return `darray\.asarray\(r, "
                                        r"device=mesh, spec=spec\)`"):
        run(True, False)
    for pred in (True, False):
        _assert_same_place(run(pred, True), x, host * 0.5 + 1.0)


def test_switch_names_the_fix(mesh, host):
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    with pytest.raises(TypeError, match="darray: .*returns an array split"):
        jax.lax.switch(1, [lambda c: c, lambda c: _turn(c, mesh)], x)


def test_shape_change_keeps_jax_message_alone(mesh, host):
    """Only layout changes get darray's hint: a carry of another shape is a different bug."""
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    with pytest.raises(TypeError) as err:
        jax.lax.scan(lambda c, _: (c[1:], None), x, None, length=2)
    assert "darray:" not in str(err.value)


@pytest.mark.x64
def test_spectral_scan_keeps_its_carry_and_stacks_ys(mesh, host):
    """A scan whose body goes to k-space and back keeps its carry's layout with no fix; its
    stacked outputs ys are DistArrays whose Layout matches their data."""
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    k2 = (np.fft.fftfreq(8)[:, None] ** 2 + np.fft.fftfreq(12)[None, :] ** 2)
    decay = darray.asarray(np.exp(-k2), device=mesh, spec=dfft.fftn(x).layout.spec)

    def body(c, _):
        k = dfft.fftn(c)
        assert k.layout == decay.layout
        new = dfft.ifftn(k * decay).real
        return new, darray.sum(new * new)

    out, ys = jax.jit(lambda a: jax.lax.scan(body, a, None, length=3))(x)
    ref = jnp.asarray(host)
    norms = []
    for _ in range(3):
        ref = jnp.fft.ifftn(jnp.fft.fftn(ref) * jnp.exp(-jnp.asarray(k2))).real
        norms.append(jnp.sum(ref * ref))
    _assert_same_place(out, x, np.asarray(ref))
    assert ys.shape == (3,) and ys.data.sharding.is_equivalent_to(ys.sharding, 1)
    np.testing.assert_allclose(np.asarray(ys), np.asarray(norms), rtol=1e-12)
