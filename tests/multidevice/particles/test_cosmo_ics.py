"""Covers: darray/_src/cosmo/ics.py

darray.cosmo.gaussian_field / zeldovich / lpt2 against single-device numpy float64
references built from the same white noise, and the compiled programs hold no all-gather."""
from __future__ import annotations

import re

import helpers
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import darray
from darray.cosmo import gaussian_field, lpt2, power_spectrum, zeldovich

MESHES = {"8": ((8,), ("d",)), "2x4": ((2, 4), ("x", "y")), "4x2": ((4, 2), ("x", "y"))}
CASES = [((12, 10, 9), "2x4", ("x", "y"), (30.0, 25.0, 20.0)),
         ((16, 16, 16), "8", ("d",), 64.0),
         ((9, 14, 11), "4x2", ("x", "y"), None),
         ((14, 11), "2x4", ("x", "y"), 10.0)]


def mesh_of(name):
    shape, names = MESHES[name]
    return helpers.mesh_of(shape, names)


def power(k):
    return 50.0 * k / (1 + (k / 0.4) ** 3)


def lengths(shape, box):
    if box is None:
        return tuple(float(n) for n in shape)
    return (float(box),) * len(shape) if np.ndim(box) == 0 else tuple(box)


def numpy_ics(noise, box):
    """float64 numpy: delta, psi1, psi2 of the documented formulas."""
    shape = noise.shape
    ndim = len(shape)
    axes = tuple(range(ndim))
    ks = []
    for axis, (n, length) in enumerate(zip(shape, lengths(shape, box))):
        freq = np.fft.rfftfreq if axis == ndim - 1 else np.fft.fftfreq
        k = 2 * np.pi * freq(n, length / n)
        view = [1] * ndim
        view[axis] = k.size
        ks.append(k.reshape(view))
    k2 = sum(k * k for k in ks)
    kmag = np.sqrt(k2)
    amp = np.where(kmag > 0, np.sqrt(power(np.where(kmag > 0, kmag, 1.0)) * np.prod(shape)
                                     / np.prod(lengths(shape, box))), 0)
    delta_k = np.fft.rfftn(noise) * amp
    odd = [np.where(np.arange(k.size).reshape(k.shape) == n // 2, 0, k) if n % 2 == 0 else k
           for k, n in zip(ks, shape)]
    inv = np.where(k2 > 0, 1 / np.where(k2 > 0, k2, 1), 0)

    def irfft(a):
        return np.fft.irfftn(a, s=shape, axes=axes)
    psi1 = np.stack([irfft(1j * k * delta_k * inv) for k in odd], -1)
    hess = {(a, b): irfft((ks[a] ** 2 if a == b else odd[a] * odd[b]) * delta_k * inv)
            for a in range(ndim) for b in range(a, ndim)}
    source = sum(hess[a, a] * hess[b, b] - hess[a, b] ** 2
                 for a in range(ndim) for b in range(a + 1, ndim))
    source_k = np.fft.rfftn(source, axes=axes)
    psi2 = np.stack([irfft(-1j * k * source_k * inv) for k in odd], -1)
    return irfft(delta_k), psi1, psi2


@pytest.mark.x64  # float64 data and tolerances
@pytest.mark.parametrize("shape,mesh_name,spec,box", CASES)
def test_fields_match_numpy_from_the_same_noise(shape, mesh_name, spec, box):
    mesh = mesh_of(mesh_name)
    key = jax.random.key(3)
    delta = gaussian_field(power, box=box, key=key, shape=shape, mesh=mesh, spec=spec)
    # the noise of the key mode: darray.random.normal, the same on every mesh
    noise = np.asarray(darray.random.normal(key, shape, mesh=mesh_of("8")))
    d_ref, p1_ref, p2_ref = numpy_ics(noise, box)
    assert delta.layout == darray.random.normal(key, shape, mesh=mesh, spec=spec).layout
    assert np.abs(np.asarray(delta) - d_ref).max() < 1e-13 * np.abs(d_ref).max()
    psi1, psi2 = lpt2(delta, box=box)
    grid = delta.layout.split
    for psi in (psi1, psi2):
        assert psi.shape == shape + (len(shape),) and psi.layout.split == grid + ((),)
        assert psi.data.sharding.spec == psi.layout.spec
    assert np.abs(np.asarray(psi1) - p1_ref).max() < 1e-13 * np.abs(p1_ref).max()
    assert np.abs(np.asarray(psi2) - p2_ref).max() < 1e-13 * np.abs(p2_ref).max()
    z = zeldovich(delta, box=box)
    np.testing.assert_allclose(np.asarray(z), np.asarray(psi1), rtol=0, atol=1e-14)
    # the Fourier output and a spectrum input give the same displacements
    delta_k = gaussian_field(power, box=box, key=key, shape=shape, mesh=mesh, spec=spec,
                             fourier=True)
    again = zeldovich(delta_k, box=box, s=shape)
    assert np.abs(np.asarray(again) - p1_ref).max() < 1e-13 * np.abs(p1_ref).max()


@pytest.mark.x64  # float64 data and tolerances
def test_noise_mode_reproduces_a_jax_random_single_device_code():
    """The documented mapping: jax.random.normal noise passed as noise= gives the field a
    single-device code computes from it."""
    shape = (12, 10, 9)
    white = jax.random.normal(jax.random.key(11), shape, dtype=jnp.float64)
    noise = darray.asarray(white, mesh=mesh_of("2x4"), spec=("x", "y"))
    delta = gaussian_field(power, box=40.0, noise=noise)
    d_ref, _, _ = numpy_ics(np.asarray(white), 40.0)
    assert delta.layout == noise.layout
    assert np.abs(np.asarray(delta) - d_ref).max() < 1e-13 * np.abs(d_ref).max()


def test_no_all_gather_in_the_compiled_initial_conditions():
    mesh = mesh_of("2x4")
    noise = darray.random.normal(jax.random.key(0), (16, 12, 10), mesh=mesh, spec=("x", "y"))

    def ics(w):
        return lpt2(gaussian_field(power, box=50.0, noise=w), box=50.0)
    text = jax.jit(ics).lower(noise).compile().as_text()
    found = re.findall(r"\b(all-gather|all-to-all|all-reduce|reduce-scatter)(?:-start)?\(",
                       text)
    assert "all-gather" not in found and "reduce-scatter" not in found, set(found)
    assert found.count("all-to-all") > 0          # the distributed FFTs


@pytest.mark.x64  # float64 data and tolerances
def test_physics_checks():
    """-div psi1 = delta (spectrally); a field varying along one axis has psi2 = 0 (Zel'dovich
    is exact in 1-D); the measured P(k) of a field follows P within sampling noise."""
    mesh = mesh_of("2x4")
    n, box = 32, 64.0
    delta = gaussian_field(power, box=box, key=jax.random.key(1), shape=(n, n, n), mesh=mesh,
                           spec=("x", "y"))
    psi1 = np.asarray(zeldovich(delta, box=box))
    k = 2 * np.pi * np.fft.fftfreq(n, box / n)
    kz = 2 * np.pi * np.fft.rfftfreq(n, box / n)
    div = sum(1j * kk * np.fft.rfftn(psi1[..., a])
              for a, kk in enumerate((k[:, None, None], k[None, :, None], kz[None, None, :])))
    dk = np.fft.rfftn(np.asarray(delta))
    odd = (np.abs(k) < np.pi * n / box - 1e-9)[:, None, None] & \
          (np.abs(k) < np.pi * n / box - 1e-9)[None, :, None] & \
          (kz < np.pi * n / box - 1e-9)[None, None, :]
    assert np.abs((-div - dk)[odd]).max() < 1e-12 * np.abs(dk).max()
    x = np.cos(2 * np.pi * 3 * np.arange(n) / n)
    plane = darray.asarray(np.broadcast_to(x[:, None, None], (n, n, n)).copy(), mesh=mesh,
                           spec=("x", "y"))
    p1, p2 = lpt2(plane)
    assert float(darray.max(darray.abs(p2))) < 1e-14 and float(darray.max(darray.abs(p1))) > 1
    r = power_spectrum(delta, box=box)
    expect = power(np.asarray(r.k))
    modes = np.asarray(r.modes)
    rel = np.abs(np.asarray(r.power) / expect - 1)
    many = modes > 200                      # Gaussian modes: relative scatter sqrt(2 / modes)
    assert many.sum() >= 8 and np.all(rel[many] < 5 * np.sqrt(2 / modes[many]))


@pytest.mark.x64  # float64 data and tolerances
def test_key_mode_is_mesh_independent_and_errors():
    key = jax.random.key(4)
    a = gaussian_field(power, key=key, shape=(9, 14, 11), mesh=mesh_of("4x2"), spec=("x", "y"))
    b = gaussian_field(power, key=key, shape=(9, 14, 11), mesh=mesh_of("8"), spec=(None, "d"))
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-13)
    with pytest.raises(TypeError, match="power=3 must be a callable"):
        gaussian_field(3, key=key, shape=(8, 8))
    with pytest.raises(TypeError, match="pass key= and shape="):
        gaussian_field(power, key=key)
    with pytest.raises(TypeError, match="leave out key, shape, mesh and spec"):
        gaussian_field(power, noise=a, key=key)
    with pytest.raises(ValueError, match="fftn spectrum"):
        zeldovich(darray.fft.fftn(darray.astype(a, darray.complex128)), s=(9, 14, 11))
    with pytest.raises(TypeError, match="pass s="):
        lpt2(darray.fft.rfftn(a))
