"""Covers: darray/_src/fft/api.py

run_r2r: real-to-real kernels moved along split axes by the FFT plan's transposes.

The kernels here are stand-ins (scaling, resizing) so the distribution machinery is checked
independently of the DCT/DST kernels (tested in test_fft_r2r.py)."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.fft.api import run_r2r


@dataclasses.dataclass(frozen=True)
class Scale:
    """Multiply by `scale`, then zero-pad or truncate the axis to `n` (like scipy's n=)."""
    scale: float
    n: int | None = None

    def __call__(self, block, axis):
        if self.n is not None:
            have = block.shape[axis]
            if have >= self.n:
                block = jax.lax.slice_in_dim(block, 0, self.n, axis=axis)
            else:
                widths = [(0, 0)] * block.ndim
                widths[axis] = (0, self.n - have)
                block = jnp.pad(block, widths)
        return block * self.scale


def reference(a, axes, kernels):
    for axis, k in zip(axes, kernels):
        if k.n is not None:
            if a.shape[axis] >= k.n:
                a = np.take(a, np.arange(k.n), axis=axis)
            else:
                widths = [(0, 0)] * a.ndim
                widths[axis] = (0, k.n - a.shape[axis])
                a = np.pad(a, widths)
        a = a * k.scale
    return a


MESHES = {"slab8": ((8,), ("d",), ("d",)), "pencil2x4": ((2, 4), ("x", "y"), ("x", "y"))}


@pytest.mark.parametrize("mesh", list(MESHES))
@pytest.mark.parametrize("axes, kernels, inverse", [
    ((0, 1, 2), (Scale(2.0), Scale(3.0), Scale(0.5)), (Scale(0.5), Scale(1 / 3), Scale(2.0))),
    ((1, 2), (Scale(2.0, 7), Scale(1.0, 12)), (Scale(0.5, 10), Scale(1.0, 9))),
])
@pytest.mark.x64
def test_r2r_moves_splits_and_inverse_retraces(mesh, axes, kernels, inverse):
    shape, names, spec = MESHES[mesh]
    m = mesh_of(shape, names)
    a = np.random.default_rng(0).standard_normal((12, 10, 9))
    x = darray.asarray(a, mesh=m, spec=spec)
    y = run_r2r(x, axes, kernels)
    ref = reference(a, axes, kernels)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-14, atol=1e-14)
    assert y.data.sharding.is_equivalent_to(y.sharding, y.data.ndim)
    moves = any(x.layout.split[a] for a in axes)  # a transform axis starts split
    z = run_r2r(y, axes, inverse, inverse_of=kernels)
    np.testing.assert_allclose(np.asarray(z), reference(ref, axes, inverse), rtol=1e-14,
                               atol=1e-14)
    assert z.layout == x.layout
    text = jax.jit(lambda d: run_r2r(d, axes, kernels).data).lower(x).compile().as_text()
    assert "all-gather" not in text and ("all-to-all" in text) == moves


@pytest.mark.x64
def test_r2r_gradient_is_the_transposed_kernel():
    m = mesh_of((2, 4), ("x", "y"))
    a = np.random.default_rng(1).standard_normal((8, 12, 6))
    x = darray.asarray(a, mesh=m, spec=("x", "y"))
    kernels = (Scale(2.0), Scale(3.0), Scale(5.0))
    # under jit: eager grad through to_jax() of an uneven layout fails on jax 0.12 (reported)
    g = jax.jit(jax.grad(lambda d: jnp.sum(run_r2r(d, (0, 1, 2), kernels).to_jax() ** 2)))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * 30.0 ** 2 * a, rtol=1e-13)
    assert g.layout == x.layout


def test_r2r_rejects_mismatched_kernels():
    m = mesh_of((8,), ("d",))
    x = darray.asarray(np.ones((8, 8)), mesh=m, spec=("d",))
    with pytest.raises(ValueError, match="same length"):
        run_r2r(x, (0, 1), (Scale(1.0),))
