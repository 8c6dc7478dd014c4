"""Tall-skinny linear algebra: darray's TSQR path vs the old gathering path vs numpy (issue 50).

Runs on 8 virtual CPU devices (set before jax starts). For a row-split m x k matrix, each of
qr, svd (reduced), svdvals, pinv and lstsq runs three ways in the same process:

* ``darray``: the namespace function, which takes the TSQR path (darray/_src/linalg);
* ``gather``: the same function on the old path (jnp.linalg on the logical array, which XLA
  gathers onto every device), reached through api/linalg.py's `_batched`;
* ``numpy``: numpy's LAPACK on the host array (the ratio column is relative to it).

Beside the times it prints each compiled program's temporaries in blocks (one block = one
device's share of the matrix, from `memory_analysis`) and whether it all-gathers anything the
size of a block.

Usage::

    python benchmarks/bench_linalg.py                 # 2^18 x 32 float64, mesh 8
    python benchmarks/bench_linalg.py --small         # smoke run (< 20 s)
    python benchmarks/bench_linalg.py --rows 1048576 --k 64 --dtype float32
    python benchmarks/bench_linalg.py --square 1024   # blocked cholesky/solve/inv/det/slogdet

``--square N``: an N x N matrix (split over the 2x4 mesh, rows and columns) through the blocked
column-panel factorizations (darray/_src/linalg/blocked_*.py) beside the old gathering path
and numpy, same columns.
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
from _bench_common import default_json_path, make_row, time_interleaved, write_table  # noqa: E402

import darray  # noqa: E402
from darray._src.api import linalg as api_linalg  # noqa: E402
from darray._src.base import compat  # noqa: E402

la = darray.linalg


def gathered(name, **kwargs):
    """The old path: jnp.linalg.<name> on the logical array, outputs replicated."""
    return lambda x: api_linalg._batched(name, [x], 2, kwargs=tuple(kwargs.items()))


def programs(b, rhs):
    # the old lstsq: jnp.linalg.lstsq on the logical arrays (XLA gathers the matrix)
    old_lstsq = lambda x: jnp.linalg.lstsq(x.to_jax(), b.to_jax())[0]  # noqa: E731
    return {
        "qr": (lambda x: la.qr(x), gathered("qr", mode="reduced"), np.linalg.qr),
        "svd": (lambda x: la.svd(x, full_matrices=False), gathered("svd", full_matrices=False),
                lambda a: np.linalg.svd(a, full_matrices=False)),
        "svdvals": (la.svdvals, gathered("svdvals"),
                    lambda a: np.linalg.svd(a, compute_uv=False)),
        "pinv": (la.pinv, gathered("pinv"), np.linalg.pinv),
        "lstsq": (lambda x: la.lstsq(x, b)[0], old_lstsq, lambda a: np.linalg.lstsq(a, rhs)),
    }


def blocks_and_gathers(fn, x, block_bytes, block_elems):
    compiled = jax.jit(fn).lower(x).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes / block_bytes
    big = 0
    for result in re.findall(r"=\s*(.*?)\sall-gather(?:-start)?\(", compiled.as_text()):
        for dims in re.findall(r"\w+\[([\d,]*)\]", result):
            n = int(np.prod([int(d) for d in dims.split(",") if d] or [1]))
            big = max(big, n)
    return temp, big >= block_elems


def host_seconds(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def square_programs(b):
    old = lambda name: (lambda x: api_linalg._batched(name, [x], 2))  # noqa: E731
    return {
        "cholesky": (lambda x: la.cholesky(x), old("cholesky"), np.linalg.cholesky),
        "solve": (lambda x: la.solve(x, b), lambda x: api_linalg._batched("solve", [x, b], 2),
                  lambda a: np.linalg.solve(a, np.asarray(b))),
        "inv": (la.inv, old("inv"), np.linalg.inv),
        "det": (la.det, old("det"), np.linalg.det),
        "slogdet": (lambda x: la.slogdet(x)[1], lambda x: api_linalg._batched(
            "slogdet", [x], 2)[1], np.linalg.slogdet),
    }


def square_main(args):
    n = args.square
    mesh = compat.make_auto_mesh((2, 4), ("x", "y"))
    rng = np.random.default_rng(0)
    g = rng.standard_normal((n, n))
    host = (g @ g.T + n * np.eye(n)).astype(args.dtype)
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    b = darray.asarray(rng.standard_normal((n, 16)).astype(args.dtype), mesh=mesh,
                       spec=("x", None))
    block_elems = x.layout.chunk(0) * x.layout.chunk(1)
    block_bytes = block_elems * host.dtype.itemsize
    print(f"square {n}x{n} {args.dtype}, mesh 2x4 split (x, y)")
    print(f"{'function':10} {'darray ms':>10} {'gather ms':>10} {'numpy ms':>10} "
          f"{'gather/darray':>14} {'darray/numpy':>13} {'temp blocks new/old':>20} big-gather")
    for name, (new, old, ref) in square_programs(b).items():
        timed = time_interleaved([("new", jax.jit(new), x), ("old", jax.jit(old), x)],
                                 args.repeats, desc=name)
        t_new, t_old = timed["new"][0], timed["old"][0]
        t_np = host_seconds(lambda: ref(host), args.repeats)  # noqa: B023 (called at once)
        mem_new, big_new = blocks_and_gathers(new, x, block_bytes, block_elems)
        mem_old, big_old = blocks_and_gathers(old, x, block_bytes, block_elems)
        print(f"{name:10} {t_new * 1e3:10.2f} {t_old * 1e3:10.2f} {t_np * 1e3:10.2f} "
              f"{t_old / t_new:14.2f} {t_new / t_np:13.2f} {mem_new:9.2f} / {mem_old:7.2f} "
              f"{big_new} / {big_old}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2 ** 18)
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="smoke run: 2^14 x 16, 2 repeats")
    parser.add_argument("--json", default=str(default_json_path("bench_linalg")))
    parser.add_argument("--square", type=int, default=0,
                        help="N: the blocked square factorizations on an N x N matrix instead")
    args = parser.parse_args(argv)
    if args.square:
        if args.dtype == "float64":
            jax.config.update("jax_enable_x64", True)
        return square_main(args)
    if args.small:
        args.rows, args.k, args.repeats = 2 ** 14, 16, 2
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    mesh = compat.make_auto_mesh((8,), ("x",))
    rng = np.random.default_rng(0)
    host = rng.standard_normal((args.rows, args.k)).astype(args.dtype)
    rhs = rng.standard_normal(args.rows).astype(args.dtype)
    x = darray.asarray(host, mesh=mesh, spec=("x",))
    b = darray.asarray(rhs, mesh=mesh, spec=("x",))
    block_elems = x.layout.chunk(0) * args.k
    block_bytes = block_elems * host.dtype.itemsize
    size = f"{args.rows}x{args.k} {args.dtype}"
    rows = []
    print(f"{'function':10} {'darray ms':>10} {'gather ms':>10} {'numpy ms':>10} "
          f"{'gather/darray':>14} {'darray/numpy':>13} {'temp blocks new/old':>20} big-gather")
    for name, (new, old, ref) in programs(b, rhs).items():
        timed = time_interleaved([("new", jax.jit(new), x), ("old", jax.jit(old), x)],
                                 args.repeats, desc=name)
        t_new, t_old = timed["new"][0], timed["old"][0]
        t_np = host_seconds(lambda: ref(host), args.repeats)  # noqa: B023 (called at once)
        mem_new, big_new = blocks_and_gathers(new, x, block_bytes, block_elems)
        mem_old, big_old = blocks_and_gathers(old, x, block_bytes, block_elems)
        print(f"{name:10} {t_new * 1e3:10.2f} {t_old * 1e3:10.2f} {t_np * 1e3:10.2f} "
              f"{t_old / t_new:14.2f} {t_new / t_np:13.2f} {mem_new:9.2f} / {mem_old:7.2f} "
              f"{big_new} / {big_old}")
        for program, t, temp in (("darray", t_new, mem_new), ("gather", t_old, mem_old)):
            rows.append(make_row(f"{name} {program}", size, "8", t, t / t_np, temp_blocks=temp))
        rows.append(make_row(f"{name} numpy", size, "1", t_np, 1.0))
    write_table(rows, args.json, "bench_linalg", "numpy on the host",
                f"tall-skinny linalg, {size}, mesh 8")


if __name__ == "__main__":
    main()
