"""Local inverse FFTs that stay right on GPU for blocks of any size.

XLA's GPU FFT normalises an inverse transform (c2c inverse and c2r) with one cuBLAS ``scal``
call over the whole output, and cuBLAS takes the element count as a 32-bit ``int``: for an
output of more than 2^31 - 1 elements the count overflows, cuBLAS does nothing, and the result
comes back N times too large, silently (openxla/xla#45009; the fix, #45227, is not merged in
any jaxlib darray supports). Forward transforms are not scaled by XLA and are not affected.

darray therefore never hands XLA:GPU an inverse FFT whose output exceeds that count: the call
is cut into several XLA calls that each stay under it (`inverse_passes` decides how; pure, so it
is unit-tested on CPU). That stays right whether or not a future XLA fixes the bug, which
scaling by hand would not. Off GPU, and below the limit, nothing changes (one ``jnp.fft`` call).

Every local FFT of a plan's stages goes through this module (`fftn`, `rfftn`, `ifftn`,
`irfftn`), so that the option ``local_fft`` can hand CPU programs to FFTW (kernels/fftw.py);
with the default ("xla") they are the ``jnp.fft`` calls they always were.

How a call is cut: the block's leading axes that are not transformed are batch axes; running
the transform over a batch axis in ``k`` slices (``lax.map`` over a reshaped axis: a loop whose
slices XLA writes in place) divides each call's output by ``k``. When the transform axes alone
are too large (a whole 3-D block transformed at once, as on one GPU), the n-D inverse is split
into passes over fewer axes, and the axes a pass leaves alone become its batch axes.
"""
from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp
from jax import lax

from darray._src.kernels import fftw

# The largest output XLA:GPU normalises correctly: cuBLAS's `int n`.
XLA_GPU_SCALE_LIMIT = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class Pass:
    """One XLA inverse-FFT call pattern: transform `axes` (block positions, ascending) of kind
    ``c2c`` or ``c2r``, run in `chunks` slices along block axis `batch_axis` (None: one call)."""
    axes: tuple[int, ...]
    kind: str
    batch_axis: int | None = None
    chunks: int = 1


def _out_shape(shape, axes, kind, sizes):
    out = list(shape)
    for a, n in zip(axes, sizes):
        out[a] = n
    return out


def _smallest_divisor(length: int, at_least: int) -> int | None:
    """The smallest divisor of `length` that is >= `at_least` (a chunk count), or None."""
    for k in range(max(1, at_least), length + 1):
        if length % k == 0:
            return k
    return None


def _fit(out_shape, axes, kind, limit) -> Pass | None:
    """`axes` in one call, or sliced along one batch axis so each call's output fits."""
    total = math.prod(out_shape)
    if total <= limit:
        return Pass(tuple(axes), kind)
    for b in range(len(out_shape)):
        if b in axes:
            continue
        per_row = total // out_shape[b] if out_shape[b] else 0
        if per_row > limit:
            continue  # even one row of this axis is too large
        k = _smallest_divisor(out_shape[b], -(-total // limit))
        if k is not None:
            return Pass(tuple(axes), kind, b, k)
    return None


def inverse_passes(shape, axes, kind: str, sizes, limit: int = XLA_GPU_SCALE_LIMIT):
    """How to run an inverse FFT of a block so that no XLA call outputs more than `limit`.

    Args:
      shape: the block's shape (input of the transform).
      axes: the transformed block positions (for c2r the last one is the halved axis).
      kind: ``"c2c"`` (inverse) or ``"c2r"``.
      sizes: the output length of each transformed axis (numpy's ``s``).
      limit: the largest output one XLA call may have.

    Returns:
      None when one call is fine (the output fits), else the list of `Pass` to run in order.
      Every pass's calls fit. Raises ValueError if no split fits (a single 1-D row beyond the
      limit: an FFT length over 2^31, far beyond any device's memory).
    """
    axes, sizes = tuple(axes), tuple(sizes)
    out = _out_shape(shape, axes, kind, sizes)
    if math.prod(out) <= limit:
        return None
    whole = _fit(out, axes, kind, limit)
    if whole is not None:
        return [whole]
    # Split the transform: the complex axes one at a time (each pass leaves the others as its
    # batch axes); c2r's halved axis last, as its own real pass.
    passes = []
    complex_axes = axes[:-1] if kind == "c2r" else axes
    shape_now = list(shape)
    for a in complex_axes:
        shape_now[a] = sizes[axes.index(a)]
        p = _fit(shape_now, (a,), "c2c", limit)
        if p is None:
            break
        passes.append(p)
    else:
        if kind == "c2r":
            shape_now[axes[-1]] = sizes[-1]
            p = _fit(shape_now, (axes[-1],), "c2r", limit)
            if p is not None:
                return passes + [p]
        else:
            return passes
    raise ValueError(f"an inverse FFT of a block of shape {tuple(shape)} over axes {axes} "
                     f"cannot be split into XLA calls of at most {limit} output elements")


def _one_call(block, axes, kind, sizes, norm):
    if kind == "c2r":
        return jnp.fft.irfftn(block, s=sizes, axes=axes, norm=norm)
    return jnp.fft.ifftn(block, s=sizes, axes=axes, norm=norm)


def _sliced(block, p: Pass, sizes, norm):
    """`p` over `block`: `p.chunks` calls, one per slice of `p.batch_axis`."""
    if p.batch_axis is None:
        return _one_call(block, p.axes, p.kind, sizes, norm)
    b, k = p.batch_axis, p.chunks
    moved = jnp.moveaxis(block, b, 0)
    axes = tuple(a + 1 if a < b else a for a in p.axes)  # positions in a slice after the move
    rows = moved.reshape((k, moved.shape[0] // k) + moved.shape[1:])
    out = lax.map(lambda r: _one_call(r, axes, p.kind, sizes, norm), rows)
    out = out.reshape((out.shape[0] * out.shape[1],) + out.shape[2:])
    return jnp.moveaxis(out, 0, b)


def run_passes(block, passes, axes, sizes, norm):
    """Apply `passes` (from `inverse_passes`) to `block`; the result equals one inverse call."""
    size_of = dict(zip(axes, sizes))
    for p in passes:
        block = _sliced(block, p, tuple(size_of[a] for a in p.axes), norm)
    return block


def _inverse(block, axes, kind, sizes, norm, limit):
    axes = tuple(a % block.ndim for a in axes)
    sizes = tuple(sizes)
    passes = inverse_passes(block.shape, axes, kind, sizes, limit)
    if passes is None:
        return _one_call(block, axes, kind, sizes, norm)
    split = lambda b: run_passes(b, passes, axes, sizes, norm)  # noqa: E731
    plain = lambda b: _one_call(b, axes, kind, sizes, norm)  # noqa: E731
    # Decided when lowering: only GPU programs take the split path.
    return lax.platform_dependent(block, cuda=split, rocm=split, default=plain)


def _sizes(block, s, axes):
    return tuple(block.shape[a] for a in axes) if s is None else tuple(s)


def ifftn(block, s, axes, norm, limit: int = XLA_GPU_SCALE_LIMIT):
    """``jnp.fft.ifftn(block, s, axes, norm)``, right on GPU for outputs of any size; FFTW's
    on CPU where the option ``local_fft`` selects it."""
    s = _sizes(block, s, axes)
    return fftw.transform(block, axes, "c2c", True, s, norm,
                          elsewhere=lambda b: _inverse(b, axes, "c2c", s, norm, limit))


def irfftn(block, s, axes, norm, limit: int = XLA_GPU_SCALE_LIMIT):
    """``jnp.fft.irfftn(block, s, axes, norm)``, right on GPU for outputs of any size; FFTW's
    on CPU where the option ``local_fft`` selects it."""
    if s is None:
        s = tuple(block.shape[a] for a in axes[:-1]) + (2 * (block.shape[axes[-1]] - 1),)
    return fftw.transform(block, axes, "c2r", True, tuple(s), norm,
                          elsewhere=lambda b: _inverse(b, axes, "c2r", s, norm, limit))


def fftn(block, s, axes, norm):
    """``jnp.fft.fftn(block, s, axes, norm)``; FFTW's on CPU where ``local_fft`` selects it."""
    s = _sizes(block, s, axes)
    return fftw.transform(block, axes, "c2c", False, s, norm,
                          elsewhere=lambda b: jnp.fft.fftn(b, s=s, axes=axes, norm=norm))


def rfftn(block, s, axes, norm):
    """``jnp.fft.rfftn(block, s, axes, norm)``; FFTW's on CPU where ``local_fft`` selects it."""
    s = _sizes(block, s, axes)
    return fftw.transform(block, axes, "r2c", False, s, norm,
                          elsewhere=lambda b: jnp.fft.rfftn(b, s=s, axes=axes, norm=norm))


__all__ = ["Pass", "XLA_GPU_SCALE_LIMIT", "fftn", "ifftn", "inverse_passes", "irfftn", "rfftn",
           "run_passes"]
