"""Quick timing (not a test): `mpiexec -n P python3 mpi_timing_worker.py NATIVE_SO [N]`.

fftn + ifftn round trip of an N^3 complex64 array (default 128) on P processes x 1 CPU device,
the "mpi" backend (MPI_Alltoall) against the "jax" backend (XLA all-to-all over gloo), in the same
run, interleaved rounds; rank 0 prints the median seconds per round trip of each. Other
XLA_FLAGS are kept (e.g. "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" for
one compute thread per rank on a small machine).
"""
import importlib.util
import os
import sys
import time

os.environ["JAX_PLATFORMS"] = "cpu"
if "device_count" in os.environ.get("XLA_FLAGS", ""):  # one CPU device per process
    os.environ.pop("XLA_FLAGS")
spec = importlib.util.spec_from_file_location("darray._native", sys.argv[1])
native_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native_mod)
sys.modules["darray._native"] = native_mod

import jax  # noqa: E402
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import darray  # noqa: E402
from darray.distributed import gather  # noqa: E402  (collective host reads: every rank)

info = darray.distributed.initialize(heartbeat_timeout=30, shutdown_timeout=10)
rank, nproc = info["process_index"], info["process_count"]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 128
mesh = jax.make_mesh((nproc,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
host = np.random.default_rng(0).standard_normal((n, n, n)).astype(np.complex64)
x = darray.asarray(host, mesh=mesh, spec=("x", None, None))
fns = {}
for backend in ("mpi", "jax"):
    with darray.config_context(transpose_backend=backend):
        fns[backend] = jax.jit(lambda a: darray.fft.ifftn(darray.fft.fftn(a)))
        jax.block_until_ready(fns[backend](x).data)  # compile + warm up
times = {b: [] for b in fns}
for _ in range(15):
    for backend, fn in fns.items():
        with darray.config_context(transpose_backend=backend):
            MPI.COMM_WORLD.Barrier()
            start = time.perf_counter()
            out = fn(x)
            jax.block_until_ready(out.data)
            times[backend].append(time.perf_counter() - start)
err = float(np.max(np.abs(gather(out) - host)))
if rank == 0:
    print(f"P={nproc} n={n} complex64 fftn+ifftn round trip, median of 15: " + ", ".join(
        f"{b}: {np.median(t) * 1e3:.1f} ms" for b, t in times.items()) + f" (max err {err:.1e})",
        flush=True)
