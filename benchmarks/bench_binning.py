"""Binning and the reduce-scatter sum: darray on 8 devices vs numpy and jax.numpy on one.

Runs on 8 virtual CPU devices (set before jax starts). Rows, median wall time of compiled
programs, interleaved (`_bench_common.time_interleaved`):

* ``darray.histogram``: 64 equal-width bins with a given range, of an n^3 float32 array split
  over the mesh; ``jnp.histogram`` of the same array on one device; ``np.histogram`` on the
  host (the ratio column is relative to it);
* ``darray.bincount`` with a static length vs ``np.bincount`` of the same integers;
* ``darray.sum(axis=0, spec=...)`` (a reduce-scatter) vs the default sum (all-reduce).

It also prints the collectives each compiled darray program contains: binning is one
all-reduce of the bins, the spec'd sum one reduce-scatter.

Usage::

    python benchmarks/bench_binning.py            # 128^3 float32, mesh (2, 4)
    python benchmarks/bench_binning.py --small    # smoke run (< 20 s)
    python benchmarks/bench_binning.py --n 192 --mesh 8 --json /tmp/binning.json
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import default_json_path, make_row, mesh_label, time_interleaved, write_table  # noqa: E402

import darray  # noqa: E402
from darray._src.base import compat  # noqa: E402

BINS = 64


def collectives(fn, arg) -> list[str]:
    text = fn.lower(arg).compile().as_text()
    return re.findall(r"\b(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
                      r"(?:-start)?\(", text)


def host_seconds(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128, help="cube edge (default 128)")
    parser.add_argument("--mesh", default="2,4", help="mesh shape, e.g. 8 or 2,4 (default 2,4)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--small", action="store_true", help="smoke run: 32^3, 3 repeats")
    parser.add_argument("--json", default=str(default_json_path("bench_binning")),
                        help="where to write the table as JSON, a PNG plot beside it")
    args = parser.parse_args(argv)
    if args.small:
        args.n, args.repeats = 32, 3
    mesh_shape = tuple(int(s) for s in args.mesh.split(","))
    names = ("x", "y", "z")[:len(mesh_shape)]
    mesh = compat.make_auto_mesh(mesh_shape, names)
    n = args.n
    rng = np.random.default_rng(0)
    host = rng.standard_normal((n, n, n)).astype(np.float32)
    ints = rng.integers(0, BINS, size=(n, n, n)).astype(np.int32)
    x = darray.asarray(host, mesh=mesh, spec=names)
    k = darray.asarray(ints, mesh=mesh, spec=names)
    lay, klay = x.layout, k.layout

    hist = jax.jit(lambda d: darray.histogram(darray.DistArray._new(d, lay), bins=BINS,
                                              range=(-4.0, 4.0))[0].data)
    count = jax.jit(lambda d: darray.bincount(darray.DistArray._new(d, klay), length=BINS).data)
    # the sum over axis 0 frees names[0]: ask for it on a remaining axis it can split
    spec_out = (names[0], None) if len(names) == 1 else (names[1], names[0])
    summed = jax.jit(lambda d: darray.sum(darray.DistArray._new(d, lay), axis=0).data)
    scattered = jax.jit(lambda d: darray.sum(darray.DistArray._new(d, lay), axis=0,
                                             spec=spec_out).data)
    single = jax.device_put(host, jax.devices()[0])
    jhist = jax.jit(lambda a: jnp.histogram(a, bins=BINS, range=(-4.0, 4.0))[0])

    found = {"histogram": collectives(hist, x.data), "bincount": collectives(count, k.data),
             "sum": collectives(summed, x.data), "sum spec": collectives(scattered, x.data)}
    times = time_interleaved([("histogram", hist, x.data), ("jnp.histogram", jhist, single),
                              ("bincount", count, k.data), ("sum", summed, x.data),
                              ("sum spec", scattered, x.data)], args.repeats, "bench_binning")
    t = {name: v[0] for name, v in times.items()}
    t["np.histogram"] = host_seconds(lambda: np.histogram(host, BINS, (-4.0, 4.0)),
                                     args.repeats)
    t["np.bincount"] = host_seconds(lambda: np.bincount(ints.ravel(), minlength=BINS),
                                    args.repeats)
    print(f"array {n}^3, mesh {mesh_shape}, {jax.device_count()} devices, median of "
          f"{args.repeats}; {BINS} bins")
    for name in ("histogram", "jnp.histogram", "np.histogram", "bincount", "np.bincount",
                 "sum", "sum spec"):
        print(f"  {name:14s} {t[name] * 1e3:9.2f} ms")
    print(f"  ratio histogram / np.histogram   {t['histogram'] / t['np.histogram']:6.2f}")
    print(f"  ratio histogram / jnp.histogram  {t['histogram'] / t['jnp.histogram']:6.2f}")
    print(f"  ratio bincount / np.bincount     {t['bincount'] / t['np.bincount']:6.2f}")
    print(f"  ratio sum spec / sum             {t['sum spec'] / t['sum']:6.2f}")
    for name, ops in found.items():
        print(f"  collectives in {name:10s}: {ops}")
    size, dist = f"{n}^3", mesh_label(mesh_shape)
    rows = [make_row("darray.histogram", size, dist, t["histogram"],
                     t["histogram"] / t["np.histogram"], collectives=found["histogram"]),
            make_row("jnp.histogram", size, "1", t["jnp.histogram"],
                     t["jnp.histogram"] / t["np.histogram"]),
            make_row("np.histogram", size, "host", t["np.histogram"], 1.0),
            make_row("darray.bincount", size, dist, t["bincount"],
                     t["bincount"] / t["np.bincount"], collectives=found["bincount"]),
            make_row("np.bincount", size, "host", t["np.bincount"], 1.0),
            make_row("sum axis 0", size, dist, t["sum"], 1.0, collectives=found["sum"]),
            make_row("sum axis 0 spec (reduce-scatter)", size, dist, t["sum spec"],
                     t["sum spec"] / t["sum"], collectives=found["sum spec"])]
    write_table(rows, args.json, "bench_binning",
                "numpy on the host (binning rows); the default sum (sum rows)",
                f"binning {n}^3: ms, ratio")
    return t, found


if __name__ == "__main__":
    main()
