"""Covers: darray/_src/kernels/r2r_local.py

Local DCT/DST kernels (darray._src.kernels.r2r_local) against scipy.fft, on one device."""
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft as sf

from darray._src.kernels.r2r_local import R2RKernel, apply_kernel

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

FAMILY_TYPE_INVERSE = list(itertools.product(("dct", "dst"), (1, 2, 3, 4), (False, True)))
# (norm, orthogonalize): None and "backward" are the same norm, so one of them per flag value
NORM_ORTH = [(None, None), ("backward", True), ("ortho", None), ("ortho", False),
             ("forward", None), ("forward", True)]
LENGTHS = (1, 2, 3, 4, 7, 8, 13)


def _scipy(family, inverse):
    return getattr(sf, ("i" if inverse else "") + family)


def _id(case):
    family, typ, inverse = case
    return f"{'i' if inverse else ''}{family}{typ}"


def _min_length(family, typ):
    return 2 if (family, typ) == ("dct", 1) else 1


def _rel_err(got, ref):
    scale = max(np.max(np.abs(ref)), 1e-300)
    return np.max(np.abs(np.asarray(got, np.complex128) - ref)) / scale


def _check_float64(case, norm_orth, lengths):
    family, typ, inverse = case
    rng = np.random.default_rng(typ + 10 * inverse)
    for (norm, orth), length in itertools.product(norm_orth, lengths):
        if length < _min_length(family, typ):
            continue
        x = rng.standard_normal((length, 3))
        kernel = R2RKernel(family, typ, None, norm, orth, inverse)
        got = apply_kernel(jnp.asarray(x), 0, kernel)
        ref = _scipy(family, inverse)(x, type=typ, axis=0, norm=norm, orthogonalize=orth)
        assert got.dtype == jnp.float64 and got.shape == ref.shape
        assert _rel_err(got, ref) < 1e-13, (norm, orth, length)


def _check_float32(case, lengths):
    family, typ, inverse = case
    rng = np.random.default_rng(7)
    eps = np.finfo(np.float32).eps
    for length in lengths:
        x = rng.standard_normal((length, 3)).astype(np.float32)
        kernel = R2RKernel(family, typ, None, "ortho", None, inverse)
        got = apply_kernel(jnp.asarray(x), 0, kernel)
        ref = _scipy(family, inverse)(x.astype(np.float64), type=typ, axis=0, norm="ortho")
        assert got.dtype == jnp.float32
        assert _rel_err(got, ref) < 4 * eps * np.log2(2 * length), length


# Default tier: every kernel x every norm/orthogonalize at an odd and an even length (the two
# code paths of every type), the edge lengths 1 and 2, and float32 at one longer prime length.
# The same few shapes recur so JAX's per-shape compilation is shared between cases.
@pytest.mark.parametrize("case", FAMILY_TYPE_INVERSE, ids=_id)
def test_float64_every_norm_matches_scipy(case):
    _check_float64(case, NORM_ORTH, (5, 8))
    _check_float64(case, NORM_ORTH[:3], (1, 2))


@pytest.mark.parametrize("case", FAMILY_TYPE_INVERSE, ids=_id)
def test_float32_stays_float32_within_ulps_times_log_n(case):
    _check_float32(case, (97,))


@pytest.mark.slow
@pytest.mark.parametrize("case", FAMILY_TYPE_INVERSE, ids=_id)
def test_float64_sweep_lengths_1_to_33(case):
    _check_float64(case, NORM_ORTH, range(1, 34))


@pytest.mark.slow
@pytest.mark.parametrize("case", FAMILY_TYPE_INVERSE, ids=_id)
def test_float32_sweep_long_and_prime_lengths(case):
    _check_float32(case, (16, 31, 64, 127, 128, 251, 256, 1000, 1009))


@pytest.mark.parametrize("n, axis", [(1, 0), (3, 1), (8, -1)])
def test_n_truncates_or_zero_pads_along_any_axis(n, axis):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((6, 5, 4))
    for family, typ, inverse in [("dct", 2, False), ("dst", 3, True), ("dct", 1, True),
                                 ("dst", 4, False)]:
        if n < _min_length(family, typ):
            continue
        kernel = R2RKernel(family, typ, n, "forward", None, inverse)
        got = apply_kernel(jnp.asarray(x), axis, kernel)
        ref = _scipy(family, inverse)(x, type=typ, n=n, axis=axis, norm="forward")
        assert got.shape == ref.shape
        assert _rel_err(got, ref) < 1e-13, (family, typ, inverse)


def test_complex_input_transforms_real_and_imaginary_parts_like_scipy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8))
    for family, typ in [("dct", 2), ("dst", 1), ("dct", 4)]:
        got = apply_kernel(jnp.asarray(x), 1, R2RKernel(family, typ, None, "ortho"))
        ref = getattr(sf, family)(x, type=typ, axis=1, norm="ortho")
        assert got.dtype == jnp.complex128
        assert _rel_err(got, ref) < 1e-13
    got = apply_kernel(jnp.asarray(x.astype(np.complex64)), 0, R2RKernel("dst", 2))
    assert got.dtype == jnp.complex64
    assert _rel_err(got, sf.dst(x, axis=0)) < 1e-5


def test_integer_and_float16_inputs_follow_scipys_dtype_rule():
    x = np.arange(8)
    got = apply_kernel(jnp.asarray(x), 0, R2RKernel("dct", 2))
    ref = sf.dct(x)
    assert got.dtype == ref.dtype == np.float64 and _rel_err(got, ref) < 1e-14
    half = np.linspace(0, 1, 8, dtype=np.float16)
    got = apply_kernel(jnp.asarray(half), 0, R2RKernel("dst", 3))
    ref = sf.dst(half, type=3)
    assert got.dtype == ref.dtype == np.float32 and _rel_err(got, ref) < 1e-6


def test_round_trip_is_identity():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 8))
    for (family, typ), norm in itertools.product(itertools.product(("dct", "dst"), (1, 2, 3, 4)),
                                                 (None, "ortho", "forward")):
        y = apply_kernel(jnp.asarray(x), 1, R2RKernel(family, typ, None, norm))
        back = apply_kernel(y, 1, R2RKernel(family, typ, None, norm, inverse=True))
        np.testing.assert_allclose(np.asarray(back), x, rtol=0, atol=1e-12)


def _matrix(family, typ, inverse, norm, length, n=None):
    """The transform as a dense matrix (scipy applied to the identity): columns = inputs."""
    out = _scipy(family, inverse)(np.eye(length), type=typ, n=n, axis=0, norm=norm)
    return out


@pytest.mark.parametrize("case", FAMILY_TYPE_INVERSE, ids=_id)
def test_vjp_and_jvp_are_the_analytic_transpose_and_map(case):
    family, typ, inverse = case
    rng = np.random.default_rng(5)
    # forward kernels at an even length, inverse ones at an odd length zero-padded to 8
    for norm, length, n in [("forward", 5, 8) if inverse else ("ortho", 8, None)]:
        mat = _matrix(family, typ, inverse, norm, length, n)  # (out, in)
        kernel = R2RKernel(family, typ, n, norm, None, inverse)
        x = rng.standard_normal((length, 3))
        tangent = rng.standard_normal((length, 3))
        cotangent = rng.standard_normal((mat.shape[0], 3))
        y, tan_out = jax.jvp(lambda a, kernel=kernel: apply_kernel(a, 0, kernel),
                             (jnp.asarray(x),),
                             (jnp.asarray(tangent),))
        np.testing.assert_allclose(np.asarray(y), mat @ x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(tan_out), mat @ tangent, rtol=0, atol=1e-12)
        _, pullback = jax.vjp(lambda a, kernel=kernel: apply_kernel(a, 0, kernel),
                              jnp.asarray(x))
        (cot_in,) = pullback(jnp.asarray(cotangent))
        np.testing.assert_allclose(np.asarray(cot_in), mat.T @ cotangent, rtol=0, atol=1e-12)


def test_grad_of_a_scalar_loss_and_jit():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((8, 3))
    kernel = R2RKernel("dct", 2, None, None)
    loss = jax.jit(lambda a: jnp.sum(apply_kernel(a, 0, kernel) ** 2))
    mat = _matrix("dct", 2, False, None, 8)
    np.testing.assert_allclose(float(loss(jnp.asarray(x))), np.sum((mat @ x) ** 2), rtol=1e-13)
    grad = jax.grad(loss)(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(grad), 2 * mat.T @ (mat @ x), rtol=1e-12)


def test_dct1_of_length_one_is_a_value_error():
    with pytest.raises(ValueError, match=r"type=1 is undefined for a transform length of 1"):
        apply_kernel(jnp.ones(1), 0, R2RKernel("dct", 1))
    with pytest.raises(ValueError, match=r"idct: type=1 .* length of 1 along axis 1"):
        apply_kernel(jnp.ones((3, 4)), 1, R2RKernel("dct", 1, n=1, inverse=True))
    # DST-I of length 1 is defined (scipy agrees)
    np.testing.assert_allclose(np.asarray(apply_kernel(jnp.ones(1), 0, R2RKernel("dst", 1))),
                               sf.dst(np.ones(1), type=1))


@pytest.mark.parametrize("kwargs, match", [
    (dict(family="dft", type=2), r"family='dft' is not accepted; use one of \('dct', 'dst'\)"),
    (dict(family="dct", type=5), r"type=5 is not accepted; use one of \(1, 2, 3, 4\)"),
    (dict(family="dct", type=2, n=0), r"n=0 must be None or a positive int"),
    (dict(family="dct", type=2, norm="unit"), r"norm='unit' is not accepted"),
    (dict(family="dct", type=2, orthogonalize="yes"), r"orthogonalize='yes' must be None"),
])
def test_kernel_validation_messages(kwargs, match):
    with pytest.raises(ValueError, match=match):
        R2RKernel(**kwargs)


def test_kernels_are_hashable_values():
    a = R2RKernel("dct", 2, None, "ortho")
    assert a == R2RKernel("dct", 2, None, "ortho") and hash(a) == hash(R2RKernel("dct", 2, None,
                                                                                   "ortho"))
    assert a != R2RKernel("dct", 2, None, "ortho", inverse=True)


@pytest.mark.parametrize("family", ["dct", "dst"])
@pytest.mark.parametrize("n", [64, 65, 66])  # odd and even M = N -+ 1 take different paths
def test_type_1_runs_ffts_of_at_most_n_plus_1_points(family, n):
    # issue #21: DCT-I/DST-I by (N-1)/(N+1)-point FFTs, never the 2(N-1)/2(N+1) extension
    x = np.random.default_rng(n).standard_normal((3, n))
    kernel = R2RKernel(family, 1, norm="ortho")
    fn = jax.jit(lambda v: apply_kernel(v, -1, kernel))
    hlo = fn.lower(jnp.asarray(x, jnp.float32)).compile().as_text()
    lengths = [int(v) for v in re.findall(r"fft_length=\{(\d+)\}", hlo)]
    assert lengths and max(lengths) <= n + 1, lengths
    got = fn(jnp.asarray(x))
    ref = _scipy(family, False)(x, type=1, norm="ortho", axis=-1)
    assert got.shape == ref.shape and _rel_err(got, ref) < 1e-6
