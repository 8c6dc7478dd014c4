"""Halo exchange vs a local jnp.pad of the same array.

Runs on 8 virtual CPU devices (set before jax starts). Measures, with the median of repeated
runs of compiled functions:

* ``halo``: ``x.halo(w)`` on every axis of an n^3 array split over a mesh (ppermute of faces);
* ``pad``: ``jnp.pad(a, w, mode="wrap")`` of the same global array on one device, the work a
  halo fill cannot beat (it writes the same cells once);
* ``local``: ``jnp.pad(block, w, mode="wrap")`` of every device's own block inside shard_map:
  the same memory traffic as the halo fill with no communication (wrong ghosts), its floor;
* ``reduce``: ``y.halo_reduce()`` of the haloed array.

Usage::

    python benchmarks/bench_halo.py            # 192^3 float32, width 1, mesh (2, 4)
    python benchmarks/bench_halo.py --small    # smoke run (< 20 s)
    python benchmarks/bench_halo.py --n 256 --width 2 --mesh 8
    python benchmarks/bench_halo.py --json /tmp/halo.json   # table (and PNG) elsewhere

The table is also written as JSON (default benchmarks/results/bench_halo.json) with a PNG
plot of time and ratio to ``jnp.pad`` beside it.
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
from _bench_common import default_json_path, make_row, mesh_label, progress, write_table  # noqa: E402

import darray  # noqa: E402
from darray._src.base import compat  # noqa: E402


def median_seconds(fn, arg, repeats):
    jax.block_until_ready(fn(arg))  # compile and warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(arg))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=192, help="cube edge (default 192)")
    parser.add_argument("--width", type=int, default=1, help="ghost width (default 1)")
    parser.add_argument("--mesh", default="2,4", help="mesh shape, e.g. 8 or 2,4 (default 2,4)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--small", action="store_true", help="smoke run: 48^3, 3 repeats")
    parser.add_argument("--json", default=str(default_json_path("bench_halo")),
                        help="where to write the table as JSON, a PNG plot beside it "
                             "(default benchmarks/results/bench_halo.json)")
    args = parser.parse_args(argv)
    if args.small:
        args.n, args.repeats = 48, 3
    mesh_shape = tuple(int(s) for s in args.mesh.split(","))
    names = ("x", "y", "z")[:len(mesh_shape)]
    mesh = compat.make_auto_mesh(mesh_shape, names)
    n, w = args.n, args.width

    host = np.random.default_rng(0).standard_normal((n, n, n)).astype(np.float32)
    x = darray.asarray(host, mesh=mesh, spec=names)
    layout = x.layout
    halo_layout = x.halo(w).layout

    fill = jax.jit(lambda d: darray.DistArray._new(d, layout).halo(w).data)
    reduce = jax.jit(lambda d: darray.DistArray._new(d, halo_layout).halo_reduce().data)
    single = jax.device_put(host, jax.devices()[0])
    pad = jax.jit(lambda a: jnp.pad(a, w, mode="wrap"))
    local = jax.jit(compat.shard_map(lambda b: jnp.pad(b, w, mode="wrap"), mesh=mesh,
                                     in_specs=(layout.spec,), out_specs=layout.spec))

    steps = [("halo", lambda: median_seconds(fill, x.data, args.repeats)),
             ("halo_reduce", lambda: median_seconds(reduce, fill(x.data), args.repeats)),
             ("pad", lambda: median_seconds(pad, single, args.repeats)),
             ("local_pad", lambda: median_seconds(local, x.data, args.repeats))]
    times = {name: measure() for name, measure in progress(steps, "bench_halo")}
    t_halo, t_reduce, t_pad, t_local = (times[k] for k in ("halo", "halo_reduce", "pad",
                                                            "local_pad"))
    print(f"array {n}^3 float32, width {w}, mesh {mesh_shape}, {jax.device_count()} devices, "
          f"median of {args.repeats}")
    print(f"  halo        {t_halo * 1e3:9.2f} ms")
    print(f"  halo_reduce {t_reduce * 1e3:9.2f} ms")
    print(f"  jnp.pad     {t_pad * 1e3:9.2f} ms  (one device, mode='wrap')")
    print(f"  local pad   {t_local * 1e3:9.2f} ms  (each block padded by itself, no exchange)")
    print(f"  ratio halo / pad   {t_halo / t_pad:5.2f}  (target <= 1.5)")
    print(f"  ratio halo / local pad {t_halo / t_local:5.2f}")
    print(f"  ratio reduce / pad {t_reduce / t_pad:5.2f}")
    size, dist_mesh = f"{n}^3 w{w}", mesh_label(mesh_shape)
    rows = [make_row("halo", size, dist_mesh, t_halo, t_halo / t_pad),
            make_row("halo_reduce", size, dist_mesh, t_reduce, t_reduce / t_pad),
            make_row("jnp.pad wrap", size, "1", t_pad, 1.0),
            make_row("local pad", size, dist_mesh, t_local, t_local / t_pad)]
    write_table(rows, args.json, "bench_halo", "one-device jnp.pad(mode='wrap')",
                f"halo {n}^3 f32: ms, ratio to jnp.pad")
    return times


if __name__ == "__main__":
    main()
