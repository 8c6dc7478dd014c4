"""Distributed matmul: darray's gather-free plans vs XLA's old path vs one device (issue 50).

Runs on 8 virtual CPU devices (set before jax starts). For each case, in the same process and
interleaved round-robin:

* ``darray``: ``darray.matmul`` (linalg/contraction.py: SUMMA panels, rings, psum);
* ``old``: the old path, ``jnp.matmul`` on the logical arrays with the same output layout,
  partitioned by XLA (``apply_logical``, as darray.matmul ran before);
* ``jnp``: ``jnp.matmul`` of the whole arrays on one device (jitted);
* ``numpy``: ``np.matmul`` on the host.

Beside the times it prints each compiled program's temporaries in blocks (XLA's
memory_analysis, a block = the larger of a device's share of the arguments and of the outputs)
and its all-gather count. ``old/darray`` > 1 means darray is faster; the rule is
``darray/old <= 1.5`` on arrays that fit and ``darray/jnp <= 2`` on small ones.

Usage::

    python benchmarks/bench_matmul.py             # 2048^2 SUMMA, 4096x1024 rings, 64^2
    python benchmarks/bench_matmul.py --small     # smoke run
    python benchmarks/bench_matmul.py --only ring+psum summa   # some cases
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
from _bench_common import default_json_path, make_row, time_interleaved, write_table  # noqa: E402

import darray  # noqa: E402
from darray._src.base import compat  # noqa: E402
from darray._src.engine.apply import apply_logical  # noqa: E402
from darray._src.linalg import contraction  # noqa: E402


def old_matmul(x1, x2, layout):
    """darray.matmul before the gather-free plans: XLA partitions jnp.matmul of the logical
    arrays, output pinned to the same layout."""
    return apply_logical(jnp.matmul, [x1, x2], layout)


# name: (mesh shape, shape and spec of x1, of x2, transpose x1 first (X.T @ X))
CASES = {
    "summa 2048^2 2x4": ((2, 4), (2048, 2048), ("x", "y"), (2048, 2048), ("x", "y")),
    "summa 2047^2 4x2": ((4, 2), (2047, 2047), ("x", "y"), (2047, 2047), ("x", "y")),
    "rows@rows 4096x1024 8": ((8,), (4096, 1024), ("x",), (1024, 1024), ("x",)),
    "gram 4096x1024 8": ((8,), (1024, 4096), (None, "x"), (4096, 1024), ("x",)),
    # k over y in both, b's columns over x (a's rows' axis): a ring over x, then a psum
    "ring+psum 2047^2 2x4": ((2, 4), (2047, 2047), ("x", "y"), (2047, 2047), ("y", "x")),
    "batched ring 16x256^2 2x4": ((2, 4), (16, 256, 256), ("x", "y"),
                                  (16, 256, 256), ("x", None, "y")),
    "small 64^2 2x4": ((2, 4), (64, 64), ("x", "y"), (64, 64), ("x", "y")),
    "small 64^2 rows 8": ((8,), (64, 64), ("x",), (64, 64), ("x",)),
}
SMALL = ("summa 2047^2 4x2", "rows@rows 4096x1024 8", "small 64^2 2x4")


def blocks_and_gathers(fn, x1, x2):
    compiled = jax.jit(fn).lower(x1, x2).compile()
    m = compiled.memory_analysis()
    text = compiled.as_text()
    gathers = text.count("all-gather-start") or text.count("all-gather(")
    return m.temp_size_in_bytes / max(m.argument_size_in_bytes, m.output_size_in_bytes), gathers


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="three cases, 2 repeats")
    parser.add_argument("--only", nargs="*", default=[], help="case name substrings")
    parser.add_argument("--json", default=str(default_json_path("bench_matmul")))
    args = parser.parse_args(argv)
    names = SMALL if args.small else tuple(CASES)
    names = tuple(n for n in names if not args.only or any(o in n for o in args.only))
    repeats = 2 if args.small else args.repeats
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'case':28} {'plan':7} {'darray':>9} {'old':>9} {'jnp':>9} {'numpy':>9}  "
          f"{'old/darray':>10} {'darray/jnp':>10}  blocks new/old  gathers new/old   (ms)")
    for name in names:
        mesh_shape, s1, p1, s2, p2 = CASES[name]
        mesh = compat.make_auto_mesh(mesh_shape, ("x", "y")[:len(mesh_shape)])
        a = rng.standard_normal(s1).astype(np.float32)
        b = rng.standard_normal(s2).astype(np.float32)
        x1 = darray.asarray(a, mesh=mesh, spec=p1)
        x2 = darray.asarray(b, mesh=mesh, spec=p2)
        plan = contraction.plan_contraction(x1, x2, *contraction.matmul_terms(x1.ndim, x2.ndim))
        layout = darray.matmul(x1, x2).layout
        ja, jb = jnp.asarray(a), jnp.asarray(b)
        single = jax.jit(jnp.matmul)
        timed = time_interleaved([
            ("darray", lambda _: darray.matmul(x1, x2), None),        # noqa: B023
            ("old", lambda _: old_matmul(x1, x2, layout), None),      # noqa: B023
            ("jnp", lambda _: single(ja, jb), None),                  # noqa: B023
            ("numpy", lambda _: np.matmul(a, b), None),               # noqa: B023
        ], repeats, desc=name)
        t = {k: v[0] for k, v in timed.items()}
        new_mem, new_g = blocks_and_gathers(darray.matmul, x1, x2)
        old_mem, old_g = blocks_and_gathers(lambda u, v: old_matmul(u, v, layout), x1, x2)  # noqa: B023
        kind = plan.kind if plan is not None else "old"
        print(f"{name:28} {kind:7} {t['darray'] * 1e3:9.2f} {t['old'] * 1e3:9.2f} "
              f"{t['jnp'] * 1e3:9.2f} {t['numpy'] * 1e3:9.2f}  {t['old'] / t['darray']:10.2f} "
              f"{t['darray'] / t['jnp']:10.2f}  {new_mem:5.2f} / {old_mem:5.2f}  "
              f"{new_g:5d} / {old_g:d}", flush=True)
        mesh_name = "x".join(map(str, mesh_shape))
        for program in ("darray", "old", "jnp", "numpy"):
            rows.append(make_row(program, name, mesh_name if program in ("darray", "old")
                                 else "1", t[program], t[program] / t["old"]))
    write_table(rows, args.json, "bench_matmul", "the old path (XLA's partitioner)",
                "distributed matmul, float32, 8 CPU devices")


if __name__ == "__main__":
    main()
