"""Binned spectra of distributed Fourier fields: power and cross spectra, turbulence energy
spectra, and the interlacing of two painted fields.

Every device bins its own block of the spectrum into a few bin vectors (mode count, sum of
``|k|``, sum of the power), then one psum of those vectors over the mesh axes that split the
spectrum: the grid is never gathered (docs/design.md, principle 2).

Binning rule, the same as nbodykit's ``project_to_basis``: a mode of wavevector k falls in bin
``i`` when ``edges[i]**2 <= |k|**2 < edges[i+1]**2``, with ``|k|**2`` the sum, in axis order,
of the float64 squares of the per-axis angular wavenumbers (``2*pi*fftfreq(n, L/n)``,
``rfftfreq`` on a halved axis). Comparing squares keeps ties deterministic: a numpy reference
that adds the same squares in the same order bins every mode the same way.
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.api.elementwise import cos, sin
from darray._src.api.statistical import plain
from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array
from darray._src.engine.placing import redistribute
from darray._src.extras.blockwise import block_coordinates
from darray._src.fft.api import rfftn
from darray._src.fft.freq import angular_wavenumbers, real_lengths, wavenumbers
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.particles.schemes import check_scheme
from darray._src.placement import physical


class PowerSpectrum(NamedTuple):
    """The result of `power_spectrum`: four 1-D arrays of ``len(edges) - 1`` bins."""
    k: DistArray        #: mean ``|k|`` of the modes in each bin (NaN where a bin has none)
    power: DistArray    #: mean power per bin, normalised by the volume, shot noise removed
    modes: DistArray    #: number of Fourier modes in each bin (integer, Hermitian-weighted)
    edges: np.ndarray   #: the bin edges (float64)


class EnergySpectrum(NamedTuple):
    """The result of `energy_spectrum`: four 1-D arrays of ``len(edges) - 1`` bins."""
    k: DistArray        #: mean ``|k|`` of the modes in each bin (NaN where a bin has none)
    energy: DistArray   #: E(k): shell sum of ``|u_k|^2 / 2 / N^2``, divided by the bin width
    modes: DistArray    #: number of Fourier modes in each bin
    edges: np.ndarray   #: the bin edges (float64)


# -- arguments ---------------------------------------------------------------------------------
def field_spectra(fields, s, fname: str):
    """The spectra (plain layout, all in the first one's) and (real length, kind) per axis.

    A real field is transformed with rfftn; a complex one is taken as an fftn or rfftn spectrum
    whose real-space shape `s` says which (as in `darray.fft.wavenumbers`)."""
    out: list[DistArray] = []
    lengths = None
    for i, f in enumerate(fields):
        name = "field" if i == 0 else f"fields[{i}]"
        f = ensure_array(fname, f, name)
        if f.ndim == 0:
            raise ValueError(f"{fname}: {name} is 0-d; a field has at least one axis")
        if np.dtype(f.dtype).kind in "iub":
            raise TypeError(f"{fname}: {name} has dtype {f.dtype}; pass a real floating field "
                            "(transformed here with rfftn) or a complex fftn/rfftn spectrum")
        if np.dtype(f.dtype).kind == "f":
            if s is not None and tuple(s) != tuple(f.shape):
                raise ValueError(f"{fname}: s={tuple(s)} but {name} is a real field of shape "
                                 f"{f.shape}; s is only for spectra (leave it out)")
            here = [(n, "fft") for n in f.shape[:-1]] + [(f.shape[-1], "rfft")]
            f = rfftn(f)
        else:
            if s is None:
                raise TypeError(f"{fname}: {name} is a complex spectrum of shape {f.shape}; "
                                "pass s=<the real-space shape> (its shape alone cannot tell an "
                                "fftn spectrum from an rfftn one, nor an even last length from "
                                "an odd one)")
            here = real_lengths(f, s, None)
            bad = [kind for _, kind in here if kind not in ("fft", "rfft")]
            if bad:
                raise ValueError(f"{fname}: {name} has a {bad[0]} axis; only fftn and rfftn "
                                 "spectra are binned")
        if lengths is None:
            lengths = tuple(here)
        elif tuple(here) != lengths or f.shape != out[0].shape:
            raise ValueError(f"{fname}: {name} (spectrum shape {f.shape}, real lengths "
                             f"{[n for n, _ in here]}) does not match the first field (spectrum "
                             f"shape {out[0].shape}, real lengths {[n for n, _ in lengths]})")
        f = plain(f)
        if out and f.layout != out[0].layout:
            if f.mesh != out[0].mesh:
                raise ValueError(f"{fname}: {name} is on another mesh than the first field; "
                                 "put both on one mesh")
            f = redistribute(f, out[0].layout, None)
        out.append(f)
    assert lengths is not None
    return out, lengths


def box_lengths(box, lengths, fname: str) -> tuple[float, ...]:
    ndim = len(lengths)
    if box is None:
        return tuple(float(n) for n, _ in lengths)   # cell units: spacing 1
    values = (box,) * ndim if np.ndim(box) == 0 else tuple(box)
    if len(values) != ndim:
        raise ValueError(f"{fname}: box={box!r} has {len(values)} entries for {ndim} axes; "
                         "accepted: one length, or one per axis")
    out = []
    for v in values:
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise TypeError(f"{fname}: box entry {v!r} is not a number") from None
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{fname}: box entry {v!r} is not accepted; use a finite, "
                             "positive box length")
        out.append(v)
    return tuple(out)


def default_edges(lengths, box, dk=None) -> np.ndarray:
    """Bins centred on the multiples ``j * dk`` (``j = 1, 2, ...``) up to the smallest Nyquist
    wavenumber ``pi * min(n_a / L_a)``; default ``dk = 2 pi / min(L)`` (nbodykit's spacing).
    Centred bins keep the modes of a cubic box off the edges (``|k|^2 / dk^2`` is an integer,
    ``(j + 1/2)^2`` never is) and leave the k = 0 mode out."""
    if dk is None:
        dk = 2 * np.pi / min(box)
    nyquist = np.pi * min(n / L for (n, _), L in zip(lengths, box))
    count = max(1, int(np.floor(nyquist / dk + 1e-9)))
    return (np.arange(count + 1, dtype=np.float64) + 0.5) * dk


def _edges(edges, dk, lengths, box, fname: str) -> np.ndarray:
    if edges is not None and dk is not None:
        raise TypeError(f"{fname}: pass edges= or dk=, not both")
    if edges is None:
        if dk is not None:
            try:
                dk = float(dk)
            except (TypeError, ValueError):
                raise TypeError(f"{fname}: dk={dk!r} is not a number") from None
            if not (np.isfinite(dk) and dk > 0):
                raise ValueError(f"{fname}: dk={dk!r} must be a finite positive bin width")
        return default_edges(lengths, box, dk)
    e = np.asarray(edges, dtype=np.float64) if not isinstance(edges, DistArray) else None
    if e is None or e.ndim != 1 or e.size < 2:
        raise ValueError(f"{fname}: edges={edges!r} must be a 1-D sequence of at least two bin "
                         "edges (a host array, e.g. numpy)")
    if not (np.all(np.isfinite(e)) and np.all(np.diff(e) > 0) and e[0] >= 0):
        raise ValueError(f"{fname}: edges={e.tolist()} must be finite, non-negative and "
                         "strictly increasing")
    return e


def _scheme_order(window, fname: str) -> int:
    if window is None:
        return 0
    return check_scheme(window, fname).order


def _float():
    return np.dtype(np.float64 if jax.config.read("jax_enable_x64") else np.float32)


def _int():
    return np.dtype(np.int64 if jax.config.read("jax_enable_x64") else np.int32)


# -- the binning program -----------------------------------------------------------------------
def _axis_tables(layout: Layout, lengths, box, order):
    """Per axis, padded to the physical length: k_a**2 (inf on padding, so it bins nowhere) and
    the deconvolution factor W_a**(2 * order) (1 on padding); the Hermitian weight of the last
    axis (2 on interior planes of a halved axis, 1 on its k = 0 and Nyquist planes, 0 on
    padding)."""
    k2_tabs, win_tabs = [], []
    for axis, ((n, kind), length) in enumerate(zip(lengths, box)):
        size = layout.padded_shape[axis]
        k = angular_wavenumbers(kind, n, length / n)
        k2 = np.full(size, np.inf)
        k2[:k.size] = k * k
        k2_tabs.append(k2)
        win = np.ones(size)
        if order:
            freq = np.fft.rfftfreq(n) if kind == "rfft" else np.fft.fftfreq(n)
            win[:k.size] = np.sinc(freq) ** (2 * order)
        win_tabs.append(win)
    n, kind = lengths[-1]
    m = layout.shape[-1]
    herm = np.zeros(layout.padded_shape[-1], np.int64)
    herm[:m] = 1
    if kind == "rfft":
        herm[1:m] = 2
        if n % 2 == 0:
            herm[m - 1] = 1    # the Nyquist plane is its own mirror
    return k2_tabs, win_tabs, herm


@program_cache(SMALL)
def _shells_fn(layout: Layout, lengths, box, edges, order: int, npairs: int, finish):
    k2_tabs, win_tabs, herm = _axis_tables(layout, lengths, box, order)
    fdt, idt = _float(), _int()
    cdt = np.dtype(np.complex128 if fdt == np.float64 else np.complex64)
    e2 = np.asarray(edges, np.float64) ** 2
    nbins = len(edges) - 1
    names = layout.used_mesh_axes

    def body(*blocks):
        coords = block_coordinates(layout, np.int32)
        k2 = win = None
        for axis in range(layout.ndim):
            t = jnp.asarray(k2_tabs[axis], fdt)[coords[axis]]
            k2 = t if k2 is None else k2 + t      # axis order: what the docstring promises
            if order:
                w = jnp.asarray(win_tabs[axis], fdt)[coords[axis]]
                win = w if win is None else win * w
        weight = jnp.asarray(herm, idt)[coords[-1]]
        index = jnp.searchsorted(jnp.asarray(e2, fdt), k2, side="right") - 1
        index = jnp.where((index >= 0) & (k2 > 0), index, nbins)   # k = 0 and beyond: dropped
        power = None
        for a, b in zip(blocks[:npairs], blocks[npairs:]):
            term = jnp.real(a.astype(cdt) * jnp.conj(b.astype(cdt)))
            power = term if power is None else power + term
        if order:
            power = power / win
        keep = index < nbins
        weight = jnp.where(keep, jnp.broadcast_to(weight, index.shape), 0)
        wf = weight.astype(fdt)
        flat = index.ravel()
        counts = jnp.zeros(nbins, idt).at[flat].add(weight.ravel(), mode="drop")
        ksum = jnp.zeros(nbins, fdt).at[flat].add(
            (wf * jnp.sqrt(jnp.where(keep, k2, 0))).ravel(), mode="drop")
        psum = jnp.zeros(nbins, fdt).at[flat].add(
            (wf * jnp.where(keep, power, 0)).ravel(), mode="drop")
        sums = (counts, ksum, psum)
        return jax.lax.psum(sums, names) if names else sums   # the one reduction

    mapped = compat.shard_map(body, mesh=layout.mesh, in_specs=(layout.spec,) * (2 * npairs),
                              out_specs=(PartitionSpec(),) * 3, check_vma=False)
    out = make_out_layout(layout.mesh, (nbins,), [()])

    def run(*data):
        data = tuple(physical.constrain(d, layout) for d in data)
        counts, ksum, psum = mapped(*data)
        safe = jnp.maximum(counts, 1).astype(fdt)
        empty = counts == 0
        kmean = jnp.where(empty, jnp.nan, ksum / safe)
        value = finish(psum, safe, empty, np.asarray(edges))
        return tuple(physical.constrain(v, out) for v in (kmean, value, counts))
    return jax.jit(run), out


class _MeanPower:
    """Mean power per mode, times V / N**2, less the shot noise (hashable: part of the key)."""

    def __init__(self, scale: float, shot: float):
        self.scale, self.shot = scale, shot

    def __call__(self, psum, safe, empty, edges):
        return jnp.where(empty, jnp.nan, psum / safe * self.scale - self.shot)

    def __eq__(self, other):
        return isinstance(other, _MeanPower) and (self.scale, self.shot) == (other.scale,
                                                                             other.shot)

    def __hash__(self):
        return hash(("mean", self.scale, self.shot))


class _ShellEnergy:
    """Shell sum of |u_k|^2 / 2 / N**2 over the bin width: sum(E * dk) = <|u|^2> / 2."""

    def __init__(self, scale: float):
        self.scale = scale

    def __call__(self, psum, safe, empty, edges):
        return psum * self.scale / jnp.asarray(np.diff(edges), psum.dtype)

    def __eq__(self, other):
        return isinstance(other, _ShellEnergy) and self.scale == other.scale

    def __hash__(self):
        return hash(("energy", self.scale))


def _run(first, second, lengths, box, edges, order, finish):
    layout = first[0].layout
    fn, out = _shells_fn(layout, tuple(lengths), tuple(box), tuple(float(e) for e in edges),
                         order, len(first), finish)
    kmean, value, counts = fn(*(f.data for f in first), *(f.data for f in second))
    return tuple(DistArray._new(v, out) for v in (kmean, value, counts))


# -- public ------------------------------------------------------------------------------------
def power_spectrum(field, other=None, *, box=None, s=None, edges=None, dk=None, window=None,
                   shot_noise=0.0) -> PowerSpectrum:
    """The spherically binned power spectrum of a field, or the cross spectrum of two.

    ``P(k_i) = V / N**2 * mean over the modes k in bin i of Re(F1(k) conj(F2(k))) / W(k)**2
    - shot_noise``, with F the unnormalised DFT (numpy's ``rfftn``/``fftn``), N the number of
    real-space cells and V the box volume; so a white noise of unit variance has P = V / N.

    Args:
      field: a real field (transformed here with `darray.fft.rfftn`), or its complex `rfftn`
        or `fftn` spectrum (then `s` is required).
      other: None (auto spectrum) or a second field of the same kind and shape (cross
        spectrum); moved to `field`'s layout when laid out otherwise.
      box: the box length, one number or one per axis (default: the grid shape, i.e. cell
        units). Wavenumbers are ``2 pi fftfreq(n, L / n)`` per axis.
      s: the real-space shape of a spectrum (as for `irfftn` and `darray.fft.wavenumbers`).
      edges: increasing bin edges in ``|k|`` (a host sequence). A mode is in bin i when
        ``edges[i]**2 <= |k|**2 < edges[i+1]**2``; the k = 0 mode is in no bin.
      dk: instead of `edges`, the spacing of bins centred on ``dk, 2 dk, ...`` up to the
        smallest Nyquist wavenumber. Default (neither given): ``dk = 2 pi / min(box)``.
      window: None, or the mass-assignment scheme that painted the field(s): "ngp", "cic" or
        "tsc". Each mode is divided by ``W(k)**2``, ``W = prod_a sinc(k_a L_a / (2 pi n_a))**p``
        (p = 1, 2, 3), the scheme's window per field (`darray.particles.window`).
      shot_noise: a constant subtracted from every bin (for particles: ``V / N_particles``).

    Returns:
      ``PowerSpectrum(k, power, modes, edges)``: replicated 1-D DistArrays of the real floating
      dtype (float64 under jax_enable_x64) for `k` (the Hermitian-weighted mean ``|k|`` of the bin's
      modes) and `power`; integer `modes`; `edges` as given or built (numpy float64). An empty
      bin has ``modes == 0`` and NaN `k` and `power`.

    Modes: an rfftn spectrum holds half of the modes; each entry of its halved last axis
    stands for itself and its mirror (weight 2), except on the k = 0 plane and, for an even
    length, the Nyquist plane (weight 1). So `modes` counts the modes of the full fftn grid
    in each shell, the same for an rfftn and an fftn spectrum of one real field.

    Conventions compared with nbodykit's ``FFTPower`` (and pmesh): the same normalisation
    (pmesh's r2c divides by N, then ``P = V |c|**2``), Hermitian weights, mean-k definition
    and ``edges**2 <= |k|**2`` rule. Different: (1) nbodykit zeroes the k = 0 mode but counts
    it in its first bin (``modes`` one larger and the power biased low there when kmin = 0);
    here it is in no bin. (2) nbodykit's default edges are ``arange(kmin, k_nyq + dk / 2,
    dk)`` (modes of a cubic box lie on the edges, placed by rounding); here bins are centred
    on multiples of dk. (3) nbodykit records ``V / N`` as ``attrs['shotnoise']`` and does not
    subtract it; here `shot_noise` is subtracted when given. (4) nbodykit returns a complex
    power (the imaginary part of a cross spectrum); here its real part. (5) nbodykit's
    catalogue-to-mesh compensation without interlacing is Jing (2005)'s alias-aware
    ``1 / sqrt(1 - 2/3 sin^2(k/2))`` per axis (CIC); ``window=`` divides by the plain sinc
    window (nbodykit's choice with interlacing); use it with `interlace`.

    Layout:
      Each device bins its own block of the spectrum (a real input is first transformed with
      rfftn: all-to-alls); then one all-reduce of three bin vectors over the mesh axes that
      split it. Never a gather of the grid. Works under jit and grad.
    """
    fname = "darray.cosmo.power_spectrum"
    fields = [field] if other is None or other is field else [field, other]
    spectra, lengths = field_spectra(fields, s, fname)
    box = box_lengths(box, lengths, fname)
    e = _edges(edges, dk, lengths, box, fname)
    order = _scheme_order(window, fname)
    try:
        shot = float(shot_noise)
    except (TypeError, ValueError):
        raise TypeError(f"{fname}: shot_noise={shot_noise!r} must be a number") from None
    cells = math.prod(n for n, _ in lengths)
    scale = math.prod(box) / float(cells) ** 2
    a, b = spectra[0], spectra[-1]
    k, power, modes = _run([a], [b], lengths, box, e, order, _MeanPower(scale, shot))
    return PowerSpectrum(k, power, modes, e)


def energy_spectrum(velocity, *, box=None, s=None, edges=None, dk=None) -> EnergySpectrum:
    """The shell-summed kinetic energy spectrum E(k) of a velocity field.

    ``E(k_i) = sum over the modes k in bin i of sum_c |u_c(k)|**2 / (2 N**2), divided by the
    bin width``, so ``sum_i E(k_i) * (edges[i+1] - edges[i])`` is the mean kinetic energy
    ``<|u|**2> / 2`` carried by the binned modes (Parseval; the k = 0 mode, the mean flow, is
    in no bin).

    Args:
      velocity: a sequence of the components (real fields, or their fftn/rfftn spectra with
        `s`), each of one grid shape.
      box, s, edges, dk: as in `power_spectrum` (wavenumbers ``2 pi fftfreq(n, L / n)``; for a
        2 pi periodic box pass ``box=2 * math.pi``: integer wavenumbers).

    Returns:
      ``EnergySpectrum(k, energy, modes, edges)``, as `power_spectrum`'s (an empty bin has
      ``energy == 0``).

    Layout:
      As `power_spectrum`: each device bins its own block; one all-reduce of the bins.
    """
    fname = "darray.cosmo.energy_spectrum"
    if isinstance(velocity, DistArray) or not isinstance(velocity, (list, tuple)):
        raise TypeError(f"{fname}: velocity must be a list or tuple of the component fields "
                        f"(e.g. [ux, uy, uz]), got {type(velocity).__name__}")
    if not velocity:
        raise ValueError(f"{fname}: velocity is empty; pass one field per component")
    spectra, lengths = field_spectra(list(velocity), s, fname)
    box = box_lengths(box, lengths, fname)
    e = _edges(edges, dk, lengths, box, fname)
    cells = math.prod(n for n, _ in lengths)
    k, energy, modes = _run(spectra, spectra, lengths, box, e, 0,
                            _ShellEnergy(0.5 / float(cells) ** 2))
    return EnergySpectrum(k, energy, modes, e)


def interlace(field, shifted, *, s=None, shift=0.5):
    """Combine a painted field with one painted after shifting every particle by `shift` cells
    along every axis (Sefusatti et al. 2016): the aliased images of odd order cancel.

    ``(F(k) + F_shifted(k) * exp(i shift sum_a k_a)) / 2`` with k_a in radians per cell: the
    shifted field is ``F(x - shift)``, so its phase factor brings it back. Paint the second
    field from the same particles with ``disp + shift`` (`darray.particles.paint`).

    Args:
      field, shifted: the two real fields (transformed here with rfftn), or their rfftn/fftn
        spectra (then `s`, the real-space shape, is required).
      s: as in `power_spectrum`.
      shift: the shift in cells (default half a cell).

    Returns:
      The interlaced spectrum, a complex DistArray in `field`'s spectrum layout; pass it to
      `power_spectrum` with ``s=`` and ``window=`` (the window is unchanged by interlacing).

    Layout:
      Elementwise on the spectrum blocks after the transforms: no communication beyond them.
    """
    fname = "darray.cosmo.interlace"
    try:
        shift = float(operator.index(shift) if isinstance(shift, (int, np.integer)) else shift)
    except (TypeError, ValueError):
        raise TypeError(f"{fname}: shift={shift!r} must be a number of cells") from None
    spectra, lengths = field_spectra([field, shifted], s, fname)
    a, b = spectra
    ks = wavenumbers(a, s=tuple(n for n, _ in lengths),
                     kinds=tuple(kind for _, kind in lengths))
    phase = None
    for k in ks:
        phase = k * shift if phase is None else phase + k * shift
    rotor = cos(phase) + 1j * sin(phase)
    return (a + b * rotor) * 0.5
