"""Covers: darray/_src/fft/padding.py, darray/_src/fft/api.py

Padded (3/2-rule) transforms, issue #30 point 3: fftn/ifftn/rfftn/irfftn with ``padding=``
against a float64 numpy reference that zero-pads and truncates full spectra (mpi4py-fft's
symmetric Nyquist split), the alias-free product, round trips and layouts, every norm, HLO
without all-gather, gradients, and the errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
import darray.fft as dfft

SPECS = {"pencil2x4": ((2, 4), ("x", "y"), ("x", "y", None)),
         "slab8": ((8,), ("d",), ("d", None, None))}


def place(a, case):
    shape, names, spec = SPECS[case]
    return darray.asarray(a, mesh=mesh_of(shape, names), spec=spec)


def pad_full(c, fine):
    """Zero-pad a full spectrum to `fine`; an even axis's Nyquist entry is split evenly."""
    for ax, m in enumerate(fine):
        n = c.shape[ax]
        if m == n:
            continue
        c = np.moveaxis(c, ax, 0)
        out = np.zeros((m,) + c.shape[1:], complex)
        pos = (n + 1) // 2
        out[:pos] = c[:pos]
        out[m - n // 2:] = c[n - n // 2:]
        if n % 2 == 0:
            out[n // 2] = out[m - n // 2] = c[n // 2] / 2
        c = np.moveaxis(out, 0, ax)
    return c


def truncate_full(f, coarse):
    """Keep the coarse modes of a full spectrum; an even axis's +-N/2 entries are summed."""
    for ax, n in enumerate(coarse):
        m = f.shape[ax]
        if m == n:
            continue
        f = np.moveaxis(f, ax, 0)
        out = np.zeros((n,) + f.shape[1:], complex)
        pos = (n + 1) // 2
        out[:pos] = f[:pos]
        out[n - n // 2:] = f[m - n // 2:]
        if n % 2 == 0:
            out[n // 2] = f[n // 2] + f[m - n // 2]
        f = np.moveaxis(out, 0, ax)
    return f


def fine_of(s, p=1.5):
    return tuple(int(np.floor(p * n)) for n in s)


def band_limited_on_fine(u, fine):
    """numpy: the field of coarse samples u, as its trigonometric interpolant on `fine`."""
    return np.fft.ifftn(pad_full(np.fft.fftn(u), fine)) * (np.prod(fine) / u.size)


SHAPES = [(8, 12, 10), (9, 7, 11), (6, 10, 9)]


@pytest.mark.parametrize("s,case", [
    pytest.param(SHAPES[0], "pencil2x4", id="even-pencil2x4"),
    pytest.param(SHAPES[1], "pencil2x4", id="odd-pencil2x4"),
    pytest.param(SHAPES[2], "slab8", id="mixed-slab8"),
    pytest.param(SHAPES[0], "slab8", id="even-slab8", marks=pytest.mark.slow),
    pytest.param(SHAPES[1], "slab8", id="odd-slab8", marks=pytest.mark.slow),
    pytest.param(SHAPES[2], "pencil2x4", id="mixed-pencil2x4", marks=pytest.mark.slow)])
@pytest.mark.x64
def test_alias_free_product_against_numpy(s, case):
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal(s), rng.standard_normal(s)
    x, y = place(u, case), place(v, case)
    k1, k2 = dfft.rfftn(x), dfft.rfftn(y)
    fine = fine_of(s)
    uf, vf = dfft.irfftn(k1, s=s, padding=1.5), dfft.irfftn(k2, s=s, padding=1.5)
    assert uf.shape == fine and uf.layout.split == x.layout.split
    ref_uf = band_limited_on_fine(u, fine)
    np.testing.assert_allclose(np.asarray(uf), ref_uf.real, atol=1e-12)
    np.testing.assert_allclose(np.asarray(uf)[::3, ::3, ::3][: s[0] // 2, : s[1] // 2],
                               u[::2, ::2, ::2][: s[0] // 2, : s[1] // 2], atol=1e-12) \
        if all(n % 2 == 0 for n in s) else None  # fine point 3j is coarse point 2j
    product = dfft.rfftn(uf * vf, s=s, padding=1.5)
    assert product.shape == k1.shape and product.layout == k1.layout
    wf = ref_uf.real * band_limited_on_fine(v, fine).real
    expect = truncate_full(np.fft.fftn(wf), s) * (np.prod(s) / np.prod(fine))
    np.testing.assert_allclose(np.asarray(product), expect[..., : s[-1] // 2 + 1], atol=1e-11)
    # the round trip is the identity on spectra of real fields
    np.testing.assert_allclose(np.asarray(dfft.rfftn(uf, s=s, padding=1.5)), np.asarray(k1),
                               atol=1e-11)


@pytest.mark.parametrize("norm", ["backward", pytest.param("ortho", marks=pytest.mark.slow),
                                  "forward"])
@pytest.mark.x64
def test_complex_and_every_norm(norm):
    s = (8, 9, 10)
    rng = np.random.default_rng(1)
    a = rng.standard_normal(s) + 1j * rng.standard_normal(s)
    x = place(a, "pencil2x4")
    k = dfft.fftn(x, norm=norm)
    fine = fine_of(s)
    zf = dfft.ifftn(k, padding=1.5, norm=norm)
    np.testing.assert_allclose(np.asarray(zf), band_limited_on_fine(a, fine), atol=1e-12)
    assert zf.layout == place(np.zeros(fine, complex), "pencil2x4").layout
    back = dfft.fftn(zf, s=s, padding=1.5, norm=norm)
    np.testing.assert_allclose(np.asarray(back), np.asarray(k), atol=1e-11)
    assert back.layout == k.layout
    # real transforms too: the coarse transform of the same band-limited field
    r = place(a.real, "pencil2x4")
    kr = dfft.rfftn(r, norm=norm)
    rf = dfft.irfftn(kr, s=s, padding=1.5, norm=norm)
    np.testing.assert_allclose(np.asarray(rf), band_limited_on_fine(a.real, fine).real,
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(dfft.rfftn(rf, s=s, padding=1.5, norm=norm)),
                               np.asarray(kr), atol=1e-11)


@pytest.mark.x64
def test_padding_per_axis_and_axes_subset():
    s = (6, 8, 10)
    a = np.random.default_rng(2).standard_normal(s)
    x = place(a, "slab8")
    k = dfft.rfftn(x, axes=(1, 2))
    f = dfft.irfftn(k, s=(8, 10), axes=(1, 2), padding=(2, 1.5))
    assert f.shape == (6, 16, 15)
    ref = np.fft.ifftn(pad_full(np.fft.fftn(a, axes=(1, 2)), (6, 16, 15)), axes=(1, 2))
    np.testing.assert_allclose(np.asarray(f), ref.real * (16 * 15 / 80), atol=1e-12)
    assert f.layout.split == x.layout.split
    # padding 1 is the plain transform
    np.testing.assert_allclose(np.asarray(dfft.rfftn(x, padding=1)), np.fft.rfftn(a),
                               atol=1e-12)


def test_no_all_gather_and_gradient():
    s = (8, 12, 10)
    x = place(np.random.default_rng(3).standard_normal(s), "pencil2x4")
    k = dfft.rfftn(x)

    def square_dealiased(kd):
        kk = darray.DistArray._new(kd, k.layout)
        f = dfft.irfftn(kk, s=s, padding=1.5)
        return dfft.rfftn(f * f, s=s, padding=1.5).data
    hlo = jax.jit(square_dealiased).lower(k.data).compile().as_text()
    assert "all-gather" not in hlo and "all-to-all" in hlo
    # d/dx sum(irfftn_padded(rfftn(x))) ** 2 / 2 = the transform's adjoint applied to itself
    g = jax.grad(lambda v: jnp.sum(dfft.irfftn(dfft.rfftn(v), s=s, padding=1.5).to_jax()
                                   ** 2) / 2)(x)
    assert g.layout == x.layout
    a = np.asarray(x)
    fine = fine_of(s)
    eps = 1e-6
    for idx in [(0, 0, 0), (3, 5, 7), (7, 11, 9)]:
        d = np.zeros(s)
        d[idx] = eps

        def loss(b):
            return np.sum(band_limited_on_fine(b, fine).real ** 2) / 2
        fd = (loss(a + d) - loss(a - d)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g)[idx], fd, rtol=1e-5)  # fd round-off


def test_bad_padding():
    x = place(np.zeros((8, 8, 8)), "slab8")
    with pytest.raises(ValueError, match="padding=0.5 is not accepted"):
        dfft.rfftn(x, padding=0.5)
    with pytest.raises(ValueError, match="2 entries for 3 transform axes"):
        dfft.fftn(x, padding=(1.5, 1.5))
    with pytest.raises(TypeError, match="padding entry"):
        dfft.fftn(x, padding="big")
    with pytest.raises(ValueError, match="fine grid"):
        dfft.rfftn(x, s=(8, 8, 8), padding=1.5)
    with pytest.raises(ValueError, match="coarse shape"):
        dfft.irfftn(dfft.rfftn(x), s=(8, 8, 10), padding=1.5)
