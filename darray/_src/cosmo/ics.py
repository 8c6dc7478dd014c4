"""Initial conditions: a Gaussian random field with a given power spectrum, and its Zel'dovich
(1LPT) and second-order (2LPT) Lagrangian displacements.

Everything is k-space arithmetic on the rfftn spectrum's own blocks (wavenumbers laid out like
the spectrum) and distributed FFTs (all-to-alls): nothing is gathered (docs/design.md,
principle 2; tests/multidevice/particles/test_cosmo_ics.py reads the compiled HLO).

Conventions (Scoccimarro 1998; Crocce, Pueblas & Scoccimarro 2006, the 2LPTic code):
``x(q) = q + D1 psi1(q) + D2 psi2(q)`` with ``psi1 = -grad phi1``, ``laplacian phi1 = delta``
(the linear density at D1 = 1), ``psi2 = grad phi2``, ``laplacian phi2 = sum_{a<b}
(phi1_aa phi1_bb - phi1_ab**2)`` and ``D2 ~= -3/7 D1**2`` (growth rate ``f2 ~= 2
Omega_m**(6/11)``).
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from darray._src.api.blocks import map_blocks
from darray._src.api.data_type_functions import astype
from darray._src.api.elementwise import sqrt
from darray._src.api.manipulation import stack
from darray._src.api.searching import where
from darray._src.cosmo.spectrum import box_lengths, field_spectra
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array
from darray._src.extras.random import normal
from darray._src.fft.api import irfftn, rfftn
from darray._src.fft.freq import wavenumbers


def _kspace(delta_k, shape, box):
    """Per axis: k_a (box units), k_a with the Nyquist entry of an even axis zeroed (the
    kernel of an odd derivative, so a derivative of a real field stays real), and 1/k**2
    (0 at k = 0)."""
    ks = wavenumbers(delta_k, s=shape, d=tuple(L / n for L, n in zip(box, shape)))
    odd = []
    for k, n, L in zip(ks, shape, box):
        nyquist = np.pi * n / L           # |k| of the Nyquist entry; the next is 2 pi / L less
        odd.append(where(abs(k) < nyquist - np.pi / L, k, 0.0) if n % 2 == 0 else k)
    k2 = ks[0] * ks[0]
    for k in ks[1:]:
        k2 = k2 + k * k
    inv_k2 = where(k2 > 0, 1.0 / where(k2 > 0, k2, 1.0), 0.0)
    return ks, odd, inv_k2


def _density_spectrum(delta, s, box, fname):
    spectra, lengths = field_spectra([delta], s, fname)
    if lengths[-1][1] != "rfft":
        raise ValueError(f"{fname}: delta is an fftn spectrum; pass the real field or its "
                         "rfftn spectrum (the displacements of a real field are real)")
    shape = tuple(n for n, _ in lengths)
    return spectra[0], shape, box_lengths(box, lengths, fname)


def _gradient(phi_k, odd, shape):
    """grad of the field whose rfftn spectrum is phi_k: the (*G, d) real displacement."""
    return stack([irfftn(1j * k * phi_k, s=shape) for k in odd], axis=-1)


def zeldovich(delta, *, box=None, s=None) -> DistArray:
    """The Zel'dovich (first-order Lagrangian) displacement of a linear density field:
    ``psi1 = -grad phi1``, ``laplacian phi1 = delta``, i.e. ``psi1(k) = i k delta(k) / k**2``,
    so that ``-div psi1 = delta``.

    Args:
      delta: the linear density contrast (a real DistArray, e.g. from `gaussian_field`), or
        its rfftn spectrum (then `s`, the real-space shape, is required).
      box: the box length, one number or one per axis; the displacement is in the same unit.
        Default: the grid shape (cell units, what `darray.particles.paint` takes).
      s: the real-space shape of a spectrum.

    Returns:
      A real DistArray of shape ``(*G, d)``, split like `delta` over its grid axes (the
      displacement of the particle of each Lagrangian cell; scale it by D1(a)). The Nyquist
      entry of an even axis gets no odd derivative (its sine is zero on the grid).

    Layout:
      ``delta``'s grid layout with an unsplit component axis. One rfftn (for a real input)
      and d irfftn: all-to-alls, no gather.
    """
    delta_k, shape, box = _density_spectrum(delta, s, box, "darray.cosmo.zeldovich")
    _, odd, inv_k2 = _kspace(delta_k, shape, box)
    return _gradient(delta_k * inv_k2, odd, shape)   # psi1(k) = i k delta(k) / k^2


def lpt2(delta, *, box=None, s=None) -> tuple[DistArray, DistArray]:
    """First- and second-order Lagrangian displacements (2LPT) of a linear density field.

    ``x(q) = q + D1 psi1 + D2 psi2`` with ``D2 ~= -3/7 D1**2`` (exact for Einstein-de Sitter,
    within 1% for LCDM; velocities ``v = a H (f1 D1 psi1 + f2 D2 psi2)``, ``f2 ~= 2
    Omega_m(a)**(6/11)``). ``psi1`` is `zeldovich`'s; ``psi2 = grad phi2`` with ``laplacian
    phi2 = sum_{a<b} (phi1_aa phi1_bb - phi1_ab**2)``, ``phi1 = laplacian^-1 delta``: the
    standard 2LPT source (Scoccimarro 1998, eq. A9 of Crocce et al. 2006).

    The Hessian ``phi1_ab(k) = k_a k_b delta(k) / k**2`` (off-diagonal terms without the
    Nyquist entries of even axes, as for any odd derivative) is brought to real space, the
    source is formed point by point on the grid (no dealiasing, as 2LPTic), transformed back,
    and ``psi2(k) = -i k source(k) / k**2``.

    Args and Layout: as `zeldovich`. Costs one rfftn, d (d + 1) / 2 irfftn for the Hessian, one
    rfftn of the source and 2 d irfftn for the displacements.

    Returns:
      ``(psi1, psi2)``, each a real DistArray of shape ``(*G, d)`` (``psi2`` without the D2
      factor: scale by ``-3/7 D1**2``).
    """
    delta_k, shape, box = _density_spectrum(delta, s, box, "darray.cosmo.lpt2")
    ks, odd, inv_k2 = _kspace(delta_k, shape, box)
    ndim = len(shape)
    phi_k = delta_k * inv_k2               # minus phi1's spectrum: phi1(k) = -delta(k) / k**2
    psi1 = _gradient(phi_k, odd, shape)    # -grad phi1 = grad(-phi1)
    hessian = {}
    for a in range(ndim):
        for b in range(a, ndim):
            kernel = ks[a] * ks[a] if a == b else odd[a] * odd[b]
            hessian[a, b] = irfftn(kernel * phi_k, s=shape)      # phi1_ab = k_a k_b delta / k^2
    source = None
    for a in range(ndim):
        for b in range(a + 1, ndim):
            term = hessian[a, a] * hessian[b, b] - hessian[a, b] * hessian[a, b]
            source = term if source is None else source + term
    if source is None:                     # one dimension: Zel'dovich is exact
        return psi1, psi1 * 0.0
    phi2_k = -(rfftn(source) * inv_k2)     # laplacian phi2 = source
    return psi1, _gradient(phi2_k, odd, shape)


def gaussian_field(power, *, box=None, key=None, shape=None, noise=None, mesh=None, spec=None,
                   dtype=None, fourier: bool = False) -> DistArray:
    """A Gaussian random field with power spectrum ``power(|k|)``, as a cosmological linear
    density field is drawn: white noise, transformed, coloured by ``sqrt(P(k) / V_cell)``.

    ``delta(k) = w(k) * sqrt(P(|k|) * N / V)`` with ``w = rfftn(noise)``, N cells and V the box
    volume, and ``delta(k = 0) = 0``; so `darray.cosmo.power_spectrum` of the result averages
    to P(k) (``<|w(k)|**2> = N``).

    Args:
      power: a callable of ``|k|`` (a jax array, in the units of ``2 pi / box``) returning P(k)
        (in box-length units cubed), traceable by jax (``jnp`` operations, ``jnp.interp`` of a
        table). Called on each device's block of ``|k|``; its value at k = 0 is not used.
      box: the box length, one number or one per axis (default: the grid shape, cell units).
      key, shape: draw the white noise ``darray.random.normal(key, shape, dtype)`` (the same
        values on every mesh and process count), placed on `mesh` / `spec`.
      noise: instead of key and shape: a real DistArray of white noise (unit variance per
        cell). To reproduce a single-device code that draws ``jax.random.normal(key, shape)``,
        pass ``darray.asarray(jax.random.normal(key, shape), mesh=..., spec=...)``: the field is
        then that code's field to rounding (docs/cosmology.md).
      dtype: float32 or float64 (default: the noise's dtype, or float64 / float32 without x64).
      fourier: False: the real-space field; True: its rfftn spectrum (saves a transform pair
        when the next step is `zeldovich` or `lpt2`, which accept it with ``s=``).

    Returns:
      A real DistArray of the grid shape in the noise's layout (or its rfftn spectrum).

    Layout:
      The noise's (drawn in place, no communication); one rfftn and (for ``fourier=False``)
      one irfftn: all-to-alls, no gather.
    """
    fname = "darray.cosmo.gaussian_field"
    if not callable(power):
        raise TypeError(f"{fname}: power={power!r} must be a callable of |k| (e.g. lambda k: "
                        "jnp.interp(k, k_table, p_table))")
    if noise is None:
        if key is None or shape is None:
            raise TypeError(f"{fname}: pass key= and shape= (to draw white noise), or noise=")
        noise = normal(key, shape, dtype, mesh=mesh, spec=spec)
    else:
        if key is not None or shape is not None or mesh is not None or spec is not None:
            raise TypeError(f"{fname}: noise= comes with its own shape and layout; leave out "
                            "key, shape, mesh and spec")
        noise = ensure_array(fname, noise, "noise")
        if np.dtype(noise.dtype).kind != "f":
            raise TypeError(f"{fname}: noise has dtype {noise.dtype}; white noise is real "
                            "floating (float32 or float64)")
        if dtype is not None and np.dtype(dtype) != np.dtype(noise.dtype):
            noise = astype(noise, dtype)
    shape = tuple(noise.shape)
    lengths = tuple((n, "fft") for n in shape[:-1]) + ((shape[-1], "rfft"),)
    box = box_lengths(box, lengths, fname)
    w_k = rfftn(noise)
    ks = wavenumbers(w_k, s=shape, d=tuple(L / n for L, n in zip(box, shape)))
    k2 = ks[0] * ks[0]
    for k in ks[1:]:
        k2 = k2 + k * k
    kmag = sqrt(k2)
    per_cell = math.prod(shape) / math.prod(box)          # N / V = 1 / V_cell

    def amplitude(kb):
        p = jnp.asarray(power(kb), kb.dtype)
        return jnp.where(kb > 0, jnp.sqrt(jnp.maximum(p, 0) * per_cell), 0).astype(kb.dtype)
    amp = map_blocks(amplitude, kmag, padding="keep")
    delta_k = w_k * amp
    if fourier:
        return delta_k
    return irfftn(delta_k, s=shape)
