"""Covers: darray/_src/backends/mpi_exec.py, darray/_src/backends/registry.py
Covers: darray/_src/fft/api.py, darray/_src/halo/api.py, darray/_src/kernels/fftw.py

The "mpi" FFT and halo backend (darray/_src/backends/mpi_exec.py).

Slow tier: under `mpiexec -n 2` and `-n 4` (one CPU device per process, the installed build,
whose MPI handlers resolve MPI at run time: the `mpi_native` fixture), mpi_backend_worker.py
checks on every rank fftn/ifftn/rfftn/irfftn and halo fills / halo_reduce against numpy and the
"jax" backend with layouts asserted, two independent FFTs in one jit, grad and jvp through fftn,
error paths, and two jitted fftn called in a different order per rank failing on every rank
(then right in order); and a process without MPI initialised gets a Python exception naming the
handler.
Also the FFTW local-FFT provider between the MPI exchanges (mpi_fftw_worker.py; skipped where
FFTW is not found).
Default tier: without mpi4py, selecting "mpi" raises BackendUnavailableError with the fix.
"""
from __future__ import annotations

import sys

import jax
import numpy as np
import pytest
from helpers import mesh_of
from mpi_launch import mpiexec, run_bounded

import darray
from darray._src.backends.registry import BackendUnavailableError, select_fft_backend
from darray._src.base import native

CHECKS = ("fft", "halo", "ordering", "grad", "errors", "mismatch")


def _missing(stdout: str, ranks: int, check: str) -> list[str]:
    """The ranks' "RANK r ok <check>" reports not in `stdout`. Searched as text, not as whole
    lines: mpiexec forwards the ranks' output in pieces, and a rank's report was once glued to
    another rank's Gloo log line. (No check's name extends another's.)"""
    return [f"RANK {r} ok {check}" for r in range(ranks) if f"RANK {r} ok {check}" not in stdout]


@pytest.mark.slow
@pytest.mark.multiprocess
@pytest.mark.parametrize("ranks", [2, 4])
def test_mpi_backend_under_mpiexec(mpi_native, ranks):
    out = mpiexec(ranks, "mpi_backend_worker.py", mpi_native, timeout_s=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    for check in CHECKS:
        assert _missing(out.stdout, ranks, check) == [], (check, out.stdout)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_mpi_backend_with_the_fftw_provider(mpi_native):
    from darray._src.kernels import fftw
    why = fftw.load()
    if why is not None:
        pytest.skip(f"FFTW is not available: {why}")
    out = mpiexec(2, "mpi_fftw_worker.py", mpi_native, timeout_s=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    assert _missing(out.stdout, 2, "fftw") == [], out.stdout


NOT_INITIALISED = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("darray._native", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
sys.modules["darray._native"] = mod
import jax, jax.numpy as jnp, numpy as np
from darray._src.backends import mpi_transport as mt   # mpi4py is NOT imported: no MPI_Init
assert mt.available()
from darray._src.base import native; native.register_targets("cpu")  # not bound: no MPI_Init
for target, attrs in ((mt.TARGET, {}), (mt.SENDRECV_TARGET, dict(
        dests=np.zeros(1, np.int64), sources=np.zeros(1, np.int64)))):
    call = jax.ffi.ffi_call(target, (jax.ShapeDtypeStruct((1, 2), jnp.float32),
                                     jax.ShapeDtypeStruct((), jnp.float32)), has_side_effect=True)
    try:
        jax.block_until_ready(call(jnp.zeros((1, 2), jnp.float32), mt.new_order(),
                                   comm=np.int64(0), call_id=np.int64(0), **attrs))
    except Exception as err:
        print("RAISED", target, str(err).replace(chr(10), " ")[:300])
print("ALIVE")
"""


@pytest.mark.slow
def test_handlers_without_mpi_initialised_raise(mpi_native, tmp_path):
    script = tmp_path / "not_initialised.py"
    script.write_text(NOT_INITIALISED)
    out = run_bounded([sys.executable, str(script), mpi_native], 300)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    lines = out.stdout.splitlines()
    for name in ("darray_mpi_all_to_all", "darray_mpi_sendrecv"):
        (line,) = [ln for ln in lines if ln.startswith(f"RAISED {name}_cpu")]
        assert f"{name}: MPI is not initialised" in line, line
    assert lines[-1] == "ALIVE"  # the process did not abort


def _mesh():
    return mesh_of((2, 4), ("x", "y"))


def test_selecting_mpi_without_mpi4py_says_how_to_get_it(monkeypatch):
    # every build has the MPI handlers; what a plain `pip install darray` lacks is mpi4py
    assert native.build_info()["mpi"] is True
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # find_spec and import both fail
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    assert "none: mpi4py is not installed" in native.build_info()["mpi_library"]
    with pytest.raises(BackendUnavailableError, match="mpi4py is not installed"):
        select_fft_backend("mpi")
    x = darray.asarray(np.ones((8, 8)), mesh=_mesh(), spec=("x", "y"))
    for option in ("transpose_backend", "fft_backend"):
        with darray.config_context(**{option: "mpi"}):
            with pytest.raises(BackendUnavailableError, match="mpiexec"):
                darray.fft.fftn(x)
    for call in (lambda: darray.halo(x, 1, backend="mpi"),
                 lambda: darray.halo_reduce(darray.halo(x, 1), backend="mpi")):
        with pytest.raises(BackendUnavailableError, match=r"pip install 'darray\[mpi\]'"):
            call()
    # the jax backend is untouched by the failed selections
    np.testing.assert_allclose(np.asarray(darray.fft.fftn(x)), np.fft.fftn(np.ones((8, 8))))
    assert x.layout.spec == jax.sharding.PartitionSpec("x", "y")


@pytest.mark.multiprocess
def test_routes_beyond_whole_plans_run_on_mpi(mpi_native):
    """The split-axis FFT and DCT/DST, the padded transforms, transformn, pad and gradient
    record the MPI backend, their plan records show it, and they exchange through its handlers
    only (mpi_routes_worker.py; ~15 s)."""
    out = mpiexec(2, "mpi_routes_worker.py", mpi_native, timeout_s=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    for check in ("split-axis", "split-r2r", "padded", "transformn", "stencils"):
        done = {line for line in out.stdout.splitlines() if line.endswith(f" ok {check}")}
        assert done == {f"RANK {r} ok {check}" for r in range(2)}, (check, out.stdout)
