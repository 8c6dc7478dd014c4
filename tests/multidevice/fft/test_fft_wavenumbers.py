"""Covers: darray/_src/fft/freq.py

darray.fft.wavenumbers and collective-free k-space arithmetic (issue #30 point 1, #28 point 9):
values against 2*pi*numpy fftfreq/rfftfreq in float64, layouts that match the spectrum's axis
by axis, and compiled programs of ``k * kx``, ``kx**2 + ky**2 + kz**2`` and meshgrid of split
vectors without any collective."""
import jax
import numpy as np
import pytest
from helpers import collectives, compiled_hlo, mesh_of

import darray
import darray.fft as dfft


def numpy_k(shape, real, d):
    out = []
    for axis, n in enumerate(shape):
        f = (np.fft.rfftfreq if real and axis == len(shape) - 1 else np.fft.fftfreq)(n, d[axis])
        out.append((2 * np.pi * f).reshape([-1 if a == axis else 1 for a in range(len(shape))]))
    return out


@pytest.mark.x64
@pytest.mark.parametrize("shape", [(16, 12, 10), (14, 13, 9)], ids=["even", "uneven"])
@pytest.mark.parametrize("real", [True, False], ids=["rfftn", "fftn"])
@pytest.mark.parametrize("spec", [("x", "y", None), ("x", None, None)], ids=["pencil", "slab"])
def test_values_layouts_and_no_collective(shape, real, spec):
    x = darray.asarray(np.random.default_rng(0).standard_normal(shape),
                       mesh=mesh_of((2, 4), ("x", "y")), spec=spec)
    k = dfft.rfftn(x) if real else dfft.fftn(x)
    d = (0.5, 1.0, 2.0)
    ks = dfft.wavenumbers(k, s=x.shape, d=d)
    ref = numpy_k(shape, real, d)
    assert len(ks) == 3
    for axis, (kw, r) in enumerate(zip(ks, ref)):
        assert kw.shape == r.shape
        assert kw.dtype == np.float64
        assert kw.layout.split[axis] == k.layout.split[axis]
        assert all(not kw.layout.split[a] for a in range(3) if a != axis)
        np.testing.assert_array_equal(np.asarray(kw), r)

    def arithmetic(kd):
        kk = darray.DistArray._new(kd, k.layout)
        k2 = ks[0] ** 2 + ks[1] ** 2 + ks[2] ** 2
        return (1j * ks[0] * kk / (k2 + 1.0)).data

    out = darray.DistArray._new(jax.jit(arithmetic)(k.data), k.layout)
    kr = np.fft.rfftn(np.asarray(x)) if real else np.fft.fftn(np.asarray(x))
    expect = 1j * ref[0] * kr / (ref[0] ** 2 + ref[1] ** 2 + ref[2] ** 2 + 1.0)
    np.testing.assert_allclose(np.asarray(out), expect, rtol=1e-12, atol=1e-12)
    assert collectives(compiled_hlo(arithmetic, k.data)) == []
    # eager too: the result keeps the spectrum's layout
    assert (ks[1] * k).layout == k.layout


def test_float32_spectrum_gives_float32_wavenumbers():
    x = darray.asarray(np.ones((8, 8), np.float32), mesh=mesh_of((8,), ("d",)), spec=("d", None))
    kx, ky = dfft.wavenumbers(dfft.rfftn(x), s=(8, 8))
    assert kx.dtype == np.float32 and ky.dtype == np.float32
    np.testing.assert_allclose(np.asarray(ky).ravel(), 2 * np.pi * np.fft.rfftfreq(8),
                               rtol=1e-6)


@pytest.mark.x64
def test_s_covers_last_axes_only():
    x = darray.asarray(np.ones((4, 9, 7)), mesh=mesh_of((2, 4), ("x", "y")), spec=("x", "y"))
    k = dfft.rfftn(x, axes=(1, 2))
    kb, _, kz = dfft.wavenumbers(k, s=(9, 7))
    np.testing.assert_array_equal(np.asarray(kz).ravel(), 2 * np.pi * np.fft.rfftfreq(7))
    np.testing.assert_array_equal(np.asarray(kb).ravel(), 2 * np.pi * np.fft.fftfreq(4))


def test_bad_arguments():
    x = darray.asarray(np.ones((8, 6)), mesh=mesh_of((8,), ("d",)), spec=("d", None))
    k = dfft.rfftn(x)
    with pytest.raises(TypeError, match="wavenumbers: k must be an array"):
        dfft.wavenumbers([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="s entry 1 must be"):
        dfft.wavenumbers(k, s=(8, 9))
    with pytest.raises(ValueError, match="s entry 0 must be"):
        dfft.wavenumbers(k, s=(7, 6))
    with pytest.raises(ValueError, match="d=.*2 axes"):
        dfft.wavenumbers(k, s=(8, 6), d=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="nonzero"):
        dfft.wavenumbers(k, s=(8, 6), d=0.0)
    with pytest.raises(ValueError, match=r"kinds entry 1 is 'dct5'; accepted: 'fft', 'rfft'"):
        dfft.wavenumbers(k, kinds=("fft", "dct5"))
    with pytest.raises(TypeError, match="sequence"):
        dfft.wavenumbers(k, s=6)


@pytest.mark.parametrize("n", [(16, 12), (14, 10)], ids=["even", "uneven"])
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_of_split_vectors_is_collective_free(n, indexing):
    m = mesh_of((2, 4), ("x", "y"))
    kx = dfft.fftfreq(n[0], d=1 / n[0], mesh=m, spec=("x",))
    ky = dfft.fftfreq(n[1], d=1 / n[1], mesh=m, spec=("y",))
    gx, gy = darray.meshgrid(kx, ky, indexing=indexing)
    rx, ry = np.meshgrid(np.fft.fftfreq(n[0], 1 / n[0]), np.fft.fftfreq(n[1], 1 / n[1]),
                         indexing=indexing)
    np.testing.assert_array_equal(np.asarray(gx), rx)
    np.testing.assert_array_equal(np.asarray(gy), ry)
    expect = ("x", "y") if indexing == "ij" else ("y", "x")
    assert gx.layout.split == ((expect[0],), (expect[1],)) == gy.layout.split

    def grid(a, b):
        out = darray.meshgrid(darray.DistArray._new(a, kx.layout),
                              darray.DistArray._new(b, ky.layout), indexing=indexing)
        return [o.data for o in out]
    assert collectives(compiled_hlo(grid, kx.data, ky.data)) == []


def test_meshgrid_same_mesh_axis_twice_keeps_values():
    m = mesh_of((8,), ("d",))
    a = darray.asarray(np.arange(16.0), mesh=m, spec=("d",))
    b = darray.asarray(np.arange(8.0), mesh=m, spec=("d",))
    ga, gb = darray.meshgrid(a, b, indexing="ij")
    ra, rb = np.meshgrid(np.arange(16.0), np.arange(8.0), indexing="ij")
    np.testing.assert_array_equal(np.asarray(ga), ra)
    np.testing.assert_array_equal(np.asarray(gb), rb)
    assert ga.layout.split == (("d",), ())


# -- issue 38: no silent wrong wavenumbers ----------------------------------------------------
@pytest.mark.x64
@pytest.mark.parametrize("n", [8, 9])
def test_halved_axis_without_s_raises(n):
    """rfftn's last axis of n//2 + 1 entries comes from an even or odd n: without s= (or
    kinds=) the answer was fftfreq of the halved length, silently wrong."""
    x = darray.asarray(np.ones((8, n)), mesh=mesh_of((8,), ("d",)), spec=("d", None))
    k = dfft.rfftn(x)
    with pytest.raises(TypeError, match=r"neither s= nor kinds=.*pass s=<the real-space shape>"):
        dfft.wavenumbers(k)
    with pytest.raises(ValueError, match=r"'rfft' axis of 5 entries.*pass s="):
        dfft.wavenumbers(k, kinds=("fft", "rfft"))
    _, kz = dfft.wavenumbers(k, s=(8, n))
    np.testing.assert_array_equal(np.asarray(kz).ravel(), 2 * np.pi * np.fft.rfftfreq(n))
    _, kz = dfft.wavenumbers(k, s=(8, n), kinds=("fft", "rfft"))
    np.testing.assert_array_equal(np.asarray(kz).ravel(), 2 * np.pi * np.fft.rfftfreq(n))


@pytest.mark.x64
def test_length_two_halved_axis_is_numpys_rfftfreq():
    x = darray.asarray(np.ones((8, 2)), mesh=mesh_of((8,), ("d",)), spec=("d", None))
    k = dfft.rfftn(x)
    with pytest.raises(ValueError, match=r"last axis of 2 entries.*kinds=\('rfft',\)"):
        dfft.wavenumbers(k, s=(8, 2))
    _, kz = dfft.wavenumbers(k, s=(8, 2), kinds=("rfft",))
    np.testing.assert_array_equal(np.asarray(kz).ravel(), 2 * np.pi * np.fft.rfftfreq(2))
    assert float(np.asarray(kz).ravel()[1]) == np.pi
    _, kz = dfft.wavenumbers(dfft.fftn(x), s=(8, 2), kinds=("fft", "fft"))
    np.testing.assert_array_equal(np.asarray(kz).ravel(), 2 * np.pi * np.fft.fftfreq(2))


def _positions(kind, n, d):
    """The sample positions of scipy.fft's kernel for `kind` (its j in cos/sin(K x_j))."""
    shift = {"dct1": 0, "dct3": 0, "dst1": 1, "dst3": 1}.get(kind, 0.5)
    return (np.arange(n) + shift) * d


@pytest.mark.x64
@pytest.mark.parametrize("kind", ["dct1", "dct2", "dct3", "dct4", "dst1", "dst2", "dst3", "dst4"])
def test_r2r_wavenumbers_match_scipys_kernels(kind):
    """A transformn spectrum's cosine/sine axis: entry k is the K of scipy's kernel
    cos/sin(K x_j) (was: Fourier wavenumbers). Column j of scipy's transform matrix is
    proportional to cos/sin(K x_j) over the modes k."""
    scipy_fft = pytest.importorskip("scipy.fft")
    n, d = 9, 0.7
    x = darray.asarray(np.random.default_rng(3).standard_normal((n, 8, 6)),
                       mesh=mesh_of((2, 4), ("x", "y")), spec=("x", "y"))
    k = dfft.transformn(x, (kind, "fft", "rfft"))
    kx, ky, kz = dfft.wavenumbers(k, s=x.shape, d=d, kinds=(kind, "fft", "rfft"))
    assert kx.layout.split[0] == k.layout.split[0] and kx.shape == (n, 1, 1)
    np.testing.assert_allclose(np.asarray(ky).ravel(), 2 * np.pi * np.fft.fftfreq(8, d))
    np.testing.assert_allclose(np.asarray(kz).ravel(), 2 * np.pi * np.fft.rfftfreq(6, d))
    big_k = np.asarray(kx).ravel()
    fn = scipy_fft.dct if kind.startswith("dct") else scipy_fft.dst
    matrix = fn(np.eye(n), type=int(kind[-1]), axis=0)          # [mode, sample]
    trig = np.cos if kind.startswith("dct") else np.sin
    for j, xj in enumerate(_positions(kind, n, d)):
        t = trig(big_k * xj)
        w = matrix[:, j] @ t / (t @ t)
        np.testing.assert_allclose(matrix[:, j], w * t, atol=1e-12)
        assert w in (1.0, 2.0) or np.isclose(w, 1.0) or np.isclose(w, 2.0)
    # a real spectrum (only cosine/sine axes) computed from a transform's output, so
    # carrying no kinds, without kinds= refuses
    real = dfft.transformn(x, (kind, "dct2", "dst2"))
    with pytest.raises(TypeError, match=r"k is real .*pass kinds="):
        dfft.wavenumbers(real * 2.0, s=x.shape)


def _r2r_k(kind, n, d=1.0):
    return np.pi * (np.arange(n) + {"dct1": 0, "dct2": 0, "dst1": 1, "dst2": 1}.get(kind, 0.5)) / (
        {"dct1": n - 1, "dst1": n + 1}.get(kind, n) * d)


@pytest.mark.parametrize("make, kinds", [
    (lambda x: dfft.transformn(x, ("fft", "fft", "dst2")), ("fft", "fft", "dst2")),
    (lambda x: dfft.transformn(x, ("dct1", "rfft"), axes=(0, 2)), ("dct1", "fft", "rfft")),
    (lambda x: dfft.dstn(x, type=3, axes=(1, 2)), ("fft", "dst3", "dst3")),
    (lambda x: dfft.dctn(x), ("dct2", "dct2", "dct2")),
], ids=["transformn-dst2", "transformn-axes", "dstn", "dctn"])
def test_a_cosine_sine_spectrum_knows_its_kinds(make, kinds):
    """Issue 53 item 1: wavenumbers(transformn(x, kinds=(..., "dst2")), s=x.shape) gave the
    Fourier values on the sine axis, silently. The spectrum now carries its kinds; a kinds=
    that contradicts them raises, naming the right one."""
    shape, d = (8, 6, 10), (0.5, 1.0, 2.0)
    x = darray.asarray(np.random.default_rng(4).standard_normal(shape),
                       mesh=mesh_of((2, 4), ("x", "y")), spec=("x", "y"))
    k = make(x)
    got = dfft.wavenumbers(k, s=x.shape, d=d)
    for axis, (kind, n) in enumerate(zip(kinds, shape)):
        if kind == "fft":
            want = 2 * np.pi * np.fft.fftfreq(n, d[axis])
        elif kind == "rfft":
            want = 2 * np.pi * np.fft.rfftfreq(n, d[axis])
        else:
            want = _r2r_k(kind, n, d[axis])
        np.testing.assert_allclose(np.asarray(got[axis]).ravel(), want, rtol=1e-6)
        assert got[axis].layout.split[axis] == k.layout.split[axis]
        assert got[axis].mesh == k.mesh
    # the same values with the matching kinds=, and a refusal for contradicting ones
    same = dfft.wavenumbers(k, s=x.shape, d=d, kinds=kinds)
    for a, b in zip(same, got, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    wrong = tuple("fft" if kd != "fft" and kd != "rfft" else kd for kd in kinds)
    with pytest.raises(ValueError, match=r"but k was made with 'd[cs]t\d'.*pass kinds="):
        dfft.wavenumbers(k, s=x.shape, kinds=wrong)
    # written in place, the array may no longer be that spectrum: its kinds are dropped
    k[...] = k * 1
    if np.dtype(k.dtype).kind == "c":
        fourier = dfft.wavenumbers(k, s=x.shape, d=d, kinds=wrong)
        assert fourier[0].shape == got[0].shape
