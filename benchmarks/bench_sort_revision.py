"""sort / argsort along a split axis: this tree's network against another revision's
(engine/distributed_sort.py of that revision, loaded beside this one), side by side in one
run, interleaved (`_bench_common.time_interleaved`), float32 and int32 1-D arrays split over
8 virtual CPU devices. Prints the median times and this / that (the rule: <= 1.5).

Usage::

    git show main:darray/_src/engine/distributed_sort.py > /tmp/old_sort.py
    python benchmarks/bench_sort_revision.py /tmp/old_sort.py [--n 1048576]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import time_interleaved  # noqa: E402

import darray  # noqa: E402
from darray._src.engine import distributed_sort  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old", help="path of the other revision's distributed_sort.py")
    ap.add_argument("--n", type=int, nargs="+", default=[2 ** 18, 2 ** 20])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("old_distributed_sort", args.old)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    mesh = jax.make_mesh((8,), ("x",))
    print(f"{'case':>28} {'that ms':>9} {'this ms':>9} {'this/that':>9}", flush=True)
    for n in args.n:
        rng = np.random.default_rng(0)
        progs, names = [], []
        for dtype in (np.float32, np.int32):
            h = (rng.random(n) * 1000).astype(dtype)  # int32: many ties
            x = darray.asarray(h, device=mesh, spec=("x",))
            for indices in (False, True):
                for desc in (False, True):
                    name = (f"{'argsort' if indices else 'sort'} {np.dtype(dtype).name} "
                            f"{'desc' if desc else 'asc'} {n}")
                    names.append(name)
                    for tag, mod in (("that", old), ("this", distributed_sort)):
                        fn = jax.jit(lambda d, mod=mod, lay=x.layout, desc=desc, ix=indices:
                                     mod.sort_split_axis(d, lay, 0, desc, ix)[0])
                        progs.append((f"{name} {tag}", fn, x.data))
        times = time_interleaved(progs, args.repeats, desc=f"n={n}")
        for name in names:
            that, this = times[f"{name} that"][0], times[f"{name} this"][0]
            print(f"{name:>28} {that * 1e3:9.2f} {this * 1e3:9.2f} {this / that:9.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
