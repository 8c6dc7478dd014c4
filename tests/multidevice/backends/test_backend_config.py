"""Covers: darray/_src/backends/registry.py, darray/_src/backends/errors.py
Covers: darray/_src/base/config.py, darray/_src/fft/api.py, darray/_src/halo/api.py

Transpose-backend configuration: options declared once, clear errors for native backends that
are not built, per-call / config / context selection, and visible fallback to "jax"."""
from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.backends import registry as backends
from darray._src.base import config
from darray._src.fft import api as fft_api
from darray._src.halo import api as halo_api

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def grid(seed=0):
    host = np.random.default_rng(seed).standard_normal((8, 12, 6))
    mesh = mesh_of((2, 4), ("x", "y"))
    return host, darray.asarray(host, mesh=mesh, spec=("x", "y", None))


@pytest.fixture
def fake_backends():
    """A fake FFT/halo backend that runs the jax code and counts its calls. Each test names its
    own (compiled functions are cached per backend name)."""
    calls, names = [], []

    def register(name, supports=None):
        names.append(name)
        jax_fft, jax_fill = backends.fft_executor("jax"), halo_api._HALO_BACKENDS.get("jax")

        def fft(plan, data, norm, standalone):
            calls.append("fft")
            return jax_fft(plan, data, norm, standalone)

        def fill(*args, **kwargs):
            calls.append("halo")
            return jax_fill(*args, **kwargs)
        backends.register_fft_executor(name, fft, supports=supports)
        halo_api._HALO_BACKENDS.register(name, fill, supports=supports)
    yield register, calls
    for name in names:
        backends.FFT_EXECUTORS.unregister(name)
        halo_api._HALO_BACKENDS.unregister(name)


def test_options_declared_once_with_env_and_checks():
    expect = {"transpose_backend": ("jax", "DARRAY_TRANSPOSE_BACKEND"),
              "cudecomp_transpose_comm": ("NCCL", "DARRAY_CUDECOMP_TRANSPOSE_COMM"),
              "cudecomp_halo_comm": ("NCCL", "DARRAY_CUDECOMP_HALO_COMM"),
              "fft_backend": ("", "DARRAY_FFT_BACKEND"),
              "halo_backend": ("", "DARRAY_HALO_BACKEND")}
    for name, (default, env) in expect.items():
        opt = config.OPTIONS[name]
        assert (opt.default, opt.env) == (default, env) and opt.help
    assert backends.FFT_EXECUTORS.option == "fft_backend"
    assert halo_api._HALO_BACKENDS.option == "halo_backend"
    for comm in config.CUDECOMP_TRANSPOSE_COMMS:
        with darray.config_context(cudecomp_transpose_comm=comm):
            assert darray.get_config("cudecomp_transpose_comm") == comm
    with pytest.raises(ValueError,
                       match=r"transpose_backend='nvshmem'.*'jax', 'cudecomp', 'mpi', 'nccl'"):
        darray.set_config(transpose_backend="nvshmem")
    with darray.config_context(transpose_backend="nccl"):  # falls back where it cannot run
        assert darray.get_config("transpose_backend") == "nccl"
    with pytest.raises(ValueError, match=r"cudecomp_halo_comm='MPI_A2A'.*'MPI_BLOCKING'"):
        darray.set_config(cudecomp_halo_comm="MPI_A2A")
    with pytest.raises(ValueError, match=r"cudecomp_transpose_comm='ncl'.*'NCCL_PL'"):
        with darray.config_context(cudecomp_transpose_comm="ncl"):
            pass
    assert darray.get_config("transpose_backend") == "jax"  # failed sets change nothing


def test_env_vars_give_initial_values_and_are_checked():
    code = ("import darray; print(darray.get_config('transpose_backend'), "
            "darray.get_config('cudecomp_halo_comm'))")
    env = dict(os.environ, JAX_PLATFORMS="cpu", DARRAY_TRANSPOSE_BACKEND="mpi",
               DARRAY_CUDECOMP_HALO_COMM="NVSHMEM_BLOCKING")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.split() == ["mpi", "NVSHMEM_BLOCKING"], out.stderr
    env["DARRAY_TRANSPOSE_BACKEND"] = "gloo"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "DARRAY_TRANSPOSE_BACKEND='gloo'" in out.stderr and "'cudecomp'" in out.stderr


@pytest.mark.x64
@pytest.mark.parametrize("name", ["cudecomp", "mpi"])
def test_unbuilt_native_backend_raises_with_the_fix(name, monkeypatch):
    if name == "mpi":  # built by default; what a plain `pip install darray` lacks is mpi4py
        monkeypatch.setitem(sys.modules, "mpi4py", None)
        monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    if name in backends.available_fft_backends():
        pytest.fail(f"{name} is built here: this test needs a build without it")
    host, x = grid()
    fix = {"cudecomp": "DARRAY_ENABLE_CUDECOMP=ON", "mpi": r"pip install 'darray\[mpi\]'"}[name]
    # the public fft functions take no backend= keyword yet: the fft_backend option selects
    with pytest.raises(backends.BackendUnavailableError, match=fix) as err:
        with darray.config_context(fft_backend=name):
            darray.fft.fftn(x)
    assert isinstance(err.value, RuntimeError) and isinstance(err.value, ImportError)
    assert f"backend={name!r}" in str(err.value)
    with pytest.raises(RuntimeError, match=fix):
        darray.halo(x, 1, backend=name)
    with darray.config_context(transpose_backend=name):
        with pytest.raises(ImportError, match=fix):
            darray.fft.fftn(x)
        with pytest.raises(ImportError, match=fix):
            x.halo(1)
    y = darray.fft.fftn(x)  # back on jax after the block: no stale cached choice
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(host), rtol=1e-12, atol=1e-12)
    assert y.layout.mesh.shape == x.layout.mesh.shape


def test_unknown_backend_is_a_value_error():
    _, x = grid()
    with pytest.raises(ValueError, match=r"backend='gloo'.*available: \('jax',"):
        with darray.config_context(fft_backend="gloo"):
            darray.fft.fftn(x)
    with pytest.raises(ValueError, match=r"backend='gloo'.*available: \('jax',"):
        darray.halo(x, 1, backend="gloo")


@pytest.mark.x64
def test_selected_backend_runs_via_keyword_option_and_context(fake_backends):
    register, calls = fake_backends
    register("fake")
    host, x = grid(1)
    sel = backends.select_fft_backend("fake", fft_api.fft_plan(x))
    assert (sel.backend, sel.fell_back, repr(sel)) == ("fake", False, "Selection(FFT on 'fake')")
    with darray.config_context(fft_backend="fake"):
        y = darray.fft.fftn(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(host), rtol=1e-12, atol=1e-12)
    assert calls == ["fft"]
    with darray.config_context(fft_backend="fake", halo_backend="fake"):
        h = x.halo(1)
    assert calls == ["fft", "halo"]
    assert h.layout.halo == ((1, 1), (1, 1), (1, 1)) and h.layout.split == x.layout.split
    np.testing.assert_allclose(np.asarray(h), host)
    darray.fft.fftn(x)  # default again: jax
    assert calls == ["fft", "halo"]


@pytest.mark.x64
def test_plan_a_backend_cannot_express_falls_back_visibly(fake_backends):
    register, calls = fake_backends
    register("fake_partial", supports=lambda plan: "cannot express this plan")
    host, x = grid(2)
    sel = backends.select_fft_backend("fake_partial", fft_api.fft_plan(x))
    assert sel.fell_back and sel.backend == "jax" and sel.reason == "cannot express this plan"
    assert "fallback from 'fake_partial': cannot express this plan" in repr(sel)
    with darray.config_context(transpose_backend="jax", fft_backend="fake_partial"):
        y = darray.fft.fftn(x)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(host), rtol=1e-12, atol=1e-12)
    h = darray.halo(x, 1, backend="fake_partial")
    np.testing.assert_allclose(np.asarray(h), host)
    assert calls == []  # both ran on jax


def _saved_entry(registry, name):
    """Registry `name`'s entry as it is now (the built-in ones loaded), to put back after a
    test replaces it: unregistering would remove darray's native entry for every later test
    in this process."""
    registry.names()
    return [(table, table.get(name)) for table in
            (registry._entries, registry._supports, registry._usable, registry._fallback)]


def _restore_entry(saved, name):
    for table, value in saved:
        table.pop(name, None)
        if value is not None:
            table[name] = value


def test_cudecomp_selection_carries_its_comm_settings():
    saved = _saved_entry(backends.FFT_EXECUTORS, "cudecomp")
    backends.register_fft_executor("cudecomp", backends.fft_executor("jax"))
    try:
        with darray.config_context(cudecomp_transpose_comm="MPI_A2A",
                                   cudecomp_halo_comm="MPI"):
            sel = backends.select_fft_backend("cudecomp")
        assert dict(sel.settings) == {"transpose_comm": "MPI_A2A", "halo_comm": "MPI"}
        assert "transpose_comm='MPI_A2A'" in repr(sel)
        backends.register_fft_executor("cudecomp", backends.fft_executor("jax"),
                                       usable=lambda: "no CUDA device")
        with pytest.raises(RuntimeError, match=r"cannot run here \(no CUDA device\)"):
            backends.select_fft_backend("cudecomp")
        assert "cudecomp" not in backends.available_fft_backends()
    finally:
        _restore_entry(saved, "cudecomp")


# -- options read while tracing reach the next call, jitted or not (issue #28, point 2) ---------
def _eager_error(fn, *args):
    with pytest.raises(Exception) as err:
        fn(*args)
    return type(err.value), str(err.value)


@pytest.mark.x64
@pytest.mark.parametrize("spelling", ["cudecomp", "MPI"])
def test_user_jit_retraces_after_set_config_and_in_config_context(spelling):
    host, x = grid(3)
    traces = []

    @jax.jit
    def user_step(a):
        traces.append(darray.get_config("transpose_backend"))
        return darray.fft.fftn(a)

    def check(y):
        np.testing.assert_allclose(np.asarray(y), np.fft.fftn(host), rtol=1e-12, atol=1e-12)
        assert y.layout == darray.fft.fftn(x).layout and y.layout.mesh == x.layout.mesh

    check(user_step(x))
    check(user_step(x))
    assert traces == ["jax"]
    name = config.backend_name(spelling)
    try:
        darray.set_config(transpose_backend=spelling)  # not runnable here: eager calls raise
        eager = _eager_error(darray.fft.fftn, x)
        assert eager[0] is backends.BackendUnavailableError
        assert _eager_error(user_step, x) == eager  # retraced: the same error, not the old run
        assert traces == ["jax", name]
    finally:
        darray.set_config(transpose_backend="jax")
    check(user_step(x))  # jax's cache still holds the trace made under "jax"
    assert traces == ["jax", name]
    with darray.config_context(transpose_backend=spelling):
        assert _eager_error(user_step, x) == eager
    with darray.config_context(transpose_backend="NCCL"):  # falls back to jax off GPU
        check(user_step(x))
    assert traces == ["jax", name, name, "nccl"]
    check(user_step(x))
    assert len(traces) == 4
    user_halo = jax.jit(lambda a: a.halo(1))  # the halo registry reads the same options
    h = user_halo(x)
    np.testing.assert_allclose(np.asarray(h), host)
    assert h.layout.halo == ((1, 1),) * 3 and h.layout.split == x.layout.split
    with darray.config_context(transpose_backend=spelling):
        eager = _eager_error(lambda a: a.halo(1), x)
        assert eager[0] is backends.BackendUnavailableError
        assert _eager_error(user_halo, x) == eager


def test_user_jit_sees_mismatch_raise_as_eager_calls_do():
    host, x = grid(4)
    y = darray.asarray(host, mesh=x.layout.mesh, spec=(None, "x", "y"))
    add = jax.jit(lambda a, b: a + b)
    z = add(x, y)  # redistributes under the default
    np.testing.assert_allclose(np.asarray(z), 2 * host)
    assert z.layout.mesh == x.layout.mesh
    with darray.config_context(mismatch="raise"):
        eager = _eager_error(lambda a, b: a + b, x, y)
        assert eager[0] is darray.LayoutError
        assert _eager_error(add, x, y) == eager


@pytest.mark.x64
def test_program_cache_key_holds_the_comm_settings_read_while_tracing():
    """The cuDecomp comm options are read while the FFT program is traced (cudecomp.grid); a
    cached program built under one must not run under another."""
    host, x = grid(5)
    seen = []
    jax_fft = backends.fft_executor("jax")

    def fake_cudecomp(plan, data, norm, standalone):  # what cudecomp reads while tracing
        seen.append(config.get_config("cudecomp_transpose_comm"))
        return jax_fft(plan, data, norm, standalone)
    backends.register_fft_executor("cudecomp", fake_cudecomp)
    try:
        with darray.config_context(transpose_backend="cudecomp"):
            for comm in ("NCCL", "mpi_a2a", "TRANSPOSE_COMM_MPI_P2P", "NCCL"):
                with darray.config_context(cudecomp_transpose_comm=comm):
                    y = darray.fft.fftn(x)
                np.testing.assert_allclose(np.asarray(y), np.fft.fftn(host), rtol=1e-12,
                                           atol=1e-12)
                assert y.layout.mesh == x.layout.mesh
    finally:
        native = backends._NATIVE["FFT"]["cudecomp"]
        backends.register_fft_executor("cudecomp", native.impl, supports=native.supports,
                                       usable=native.usable, fallback=native.fallback)
    assert seen == ["NCCL", "MPI_A2A", "MPI_P2P"]  # the last NCCL call reused the first program
