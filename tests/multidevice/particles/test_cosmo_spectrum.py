"""Covers: darray/_src/cosmo/spectrum.py

darray.cosmo.power_spectrum / energy_spectrum / interlace against numpy float64 references.

The reference bins the FULL numpy fftn grid (every mode once, weight 1), so it checks the
Hermitian weights of the rfftn half grid independently: the mode counts must be equal
exactly, the powers to rounding.
"""
from __future__ import annotations

import re

import helpers
import jax
import numpy as np
import pytest

import darray
import darray.fft as dfft
from darray.cosmo import energy_spectrum, interlace, power_spectrum

MESHES = {"8": ((8,), ("d",)), "2x4": ((2, 4), ("x", "y")), "4x2": ((4, 2), ("x", "y"))}
# (shape, mesh, spec, box): uneven splits, odd and even last axes, anisotropic boxes, 2-D
CASES = [((12, 10, 9), "2x4", ("x", "y"), (3.0, 2.5, 2.0)),
         ((16, 16, 16), "8", ("d",), 100.0),
         ((9, 14, 11), "4x2", ("x", "y"), 7.0),
         ((13, 10), "2x4", ("x", "y"), (1.0, 2.0)),
         ((10, 12, 8), "2x4", (None, "x", "y"), None)]


def mesh_of(name):
    shape, names = MESHES[name]
    return helpers.mesh_of(shape, names)


def boxes(shape, box):
    if box is None:
        return tuple(float(n) for n in shape)
    return (float(box),) * len(shape) if np.ndim(box) == 0 else tuple(box)


def full_grid_k2(shape, box):
    """|k|^2 of every fftn mode: float64 squares added in axis order (the documented rule)."""
    k2 = None
    for axis, (n, length) in enumerate(zip(shape, boxes(shape, box))):
        k = 2 * np.pi * np.fft.fftfreq(n, length / n)
        view = [1] * len(shape)
        view[axis] = n
        term = (k * k).reshape(view)
        k2 = term if k2 is None else k2 + term
    return np.broadcast_to(k2, shape)


def reference(shape, box, edges, cross, window_p=0):
    """numpy: (mean |k|, mean cross power * V / N^2, mode counts) over the full grid."""
    k2 = full_grid_k2(shape, box).ravel()
    index = np.searchsorted(edges ** 2, k2, side="right") - 1
    nb = len(edges) - 1
    ok = (index >= 0) & (index < nb) & (k2 > 0)
    if window_p:
        w = 1.0
        for axis, n in enumerate(shape):
            view = [1] * len(shape)
            view[axis] = n
            w = w * (np.sinc(np.fft.fftfreq(n)) ** (2 * window_p)).reshape(view)
        cross = cross / np.broadcast_to(w, shape)
    counts = np.bincount(index[ok], minlength=nb)
    psum = np.bincount(index[ok], weights=cross.ravel()[ok], minlength=nb)
    ksum = np.bincount(index[ok], weights=np.sqrt(k2[ok]), minlength=nb)
    scale = np.prod(boxes(shape, box)) / float(np.prod(shape)) ** 2
    with np.errstate(invalid="ignore"):
        return ksum / counts, psum / counts * scale, counts


def assert_replicated(r, mesh, nbins):
    for a in (r.k, r[1], r.modes):
        assert a.shape == (nbins,) and a.layout.split == ((),)
        assert a.data.sharding.is_fully_replicated and a.mesh == mesh


@pytest.mark.x64  # float64 data and tolerances
@pytest.mark.parametrize("shape,mesh_name,spec,box", CASES)
def test_auto_spectrum_matches_numpy_full_grid(shape, mesh_name, spec, box):
    mesh = mesh_of(mesh_name)
    host = np.random.default_rng(1).standard_normal(shape)
    x = darray.asarray(host, mesh=mesh, spec=spec)
    r = power_spectrum(x, box=box)
    k_ref, p_ref, n_ref = reference(shape, box, r.edges, np.abs(np.fft.fftn(host)) ** 2)
    np.testing.assert_array_equal(np.asarray(r.modes), n_ref)          # exact
    assert n_ref.sum() > 0 and np.issubdtype(np.asarray(r.modes).dtype, np.integer)
    np.testing.assert_allclose(np.asarray(r.power), p_ref, rtol=1e-12, atol=0)
    np.testing.assert_allclose(np.asarray(r.k), k_ref, rtol=1e-13, atol=0)
    assert_replicated(r, mesh, len(r.edges) - 1)
    # the same numbers from the rfftn spectrum (s=) and from the fftn spectrum
    for spectrum in (dfft.rfftn(x), dfft.fftn(darray.astype(x, darray.complex128))):
        again = power_spectrum(spectrum, box=box, s=shape)
        np.testing.assert_array_equal(np.asarray(again.modes), n_ref)
        np.testing.assert_allclose(np.asarray(again.power), p_ref, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(again.k), k_ref, rtol=1e-13)


def test_default_edges_are_centred_on_multiples_of_the_fundamental():
    mesh = mesh_of("2x4")
    host = np.random.default_rng(2).standard_normal((16, 16, 16))
    r = power_spectrum(darray.asarray(host, mesh=mesh, spec=("x", "y")), box=50.0)
    kf = 2 * np.pi / 50.0
    np.testing.assert_allclose(r.edges, (np.arange(9) + 0.5) * kf, rtol=1e-15)
    # cubic box: |k|^2 / kf^2 is an integer, so no mode lies on an edge; counts by integers
    n = np.fft.fftfreq(16, 1 / 16)
    q = (n[:, None, None] ** 2 + n[None, :, None] ** 2 + n[None, None, :] ** 2).ravel()
    shell = np.floor(np.sqrt(q) + 0.5).astype(int)     # nearest integer shell
    expect = np.bincount(shell[(q > 0) & (shell <= 8)], minlength=9)[1:]
    np.testing.assert_array_equal(np.asarray(r.modes), expect)
    assert int(np.asarray(r.modes)[0]) == 6 + 12       # |k| = kf and sqrt(2) kf


@pytest.mark.x64  # float64 data and tolerances
def test_edges_dk_and_empty_bins():
    mesh = mesh_of("8")
    shape, box = (12, 10, 8), 5.0
    host = np.random.default_rng(3).standard_normal(shape)
    x = darray.asarray(host, mesh=mesh, spec=("d",))
    edges = np.array([0.0, 0.05, 1.3, 2.9, 4.0, 30.0, 31.0])    # first and last bins empty
    r = power_spectrum(x, box=box, edges=edges)
    k_ref, p_ref, n_ref = reference(shape, box, edges, np.abs(np.fft.fftn(host)) ** 2)
    np.testing.assert_array_equal(np.asarray(r.modes), n_ref)
    assert n_ref[0] == 0 and n_ref[-1] == 0 and r.edges is not None
    assert np.isnan(np.asarray(r.power)[[0, -1]]).all() and np.isnan(np.asarray(r.k)[0])
    np.testing.assert_allclose(np.asarray(r.power)[1:-1], p_ref[1:-1], rtol=1e-12)
    d = power_spectrum(x, box=box, dk=0.7)
    np.testing.assert_allclose(d.edges[:3], [0.35, 1.05, 1.75], rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(d.modes),
                                  reference(shape, box, d.edges, np.ones(shape))[2])


@pytest.mark.x64  # float64 data and tolerances
def test_cross_spectrum_window_and_shot_noise():
    shape, box = (12, 10, 9), (3.0, 2.5, 2.0)
    rng = np.random.default_rng(4)
    a_host, b_host = rng.standard_normal(shape), rng.standard_normal(shape)
    a = darray.asarray(a_host, mesh=mesh_of("2x4"), spec=("x", "y"))
    b = darray.asarray(b_host, mesh=mesh_of("2x4"), spec=(None, "y", "x"))   # moved to a's
    cross = (np.fft.fftn(a_host) * np.conj(np.fft.fftn(b_host))).real
    for window, p in ((None, 0), ("ngp", 1), ("cic", 2), ("tsc", 3)):
        r = power_spectrum(a, b, box=box, window=window, shot_noise=0.25)
        k_ref, p_ref, n_ref = reference(shape, box, r.edges, cross, window_p=p)
        np.testing.assert_array_equal(np.asarray(r.modes), n_ref)
        np.testing.assert_allclose(np.asarray(r.power), p_ref - 0.25, rtol=1e-11, atol=1e-14)


def test_one_small_all_reduce_and_no_gather():
    mesh = mesh_of("2x4")
    k = dfft.rfftn(darray.zeros((16, 12, 10), mesh=mesh, spec=("x", "y")))
    text = jax.jit(lambda v: power_spectrum(v, s=(16, 12, 10))[:3]).lower(k).compile().as_text()
    found = re.findall(r"\b(all-reduce|all-gather|reduce-scatter|all-to-all|"
                       r"collective-permute)(?:-start)?\(", text)
    assert "all-gather" not in found and "all-to-all" not in found, found
    assert 1 <= found.count("all-reduce") <= 3, found      # the one psum of three bin vectors


def test_under_jit_equals_eager():
    mesh = mesh_of("4x2")
    host = np.random.default_rng(5).standard_normal((9, 14, 11))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    eager = power_spectrum(x, box=7.0, window="cic")
    jitted = jax.jit(lambda v: power_spectrum(v, box=7.0, window="cic"))(x)
    np.testing.assert_array_equal(np.asarray(jitted.modes), np.asarray(eager.modes))
    np.testing.assert_allclose(np.asarray(jitted.power), np.asarray(eager.power), rtol=1e-14)


@pytest.mark.parametrize("shape,mesh_name,spec", [((12, 10, 9), "2x4", ("x", "y")),
                                                  ((16, 15), "8", ("d",))])
@pytest.mark.x64  # float64 data and tolerances
def test_energy_spectrum_parseval_and_numpy(shape, mesh_name, spec):
    mesh = mesh_of(mesh_name)
    rng = np.random.default_rng(6)
    comps = [rng.standard_normal(shape) + 0.3 for _ in shape]
    u = [darray.asarray(c, mesh=mesh, spec=spec) for c in comps]
    box = 2 * np.pi
    kmax = np.sqrt(sum((n // 2) ** 2 for n in shape)) + 1        # every mode binned
    edges = np.arange(0.5, kmax + 1.0, 1.0)
    r = energy_spectrum(u, box=box, edges=edges)
    total = sum(np.abs(np.fft.fftn(c)) ** 2 for c in comps)
    k_ref, mean_ref, n_ref = reference(shape, box, edges, total)
    np.testing.assert_array_equal(np.asarray(r.modes), n_ref)
    cells = float(np.prod(shape))
    shell = np.nan_to_num(mean_ref * n_ref) / (np.prod(boxes(shape, box)) / cells ** 2)
    np.testing.assert_allclose(np.asarray(r.energy), 0.5 * shell / cells ** 2 / np.diff(edges),
                               rtol=1e-12, atol=1e-15)
    # Parseval: the binned energy is the kinetic energy less that of the mean flow
    fluct = 0.5 * sum(np.mean(c ** 2) - np.mean(c) ** 2 for c in comps)
    assert abs(float(np.sum(np.asarray(r.energy) * np.diff(edges))) - fluct) < 1e-12 * fluct


@pytest.mark.x64  # float64 data and tolerances
def test_interlace_matches_numpy_and_cuts_aliasing():
    mesh = mesh_of("2x4")
    n = 16
    rng = np.random.default_rng(7)
    disp_host = rng.uniform(-0.5, 0.5, (n, n, n, 3))
    disp = darray.asarray(disp_host, mesh=mesh, spec=("x", "y"))
    rho = darray.particles.paint(disp, scheme="cic")
    rho_s = darray.particles.paint(disp + 0.5, scheme="cic")
    mixed = interlace(rho, rho_s)
    assert mixed.layout == dfft.rfftn(rho).layout
    f, g = np.fft.rfftn(np.asarray(rho)), np.fft.rfftn(np.asarray(rho_s))
    k = [2 * np.pi * np.fft.fftfreq(n)[:, None, None], 2 * np.pi * np.fft.fftfreq(n)[None, :, None],
         2 * np.pi * np.fft.rfftfreq(n)[None, None, :]]
    expect = 0.5 * (f + g * np.exp(0.5j * (k[0] + k[1] + k[2])))
    assert np.abs(np.asarray(mixed) - expect).max() < 1e-11 * np.abs(expect).max()
    # with spectra in, s= is required; the result is the same
    again = interlace(dfft.rfftn(rho), dfft.rfftn(rho_s), s=(n, n, n))
    np.testing.assert_allclose(np.asarray(again), np.asarray(mixed), rtol=0, atol=1e-11)


def test_errors_name_the_argument():
    mesh = mesh_of("8")
    x = darray.asarray(np.ones((8, 8, 8)), mesh=mesh, spec=("d",))
    k = dfft.rfftn(x)
    with pytest.raises(TypeError, match="complex spectrum.*pass s="):
        power_spectrum(k)
    with pytest.raises(ValueError, match="edges=.*strictly increasing"):
        power_spectrum(x, edges=[0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="edges=.*1-D"):
        power_spectrum(x, edges=[1.0])
    with pytest.raises(TypeError, match="edges= or dk=, not both"):
        power_spectrum(x, edges=[0.5, 1.5], dk=1.0)
    with pytest.raises(ValueError, match="dk=-1.0 must be a finite positive"):
        power_spectrum(x, dk=-1.0)
    with pytest.raises(ValueError, match="scheme='pcs'"):
        power_spectrum(x, window="pcs")
    with pytest.raises(ValueError, match="box=.*2 entries for 3 axes"):
        power_spectrum(x, box=(1.0, 2.0))
    with pytest.raises(ValueError, match="does not match the first field"):
        power_spectrum(x, darray.asarray(np.ones((8, 8, 6)), mesh=mesh, spec=("d",)))
    with pytest.raises(TypeError, match="has dtype int(32|64); pass a real floating"):
        power_spectrum(darray.asarray(np.ones((8, 8), np.int64), mesh=mesh))
    with pytest.raises(TypeError, match="list or tuple of the component fields"):
        energy_spectrum(x)
    with pytest.raises(ValueError, match="real field of shape"):
        power_spectrum(x, s=(8, 8, 9))
