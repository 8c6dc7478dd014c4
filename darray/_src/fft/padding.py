"""Padded transforms for dealiasing (the 3/2 rule): `fftn`, `ifftn`, `rfftn`, `irfftn` with
``padding=``.

A pseudo-spectral solver keeps its spectra on the coarse grid of shape ``s`` and evaluates
products on a fine grid of ``floor(padding * s_i)`` points per axis: the inverse zero-pads each
spectrum to the fine grid (the same band-limited function, sampled more densely), the product is
taken there, and the forward transform truncates the product's spectrum back to ``s``. With
padding 3/2 the truncated spectrum of a quadratic product has no aliased modes.

How it runs: the plan of the unpadded transform (darray._src.plans.fft_planner), with each axis's
local FFT replaced by a kernel that zero-pads the spectrum in the middle and then transforms
to the fine length (inverse), or transforms the fine length and keeps the coarse modes
(forward). Each pad or truncation happens where its axis is local, inside the one shard_map,
so a padded transform makes the very exchanges of the unpadded one (on the fine or coarse
lengths, whichever the axis has at that point); never an all-gather.

Conventions (stated in docs/fft.md):

* Nyquist (even coarse length N): mpi4py-fft's symmetric Fourier interpolator. Padding splits
  the coarse entry at index N/2 evenly between the fine +N/2 and -N/2 entries (on the real
  axis of irfftn: half its real part at +N/2, the conjugate half implied); truncation adds
  the fine +N/2 and -N/2 entries back into it (on the real axis: twice the real part).
* Normalisation: a padded transform equals the unpadded transform of the same band-limited
  function, for every `norm`: ``irfftn(k, s, padding=p)`` sampled on the coarse points is
  ``irfftn(k, s)``, ``rfftn(u_fine, s, padding=p)`` is ``rfftn(u_coarse, s)`` for band-limited
  u, and the round trip ``rfftn(irfftn(k, s, padding=p), s, padding=p)`` is the identity on
  spectra of real fields. For norm="forward" this is mpi4py-fft's scaling (its forward
  transform divides by the fine size); for "backward" the fine grid's 1/M becomes 1/N.
"""
from __future__ import annotations

import dataclasses
import math
import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.kernels import local_fft


def fine_length(coarse: int, factor: float) -> int:
    return math.floor(coarse * factor + 1e-9)


def _factor(norm: str, coarse: int, fine: int, inverse: bool) -> float:
    """The scale that makes the fine transform the coarse one of the same function (module
    docstring): forward N/M ("backward"), sqrt(N/M) ("ortho"), 1 ("forward"); inverse the
    reciprocal of its direction's."""
    ratio = coarse / fine
    if norm == "forward":
        return 1.0
    if norm == "ortho":
        return math.sqrt(1 / ratio) if inverse else math.sqrt(ratio)
    return 1 / ratio if inverse else ratio


def _scaled(x, factor):
    return x if factor == 1.0 else x * np.asarray(factor, dtype=jnp.finfo(x.dtype).dtype)


def _take(x, axis, start, stop):
    return jax.lax.slice_in_dim(x, start, stop, axis=axis)


def _zeros(x, axis, n):
    shape = list(x.shape)
    shape[axis] = n
    return jnp.zeros(shape, x.dtype)


@dataclasses.dataclass(frozen=True)
class PadKernel:
    """The FFT of one complex axis of a padded transform: coarse length `coarse`, fine length
    `fine`; inverse: zero-pad the coarse spectrum in the middle, then inverse FFT of length
    `fine`; forward: FFT of length `fine`, keep the coarse modes."""

    coarse: int
    fine: int
    inverse: bool
    norm: str

    def __call__(self, block, axis):
        n, m = self.coarse, self.fine
        if n == m:  # this axis is not padded
            if self.inverse:
                return local_fft.ifftn(block, (n,), (axis,), self.norm)
            return jnp.fft.fft(block, axis=axis, norm=self.norm)
        factor = _factor(self.norm, n, m, self.inverse)
        if self.inverse:
            pos = (n + 1) // 2  # entries 0..pos-1 are the non-negative frequencies
            if n % 2 == 0:
                half = _take(block, axis, n // 2, n // 2 + 1) * 0.5
                parts = [_take(block, axis, 0, n // 2), half, _zeros(block, axis, m - n - 1),
                         half, _take(block, axis, n // 2 + 1, n)]
            else:
                parts = [_take(block, axis, 0, pos), _zeros(block, axis, m - n),
                         _take(block, axis, pos, n)]
            padded = jnp.concatenate(parts, axis=axis)
            return _scaled(local_fft.ifftn(padded, (m,), (axis,), self.norm), factor)
        f = jnp.fft.fft(block, n=m, axis=axis, norm=self.norm)
        if n % 2 == 0:
            nyquist = _take(f, axis, n // 2, n // 2 + 1) + _take(f, axis, m - n // 2,
                                                                 m - n // 2 + 1)
            parts = [_take(f, axis, 0, n // 2), nyquist, _take(f, axis, m - n // 2 + 1, m)]
        else:
            parts = [_take(f, axis, 0, (n + 1) // 2), _take(f, axis, m - n // 2, m)]
        return _scaled(jnp.concatenate(parts, axis=axis), factor)


@dataclasses.dataclass(frozen=True)
class RealPadKernel:
    """The real axis of a padded rfftn (forward: rfft of length `fine`, keep ``coarse//2 + 1``
    bins) or irfftn (inverse: the coarse half spectrum zero-padded at the end, irfft of length
    `fine`), with the Nyquist rule of the module docstring."""

    coarse: int
    fine: int
    inverse: bool
    norm: str

    def __call__(self, block, axis):
        n, m = self.coarse, self.fine
        if n == m:  # this axis is not padded
            if self.inverse:
                return local_fft.irfftn(block, (n,), (axis,), self.norm)
            return jnp.fft.rfft(block, axis=axis, norm=self.norm)
        factor = _factor(self.norm, n, m, self.inverse)
        bins = n // 2 + 1
        if self.inverse:
            if n % 2 == 0:
                nyquist = jnp.real(_take(block, axis, bins - 1, bins)) * 0.5
                block = jnp.concatenate([_take(block, axis, 0, bins - 1),
                                         nyquist.astype(block.dtype)], axis=axis)
            return _scaled(local_fft.irfftn(block, (m,), (axis,), self.norm), factor)
        f = _take(jnp.fft.rfft(block, n=m, axis=axis, norm=self.norm), axis, 0, bins)
        if n % 2 == 0:
            nyquist = 2 * jnp.real(_take(f, axis, bins - 1, bins))
            f = jnp.concatenate([_take(f, axis, 0, bins - 1), nyquist.astype(f.dtype)],
                                axis=axis)
        return _scaled(f, factor)


def check_padding(padding, naxes, fname):
    """One factor >= 1 per transform axis, from a number or a sequence; None if all are 1."""
    if np.ndim(padding) == 0:
        values = (padding,) * naxes
    else:
        values = tuple(padding)
        if len(values) != naxes:
            raise ValueError(f"{fname}: padding={padding!r} has {len(values)} entries for "
                             f"{naxes} transform axes; accepted: a number >= 1 or one per axis")
    out = []
    for v in values:
        if isinstance(v, bool):
            raise TypeError(f"{fname}: padding entry {v!r} must be a number >= 1 (e.g. 1.5)")
        try:
            f = float(operator.index(v)) if isinstance(v, (int, np.integer)) else float(v)
        except (TypeError, ValueError):
            raise TypeError(f"{fname}: padding entry {v!r} must be a number >= 1 "
                            f"(e.g. 1.5)") from None
        if not np.isfinite(f) or f < 1:
            raise ValueError(f"{fname}: padding={padding!r} is not accepted: each factor must "
                             f"be a finite number >= 1 (1.5 for the 3/2 rule; 1 for none)")
        out.append(f)
    return None if all(f == 1.0 for f in out) else tuple(out)


def kernels_for(kind, inverse, coarse, fine, norm):
    """One kernel per transform axis (the last is the real axis for r2c/c2r)."""
    out = []
    for j, (n, m) in enumerate(zip(coarse, fine)):
        real = kind in ("r2c", "c2r") and j == len(coarse) - 1
        out.append((RealPadKernel if real else PadKernel)(n, m, inverse, norm))
    return tuple(out)


def padded_shapes(x_shape, axes, s, factors, kind, inverse, fname):
    """(coarse lengths, fine lengths) per transform axis, checked against the input."""
    coarse, fine = [], []
    for j, (a, p) in enumerate(zip(axes, factors)):
        real_last = kind in ("r2c", "c2r") and j == len(axes) - 1
        have = x_shape[a]
        if s is not None:
            n = s[j]
        elif inverse:
            n = 2 * (have - 1) if real_last else have
        else:
            n = max(1, round(have / p))
        m = fine_length(n, p)
        if inverse:
            want = n // 2 + 1 if real_last else n
            if have != want:
                raise ValueError(f"{fname}: with padding the spectrum must have the coarse "
                                 f"shape s: axis {a} has {have} entries, s entry {j} = {n} "
                                 f"needs {want}")
        elif have != m:
            raise ValueError(f"{fname}: with padding={p} x must be on the fine grid "
                             f"floor(padding * s): axis {a} has {have} entries, but s entry "
                             f"{j} = {n} gives {m}")
        coarse.append(n)
        fine.append(m)
    return tuple(coarse), tuple(fine)


__all__ = ["PadKernel", "RealPadKernel", "check_padding", "fine_length", "kernels_for",
           "padded_shapes"]
