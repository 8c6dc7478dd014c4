"""Covers: darray/_src/kernels/local_fft.py

The >2^31 guard for inverse FFTs on GPU: the pure decision, and the split path run on CPU.

XLA:GPU skips the 1/N of inverse FFTs whose output exceeds 2^31 - 1 elements
(openxla/xla#45009); darray cuts such calls (darray/_src/kernels/local_fft.py). The split
path is exercised here with a small artificial limit and compared with numpy; the real-size
check is tests/gpu/test_nccl_gpu.py::test_inverse_fft_beyond_2_31_elements.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from darray._src.kernels import local_fft
from darray._src.kernels.local_fft import Pass, inverse_passes

LIMIT = local_fft.XLA_GPU_SCALE_LIMIT


def test_limit_is_cublas_int():
    assert LIMIT == 2**31 - 1


@pytest.mark.parametrize("shape, axes, kind, sizes", [
    ((1024, 1024, 1024), (0, 1, 2), "c2c", (1024, 1024, 1024)),   # 2^30: one call
    ((1290, 1290, 1290), (0, 1, 2), "c2c", (1290, 1290, 1290)),   # 2.147e9 < 2^31 - 1
    ((8, 256, 256), (1, 2), "c2r", (256, 510)),
])
def test_below_the_limit_one_call(shape, axes, kind, sizes):
    assert inverse_passes(shape, axes, kind, sizes) is None


def test_batched_block_is_sliced_along_its_batch_axis():
    # (6, 1000, 1000, 1000) c2c over the last three: 6e9 outputs need >= 3 slices, 3 divides 6
    passes = inverse_passes((6, 1000, 1000, 1000), (1, 2, 3), "c2c", (1000,) * 3)
    assert passes == [Pass((1, 2, 3), "c2c", 0, 3)]
    # 4 * 2^30 needs 3 slices (2^31 itself is one too many); 3 does not divide 4: 4 slices
    assert inverse_passes((4, 1024, 1024, 1024), (1, 2, 3), "c2c", (1024,) * 3) == [
        Pass((1, 2, 3), "c2c", 0, 4)]


def test_whole_3d_block_is_split_into_single_axis_passes():
    # 1292^3 > 2^31 - 1 and no batch axis: one pass per axis, each sliced along another axis
    n = 1292
    passes = inverse_passes((n, n, n), (0, 1, 2), "c2c", (n, n, n))
    assert [p.axes for p in passes] == [(0,), (1,), (2,)]
    for p in passes:
        assert p.batch_axis not in p.axes and n % p.chunks == 0
        assert n ** 3 // p.chunks <= LIMIT


def test_c2r_keeps_the_halved_axis_last_and_counts_real_outputs():
    n = 1300
    shape = (n, n, n // 2 + 1)
    passes = inverse_passes(shape, (0, 1, 2), "c2r", (n, n, n))
    assert [(p.axes, p.kind) for p in passes] == [((0,), "c2c"), ((1,), "c2c"), ((2,), "c2r")]
    assert n * n * n // passes[-1].chunks <= LIMIT
    # the complex input is smaller than the limit, the real output is not: it is the output
    # XLA scales, so the guard counts it
    assert math.prod(shape) < LIMIT < n ** 3


def test_an_unsplittable_request_says_so():
    with pytest.raises(ValueError, match="cannot be split"):
        inverse_passes((LIMIT + 2,), (0,), "c2c", (LIMIT + 2,))


@pytest.mark.x64
@pytest.mark.parametrize("kind", ["c2c", "c2r"])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_split_passes_match_numpy(kind, norm):
    rng = np.random.default_rng(0)
    shape = (6, 10, 8) if kind == "c2c" else (6, 10, 5)
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    axes, sizes = (0, 1, 2), ((6, 10, 8))
    limit = 200  # < 480 outputs: the guard must split, down to single-axis passes
    passes = inverse_passes(shape, axes, kind, sizes, limit)
    assert passes is not None and len(passes) == 3
    got = jax.jit(lambda b: local_fft.run_passes(b, passes, axes, sizes, norm))(
        jnp.asarray(x, jnp.complex128))
    ref = (np.fft.ifftn(x, s=sizes, axes=axes, norm=norm) if kind == "c2c"
           else np.fft.irfftn(x, s=sizes, axes=axes, norm=norm))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.x64
def test_sliced_batch_pass_matches_numpy_and_grad_flows():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4, 8)) + 1j * rng.standard_normal((6, 4, 8))
    passes = inverse_passes(x.shape, (1, 2), "c2c", (4, 8), limit=100)
    assert passes == [Pass((1, 2), "c2c", 0, 2)]
    f = lambda b: local_fft.run_passes(b, passes, (1, 2), (4, 8), "backward")  # noqa: E731
    np.testing.assert_allclose(np.asarray(jax.jit(f)(jnp.asarray(x))),
                               np.fft.ifftn(x, axes=(1, 2)), rtol=1e-12, atol=1e-12)
    loss = lambda b: jnp.sum(jnp.abs(f(b)) ** 2)  # noqa: E731
    ref = lambda b: jnp.sum(jnp.abs(jnp.fft.ifftn(b, axes=(1, 2))) ** 2)  # noqa: E731
    np.testing.assert_allclose(np.asarray(jax.grad(loss)(jnp.asarray(x))),
                               np.asarray(jax.grad(ref)(jnp.asarray(x))), rtol=1e-10)


def test_on_cpu_the_public_wrappers_lower_one_plain_call():
    # platform_dependent picks the unsplit branch on CPU: no while loop in the program
    x = jnp.zeros((6, 4, 8), jnp.complex64)
    hlo = jax.jit(lambda b: local_fft.ifftn(b, (4, 8), (1, 2), "backward", limit=100)).lower(
        x).compile().as_text()
    assert "while" not in hlo
    np.testing.assert_allclose(
        np.asarray(local_fft.ifftn(x + 1, (4, 8), (1, 2), "backward", limit=100)),
        np.fft.ifftn(np.ones((6, 4, 8)), axes=(1, 2)), atol=1e-6)
