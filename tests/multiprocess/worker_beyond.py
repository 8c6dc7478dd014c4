"""One rank of a multi-process run of darray's creation, random and checkpoint functions
(started by test_beyond_one_process.py).

argv: port, num_processes, process_id, mode, outdir. 4 CPU devices per process. Port 0:
started by mpiexec, launcher detection finds the rest (num_processes, process_id ignored).
mode "features": from_callback, fromfunction, random, save and load; rank 0 writes the
gathered results to outdir for the parent to compare with its single-process run.
mode "dieK": rank K crashes after the first collective, the others keep calling collectives;
mode "hangK": rank K stops (SIGSTOP: alive, silent) instead; "raiseK": it raises.
Prints "RESULT ok" when its checks pass.
"""
import os
import signal
import sys
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

port, nproc, rank, mode, outdir = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                   sys.argv[4], sys.argv[5])
jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import darray  # noqa: E402
from darray.distributed import gather  # noqa: E402  (collective host reads: every rank)

if port:
    info = darray.distributed.initialize(f"127.0.0.1:{port}", nproc, rank, heartbeat_timeout=10,
                                         shutdown_timeout=10)
    assert info["launcher"] == "explicit", info
else:
    info = darray.distributed.initialize(heartbeat_timeout=10, shutdown_timeout=10)
    assert info["launcher"] in ("mpich", "openmpi"), info
    rank, nproc = info["process_index"], info["process_count"]
assert info["process_index"] == rank and info["process_count"] == nproc, info
assert info["device_count"] == 4 * nproc and len(info["local_devices"]) == 4, info
assert info["watchdog"], info

from jax.experimental import multihost_utils  # noqa: E402

if mode.startswith(("die", "hang", "raise")):
    multihost_utils.sync_global_devices("started")
    print("RANK", rank, "started", flush=True)
    if rank == int(mode[-1]):
        time.sleep(1)
        if mode.startswith("hang"):
            os.kill(os.getpid(), signal.SIGSTOP)
        if mode.startswith("raise"):
            raise RuntimeError("simulated failure in user code")
        os._exit(9)  # a crash: no goodbye, no shutdown
    start = time.time()
    while time.time() - start < 120:  # the watchdog must end this long before
        multihost_utils.process_allgather(np.ones(3))
        time.sleep(0.2)
    print("RESULT survived", flush=True)
    sys.exit(0)

mesh = jax.make_mesh((2, 2 * nproc), ("x", "y"),
                     axis_types=(jax.sharding.AxisType.Auto,) * 2)
host = np.random.default_rng(0).standard_normal((13, 10, 7))
calls = []
x = darray.from_callback(host.shape, np.float64, lambda idx: calls.append(idx) or host[idx],
                         mesh=mesh, spec=("x", "y"))
assert not x.data.is_fully_addressable and x.data.sharding.spec == x.layout.spec
# this process made only its own devices' blocks (the non-empty ones), each once
ranges = darray._src.extras.blockwise.logical_ranges
own = {tuple((r.start, r.stop) for r in ranges(x.layout, s.index))
       for s in x.data.addressable_shards}
own = {o for o in own if all(b > a for a, b in o)}
assert sorted(tuple((s.start, s.stop) for s in c) for c in calls) == sorted(own), calls
np.testing.assert_array_equal(gather(x), host)

f = darray.fromfunction(lambda i, j, k: i * 100.0 + j * 10.0 + k, (13, 10, 7),
                        dtype=np.float64, mesh=mesh, spec=("y", "x"))
np.testing.assert_array_equal(gather(f), np.fromfunction(lambda i, j, k: i * 100.0 + j * 10.0
                                                             + k, (13, 10, 7)))

r = darray.random.normal(jax.random.key(7), (13, 10, 7), mesh=mesh, spec=("x", "y"))
n = darray.random.integers(jax.random.key(7), -4, 4, (37,), mesh=mesh, spec=(("x", "y"),))
assert r.data.sharding.spec == r.layout.spec
r_host, n_host = gather(r), gather(n)

# every process writes its own chunks, through each engine this machine has
darray.save(os.path.join(outdir, "saved_by_procs"), r, engine="numpy")
if darray._src.extras.io._tensorstore() is not None:
    darray.save(os.path.join(outdir, "saved_by_procs_ts"), r, engine="tensorstore")
back = darray.load(os.path.join(outdir, "saved_by_parent"), mesh=mesh, spec=(None, "y"))
assert back.layout.split == ((), ("y",), ())
if rank == 0:
    np.save(os.path.join(outdir, "random_normal.npy"), r_host)
    np.save(os.path.join(outdir, "random_integers.npy"), n_host)
    np.save(os.path.join(outdir, "loaded.npy"), gather(back))
else:
    gather(back)  # the gather is collective: every process takes part
multihost_utils.sync_global_devices("done")
print("RESULT ok", flush=True)
