"""x[mask] along a split row axis and unique_* of split integers: the new kernels
(engine/compaction_rows.py, engine/distinct.py) beside the ones they replace, in one run.

x[mask] is timed at the engine (compaction.compact, which x[mask] calls after its argument
checks) on both sides. Old x[mask]: compaction.compact's general kernel (count_true, then a
result-sized buffer per device summed by a reduce-scatter). Old unique_*: the replicated
sort (set_functions' run_replicated path). Eager calls, warm (each compiled before timing),
interleaved repeats, minimum per contender; ratio = new / old.

Run: PYTHONPATH=. python benchmarks/bench_split_selection.py [--repeats 5] [--big 1048576]
"""
import argparse
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import darray  # noqa: E402
from darray._src.api import set_functions  # noqa: E402
from darray._src.distarray.array import DistArray  # noqa: E402
from darray._src.engine import compaction, distinct  # noqa: E402
from darray._src.layout.layout import default_layout  # noqa: E402


def _ready(out):
    for a in out if isinstance(out, tuple) else (out,):
        a.data.block_until_ready()


def old_select(x, mask):
    count = compaction.count_true(mask)
    fn, lays = compaction._compact_fn(mask.layout, (x.layout,), count, False)
    return DistArray._new(fn(mask.data, x.data)[0], lays[0])


def old_unique_counts(x):
    n = set_functions._distinct(x)
    flat = default_layout((n,), x.layout)
    return compaction.run_replicated(set_functions._unique_counts, [x], (flat, flat),
                                     static=(n,))


def old_unique_inverse(x):
    n = set_functions._distinct(x)
    return compaction.run_replicated(set_functions._unique_inverse, [x],
                                     (default_layout((n,), x.layout), x.layout.without_halo()),
                                     static=(n,))


def _cases(x, y):
    mask = y == 1
    return [
        ("x[y == 1]", lambda: compaction.compact(mask, [x], with_indices=False)[0],
         lambda: old_select(x, mask)),
        ("unique_counts(y)", lambda: tuple(darray.unique_counts(y)),
         lambda: old_unique_counts(y)),
        ("unique_inverse(y)", lambda: tuple(darray.unique_inverse(y)),
         lambda: old_unique_inverse(y)),
    ]


def timed(fn, repeats):
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _ready(fn())
        best.append(time.perf_counter() - t0)
    return min(best)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--big", type=int, default=1 << 20)
    args = parser.parse_args()
    mesh = jax.make_mesh((8,), ("x",))
    rng = np.random.default_rng(0)
    distinct.MIN_CELLS = 0  # every size on the new path; the old path is called directly
    rows = []
    for n, cols in ((1001, 5), (100003, 32), (args.big, 32)):
        host = rng.standard_normal((n, cols)).astype(np.float32)
        labels = rng.integers(0, 3, n).astype(np.int32)
        x = darray.asarray(host, mesh=mesh, spec=("x", None))
        y = darray.asarray(labels, mesh=mesh, spec=("x",))
        cases = _cases(x, y)
        for name, new, old in cases:
            np.testing.assert_array_equal(np.asarray(new()[0] if isinstance(new(), tuple)
                                                     else new()),
                                          np.asarray(old()[0] if isinstance(old(), tuple)
                                                     else old()))
            t_new, t_old = [], []
            for _ in range(args.repeats):  # interleaved
                t_new.append(timed(new, 1))
                t_old.append(timed(old, 1))
            rows.append((name, f"{n}x{cols}", min(t_new), min(t_old)))
    print(f"8 CPU devices, float32 rows split over x, min of {args.repeats}; loadavg "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'case':20s} {'size':>12s} {'new ms':>9s} {'old ms':>9s} {'new/old':>8s}")
    for name, size, t_new, t_old in rows:
        flag = "  <- over 1.5" if t_new > 1.5 * t_old else ""
        print(f"{name:20s} {size:>12s} {1e3 * t_new:9.2f} {1e3 * t_old:9.2f} "
              f"{t_new / t_old:8.2f}{flag}")


if __name__ == "__main__":
    main()
