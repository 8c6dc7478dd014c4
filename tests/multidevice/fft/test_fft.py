"""Covers: darray/_src/fft/api.py, darray/_src/fft/freq.py, darray/_src/plans/fft_plan.py
Covers: darray/_src/fft/shift.py
Covers: darray/_src/backends/jax/fft_exec.py, darray/_src/backends/jax/transpose.py

darray.fft against numpy.fft (float64 reference) on 8 virtual devices; layouts and HLO."""
import functools
import re

import jax
import numpy as np
import pytest
from helpers import FFT_MESHES as MESHES
from helpers import assert_layout, canonical_dtype, close, mesh_of, rand
from helpers import fft_spec as spec_of
from hypothesis import given, settings
from hypothesis import strategies as st

import darray
import darray.fft as dfft

PENCIL_KSPACE = {"slab8": ((), ("d",), ()), "pencil2x4": ((), ("x",), ("y",)),
                 "pencil4x2": ((), ("x",), ("y",)), "pencil1x8": ((), ("x",), ("y",))}


def kspace(mesh, last_len):
    """k-space split of a 3-D fftn: a pencil input merges both splits onto the last axis in
    one all-to-all over all 8 devices when that axis (halved for rfftn) has >= 8 entries.
    On the (1, 8) mesh x (size 1) splits nothing: it stays on axis 0 and only y moves."""
    if mesh == "pencil1x8":
        return (("x",), (), ("y",))
    if mesh != "slab8" and last_len >= 8:
        return ((), (), ("x", "y"))
    return PENCIL_KSPACE[mesh]


@pytest.mark.parametrize("mesh", list(MESHES))
@pytest.mark.parametrize("shape", [(16, 16, 16), (16, 12, 8), (7, 13, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_fftn_roundtrip_3d(mesh, shape, dtype):
    a = rand(shape, dtype)
    x = darray.asarray(a, mesh=mesh_of(*MESHES[mesh]), spec=spec_of(mesh))
    y = dfft.fftn(x)
    close(y, np.fft.fftn(a.astype(np.complex128)), dtype)
    assert y.dtype == canonical_dtype(np.complex64 if dtype == np.float32 else np.complex128)
    assert_layout(y, split=kspace(mesh, shape[-1]))
    z = dfft.ifftn(y)
    close(z, a, dtype)
    assert z.layout == x.layout
    assert_layout(z, split=x.layout.split)


@pytest.mark.parametrize("mesh", list(MESHES))
@pytest.mark.parametrize("shape", [(16, 16, 16), (9, 13, 7), (12, 10, 10)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rfftn_roundtrip_3d(mesh, shape, dtype):
    a = rand(shape, dtype)
    x = darray.asarray(a, mesh=mesh_of(*MESHES[mesh]), spec=spec_of(mesh))
    y = dfft.rfftn(x)
    close(y, np.fft.rfftn(a.astype(np.float64)), dtype)
    assert y.shape == shape[:-1] + (shape[-1] // 2 + 1,)
    assert_layout(y, split=kspace(mesh, shape[-1] // 2 + 1))
    z = dfft.irfftn(y, s=shape)
    close(z, a, dtype)
    assert z.dtype == canonical_dtype(dtype) and z.layout == x.layout


@pytest.mark.parametrize("norm, mesh", [("backward", "slab8"), ("ortho", "pencil2x4"),
                                        ("forward", "pencil4x2")])
def test_norms_and_1d_functions(norm, mesh):
    a = rand((12, 10, 9), np.float64, seed=1)
    c = rand((12, 10, 9), np.complex128, seed=2)
    m, spec = mesh_of(*MESHES[mesh]), spec_of(mesh)
    x, xc = darray.asarray(a, mesh=m, spec=spec), darray.asarray(c, mesh=m, spec=spec)
    for axis in (0, 1, -1):
        close(dfft.fft(xc, axis=axis, norm=norm), np.fft.fft(c, axis=axis, norm=norm), c.dtype)
        close(dfft.ifft(xc, axis=axis, norm=norm), np.fft.ifft(c, axis=axis, norm=norm), c.dtype)
        close(dfft.rfft(x, axis=axis, norm=norm), np.fft.rfft(a, axis=axis, norm=norm), a.dtype)
        close(dfft.irfft(xc, axis=axis, norm=norm), np.fft.irfft(c, axis=axis, norm=norm), a.dtype)
        close(dfft.hfft(xc, axis=axis, norm=norm), np.fft.hfft(c, axis=axis, norm=norm), a.dtype)
        close(dfft.ihfft(x, axis=axis, norm=norm), np.fft.ihfft(a, axis=axis, norm=norm), c.dtype)
    close(dfft.fftn(xc, norm=norm), np.fft.fftn(c, norm=norm), c.dtype)
    close(dfft.ifftn(xc, norm=norm), np.fft.ifftn(c, norm=norm), c.dtype)
    close(dfft.rfftn(x, norm=norm), np.fft.rfftn(a, norm=norm), a.dtype)
    close(dfft.irfftn(xc, norm=norm), np.fft.irfftn(c, norm=norm), a.dtype)


def test_1d_transform_along_split_axis_keeps_layout():
    a = rand((16, 6), np.complex128)
    x = darray.asarray(a, mesh=mesh_of((8,), ("d",)), spec=("d",))
    y = dfft.fft(x, axis=0)
    close(y, np.fft.fft(a, axis=0), a.dtype)
    assert y.layout == x.layout


@pytest.mark.parametrize("n", [None, 6, 11])
def test_n_and_s_arguments(n):
    a = rand((10, 12, 9), np.float64, seed=3)
    c = rand((10, 12, 9), np.complex128, seed=4)
    m = mesh_of((2, 4))
    x, xc = darray.asarray(a, mesh=m, spec=("x", "y")), darray.asarray(c, mesh=m, spec=("x", "y"))
    close(dfft.fft(xc, n=n, axis=1), np.fft.fft(c, n=n, axis=1), c.dtype)
    close(dfft.rfft(x, n=n, axis=0), np.fft.rfft(a, n=n, axis=0), a.dtype)
    close(dfft.irfft(xc, n=n, axis=2), np.fft.irfft(c, n=n, axis=2), a.dtype)
    s = None if n is None else (n, 8, n)
    axes = None if n is None else (0, 1, 2)
    close(dfft.fftn(xc, s=s), np.fft.fftn(c, s=s, axes=axes), c.dtype)
    close(dfft.rfftn(x, s=s), np.fft.rfftn(a, s=s, axes=axes), a.dtype)
    close(dfft.irfftn(xc, s=s), np.fft.irfftn(c, s=s, axes=axes), a.dtype)
    close(dfft.ifftn(xc, s=(7, 9), axes=(0, 2)), np.fft.ifftn(c, s=(7, 9), axes=(0, 2)), c.dtype)


def test_batch_axis_on_3d_mesh():
    m = mesh_of((2, 2, 2), ("c", "x", "y"))
    a = rand((4, 8, 6, 10), np.float64, seed=5)
    x = darray.asarray(a, mesh=m, spec=("c", "x", "y"))
    y = dfft.fftn(x, axes=(1, 2, 3))
    close(y, np.fft.fftn(a, axes=(1, 2, 3)), a.dtype)
    assert_layout(y, split=(("c",), (), (), ("x", "y")))  # x and y merged; the batch split stays
    p = dfft.fftn(x, axes=(1, 2, 3), decomposition="pencil")
    close(p, np.fft.fftn(a, axes=(1, 2, 3)), a.dtype)
    assert_layout(p, split=(("c",), (), ("x",), ("y",)))
    assert dfft.ifftn(p, axes=(1, 2, 3), decomposition="pencil").layout == x.layout
    r = dfft.rfftn(x, axes=(1, 2, 3))
    close(r, np.fft.rfftn(a, axes=(1, 2, 3)), a.dtype)
    z = dfft.irfftn(r, s=(8, 6, 10), axes=(1, 2, 3))
    close(z, a, a.dtype)
    assert z.layout == x.layout


@pytest.mark.parametrize("mesh", ["slab8", "pencil2x4",
                                  pytest.param("pencil4x2", marks=pytest.mark.slow),
                                  pytest.param("pencil1x8", marks=pytest.mark.slow)])
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_random_shapes_and_axes(mesh, data):
    ndim = data.draw(st.integers(2 if mesh == "slab8" else 3, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 11), min_size=ndim, max_size=ndim)))
    k = data.draw(st.integers(1, ndim))
    axes = tuple(data.draw(st.permutations(range(ndim)))[:k])
    a = rand(shape, np.complex128, seed=6)
    spec = spec_of(mesh)[:ndim]
    x = darray.asarray(a, mesh=mesh_of(*MESHES[mesh]), spec=spec)
    y = dfft.fftn(x, axes=axes)
    close(y, np.fft.fftn(a, axes=axes), a.dtype)
    assert y.data.sharding.is_equivalent_to(y.sharding, y.data.ndim)
    z = dfft.ifftn(y, axes=axes)
    close(z, a, a.dtype)
    assert z.layout == x.layout
    if shape[axes[-1]] >= 2:
        r = dfft.rfftn(darray.asarray(a.real, mesh=x.mesh, spec=spec), axes=axes)
        close(r, np.fft.rfftn(a.real, axes=axes), np.float64)
        assert r.data.sharding.is_equivalent_to(r.sharding, r.data.ndim)


def compiled_text(f, *args):
    return jax.jit(f).lower(*args).compile().as_text()


def test_hlo_pencil_fftn_uses_all_to_all_and_no_all_gather():
    m = mesh_of((2, 4))
    x = darray.zeros((16, 16, 16), dtype=np.complex64, mesh=m, spec=("x", "y"))
    xr = darray.zeros((16, 16, 16), dtype=np.float32, mesh=m, spec=("x", "y"))
    # the (2, 4) pencil merges both splits: one all-to-all over all 8 devices per direction
    text = compiled_text(dfft.fftn, x)
    assert len(re.findall(r"all-to-all\(", text)) == 1
    assert "all-gather" not in text
    for f, arg in ((lambda v: dfft.ifftn(dfft.fftn(v)), x),
                   (lambda v: dfft.irfftn(dfft.rfftn(v), s=(16, 16, 16)), xr)):
        text = compiled_text(f, arg)
        assert len(re.findall(r"all-to-all\(", text)) == 2
        assert "all-gather" not in text
    text = compiled_text(lambda v: dfft.fftn(v, decomposition="pencil"), x)
    assert len(re.findall(r"all-to-all\(", text)) == 2 and "all-gather" not in text


def test_hlo_uneven_slab_rfftn_no_all_gather():
    x = darray.zeros((13, 9, 7), mesh=mesh_of((8,), ("d",)), spec=("d",))
    text = compiled_text(lambda v: dfft.irfftn(dfft.rfftn(v), s=(13, 9, 7)), x)
    assert "all-to-all" in text and "all-gather" not in text


@pytest.mark.distributed_placement
def test_freq_functions():
    m = mesh_of((2, 4))
    f = dfft.fftfreq(13, 0.5, mesh=m, spec=(("x", "y"),))
    close(f, np.fft.fftfreq(13, 0.5), np.float64)
    assert_layout(f, split=(("x", "y"),))
    g = dfft.rfftfreq(16, d=2.0, dtype=np.float32)
    close(g, np.fft.rfftfreq(16, 2.0), np.float32)
    assert g.dtype == np.float32 and g.layout.split == (("d",),)
    with pytest.raises(ValueError, match="n=0 must be a positive length"):
        dfft.fftfreq(0)
    with pytest.raises(TypeError, match="dtype=int32 is not accepted"):
        dfft.fftfreq(4, dtype=np.int32)


@pytest.mark.parametrize("shape", [(16, 8), (13, 7)])
def test_shifts(shape):
    a = rand(shape, np.float64)
    x = darray.asarray(a, mesh=mesh_of((2, 4)), spec=("x", "y"))
    y = dfft.fftshift(x)
    close(y, np.fft.fftshift(a), a.dtype)
    assert y.layout == x.layout
    close(dfft.ifftshift(x, axes=(0,)), np.fft.ifftshift(a, axes=(0,)), a.dtype)
    close(dfft.ifftshift(dfft.fftshift(x)), a, a.dtype)


# uneven splits (fft/shift.py): padding within a chunk (37 -> 8 x 5, padding 3), padding beyond
# a chunk (9 -> 8 x 2, padding 7), an axis split over ("y", "x"), both axes split
@pytest.mark.parametrize("mesh_shape,shape,spec", [
    ((8,), (3, 37, 4), (None, "x", None)), ((8,), (9, 5), ("x", None)),
    ((2, 4), (13, 7), (("y", "x"), None)), ((2, 4), (11, 6), ("x", "y"))])
def test_shifts_on_uneven_splits_move_every_cell_as_numpy(mesh_shape, shape, spec):
    a = rand(shape, np.float32)
    x = darray.asarray(a, mesh=mesh_of(mesh_shape), spec=spec)
    for name, axes in (("fftshift", None), ("ifftshift", None), ("ifftshift", (1, 1))):
        shift = functools.partial(getattr(dfft, name), axes=axes)
        compiled = jax.jit(shift).lower(x).compile()
        y = compiled(x)
        assert y.layout == x.layout
        np.testing.assert_array_equal(np.asarray(y), getattr(np.fft, name)(a, axes=axes))
        text = compiled.as_text()
        assert "all-gather" not in text
        assert axes is not None or "collective-permute" in text  # a split axis shifted


def test_irfftn_runs_the_padded_exchange_in_slabs():
    # fft_exec._slabbed: the axis-0 FFT and the padded all-to-all after it run in 4 slabs of
    # axis 2 (issue 49: irfftn of (37, 203, 19) over 8 planned 3.08 blocks in one piece);
    # ifftn, a complex end, keeps one exchange
    a = rand((6, 27, 9), np.complex128)
    x = darray.asarray(a, mesh=mesh_of((8,)), spec=(None, "x", None))
    for fn, ref, exchanges in ((dfft.irfftn, np.fft.irfftn, 4), (dfft.ifftn, np.fft.ifftn, 1)):
        compiled = jax.jit(fn).lower(x).compile()
        y = compiled(x)
        close(y, ref(a), canonical_dtype(np.complex128))
        assert_layout(y, split=(("x",), (), ()))
        text = compiled.as_text()
        assert len(re.findall(r"%all-to-all[.\d]* = ", text)) == exchanges, fn
        assert "all-gather" not in text


@pytest.mark.distributed_placement
def test_default_mesh_is_a_slab():
    a = rand((16, 8, 8), np.complex64)
    y = dfft.fftn(darray.asarray(a))
    close(y, np.fft.fftn(a.astype(np.complex128)), np.complex64)
    assert y.layout.split == ((), ("d",), ())


def test_input_is_not_modified():
    a = rand((8, 8), np.complex128)
    x = darray.asarray(a, mesh=mesh_of((8,), ("d",)), spec=("d",))
    before = np.asarray(x).copy()
    dfft.fftn(x)
    np.testing.assert_array_equal(np.asarray(x), before)


def test_errors_name_the_argument():
    x = darray.asarray(rand((8, 8), np.float64), mesh=mesh_of((8,), ("d",)), spec=("d",))
    with pytest.raises(ValueError, match="norm='bogus' is not accepted"):
        dfft.fftn(x, norm="bogus")
    with pytest.raises(ValueError, match="axes entry=2 is out of range"):
        dfft.fftn(x, axes=(2,))
    with pytest.raises(ValueError, match="repeats an axis"):
        dfft.fftn(x, axes=(0, 0))
    with pytest.raises(ValueError, match="must have the same length"):
        dfft.fftn(x, s=(4,), axes=(0, 1))
    with pytest.raises(ValueError, match="n=0 must be a positive length"):
        dfft.fft(x, n=0)
    with pytest.raises(TypeError, match="real floating-point dtype"):
        dfft.rfftn(dfft.fftn(x))
    with pytest.raises(TypeError, match="fftn: x must be an array"):
        dfft.fftn([1.0, 2.0])
    xi = darray.asarray(np.arange(8), mesh=mesh_of((8,), ("d",)))
    with pytest.raises(TypeError, match="floating-point dtype"):
        dfft.fft(xi)
    with pytest.raises(ValueError, match="decomposition='slab' is not accepted"):
        dfft.fftn(x, decomposition="slab")


@pytest.mark.slow  # about 70 s: the benchmark's whole small sweep
def test_bench_small_smoke(tmp_path):
    """The CI smoke run of the benchmark (tiny sizes, all rows, HLO check, JSON table)."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parents[3] / "benchmarks" / "bench_fft.py"
    spec = importlib.util.spec_from_file_location("bench_fft", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--small", "--repeats", "2", "--json", str(tmp_path / "fft.json")])
    assert (tmp_path / "fft.json").exists()
    assert any(r["name"].startswith("darray slab") for r in rows)
    assert all(r["all_gather"] is False for r in rows if r["name"].startswith("darray"))
