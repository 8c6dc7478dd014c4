"""Covers: darray/_src/kernels/fftw.py, darray/_src/kernels/local_fft.py
Covers: darray/_src/base/config.py, darray/_src/fft/core.py

The optional FFTW local-FFT provider (option ``local_fft``): block transforms against numpy,
darray's distributed FFTs with it on 8 devices (eager and jitted, output layout asserted),
gradients against single-device JAX, vmap, the plan cache, and the errors where FFTW or the
native module is missing. Without FFTW (``pip install pyfftw`` or a system libfftw3) the tests
that need it skip with the reason; the default ("xla") is checked to call no FFTW at all.
"""
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_layout, mesh_of, rand

import darray
import darray.fft as dfft
from darray._src.base import native
from darray._src.base.errors import BackendUnavailableError
from darray._src.kernels import fftw

WHY_NO_FFTW = fftw.load()
needs_fftw = pytest.mark.skipif(WHY_NO_FFTW is not None,
                                reason=f"FFTW is not available: {WHY_NO_FFTW}")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
X64 = bool(jax.config.read("jax_enable_x64"))
CDTYPES = (np.complex64, np.complex128) if X64 else (np.complex64,)


def _rel(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.abs(got - want).max() / np.abs(want).max())


def _bound(dtype) -> float:
    # float64: numpy's own round-off (the 1e-15 relative); float32: a few ulps * log n
    return 1e-15 if np.finfo(dtype).dtype == np.float64 else 2e-6


def test_the_option_defaults_to_xla_and_checks_its_values():
    assert darray.get_config("local_fft") == "xla"
    assert darray.get_config("fftw_planner") == "estimate"
    with darray.config_context(local_fft="FFTW"):  # any case
        assert darray.get_config("local_fft") == "fftw"
    with pytest.raises(ValueError, match=r"local_fft='mkl'.*'xla', 'fftw', 'auto'"):
        darray.set_config(local_fft="mkl")
    with pytest.raises(ValueError, match=r"fftw_planner='patient'.*'estimate', 'measure'"):
        darray.set_config(fftw_planner="patient")


def test_the_default_calls_no_fftw_and_records_nothing_new():
    mesh = mesh_of((8,))
    x = darray.asarray(rand((12, 10, 6), np.complex64), mesh=mesh, spec=("x", None, None))
    text = jax.jit(dfft.fftn).lower(x).as_text()
    assert "darray_fftw_cpu" not in text
    with darray.record_backends() as log:
        y = dfft.fftn(x)
    assert [s.settings for s in log] == [()]
    assert _rel(y, np.fft.fftn(np.asarray(x))) < 2e-6
    assert_layout(y, split=(None, ("x",), None))


def test_without_the_native_module_the_error_says_so(monkeypatch):
    monkeypatch.setattr(native, "available", lambda: False)
    with darray.config_context(local_fft="fftw"):
        with pytest.raises(BackendUnavailableError, match="native module.*pip install pyfftw"):
            fftw.provider()
    with darray.config_context(local_fft="auto"):
        assert fftw.provider() == "xla"
    assert fftw.info() == {"loaded": False, "reason": fftw.load()}


def test_a_bad_library_path_is_an_error_naming_it_and_what_to_install():
    """A fresh process (FFTW loads once per process) with DARRAY_FFTW_LIBRARY at a bad path:
    "fftw" raises naming the path and the fix, "auto" runs on XLA."""
    script = (
        "import numpy as np, darray, darray.fft as f\n"
        "x = darray.asarray(np.ones((4, 4), np.complex64))\n"
        "with darray.config_context(local_fft='auto'), darray.record_backends() as log:\n"
        "    f.fftn(x)\n"
        "print('AUTO', log[0].settings)\n"
        "with darray.config_context(local_fft='fftw'):\n"
        "    try:\n"
        "        f.fftn(x)\n"
        "    except ImportError as e:\n"
        "        print('ERROR', type(e).__name__, e)\n")
    env = dict(os.environ, DARRAY_FFTW_LIBRARY="/no/such/dir/libfftw3.so.3",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "AUTO (('local_fft', 'xla'),)" in out.stdout, out.stdout
    error = next(line for line in out.stdout.splitlines() if line.startswith("ERROR"))
    assert "BackendUnavailableError" in error
    assert "/no/such/dir/libfftw3.so.3" in error and "pip install pyfftw" in error, error
    assert "GPL" in error, error


@needs_fftw
@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 2), (2, 0), (0, 1, 2)])
def test_block_transforms_match_numpy(dtype, axes):
    x = rand((6, 10, 9), dtype)
    real = x.real.copy()
    sizes = tuple(x.shape[a] for a in axes)
    with darray.config_context(local_fft="fftw"):
        for norm in (None, "ortho", "forward"):
            got = fftw.transform(jnp.asarray(x), axes, "c2c", False, sizes, norm)
            assert _rel(got, np.fft.fftn(x.astype(np.complex128), axes=axes, norm=norm)) \
                < _bound(dtype)
            got = jax.jit(lambda b, norm=norm: fftw.transform(b, axes, "c2c", True, sizes,
                                                              norm))(jnp.asarray(x))
            assert _rel(got, np.fft.ifftn(x.astype(np.complex128), axes=axes, norm=norm)) \
                < _bound(dtype)
            spec = fftw.transform(jnp.asarray(real), axes, "r2c", False, sizes, norm)
            assert spec.dtype == dtype
            want = np.fft.rfftn(real.astype(np.float64), axes=axes, norm=norm)
            assert _rel(spec, want) < _bound(dtype)
            back = fftw.transform(jnp.asarray(want.astype(dtype)), axes, "c2r", True, sizes,
                                  norm)
            assert back.dtype == real.dtype
            assert _rel(back, np.fft.irfftn(want, s=sizes, axes=axes, norm=norm)) \
                < _bound(dtype)


@needs_fftw
def test_lengths_other_than_the_input_pad_or_cut_as_numpy_does():
    x = rand((5, 8, 7), CDTYPES[-1])
    with darray.config_context(local_fft="fftw"):
        got = fftw.transform(jnp.asarray(x), (1, 2), "c2c", False, (11, 4), None)
        assert _rel(got, np.fft.fftn(x, s=(11, 4), axes=(1, 2))) < _bound(x.dtype)
        got = fftw.transform(jnp.asarray(x), (0, 1), "c2r", True, (6, 9), "ortho")
        assert _rel(got, np.fft.irfftn(x, s=(6, 9), axes=(0, 1), norm="ortho")) \
            < _bound(x.dtype)


@needs_fftw
@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("planner", ["estimate", "measure"])
def test_blocks_larger_than_a_chunk_match_numpy(dtype, planner):
    """Blocks over 512 KiB whose leading axis is a batch axis run in chunks of leading slices
    (csrc/fftw_provider.cc: the scale and c2r's input copy per chunk, in cache): every chunk,
    the last included, transformed and scaled as numpy does."""
    x = rand((64, 33, 35), dtype)
    real = x.real.copy()
    with darray.config_context(local_fft="fftw", fftw_planner=planner):
        for axes in [(1, 2), (2,), (1,), (2, 1)]:
            sizes = tuple(x.shape[a] for a in axes)
            for norm in (None, "ortho"):
                got = fftw.transform(jnp.asarray(x), axes, "c2c", True, sizes, norm)
                assert _rel(got, np.fft.ifftn(x.astype(np.complex128), axes=axes,
                                              norm=norm)) < _bound(dtype)
                want = np.fft.rfftn(real.astype(np.float64), axes=axes, norm=norm)
                spec = fftw.transform(jnp.asarray(real), axes, "r2c", False, sizes, norm)
                assert spec.shape == want.shape and _rel(spec, want) < _bound(dtype)
                back = fftw.transform(jnp.asarray(want.astype(dtype)), axes, "c2r", True,
                                      sizes, norm)
                assert back.shape == real.shape
                assert _rel(back, np.fft.irfftn(want, s=sizes, axes=axes, norm=norm)) \
                    < _bound(dtype)


@needs_fftw
@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("planner", ["estimate", "measure"])
@pytest.mark.parametrize("shape,axis", [((256, 4, 64), 0), ((3, 40, 16, 16), 1),
                                        ((2, 24, 512), 1), ((5, 8, 9), 0)])
def test_columns_behind_a_power_of_two_stride_match_numpy(dtype, planner, shape, axis):
    """A 1-D c2c over a non-minor axis whose column stride is a multiple of 2 KiB runs in
    column tiles (csrc/fftw_provider.cc, `ExecuteTiled`: copied in, transformed in a padded
    buffer, scaled and copied out), with leading slices before the axis or not; a stride of
    another size (the last shape) takes FFTW's own strided plan. Both directions and norms
    against numpy; the input is left as it was."""
    x = rand(shape, dtype)
    xj = jnp.asarray(x)
    with darray.config_context(local_fft="fftw", fftw_planner=planner):
        for inverse in (False, True):
            for norm in (None, "ortho", "forward"):
                got = fftw.transform(xj, (axis,), "c2c", inverse, (shape[axis],), norm)
                want = (np.fft.ifft if inverse else np.fft.fft)(
                    x.astype(np.complex128), axis=axis, norm=norm)
                assert got.dtype == dtype and _rel(got, want) < _bound(dtype)
    np.testing.assert_array_equal(np.asarray(xj), x)


@needs_fftw
def test_integer_inputs_of_real_transforms_run_under_fftw():
    """Blocks stay in logical order only for FFTW's dtypes: an integer input (cast by the
    transform itself) is not asked about, so dctn of integers works as with XLA."""
    import scipy.fft
    mesh = mesh_of((2, 4))
    host = np.arange(12 * 10 * 6).reshape(12, 10, 6) % 7 - 3
    x = darray.asarray(host, mesh=mesh, spec=("x", "y", None))
    with darray.config_context(local_fft="fftw"):
        d = dfft.dctn(x)
    assert_layout(d, shape=host.shape, mesh=mesh)
    assert _rel(d, scipy.fft.dctn(host.astype(np.float64))) < _bound(d.dtype)


@needs_fftw
def test_plans_are_cached_per_shape():
    x = jnp.asarray(rand((7, 12), CDTYPES[-1]))
    with darray.config_context(local_fft="fftw"):
        fftw.transform(x, (1,), "c2c", False, (12,), None).block_until_ready()
        before = fftw.info()["cached_plans"]
        for _ in range(3):
            fftw.transform(x, (1,), "c2c", False, (12,), None).block_until_ready()
        assert fftw.info()["cached_plans"] == before
    with darray.config_context(local_fft="fftw", fftw_planner="measure"):
        got = fftw.transform(x, (0,), "c2c", False, (7,), None)
    assert _rel(got, np.fft.fft(np.asarray(x), axis=0)) < _bound(x.dtype)
    assert fftw.info()["cached_plans"] > before


@needs_fftw
@pytest.mark.parametrize("mesh_shape,spec", [((8,), ("x", None, None)),
                                             ((2, 4), ("x", "y", None)),
                                             ((4, 2), (None, "x", "y"))])
@pytest.mark.parametrize("dtype", CDTYPES)
def test_distributed_round_trips_on_fftw_match_numpy(mesh_shape, spec, dtype):
    mesh = mesh_of(mesh_shape)
    host = rand((13, 10, 7), dtype)  # uneven on every mesh
    x = darray.asarray(host, mesh=mesh, spec=spec)
    real = darray.asarray(host.real.copy(), mesh=mesh, spec=spec)
    ref = host.astype(np.complex128)
    # the layouts XLA's provider gives: the provider changes no plan
    y_xla = dfft.fftn(x)
    layouts = [y_xla.layout, dfft.ifftn(y_xla).layout]
    k_xla = dfft.rfftn(real)
    layouts += [k_xla.layout, dfft.irfftn(k_xla, s=host.shape).layout]
    with darray.config_context(local_fft="fftw"), darray.record_backends() as log:
        for run in (lambda f, *a, **k: f(*a, **k), lambda f, *a, **k: jax.jit(
                lambda *b: f(*b, **k))(*a)):
            y = run(dfft.fftn, x)
            assert _rel(y, np.fft.fftn(ref)) < _bound(dtype)
            back = run(dfft.ifftn, y)
            assert _rel(back, host) < 4 * _bound(dtype)
            k = run(dfft.rfftn, real)
            assert _rel(k, np.fft.rfftn(ref.real)) < _bound(dtype)
            r = run(dfft.irfftn, k, s=host.shape)
            assert _rel(r, host.real) < 4 * _bound(dtype)
            for got, layout in zip((y, back, k, r), layouts):
                assert_layout(got, layout)
        text = jax.jit(lambda a: dfft.ifftn(dfft.fftn(a))).lower(x).as_text()
    assert text.count("darray_fftw_cpu") >= 2
    assert {s.settings for s in log} == {(("local_fft", "fftw"),)}


@needs_fftw
def test_auto_takes_fftw_where_found_and_faster():
    with darray.config_context(local_fft="auto"):
        assert fftw.provider() == "fftw"
        for dtype in (np.complex64, np.float32, np.complex128, np.float64):
            assert fftw.usable_for(dtype), dtype  # both libraries come with pyFFTW's wheel
        assert not fftw.usable_for(np.int32)
        x = darray.asarray(rand((12, 10, 6), np.complex64), mesh=mesh_of((8,)),
                           spec=("x", None, None))
        with darray.record_backends() as log:
            y = dfft.fftn(x)
        assert log[0].settings == (("local_fft", "fftw"),)
        assert _rel(y, np.fft.fftn(np.asarray(x).astype(np.complex128))) < 2e-6


@needs_fftw
@pytest.mark.x64
def test_gradients_match_single_device_jax():
    mesh = mesh_of((2, 4))
    host = rand((8, 8, 8), np.complex128)  # even: the physical array is the logical one
    w = rand((8, 8, 8), np.float64, seed=1)

    def loss(y):
        assert y.shape == w.shape
        return jnp.sum(w * jnp.abs(y) ** 2)

    want = jax.grad(lambda a: loss(jnp.fft.fftn(a)))(jnp.asarray(host))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y", None))
    with darray.config_context(local_fft="fftw"):
        for wrap in (lambda f: f, jax.jit):
            got = wrap(jax.grad(lambda a: loss(dfft.fftn(a).data)))(x)
            assert _rel(got, want) < 1e-13
            assert_layout(got, x.layout)
        real = jnp.asarray(host.real)
        want_r = jax.grad(lambda a: jnp.sum(jnp.abs(jnp.fft.rfftn(a, axes=(0, 2))) ** 3))(real)
        got_r = jax.grad(lambda a: jnp.sum(jnp.abs(
            fftw.transform(a, (0, 2), "r2c", False, (8, 8), None)) ** 3))(real)
        assert _rel(got_r, want_r) < 1e-13
        t = rand((8, 8, 8), np.complex128, seed=2)
        primal, tangent = jax.jvp(lambda a: fftw.transform(a, (1,), "c2c", True, (8,), None),
                                  (jnp.asarray(host),), (jnp.asarray(t),))
        assert _rel(tangent, np.fft.ifft(t, axis=1)) < 1e-15
        assert _rel(primal, np.fft.ifft(host, axis=1)) < 1e-15


@needs_fftw
@pytest.mark.parametrize("dtype", CDTYPES)
def test_vmap_batches_the_custom_call(dtype):
    xs = rand((3, 6, 8, 5), dtype)
    with darray.config_context(local_fft="fftw"):
        f = jax.vmap(lambda b: fftw.transform(b, (0, 2), "c2c", False, (6, 5), None))
        got = f(jnp.asarray(xs))
        assert "darray_fftw_cpu" in jax.jit(f).lower(jnp.asarray(xs)).as_text()
        g = jax.jit(jax.vmap(lambda b: fftw.transform(b, (1,), "r2c", False, (8,), None)))
        spec = g(jnp.asarray(xs.real.copy()))
    assert _rel(got, np.fft.fftn(xs.astype(np.complex128), axes=(1, 3))) < _bound(dtype)
    assert _rel(spec, np.fft.rfft(xs.real.astype(np.float64), axis=2)) < _bound(dtype)


@needs_fftw
def test_blocks_moved_to_working_order_give_the_same_transforms(monkeypatch):
    """fft_exec.STRIDED_FFTW off (on by default): FFTW's stages run on blocks moved to XLA's
    working order, as XLA's FFTs do; the results and layouts are those of the default path."""
    from darray._src.backends.jax import fft_exec
    from darray._src.base import program_cache
    monkeypatch.setattr(fft_exec, "STRIDED_FFTW", False)
    program_cache.clear()  # the flag is not part of the program key
    mesh = mesh_of((2, 4))
    host = rand((13, 10, 7), CDTYPES[-1])
    x = darray.asarray(host, mesh=mesh, spec=("x", "y", None))
    real = darray.asarray(host.real.copy(), mesh=mesh, spec=("x", "y", None))
    try:
        with darray.config_context(local_fft="fftw"):
            y = jax.jit(lambda a: dfft.ifftn(dfft.fftn(a), norm="ortho"))(x)
            k = dfft.rfftn(real)
            r = dfft.irfftn(k, s=host.shape)
    finally:
        program_cache.clear()
    assert _rel(y, np.fft.ifftn(np.fft.fftn(host), norm="ortho")) < 4 * _bound(host.dtype)
    assert _rel(k, np.fft.rfftn(host.real.astype(np.float64))) < 2 * _bound(host.dtype)
    assert _rel(r, host.real) < 4 * _bound(host.dtype)
    assert_layout(r, real.layout)
    assert_layout(y, shape=host.shape, mesh=mesh)
