"""sort / argsort along a split axis and searchsorted against a split x1: the distributed
network (engine/distributed_sort.py) vs the old path (XLA gathers the axis: apply_logical;
searchsorted replicates x1), side by side in one run, plus jax.numpy on one device.

Runs on 8 virtual CPU devices (set before jax starts), float32 1-D arrays split over 8, of
1000 (small: below the size threshold darray keeps the old path, so "new" is forced here to
show why), 2^20 and 2^22 elements. Median wall time of compiled programs, interleaved
(`_bench_common.time_interleaved`). The ratios: new / old (the rule: <= 1.5) and darray's
default (what `darray.sort` picks) / jax.numpy on one device (small arrays: <= 2).

Usage::

    python benchmarks/bench_sort.py             # 1000 and 2^20
    python benchmarks/bench_sort.py --large     # and 2^22
    python benchmarks/bench_sort.py --small     # smoke run: 1000 and 2^16
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
from darray._src.api import searching  # noqa: E402
from darray._src.engine import distributed_sort  # noqa: E402


def _traced(fn, x, threshold):
    """jit(fn) traced once with the network's size threshold at `threshold` (huge: the old
    path; 1: the network; None: darray's default)."""
    saved = distributed_sort.MIN_BLOCK_ELEMENTS, distributed_sort.WINDOW_MIN_ELEMENTS
    if threshold is not None:
        distributed_sort.MIN_BLOCK_ELEMENTS = distributed_sort.WINDOW_MIN_ELEMENTS = threshold
    try:
        f = jax.jit(lambda *a: fn(*a))  # a new function: jit must not reuse another trace
        jax.block_until_ready(f(*x))
    finally:
        distributed_sort.MIN_BLOCK_ELEMENTS, distributed_sort.WINDOW_MIN_ELEMENTS = saved
    return f


def _old_searchsorted(x1, x2):
    """The replicated-x1 path, which darray keeps for small or unsplit x1 and a sorter."""
    fn, out = searching._searchsorted_fn(x1.layout, x2.layout, None, "left")
    return darray.DistArray._new(fn(x1.data, x2.data), out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--large", action="store_true", help="add 2^22 (minutes on a busy CPU)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    sizes = [1000, 2 ** 16] if args.small else [1000, 2 ** 20] + [2 ** 22] * args.large
    mesh = jax.make_mesh((8,), ("x",))
    print(f"{'function':>13} {'n':>9} {'old ms':>9} {'new ms':>9} {'new/old':>8} "
          f"{'default ms':>10} {'default/jnp1':>12}", flush=True)
    for n in sizes:
        rng = np.random.default_rng(0)
        h = rng.random(n).astype(np.float32)
        x = darray.asarray(h, device=mesh, spec=("x",))
        s = darray.sort(x)
        q = darray.asarray(h[:2 ** 14], device=mesh)  # replicated x2: the psum path
        single = jax.device_put(h, jax.devices()[0])
        single_q = jax.device_put(h[:2 ** 14], jax.devices()[0])
        single_sorted = jnp.sort(single)
        progs = []
        for name, fn, a, j in [
                ("sort", lambda a: darray.sort(a), (x,), lambda a: jnp.sort(a)),
                ("argsort", lambda a: darray.argsort(a), (x,), lambda a: jnp.argsort(a)),
                ("search window", lambda a, b: darray.searchsorted(a, b), (s, x),
                 lambda a, b: jnp.searchsorted(a, b)),
                ("search psum", lambda a, b: darray.searchsorted(a, b), (s, q),
                 lambda a, b: jnp.searchsorted(a, b))]:
            search = name.startswith("search")
            old = (_traced(lambda a, b: _old_searchsorted(a, b), a, None)
                   if search else _traced(fn, a, 1 << 62))
            new = _traced(fn, a, 1)
            default = _traced(fn, a, None)
            ja = ((single_sorted, single if name == "search window" else single_q) if search
                  else (single,))
            one = jax.jit(j)
            progs += [(f"{name} old", lambda t, f=old: f(*t), a),
                      (f"{name} new", lambda t, f=new: f(*t), a),
                      (f"{name} default", lambda t, f=default: f(*t), a),
                      (f"{name} jnp-1dev", lambda t, f=one: f(*t), ja)]
        times = time_interleaved(progs, args.repeats, desc=f"n={n}")
        for name in ("sort", "argsort", "search window", "search psum"):
            old, new, default, one = (times[f"{name} {k}"][0]
                                      for k in ("old", "new", "default", "jnp-1dev"))
            print(f"{name:>13} {n:>9} {old * 1e3:9.2f} {new * 1e3:9.2f} {new / old:8.2f} "
                  f"{default * 1e3:10.2f} {default / one:12.2f}", flush=True)


if __name__ == "__main__":
    main()
