"""Integer-array indexing along a split axis: the ring (engine/exchange_gather.py) against the
old path (XLA's partitioner, which all-gathers the operand), side by side in one run.

Runs on 8 virtual CPU devices (set before jax starts), float32, x64 off (JAX's default). Each
row times one compiled program twice, interleaved (`_bench_common.time_interleaved`): with the
ring, and with the old path (``exchange_gather.MIN_RING_CELLS`` raised above the array while
the program is traced). The ratio is ring / old (the rule: <= 1.5). The small rows compare a
small array (darray keeps it on one device) and a small split array (below the ring's
threshold, so the old path) with ``jnp.take`` on one device (the rule: <= 2).

Usage::

    python benchmarks/bench_take.py             # 2^20 and 2^22 elements, mesh 8
    python benchmarks/bench_take.py --small     # smoke run (2^16, a few seconds)
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import time_interleaved  # noqa: E402

import darray  # noqa: E402
from darray._src.engine import exchange_gather  # noqa: E402


def traced_with(fn, ring: bool):
    """jit of fn whose trace takes the ring (or, with ring=False, the old path)."""
    def run(args):
        saved = exchange_gather.MIN_RING_CELLS
        exchange_gather.MIN_RING_CELLS = 0 if ring else 1 << 62
        try:
            return fn(*args)
        finally:
            exchange_gather.MIN_RING_CELLS = saved
    return jax.jit(run)


def gathers(fn, args) -> int:
    return fn.lower(args).compile().as_text().count("all-gather")


def cases(n: int, mesh):
    rng = np.random.default_rng(0)
    x1 = darray.asarray(rng.standard_normal(n).astype(np.float32), mesh=mesh, spec=("x",))
    i_all = darray.asarray(rng.integers(-n, n, n).astype(np.int32), mesh=mesh, spec=("x",))
    i_few = darray.asarray(rng.integers(0, n, n // 16).astype(np.int32), mesh=mesh,
                           spec=("x",))
    rows = n // 64
    x2 = darray.asarray(rng.standard_normal((rows, 64)).astype(np.float32), mesh=mesh,
                        spec=("x", None))
    i2 = darray.asarray(rng.integers(0, rows, (rows // 8, 8)).astype(np.int32), mesh=mesh,
                        spec=("x", None))
    xa = darray.asarray(rng.standard_normal((64, n // 64)).astype(np.float32), mesh=mesh,
                        spec=(None, "x"))
    ia = darray.asarray(rng.integers(0, n // 64, (64, n // 64)).astype(np.int32), mesh=mesh,
                        spec=(None, "x"))
    upd = darray.asarray(rng.standard_normal(n // 16).astype(np.float32), mesh=mesh,
                         spec=("x",))
    return [
        (f"take 1-D, {n} indices", lambda x, i: darray.take(x, i, axis=0), (x1, i_all)),
        (f"take 1-D, {n // 16} indices", lambda x, i: darray.take(x, i, axis=0), (x1, i_few)),
        ("x[i] rows of 64, 2-D i", lambda x, i: x[i], (x2, i2)),
        ("take_along_axis 64 rows", lambda x, i: darray.take_along_axis(x, i, axis=1),
         (xa, ia)),
        (f"x.at[i].add, {n // 16} updates", lambda x, i, u: x.at[i].add(u), (x1, i_few, upd)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="one 2^16 size (smoke run)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    mesh = jax.make_mesh((8,), ("x",))
    sizes = (2**16,) if args.small else (2**20, 2**22)
    print(f"{'case':34s} {'n':>8s} {'ring ms':>9s} {'old ms':>9s} {'ring/old':>8s} "
          f"{'gathers ring/old':>16s}")
    for n in sizes:
        for name, fn, operands in cases(n, mesh):
            ring, old = traced_with(fn, True), traced_with(fn, False)
            t = time_interleaved([("ring", ring, operands), ("old", old, operands)],
                                 args.repeats, desc=name)
            print(f"{name:34s} {n:8d} {t['ring'][0] * 1e3:9.2f} {t['old'][0] * 1e3:9.2f} "
                  f"{t['ring'][0] / t['old'][0]:8.2f} "
                  f"{gathers(ring, operands):>8d}/{gathers(old, operands):<7d}", flush=True)
    # small arrays: darray's one-device array and a small split one vs jnp on one device
    rng = np.random.default_rng(1)
    host = rng.standard_normal(1000).astype(np.float32)
    idx = rng.integers(0, 1000, 100).astype(np.int32)
    small = darray.asarray(host)
    split = darray.asarray(host, mesh=mesh, spec=("x",))
    j = jax.jit(lambda a: jnp.take(a[0], a[1], axis=0))
    d = jax.jit(lambda a: darray.take(a[0], a[1], axis=0))
    t = time_interleaved([("jnp", j, (jnp.asarray(host), jnp.asarray(idx))),
                          ("small", d, (small, darray.asarray(idx))),
                          ("split", d, (split, darray.asarray(idx, mesh=mesh, spec=("x",))))],
                         args.repeats * 4, desc="small")
    for name in ("small", "split"):
        print(f"take of 100 from 1000 ({name:5s} darray) {t[name][0] * 1e3:9.3f} ms, "
              f"jnp on one device {t['jnp'][0] * 1e3:.3f} ms, ratio "
              f"{t[name][0] / t['jnp'][0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
