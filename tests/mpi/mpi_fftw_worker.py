"""Run under `mpiexec -n P python3 mpi_fftw_worker.py NATIVE_SO`: the "mpi" backend with the
FFTW local-FFT provider (local_fft="fftw") on a mesh of one CPU device per process: fftn,
a jitted ifftn(fftn) and irfftn(rfftn) against numpy, the output layouts, and the compiled
program holding both FFTW's and MPI's custom calls. Prints "RANK r ok fftw" lines.
"""
import importlib.util
import os
import sys

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.pop("XLA_FLAGS", None)  # one CPU device per process
spec = importlib.util.spec_from_file_location("darray._native", sys.argv[1])
native_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native_mod)
sys.modules["darray._native"] = native_mod  # darray._src.base.native imports this one

import jax  # noqa: E402
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402,F401  (initialises MPI before any exchange)

jax.config.update("jax_enable_x64", True)
import darray  # noqa: E402
from darray.distributed import gather  # noqa: E402  (collective host reads: every rank)

info = darray.distributed.initialize(heartbeat_timeout=15, shutdown_timeout=10)
rank = info["process_index"]
mesh = jax.make_mesh((info["process_count"],), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
rng = np.random.default_rng(0)  # the same global data on every rank
host = rng.standard_normal((13, 10, 7)) + 1j * rng.standard_normal((13, 10, 7))
x = darray.asarray(host, mesh=mesh, spec=("x", None, None))
real = darray.asarray(host.real.copy(), mesh=mesh, spec=("x", None, None))
with darray.config_context(transpose_backend="mpi", local_fft="fftw"), \
        darray.record_backends() as log:
    y = darray.fft.fftn(x)
    back = jax.jit(lambda a: darray.fft.ifftn(darray.fft.fftn(a)))(x)
    r = darray.fft.irfftn(darray.fft.rfftn(real), s=host.shape)
    text = jax.jit(darray.fft.fftn).lower(x).as_text()
want = np.fft.fftn(host)
assert np.abs(gather(y) - want).max() / np.abs(want).max() < 1e-15
assert np.abs(gather(back) - host).max() < 1e-13
assert np.abs(gather(r) - host.real).max() < 1e-13
assert back.layout == x.layout and r.layout == real.layout, (back.layout, r.layout)
assert text.count("darray_fftw_cpu") >= 2 and "darray_mpi_all_to_all_cpu" in text
assert {(s.backend, s.settings) for s in log} == {("mpi", (("local_fft", "fftw"),))}, log
print(f"RANK {rank} ok fftw", flush=True)
