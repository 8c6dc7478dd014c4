"""Eager (un-jitted) latency of common ops: darray vs jax.numpy on an equally sharded jax.Array.

Runs on 8 virtual CPU devices (set before jax starts). Each op is called once to compile, then
timed call by call (dispatch + execution, `block_until_ready` after each call); the table gives
the median of many repeats (darray and jax.numpy calls alternate, so machine load hits both)
and the ratio darray / jax.numpy. Small arrays make the numbers measure dispatch overhead,
which is what an eager user pays on every call.

The jax.numpy side uses a jax.Array with the same NamedSharding as the DistArray's data (for
creation functions: the jax.numpy call followed by placing the result in that sharding with
`jax.device_put`, the cheapest way plain JAX gets a sharded creation eagerly).

Usage::

    python benchmarks/bench_eager.py                 # (64, 16) float32 on a mesh of 8
    python benchmarks/bench_eager.py --repeats 50    # quicker
    python benchmarks/bench_eager.py --shape 1024,64 --mesh 2,4
    python benchmarks/bench_eager.py --json /tmp/eager.json   # table (and PNG) elsewhere

The table is also written as JSON (default benchmarks/results/bench_eager.json) with a PNG
plot of darray's time per call and the ratio darray / jax.numpy beside it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import darray  # noqa: E402
from darray._src import compat  # noqa: E402
from _bench_common import (  # noqa: E402
    default_json_path, make_row, mesh_label, progress, write_table)


def median_pair(dfn, jfn, repeats: int) -> tuple[float, float]:
    """Median seconds of dfn and jfn, called alternately so that load from other processes on
    the machine hits both sides alike."""
    for fn in (dfn, jfn, dfn, jfn):  # compile and warm up
        jax.block_until_ready(fn())
    times = ([], [])
    for _ in range(repeats):
        for fn, out in zip((dfn, jfn), times):
            start = time.perf_counter()
            jax.block_until_ready(fn())
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def cases(x, y, a, b, sharding, n):
    """(name, darray call, jax.numpy call) for a dozen common ops; x, y DistArrays with the
    layouts of the jax arrays a, b (same sharding)."""
    m = x.shape[1]
    cond_d, cond_j = x > 0.5, a > 0.5
    sq_d = darray.asarray(np.ones((m, m), np.float32), mesh=x.mesh, spec=(None, None))
    sq_j = jax.device_put(np.ones((m, m), np.float32), jax.sharding.NamedSharding(
        sharding.mesh, jax.sharding.PartitionSpec()))
    put = lambda v: jax.device_put(v, sharding)  # noqa: E731
    put1 = lambda v: jax.device_put(v, jax.sharding.NamedSharding(  # noqa: E731
        sharding.mesh, jax.sharding.PartitionSpec(sharding.spec[0])))
    mesh = x.mesh
    spec0 = (sharding.spec[0],)
    return [
        ("add", lambda: darray.add(x, y), lambda: jnp.add(a, b)),
        ("multiply", lambda: x * y, lambda: a * b),
        ("exp", lambda: darray.exp(x), lambda: jnp.exp(a)),
        ("sum", lambda: darray.sum(x), lambda: jnp.sum(a)),
        ("mean(axis=0)", lambda: darray.mean(x, axis=0), lambda: jnp.mean(a, axis=0)),
        ("matmul", lambda: x @ sq_d, lambda: a @ sq_j),
        ("where", lambda: darray.where(cond_d, x, y), lambda: jnp.where(cond_j, a, b)),
        ("astype", lambda: darray.astype(x, darray.float64 if jax.config.jax_enable_x64
                                          else darray.int32),
         lambda: a.astype(jnp.float64 if jax.config.jax_enable_x64 else jnp.int32)),
        ("reshape", lambda: darray.reshape(x, (n * m,)), lambda: jnp.reshape(a, (n * m,))),
        ("slice [1:-1]", lambda: x[1:-1], lambda: a[1:-1]),
        ("arange", lambda: darray.arange(n, mesh=mesh, spec=spec0),
         lambda: put1(jnp.arange(n))),
        ("linspace", lambda: darray.linspace(0.0, 1.0, n, mesh=mesh, spec=spec0),
         lambda: put1(jnp.linspace(0.0, 1.0, n))),
        ("eye", lambda: darray.eye(n, m, mesh=mesh, spec=tuple(sharding.spec) + (None,) * (
            2 - len(sharding.spec))), lambda: put(jnp.eye(n, m))),
        ("zeros", lambda: darray.zeros((n, m), mesh=mesh, spec=tuple(sharding.spec) + (None,) * (
            2 - len(sharding.spec))), lambda: put(jnp.zeros((n, m)))),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="64,16", help="array shape (default 64,16)")
    parser.add_argument("--mesh", default="8", help="mesh shape, e.g. 8 or 2,4 (default 8)")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--x64", action="store_true", help="enable jax_enable_x64")
    parser.add_argument("--json", default=str(default_json_path("bench_eager")),
                        help="where to write the table as JSON, a PNG plot beside it "
                             "(default benchmarks/results/bench_eager.json)")
    args = parser.parse_args(argv)
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    shape = tuple(int(s) for s in args.shape.split(","))
    mesh_shape = tuple(int(s) for s in args.mesh.split(","))
    names = ("x", "y")[:len(mesh_shape)]
    mesh = compat.make_auto_mesh(mesh_shape, names)
    spec = names  # axis i split over mesh axis i
    rng = np.random.default_rng(0)
    host_a = rng.random(shape, dtype=np.float32)
    host_b = rng.random(shape, dtype=np.float32)
    x = darray.asarray(host_a, mesh=mesh, spec=spec)
    y = darray.asarray(host_b, mesh=mesh, spec=spec)
    sharding = x.data.sharding
    a = jax.device_put(host_a, sharding)
    b = jax.device_put(host_b, sharding)
    assert x.data.sharding.is_equivalent_to(a.sharding, 2), (x.data.sharding, a.sharding)

    print(f"jax {jax.__version__}, {jax.device_count()} {jax.default_backend()} devices, "
          f"shape {shape} float32 on mesh {dict(mesh.shape)}, spec {spec}, "
          f"median of {args.repeats}")
    print(f"{'op':<14}{'darray (us)':>13}{'jax.numpy (us)':>16}{'ratio':>8}")
    ratios, rows = [], []
    size, mesh_name = "x".join(map(str, shape)), mesh_label(mesh_shape)
    ops = cases(x, y, a, b, sharding, shape[0])
    for name, dfn, jfn in progress(ops, "bench_eager"):
        td, tj = median_pair(dfn, jfn, args.repeats)
        ratios.append(td / tj)
        rows.append(make_row(name, size, mesh_name, td, td / tj, jax_numpy_time_ms=tj * 1e3))
        print(f"{name:<14}{td * 1e6:>13.1f}{tj * 1e6:>16.1f}{td / tj:>8.2f}")
    geomean = float(np.exp(np.mean(np.log(ratios))))
    print(f"{'geomean':<14}{'':>13}{'':>16}{geomean:>8.2f}")
    write_table(rows, args.json, "bench_eager", "jax.numpy on the same sharding",
                f"eager {size} on {mesh_name}: darray ms, ratio to jax.numpy")
    return rows


if __name__ == "__main__":
    main()
