"""Covers: darray/_src/fft/api.py, darray/_src/plans/fft_planner.py

darray.fft on every layout numpy accepts: every axis split (fold), any 1-D length
(four-step or Bluestein), merged pencils; accuracy in ulps, HLO without all-gather, memory."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import collective_count, compiled_hlo, mesh_of, rand

import darray
import darray.fft as dfft

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64


def ulps_per_log(got, ref, dtype):
    """max error relative to the largest output, in units of eps * log2(n)."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    n = max(ref.size, 2)
    scale = max(np.abs(ref).max(), 1e-300)
    return np.abs(got - ref).max() / scale / (np.finfo(dtype).eps * np.log2(n))


def test_2d_array_on_2d_mesh_every_axis_split():
    """The issue's reproducer: (24, 18) split (x, y) on a (4, 2) mesh."""
    m = mesh_of((4, 2), ("x", "y"))
    a = np.random.default_rng(0).random((24, 18))
    x = darray.asarray(a, mesh=m, spec=("x", "y"))
    y = dfft.fftn(x)
    assert ulps_per_log(y, np.fft.fftn(a), np.float64) < 8
    assert y.layout.split == x.layout.split and y.data.sharding.spec == x.data.sharding.spec
    z = dfft.ifftn(y)
    assert z.layout == x.layout and ulps_per_log(z, a, np.float64) < 8
    k = dfft.rfftn(x)
    assert k.shape == (24, 10) and k.layout.split == x.layout.split
    assert ulps_per_log(k, np.fft.rfftn(a), np.float64) < 8
    back = dfft.irfftn(k, s=(24, 18))
    assert back.layout == x.layout and ulps_per_log(back, a, np.float64) < 8
    hlo = compiled_hlo(lambda d: dfft.ifftn(dfft.fftn(d)).data, x)
    assert collective_count(hlo, "all-gather") == 0 and collective_count(hlo, "all-to-all") == 8


@pytest.mark.parametrize("shape", [(7, 13, 17), (3, 5, 7)])
def test_3d_array_on_3d_mesh_every_axis_split_uneven(shape):
    """Uneven 3-D folds on (2, 2, 2): XLA's verifier rejected the fused all-to-all until the
    transpose materialised its operand (transpose.all_to_all_move)."""
    m = mesh_of((2, 2, 2), ("a", "b", "c"))
    a = rand(shape, np.complex128, seed=4)
    x = darray.asarray(a, mesh=m, spec=("a", "b", "c"))
    y = dfft.fftn(x)
    assert ulps_per_log(y, np.fft.fftn(a), np.float64) < 8
    assert y.layout.split == x.layout.split and y.data.sharding.spec == x.data.sharding.spec
    z = dfft.ifftn(y)
    assert z.layout == x.layout and ulps_per_log(z, a, np.float64) < 8
    assert collective_count(compiled_hlo(lambda d: dfft.fftn(d).data, x), "all-gather") == 0


@pytest.mark.slow  # compiles Bluestein programs (about 10 s each on 2 cores)
def test_2d_every_axis_split_chunks_that_cannot_fold():
    """(9, 9) over (4, 2): no fold lines up, the in-place Bluestein path runs per axis."""
    m = mesh_of((4, 2), ("x", "y"))
    a = rand((9, 9), np.complex128, seed=1)
    x = darray.asarray(a, mesh=m, spec=("x", "y"))
    y = dfft.fftn(x, norm="ortho")
    assert y.layout == x.layout
    assert ulps_per_log(y, np.fft.fftn(a, norm="ortho"), np.float64) < 8
    r = dfft.hfft(x, axis=0)
    assert ulps_per_log(r, np.fft.hfft(a, axis=0), np.float64) < 8


FAST_1D = [(7, 4, np.complex128), (97, 8, np.complex64)]
ALL_1D = [(n, p, d) for n, p in [(7, 4), (9, 2), (97, 8), (101, 8), (1, 8), (3, 8)]
          for d in (np.complex64, np.complex128)]


@pytest.mark.parametrize("n, parts, dtype", FAST_1D + [
    pytest.param(*c, marks=pytest.mark.slow) for c in ALL_1D if c not in FAST_1D])
def test_1d_any_length(n, parts, dtype):
    m = mesh_of((parts,), ("d",))
    a = rand(n, dtype, seed=n)
    x = darray.asarray(a, mesh=m, spec=("d",))
    y = dfft.fft(x)
    assert y.layout == x.layout
    assert y.data.sharding.is_equivalent_to(y.sharding, 1)
    assert ulps_per_log(y, np.fft.fft(a.astype(np.complex128)), dtype) < 4


@pytest.mark.slow  # six Bluestein programs per norm
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_1d_prime_every_function_and_norm(norm):
    m = mesh_of((8,), ("d",))
    c = rand(97, np.complex128, seed=3)
    r = c.real.copy()
    xc, xr = darray.asarray(c, mesh=m, spec=("d",)), darray.asarray(r, mesh=m, spec=("d",))
    half = darray.asarray(c[:49], mesh=m, spec=("d",))
    checks = [(dfft.ifft(xc, norm=norm), np.fft.ifft(c, norm=norm)),
              (dfft.rfft(xr, norm=norm), np.fft.rfft(r, norm=norm)),
              (dfft.irfft(half, n=97, norm=norm), np.fft.irfft(c[:49], n=97, norm=norm)),
              (dfft.hfft(half, n=97, norm=norm), np.fft.hfft(c[:49], n=97, norm=norm)),
              (dfft.ihfft(xr, norm=norm), np.fft.ihfft(r, norm=norm)),
              (dfft.fft(xc, n=60, norm=norm), np.fft.fft(c, n=60, norm=norm))]
    for got, want in checks:
        assert ulps_per_log(got, want, np.float64) < 8
        assert got.data.sharding.is_equivalent_to(got.sharding, 1)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_1d_every_length_up_to_64(dtype):
    m = mesh_of((8,), ("d",))
    for n in range(1, 65):
        a = rand(n, dtype, seed=n)
        x = darray.asarray(a, mesh=m, spec=("d",))
        y = dfft.fft(x)
        assert ulps_per_log(y, np.fft.fft(a.astype(np.complex128)), dtype) < 4, n
        z = dfft.ifft(y)
        assert z.layout == x.layout and ulps_per_log(z, a, dtype) < 4, n


def test_1d_bluestein_grad():
    m = mesh_of((8,), ("d",))
    a = rand(13, np.complex128, seed=4)
    x = darray.asarray(a, mesh=m, spec=("d",))
    w = rand(13, np.complex128, seed=5)
    g = jax.grad(lambda d: jnp.sum(jnp.abs(dfft.fft(d).to_jax() - w) ** 2))(x)
    want = jax.grad(lambda d: jnp.sum(jnp.abs(jnp.fft.fft(d) - w) ** 2))(jnp.asarray(a))
    assert g.layout == x.layout
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), atol=1e-10)


def test_merged_pencil_memory_and_grad():
    """(2, 4) pencil: one all-to-all over 8 devices; XLA's plan stays within 3 arrays."""
    m = mesh_of((2, 4), ("x", "y"))
    a = rand((64, 64, 64), np.complex64, seed=6)
    x = darray.asarray(a, mesh=m, spec=("x", "y"))
    compiled = jax.jit(lambda d: dfft.fftn(d).data).lower(x).compile()
    assert collective_count(compiled.as_text(), "all-to-all") == 1
    mem = compiled.memory_analysis()  # per device: in units of the input block
    assert mem.argument_size_in_bytes == a.nbytes // 8
    extra = (mem.temp_size_in_bytes + mem.output_size_in_bytes) / mem.argument_size_in_bytes
    assert extra <= 3.01, extra  # 3 arrays (+ a few bytes of scalars)
    g = jax.grad(lambda d: jnp.sum(jnp.abs(dfft.fftn(d).to_jax()) ** 2))(
        darray.asarray(a.real.astype(np.float64), mesh=m, spec=("x", "y")))
    np.testing.assert_allclose(np.asarray(g), 2 * 64 ** 3 * a.real, rtol=1e-5)


def test_halo_input_transforms_its_interior():
    m = mesh_of((8,), ("d",))
    a = rand((16, 8), np.complex128, seed=7)
    x = darray.asarray(a, mesh=m, spec=("d",)).halo(width=1)
    assert x.layout.has_halo
    y = dfft.fftn(x)
    assert not y.layout.has_halo and ulps_per_log(y, np.fft.fftn(a), np.float64) < 8


@pytest.mark.parametrize("shape, mesh_shape, explicit", [
    ((4, 4, 8), (2, 4), True),    # merged slab over both mesh axes
    ((8, 6), (4, 2), False),      # every axis split: fold
])
def test_jit_jvp_and_vjp_on_new_paths(shape, mesh_shape, explicit):
    m = (mesh_of(mesh_shape, ("x", "y"), explicit=True) if explicit
         else mesh_of(mesh_shape, ("x", "y")))
    a = rand(shape, np.float64, seed=8)
    t = rand(shape, np.float64, seed=9)
    x = darray.asarray(a, mesh=m, spec=("x", "y"))
    dx = darray.asarray(t, mesh=m, spec=("x", "y"))
    y, dy = jax.jit(lambda u, v: jax.jvp(dfft.rfftn, (u,), (v,)))(x, dx)
    assert dy.layout == y.layout
    np.testing.assert_allclose(np.asarray(dy), np.fft.rfftn(t), atol=1e-10)
    _, pullback = jax.vjp(lambda u: dfft.fftn(u, norm="ortho"), x)
    ct = darray.asarray(rand(shape, np.complex128, seed=10), mesh=m, spec=("x", "y"))
    (g,) = pullback(dfft.fftn(ct, norm="ortho"))
    assert g.layout == x.layout
    want = jax.vjp(lambda u: jnp.fft.fftn(u.astype(jnp.complex128), norm="ortho"),
                   jnp.asarray(a))[1](jnp.fft.fftn(jnp.asarray(np.asarray(ct)), norm="ortho"))[0]
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), atol=1e-10)
