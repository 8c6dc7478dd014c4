"""One rank of a multi-process darray run (started by test_multiprocess.py).

argv: port, num_processes, process_id. Each process has 4 CPU devices; the mesh spans all.
Prints "RESULT ok" when its checks pass.
"""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

port, nproc, rank = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
jax.config.update("jax_enable_x64", True)
jax.distributed.initialize(f"127.0.0.1:{port}", nproc, rank)

import numpy as np  # noqa: E402

import darray  # noqa: E402
from darray.distributed import gather  # noqa: E402  (collective host reads: every rank)

assert jax.device_count() == 4 * nproc, jax.device_count()
mesh = jax.make_mesh((2, 2 * nproc), ("x", "y"))
host = np.random.default_rng(0).standard_normal((13, 10, 7))  # same on every rank
x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
assert not x.data.is_fully_addressable
np.testing.assert_array_equal(gather(x), host)

k = darray.fft.fftn(x)
np.testing.assert_allclose(gather(k), np.fft.fftn(host), rtol=1e-10, atol=1e-10)
back = darray.fft.ifftn(k)
assert back.layout == x.layout
np.testing.assert_allclose(gather(back), host, atol=1e-12)

total = darray.sum(x * x)
np.testing.assert_allclose(float(total), float((host * host).sum()), rtol=1e-12)

lap = darray.map_blocks(
    lambda b: b[2:, 1:-1, 1:-1] + b[:-2, 1:-1, 1:-1] - 2 * b[1:-1, 1:-1, 1:-1], x.halo(1))
ref = np.roll(host, -1, 0) + np.roll(host, 1, 0) - 2 * host
np.testing.assert_allclose(gather(lap), ref, atol=1e-12)

g = darray.grad(lambda a: darray.sum(darray.fft.fftn(a).real))(x)
assert g.layout == x.layout and g.data.sharding.spec == x.layout.spec

# Small placement (docs/performance.md, "Small arrays") is for one process: across processes
# a 0-d result stays replicated over the whole mesh (every process holds it; never one
# process's device only), and small arrays stay on the default mesh over every process.
with darray.config_context(small_array_cells=4096):
    s = darray.sum(x)
    assert s.mesh == x.mesh and s.data.sharding.is_fully_replicated, s.data.sharding
    assert s.data.sharding.device_set == set(mesh.devices.flat)
    np.testing.assert_allclose(float(s), host.sum(), rtol=1e-12)  # each process reads its copy
    z = (x - darray.mean(x)) / s
    assert z.layout == x.layout
    np.testing.assert_allclose(gather(z), (host - host.mean()) / host.sum(), rtol=1e-10)
    t = darray.asarray(np.arange(16.0))
    assert t.mesh == darray.default_mesh() and not t.data.is_fully_addressable
    np.testing.assert_allclose(float(darray.sum(t * 2.0)), 240.0)
print("RESULT ok", flush=True)
