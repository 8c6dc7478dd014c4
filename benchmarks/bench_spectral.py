"""Square eigh / svd: darray's one-sided block Jacobi path vs the old gathering path vs numpy
(issue 50, item 2).

Runs on 8 virtual CPU devices (set before jax starts). For a row-split n x n float64 matrix
(symmetric for eigh), eigh, eigvalsh, svd and svdvals each run three ways in one process:

* ``darray``: the namespace function, which takes the Jacobi path (darray/_src/linalg/jacobi.py);
* ``gather``: jnp.linalg on the logical array (XLA gathers it onto every device), reached
  through api/linalg.py's `_batched`, as before the Jacobi path;
* ``numpy``: numpy's LAPACK on the host array.

Times are the median of `--repeats` interleaved runs after one compiling run; the printed
ratios are darray / numpy and darray / gather. Beside them: the compiled temporaries in blocks
(`memory_analysis`; counted in input blocks, a device's share of the matrix, because the
old path's outputs are replicated) and all-gathers.

Usage::

    python benchmarks/bench_spectral.py                   # n = 512 and 1024, mesh 8
    python benchmarks/bench_spectral.py --sizes 256 --repeats 3
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

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import darray  # noqa: E402
from darray._src.api import linalg as api_linalg  # noqa: E402

la = darray.linalg
NUMPY = {"eigh": np.linalg.eigh, "eigvalsh": np.linalg.eigvalsh, "svd": np.linalg.svd,
         "svdvals": lambda a: np.linalg.svd(a, compute_uv=False)}


def gathered(name):
    return lambda x: api_linalg._batched(name, [x], 2)


def block_until_ready(out):
    for leaf in jax.tree_util.tree_leaves(out):
        leaf = leaf.data if isinstance(leaf, darray.DistArray) else leaf
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def timed(fn, arg, repeats):
    block_until_ready(fn(arg))  # compile
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        block_until_ready(fn(arg))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def memory(fn, x):
    compiled = jax.jit(fn).lower(x).compile()
    m = compiled.memory_analysis()
    text = compiled.as_text()
    gathers = text.count("all-gather(") + text.count("all-gather-start(")
    return m.temp_size_in_bytes / m.argument_size_in_bytes, gathers


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--funcs", nargs="+", default=["eigh", "svd"])
    parser.add_argument("--no-gather", action="store_true",
                        help="skip the old path's timing (minutes per call on busy CPUs)")
    args = parser.parse_args()
    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    print(f"jax {jax.__version__}, {jax.device_count()} devices, float64, rows split over 8")
    print(f"{'func':9} {'n':>5} {'numpy ms':>9} {'gather ms':>10} {'darray ms':>10} "
          f"{'/numpy':>7} {'/gather':>8} {'blk old':>8} {'blk new':>8} {'ag old':>6} "
          f"{'ag new':>6}")
    for n in args.sizes:
        a = np.random.default_rng(0).standard_normal((n, n))
        a = (a + a.T) / 2
        x = darray.asarray(a, mesh=mesh, spec=("x",))
        for name in args.funcs:
            new, old = getattr(la, name), gathered(name)
            t_np = timed(NUMPY[name], a, args.repeats)
            t_old = float("nan") if args.no_gather else timed(old, x, args.repeats)
            t_new = timed(new, x, args.repeats)
            b_old, g_old = memory(old, x)
            b_new, g_new = memory(new, x)
            print(f"{name:9} {n:5d} {t_np * 1e3:9.1f} {t_old * 1e3:10.1f} {t_new * 1e3:10.1f} "
                  f"{t_new / t_np:7.2f} {t_new / t_old:8.2f} {b_old:8.2f} {b_new:8.2f} "
                  f"{g_old:6d} {g_new:6d}", flush=True)


if __name__ == "__main__":
    main()
