"""Covers: darray/_src/kernels/r2r_local_2d.py

Makhoul's 2-D type-2/3 transforms (r2r_local_2d) against scipy.fft in float64."""
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft as sf

from darray._src.kernels.r2r_local import R2RKernel, apply_kernel
from darray._src.kernels.r2r_local_2d import apply_kernels, apply_pair, pair_eligible, pair_fits

# float64 against scipy: tests/conftest.py turns x64 on; the x64-off leg deselects the module
pytestmark = pytest.mark.x64

# even lengths on both axes run the 2-D form; an odd one falls back to one axis at a time
SHAPES = [(3, 8, 8), (2, 6, 10), (2, 2, 2), (1, 4, 2), (1, 12, 6), (2, 16, 14),
          (2, 7, 5), (2, 6, 9), (1, 1, 4), (2, 5, 1), (1, 13, 12), (1, 1, 1)]


def _scipy(x, kernel: R2RKernel, axis):
    fn = {("dct", False): sf.dct, ("dst", False): sf.dst, ("dct", True): sf.idct,
          ("dst", True): sf.idst}[(kernel.family, kernel.inverse)]
    return fn(x, type=kernel.type, n=kernel.n, axis=axis, norm=kernel.norm,
              orthogonalize=kernel.orthogonalize)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("executed", [2, 3])
def test_every_family_pair_and_norm_matches_scipy(shape, executed):
    x = np.random.default_rng(sum(shape)).standard_normal(shape)
    for fa, fb, norm in itertools.product(("dct", "dst"), ("dct", "dst"),
                                          (None, "ortho", "forward")):
        for inverse in (False, True):
            typ = executed if not inverse else {2: 3, 3: 2}[executed]
            ka, kb = R2RKernel(fa, typ, None, norm, None, inverse), R2RKernel(fb, typ, None,
                                                                            norm, None, inverse)
            assert pair_eligible(ka, kb)
            want = _scipy(_scipy(x, ka, 1), kb, 2)
            got = apply_pair(jnp.asarray(x), ka, kb)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12 * max(
                1.0, np.abs(want).max()), err_msg=str((fa, fb, norm, inverse)))


def test_lengths_orthogonalize_and_complex_input():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 7)) + 1j * rng.standard_normal((2, 6, 7))
    ka = R2RKernel("dct", 2, n=9, norm="backward", orthogonalize=True)
    kb = R2RKernel("dst", 2, n=4, norm="ortho", orthogonalize=False)
    got = apply_pair(jnp.asarray(x), ka, kb)
    # real and imaginary parts transformed apart (scipy's documented rule; scipy 1.18 itself
    # skips `orthogonalize` for complex input with norm="backward")
    want = _scipy(_scipy(x.real, ka, 1), kb, 2) + 1j * _scipy(_scipy(x.imag, ka, 1), kb, 2)
    assert got.shape == (2, 9, 4) and got.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_apply_kernels_pairs_only_the_last_two_axes_and_falls_back():
    x = np.random.default_rng(4).standard_normal((5, 6, 7))
    kernels = [R2RKernel("dct", 2), R2RKernel("dst", 4), R2RKernel("dct", 3, norm="ortho")]
    got = apply_kernels(jnp.asarray(x), (0, 1, 2), kernels)
    want = x
    for axis, k in enumerate(kernels):
        want = _scipy(want, k, axis)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-11)
    assert not pair_eligible(kernels[1], kernels[2])
    assert not pair_eligible(R2RKernel("dct", 2), R2RKernel("dct", 3))
    assert not pair_eligible(R2RKernel("dct", 2), lambda block, axis: block)


def test_float32_keeps_precision_and_accuracy():
    x = np.random.default_rng(5).standard_normal((4, 64, 48)).astype(np.float32)
    k = R2RKernel("dct", 2)
    got = apply_pair(jnp.asarray(x), k, k)
    assert got.dtype == np.float32
    want = sf.dctn(x.astype(np.float64), axes=(1, 2))
    assert np.abs(np.asarray(got) - want).max() <= 1e-5 * np.abs(want).max()


def test_derivatives_are_the_transposed_transform():
    x = np.random.default_rng(6).standard_normal((2, 6, 8))
    k = R2RKernel("dct", 2, norm="ortho")
    f = lambda a: apply_pair(a, k, k)  # noqa: E731
    t = np.random.default_rng(7).standard_normal(x.shape)
    _, tangent = jax.jvp(f, (jnp.asarray(x),), (jnp.asarray(t),))
    np.testing.assert_allclose(np.asarray(tangent), sf.dctn(t, axes=(1, 2), norm="ortho"),
                               rtol=1e-12, atol=1e-12)
    _, pullback = jax.vjp(f, jnp.asarray(x))
    (cot,) = pullback(jnp.asarray(t))
    # orthonormal DCT-II: its transpose is its inverse, the orthonormal DCT-III
    np.testing.assert_allclose(np.asarray(cot), sf.idctn(t, axes=(1, 2), norm="ortho"),
                               rtol=1e-12, atol=1e-12)
    single = apply_kernel(apply_kernel(jnp.asarray(x), 1, k), 2, k)
    np.testing.assert_allclose(np.asarray(f(jnp.asarray(x))), np.asarray(single), rtol=1e-12,
                               atol=1e-12)


def _fft_ranks(fn, x):
    """The number of axes each FFT in `fn`'s lowered program transforms."""
    text = jax.jit(fn).lower(x).as_text()
    lengths = re.findall(r"stablehlo\.fft .*length = \[([0-9, ]+)\]", text)
    return sorted(len(group.split(",")) for group in lengths)


@pytest.mark.parametrize("executed", [2, 3])
def test_even_lengths_take_one_2d_fft_odd_lengths_two_1d(executed):
    k = R2RKernel("dct", executed)
    even, odd = jnp.zeros((2, 8, 6)), jnp.zeros((2, 8, 5))
    assert pair_fits(even, k, k) and not pair_fits(odd, k, k)
    assert _fft_ranks(lambda a: apply_pair(a, k, k), even) == [2]
    assert _fft_ranks(lambda a: apply_pair(a, k, k), odd) == [1, 1]
    # a length changed by `n` decides by the output length
    assert not pair_fits(even, k, R2RKernel("dct", executed, n=7))


def test_unpairable_kernels_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="do not pair"):
        apply_pair(jnp.zeros((2, 4, 4)), R2RKernel("dct", 2), R2RKernel("dct", 4))
