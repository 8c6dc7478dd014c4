"""Mass-assignment schemes: which cells a particle touches, with what weights, and the
k-space window each one multiplies a painted field by.

Positions are in cell units: cell ``i`` is centred on ``i`` (JaxPM's convention), so a particle
at an integer position puts all its mass into that cell under every scheme. Pure jax.numpy on
per-axis arrays; no devices, no layouts.
"""
from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class Scheme:
    name: str
    support: int    # cells touched per axis
    order: int      # the window is sinc(k/2) ** order per axis


SCHEMES = {
    "ngp": Scheme("ngp", 1, 1),   # nearest grid point: the cell whose centre is nearest
    "cic": Scheme("cic", 2, 2),   # cloud in cell: the two cells around the position
    "tsc": Scheme("tsc", 3, 3),   # triangular shaped cloud: nearest cell and both sides
}


def check_scheme(scheme, where: str) -> Scheme:
    if not isinstance(scheme, str) or scheme.lower() not in SCHEMES:
        raise ValueError(f"{where}: scheme={scheme!r} is not a known mass-assignment scheme; "
                         f"use one of {tuple(SCHEMES)}")
    return SCHEMES[scheme.lower()]


def stencil(scheme: Scheme, pos):
    """(base cell, [weight of base + j for j in range(support)]) along one axis.

    `pos` is a float array of positions in cell units; the base is an int32 array. Weights are
    differentiable in `pos` (the base is piecewise constant)."""
    if scheme.name == "ngp":
        base = jnp.floor(pos + 0.5)
        return base.astype(jnp.int32), [jnp.ones_like(pos)]
    if scheme.name == "cic":
        base = jnp.floor(pos)
        frac = pos - base
        return base.astype(jnp.int32), [1 - frac, frac]
    nearest = jnp.floor(pos + 0.5)
    d = pos - nearest                       # in [-1/2, 1/2)
    return ((nearest - 1).astype(jnp.int32),
            [0.5 * (0.5 - d) ** 2, 0.75 - d ** 2, 0.5 * (0.5 + d) ** 2])


def window_1d(scheme: Scheme, freq):
    """The scheme's transfer function at `freq` (cycles per cell, numpy's fftfreq units):
    ``sinc(freq) ** order`` with numpy's normalised sinc, i.e. ``(sin(k/2) / (k/2)) ** order``
    for the angular wavenumber k = 2 pi freq. Works on numpy and jax arrays."""
    xp = jnp if not isinstance(freq, (np.ndarray, float, int)) else np
    return xp.sinc(freq) ** scheme.order
