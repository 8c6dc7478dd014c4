"""Covers: darray/_src/backends/native_permute.py

The native tiled transposing copy (csrc/permute_cpu.cc, darray._src.backends.native_permute)
that the MPI backend's FFT plans use for their reorders: numpy's values for every permutation
and dtype, its AD and vmap rules, where it hands over to XLA, and its errors."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import compiled_hlo

from darray._src.backends import native_permute
from darray._src.base import native

RNG = np.random.default_rng(11)
# 4-, 8- and 16-byte items, the handler's three copy widths
DTYPES = [np.float32, np.int32, np.float64, np.int64, np.complex64, np.complex128]
# edges of the 16 x 16 tiles: below, at and across one tile; size-1 axes
SHAPES = [(5, 7, 33), (2, 17, 3, 19), (16, 32), (40,), (1, 1, 3), (3, 1, 18, 2)]


def _sample(shape, dtype):
    x = RNG.standard_normal(shape) * 100
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _canonical(x):
    # with x64 off jax holds 64-bit data in 32 bits: compare against what it holds
    return x.astype(jax.dtypes.canonicalize_dtype(x.dtype))


def test_the_handler_is_in_every_build():
    assert native_permute.TARGET in native.build_info()["targets"]
    assert native_permute.available()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_permutation_equals_numpys_transpose(shape, dtype):
    x = _canonical(_sample(shape, dtype))
    for perm in itertools.permutations(range(len(shape))):
        got = np.asarray(jax.jit(lambda a, p=perm: native_permute.permute(a, p))(x))
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, x.transpose(perm), err_msg=str(perm))


# outputs of 4 MiB and more are written with streaming stores (whole 16-byte runs only: odd
# float32 columns fall back to plain stores inside the same call); partial tiles on both axes.
# Sized for 4 MiB also with x64 off, where jax holds 64-bit data in 32 bits.
@pytest.mark.parametrize("shape, dtype", [((33, 130, 129), np.complex128),
                                          ((33, 129, 260), np.float32),
                                          ((9, 600, 257), np.float64)], ids=str)
def test_large_outputs_take_the_streaming_stores_and_equal_numpy(shape, dtype):
    x = _canonical(_sample(shape, dtype))
    assert x.nbytes >= 4 << 20
    for perm in [(1, 2, 0), (2, 0, 1), (2, 1, 0), (0, 2, 1)]:
        got = np.asarray(jax.jit(lambda a, p=perm: native_permute.permute(a, p))(x))
        np.testing.assert_array_equal(got, x.transpose(perm), err_msg=str(perm))


def test_the_minor_axis_moving_runs_natively_and_the_rest_stays_with_xla():
    x = jnp.zeros((4, 6, 8), jnp.float32)
    moved = compiled_hlo(jax.jit(lambda a: native_permute.permute(a, (2, 0, 1))), x)
    kept = compiled_hlo(jax.jit(lambda a: native_permute.permute(a, (1, 0, 2))), x)
    booleans = compiled_hlo(jax.jit(lambda a: native_permute.permute(a, (2, 0, 1))),
                            jnp.zeros((4, 6, 8), bool))
    assert native_permute.TARGET in moved
    assert native_permute.TARGET not in kept  # rows stay whole: XLA copies (and fuses) them
    assert native_permute.TARGET not in booleans  # 1-byte items: XLA's transpose
    assert not native_permute.moves_minor_axis((1, 0, 2))
    assert native_permute.moves_minor_axis((0, 2, 1))


def test_gradient_jvp_and_vmap_equal_jnp_transpose():
    x = jnp.asarray(_canonical(RNG.standard_normal((6, 5, 4))))
    w = jnp.asarray(_canonical(RNG.standard_normal((4, 6, 5))))

    def loss(transpose):
        return lambda a: jnp.sum(jnp.sin(transpose(a, (2, 0, 1))) * w)
    tol = dict(rtol=1e-6 if x.dtype == np.float32 else 1e-14)
    np.testing.assert_allclose(jax.grad(loss(native_permute.permute))(x),
                               jax.grad(loss(jnp.transpose))(x), **tol)
    _, tangent = jax.jvp(lambda a: native_permute.permute(a, (1, 2, 0)), (x,), (2 * x,))
    np.testing.assert_array_equal(tangent, jnp.transpose(2 * x, (1, 2, 0)))
    batch = jnp.asarray(_canonical(RNG.standard_normal((6, 3, 5, 4))))
    for in_axes in (0, 1, 3):
        got = jax.vmap(lambda a: native_permute.permute(a, (2, 0, 1)), in_axes=in_axes)(batch)
        want = jax.vmap(lambda a: jnp.transpose(a, (2, 0, 1)), in_axes=in_axes)(batch)
        np.testing.assert_array_equal(got, want)
    # the transpose of the linear map is the inverse permutation
    (back,) = jax.linear_transpose(lambda a: native_permute.permute(a, (2, 0, 1)), x)(w)
    np.testing.assert_array_equal(back, jnp.transpose(w, (1, 2, 0)))


def test_the_input_is_not_modified():
    host = _canonical(_sample((9, 20, 17), np.complex128))
    x = jnp.asarray(host)
    native_permute.permute(x, (1, 2, 0)).block_until_ready()
    np.testing.assert_array_equal(np.asarray(x), host)


def test_the_handler_returns_errors_for_a_bad_call():
    native.register_targets("cpu")
    x = jnp.zeros((2, 3), jnp.float32)
    wrong_shape = jax.ffi.ffi_call(native_permute.TARGET, jax.ShapeDtypeStruct((2, 3), x.dtype))
    with pytest.raises(Exception, match="the output shape is not the permuted input shape"):
        jax.block_until_ready(wrong_shape(x, perm=np.array([1, 0], np.int64)))
    not_a_permutation = jax.ffi.ffi_call(native_permute.TARGET,
                                         jax.ShapeDtypeStruct((3, 2), x.dtype))
    with pytest.raises(Exception, match="perm is not a permutation of the axes"):
        jax.block_until_ready(not_a_permutation(x, perm=np.array([1, 1], np.int64)))
    bytes_2 = jax.ffi.ffi_call(native_permute.TARGET, jax.ShapeDtypeStruct((3, 2), jnp.int16))
    with pytest.raises(Exception, match="elements of 2 bytes; expected 4, 8 or 16"):
        jax.block_until_ready(bytes_2(jnp.zeros((2, 3), jnp.int16),
                                      perm=np.array([1, 0], np.int64)))
