"""Covers: darray/_src/fft/split_axis.py, darray/_src/fft/api.py

Four-step FFT along axes that stay split (every array axis split): fft/split_axis.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import collective_count, compiled_hlo, mesh_of, rand
from jax.sharding import PartitionSpec as P

import darray
import darray.fft as dfft
from darray._src.fft.split_axis import factor

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

NORMS = ("backward", "ortho", "forward")
MESHES = {"8": ((8,), ("d",), "d"), "2x4": ((2, 4), ("x", "y"), ("x", "y"))}
# Every (mesh, length) once in double precision, single precision on a subset; the full
# cross product runs under -m slow (each case compiles six programs).
FAST = [("8", 64, 1), ("8", 192, 0), ("2x4", 128, 1), ("2x4", 192, 0)]
FULL = [(m, n, d) for m in MESHES for n in (64, 128, 192) for d in (0, 1)]
CASES = [pytest.param(*c) for c in FAST] + [pytest.param(*c, marks=pytest.mark.slow)
                                            for c in FULL if c not in FAST]


def _mesh(key):
    shape, names, spec = MESHES[key]
    return mesh_of(shape, names, explicit=True), spec


def _tol(dtype):
    return 2e-4 if dtype in (np.float32, np.complex64) else 1e-10


def _close(got, want, dtype):
    got = np.asarray(got)
    scale = max(1.0, np.abs(want).max())
    np.testing.assert_allclose(got, want, atol=_tol(dtype) * scale, rtol=0)


@pytest.mark.parametrize("mesh_key,n,double", CASES)
def test_fft_ifft_all_norms(mesh_key, n, double):
    dtype = np.complex128 if double else np.complex64
    mesh, spec = _mesh(mesh_key)
    a = rand(n, dtype)
    x = darray.asarray(a, mesh=mesh, spec=(spec,))
    ref = a.astype(np.complex128)
    for norm in NORMS:
        for fn, ref_fn in ((dfft.fft, np.fft.fft), (dfft.ifft, np.fft.ifft)):
            y = fn(x, norm=norm)
            assert y.dtype == dtype
            assert y.layout.split == x.layout.split
            assert y.data.sharding.spec == P(spec)
            _close(y, ref_fn(ref, norm=norm), dtype)
    np.testing.assert_array_equal(np.asarray(x), a)  # input untouched


@pytest.mark.parametrize("mesh_key,n,double", CASES)
def test_rfft_irfft_all_norms(mesh_key, n, double):
    dtype = np.float64 if double else np.float32
    mesh, spec = _mesh(mesh_key)
    a = rand(n, dtype)
    x = darray.asarray(a, mesh=mesh, spec=(spec,))
    cdt = np.complex64 if dtype == np.float32 else np.complex128
    for norm in NORMS:
        k = dfft.rfft(x, norm=norm)
        assert k.shape == (n // 2 + 1,) and k.dtype == cdt
        assert k.layout.split == x.layout.split and k.data.sharding.spec == P(spec)
        want = np.fft.rfft(a.astype(np.float64), norm=norm)
        _close(k, want, dtype)
        y = dfft.irfft(k, n=n, norm=norm)
        assert y.shape == (n,) and y.dtype == dtype
        assert y.layout == x.layout and y.data.sharding.spec == P(spec)
        _close(y, np.fft.irfft(want, n=n, norm=norm), dtype)
        _close(y, a.astype(np.float64), dtype)


def test_irfft_of_a_generic_spectrum_and_hfft_ihfft():
    """irfft ignores the imaginary parts of X[0] (and X[N/2]) as numpy does; hfft/ihfft."""
    mesh, spec = _mesh("8")
    m = 65  # -> N = 128
    c = rand(m, np.complex128, seed=3)
    k = darray.asarray(c, mesh=mesh, spec=(spec,))
    for norm in NORMS:
        y = dfft.irfft(k, norm=norm)
        assert y.shape == (128,) and y.layout.split == (("d",),)
        _close(y, np.fft.irfft(c, norm=norm), np.float64)
        h = dfft.hfft(k, norm=norm)
        assert h.layout.split == (("d",),)
        _close(h, np.fft.hfft(c, norm=norm), np.float64)
    r = darray.asarray(rand(128, np.float64), mesh=mesh, spec=(spec,))
    for norm in NORMS:
        z = dfft.ihfft(r, norm=norm)
        assert z.shape == (65,) and z.layout.split == (("d",),)
        _close(z, np.fft.ihfft(np.asarray(r), norm=norm), np.float64)


@pytest.mark.parametrize("n_in,n", [(64, 128), (192, 128), (100, 64)])
def test_length_argument_pads_and_truncates(n_in, n):
    mesh, spec = _mesh("8")
    a = rand(n_in, np.complex128)
    x = darray.asarray(a, mesh=mesh, spec=(spec,))
    if x.layout.split != (("d",),):
        pytest.fail(f"expected a split input, got {x.layout}")
    y = dfft.fft(x, n=n)
    assert y.shape == (n,) and y.layout.split == (("d",),)
    _close(y, np.fft.fft(a, n=n), np.complex128)
    r = darray.asarray(a.real.copy(), mesh=mesh, spec=(spec,))
    k = dfft.rfft(r, n=n)
    assert k.shape == (n // 2 + 1,)
    _close(k, np.fft.rfft(a.real, n=n), np.float64)


@pytest.mark.distributed_placement
def test_default_placement_1d():
    """`darray.fft.fft(x)` of a 1D array on its default placement (split over all devices)."""
    a = rand(256, np.complex128)
    x = darray.asarray(a)
    assert x.layout.parts(0) == 8
    y = dfft.fft(x)
    assert y.layout == x.layout and y.data.sharding.spec == x.data.sharding.spec
    _close(y, np.fft.fft(a), np.complex128)


@pytest.mark.parametrize("fn,kw", [(dfft.fft, {}), (dfft.ifft, {"norm": "ortho"}),
                                   (dfft.rfft, {}), (dfft.irfft, {"n": 128})])
def test_hlo_all_to_all_no_all_gather(fn, kw):
    mesh, spec = _mesh("8")
    real = fn in (dfft.rfft,)
    n = 65 if fn is dfft.irfft else 128
    a = rand(n, np.float64 if real else np.complex128)
    x = darray.asarray(a, mesh=mesh, spec=(spec,))
    hlo = compiled_hlo(lambda d: fn(d, **kw).data, x)
    assert collective_count(hlo, "all-to-all") == 3, hlo[:2000]  # exactly the four-step's three
    for op in ("all-gather", "all-reduce", "collective-permute", "reduce-scatter"):
        assert collective_count(hlo, op) == 0, op


def test_fftn_2d_every_axis_split():
    mesh = mesh_of((2, 4), ("x", "y"), explicit=True)
    a = rand(8 * 48, np.complex128).reshape(8, 48)  # 8 % 2^2 == 0, 48 % 4^2 == 0
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    # y folds onto axis 0 ((x, y), -), both axes transform, the fold is undone: 4 all-to-alls
    y = dfft.fftn(x)
    assert y.layout == x.layout and y.data.sharding.spec == P("x", "y")
    _close(y, np.fft.fftn(a), np.complex128)
    z = dfft.ifftn(y)
    assert z.layout == x.layout
    _close(z, a, np.complex128)
    # one axis of a fully split array: the other (batch) axis keeps its split
    b = dfft.fft(x, axis=0, norm="ortho")
    assert b.layout == x.layout
    _close(b, np.fft.fft(a, axis=0, norm="ortho"), np.complex128)
    r = darray.asarray(a.real.copy(), mesh=mesh, spec=("x", "y"))
    k = dfft.rfftn(r)
    assert k.shape == (8, 25) and k.layout.split == (("x",), ("y",))
    _close(k, np.fft.rfftn(a.real), np.float64)
    back = dfft.irfftn(k, s=(8, 48))
    assert back.layout == r.layout
    _close(back, a.real, np.float64)
    hlo = compiled_hlo(lambda d: dfft.fftn(d).data, x)
    assert collective_count(hlo, "all-to-all") == 4 and collective_count(hlo, "all-gather") == 0


def test_batched_uneven_batch_axis():
    mesh = mesh_of((2, 4), ("x", "y"), explicit=True)
    a = rand(5 * 64, np.complex128).reshape(5, 64)  # batch axis 5 over 2: padded
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    y = dfft.fft(x, axis=1)
    assert y.layout == x.layout
    _close(y, np.fft.fft(a, axis=1), np.complex128)


def test_unfactorable_length_runs_bluestein():
    mesh, spec = _mesh("8")
    a = rand(13, np.complex128)
    x = darray.asarray(a, mesh=mesh, spec=(spec,))
    y = dfft.fft(x)
    assert y.layout == x.layout
    _close(y, np.fft.fft(a), np.complex128)
    hlo = compiled_hlo(lambda d: dfft.ifft(d).data, x)
    # traced inside a jit: 4 for the convolution + 1 for the filter built in the program
    assert collective_count(hlo, "all-to-all") == 5 and collective_count(hlo, "all-gather") == 0


def test_factor():
    assert factor(64, 8) == (8, 8)
    assert factor(192, 8) in ((8, 24), (24, 8))
    n1, n2 = factor(192, 8)
    assert n1 * n2 == 192 and n1 % 8 == 0 and n2 % 8 == 0
    assert factor(13, 8) is None and factor(96, 8) is None


def test_grad_matches_single_device():
    mesh, spec = _mesh("8")
    a = rand(64, np.float64, seed=5)
    w = rand(33, np.complex128, seed=6)

    def loss_d(x):
        k = dfft.rfft(x, norm="ortho")
        v = dfft.ifft(dfft.fft(darray.astype(x, darray.complex128)) * 0.5)
        return darray.sum(darray.abs(k - darray.asarray(w, mesh=mesh, spec=(spec,))) ** 2) + \
            darray.sum(darray.real(v) ** 2)

    def loss_j(x):
        k = jnp.fft.rfft(x, norm="ortho")
        v = jnp.fft.ifft(jnp.fft.fft(x.astype(jnp.complex128)) * 0.5)
        return jnp.sum(jnp.abs(k - w) ** 2) + jnp.sum(jnp.real(v) ** 2)

    x = darray.asarray(a, mesh=mesh, spec=(spec,))
    g = darray.grad(loss_d)(x)
    assert isinstance(g, darray.DistArray) and g.layout == x.layout
    want = np.asarray(jax.grad(loss_j)(jnp.asarray(a)))
    np.testing.assert_allclose(np.asarray(g), want, atol=1e-10)
    assert np.abs(want).max() > 1e-3


def test_jit_jvp_vjp():
    mesh, spec = _mesh("8")
    a = rand(64, np.complex128, seed=7)
    t = rand(64, np.complex128, seed=8)
    x = darray.asarray(a, mesh=mesh, spec=(spec,))
    dx = darray.asarray(t, mesh=mesh, spec=(spec,))
    y, dy = jax.jit(lambda u, v: jax.jvp(dfft.fft, (u,), (v,)))(x, dx)
    assert dy.layout == x.layout
    _close(y, np.fft.fft(a), np.complex128)
    _close(dy, np.fft.fft(t), np.complex128)  # linear map: its jvp is itself
    _, pullback = jax.vjp(lambda u: dfft.fft(u, norm="ortho"), x)
    (ct,) = pullback(dx)
    assert ct.layout == x.layout
    (want,) = jax.vjp(lambda u: jnp.fft.fft(u, norm="ortho"), jnp.asarray(a))[1](
        jnp.asarray(t))  # single-device jnp.fft reference
    _close(ct, np.asarray(want), np.complex128)
