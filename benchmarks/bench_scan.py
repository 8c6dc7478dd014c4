"""The block-wise scans, repeat, tile and isin (issue 49) beside the paths they replaced, in one
run: each row times the new program and the old one on the same float32 array over 8 devices,
interleaved, and prints new / old. Small arrays (darray's one-device placement) are timed
beside single-device jax.numpy instead.

Old paths, rebuilt here from the functions darray keeps: the scan with XLA concatenating the
block totals (and all-gathering the axis with include_initial), repeat and tile on the logical
array (XLA's partitioner gathers the axis), isin with x2 replicated and compared all-pairs.

    python3 benchmarks/bench_scan.py [--sizes 20,22] [--repeats 5] [--json PATH]

Rule (helper brief): new <= 1.5x old on arrays that fit; small arrays within 2x jax.numpy.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax
import jax.numpy as jnp
import numpy as np
from _bench_common import default_json_path, make_row, time_interleaved, write_table

import darray
from darray._src.api import manipulation, set_functions
from darray._src.engine import compaction
from darray._src.engine.apply import apply_logical, run_physical
from darray._src.layout.layout import Layout, make_out_layout


# -- the old paths ------------------------------------------------------------------------------
def _old_scan_kernel(data, layout, axis, dtype, op):
    """The scan darray ran before engine/scanning.py: blocks scanned, totals concatenated and
    scanned by XLA (it all-gathers them when the axis has more than 2 blocks)."""
    cum, identity = (jnp.cumsum, 0) if op == "sum" else (jnp.cumprod, 1)
    data = data.astype(dtype)
    p, c = layout.parts(axis), layout.chunk(axis)
    shape = data.shape
    blocks = data.reshape(shape[:axis] + (p, c) + shape[axis + 1:])
    local = cum(blocks, axis=axis + 1)
    totals = jax.lax.slice_in_dim(local, c - 1, c, axis=axis + 1)
    running = cum(totals, axis=axis)
    before = jnp.concatenate([jnp.full_like(jax.lax.slice_in_dim(running, 0, 1, axis=axis),
                                            identity),
                              jax.lax.slice_in_dim(running, 0, p - 1, axis=axis)], axis=axis)
    out = local + before if op == "sum" else local * before
    return out.reshape(shape)


def _old_with_initial(logical, axis, dtype):
    body = jnp.cumsum(logical.astype(dtype), axis=axis)
    first = jnp.zeros(body.shape[:axis] + (1,) + body.shape[axis + 1:], dtype)
    return jnp.concatenate([first, body], axis=axis)


def old_cumsum(x, include_initial=False):
    if include_initial:
        out = Layout((x.shape[0] + 1,), x.mesh, x.layout.split, ((0, 0),))
        return apply_logical(_old_with_initial, [x], out, static=(0, x.dtype))
    return run_physical(_old_scan_kernel, [x], x.layout, static=(x.layout, 0, x.dtype, "sum"))


def old_repeat(x, count):
    out = make_out_layout(x.mesh, (x.size * count,), x.layout.split)
    return apply_logical(manipulation._repeat, [x], out, static=(count, 0, x.size * count))


def old_tile(x, count):
    out = make_out_layout(x.mesh, (x.size * count,), x.layout.split)
    return apply_logical(manipulation._tile, [x], out, static=((count,),))


def old_isin(x1, x2):
    return compaction.blockwise_with_whole(set_functions._isin, x1, [x2], static=(False,))


# -- the rows -----------------------------------------------------------------------------------
def programs_for(x, tests, include_initial=False):
    """(program, new fn, old fn, argument) per row."""
    j = jax.jit
    return [
        ("cumulative_sum", j(lambda a: darray.cumulative_sum(a)), j(old_cumsum), x),
        # (the old include_initial path, an all-gather of the whole axis, is left out: on
        # 8 virtual devices of a loaded 2-core machine its rendezvous timed out (XLA aborts
        # the process after 40 s); --old-include-initial puts it back)
        *([("cumulative_sum include_initial",
            j(lambda a: darray.cumulative_sum(a, include_initial=True)),
            j(lambda a: old_cumsum(a, True)), x)] if include_initial else []),
        ("repeat x2", j(lambda a: darray.repeat(a, 2)), j(lambda a: old_repeat(a, 2)), x),
        ("tile x2", j(lambda a: darray.tile(a, 2)), j(lambda a: old_tile(a, 2)), x),
        (f"isin ({tests.size} test values)", j(lambda ab: darray.isin(*ab)),
         j(lambda ab: old_isin(*ab)), (x, tests)),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,22", help="log2 of the array sizes (float32, 1-D)")
    ap.add_argument("--small", type=int, default=1000, help="a small array's size")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=str(default_json_path("bench_scan")))
    ap.add_argument("--old-include-initial", action="store_true",
                    help="also time the old include_initial scan (it all-gathers the axis)")
    args = ap.parse_args(argv)
    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'program':34s} {'size':>9s} {'new ms':>9s} {'old ms':>9s} {'new/old':>8s}")
    for log2 in (int(s) for s in args.sizes.split(",")):
        n = 2 ** log2 + 3  # uneven over 8 devices
        x = darray.asarray(rng.standard_normal(n).astype(np.float32), mesh=mesh, spec=("x",))
        tests = darray.asarray(rng.integers(-8, 8, 64).astype(np.float32), mesh=mesh,
                               spec=("x",))
        for name, new, old, arg in programs_for(x, tests, args.old_include_initial):
            times = time_interleaved([("new", new, arg), ("old", old, arg)], args.repeats,
                                     desc=name)
            t_new, t_old = times["new"][0], times["old"][0]
            print(f"{name:34s} {n:9d} {t_new * 1e3:9.3f} {t_old * 1e3:9.3f} "
                  f"{t_new / t_old:8.2f}", flush=True)
            rows.append(make_row(name, str(n), "8", t_new, t_new / t_old,
                                 old_ms=t_old * 1e3))
    # small arrays: darray's one-device placement beside single-device jax.numpy
    print(f"\n{'small array (one device)':34s} {'size':>9s} {'darray':>9s} {'jnp':>9s} "
          f"{'ratio':>8s}")
    host = rng.standard_normal(args.small).astype(np.float32)
    small = darray.asarray(host)
    plain = jnp.asarray(host)
    small_tests, plain_tests = darray.asarray(host[:16]), jnp.asarray(host[:16])
    pairs = [
        ("cumulative_sum", lambda: darray.cumulative_sum(small), lambda: jnp.cumsum(plain)),
        ("cumulative_sum include_initial",
         lambda: darray.cumulative_sum(small, include_initial=True),
         lambda: jnp.concatenate([jnp.zeros(1, plain.dtype), jnp.cumsum(plain)])),
        ("repeat x2", lambda: darray.repeat(small, 2), lambda: jnp.repeat(plain, 2)),
        ("tile x2", lambda: darray.tile(small, 2), lambda: jnp.tile(plain, 2)),
        ("isin (16 test values)", lambda: darray.isin(small, small_tests),
         lambda: jnp.isin(plain, plain_tests)),
    ]
    for name, ours, theirs in pairs:
        times = time_interleaved([("darray", lambda _, f=ours: f(), None),
                                  ("jnp", lambda _, f=theirs: f(), None)], args.repeats * 4,
                                 desc=name)
        t_ours, t_jnp = times["darray"][0], times["jnp"][0]
        print(f"{name:34s} {args.small:9d} {t_ours * 1e3:9.3f} {t_jnp * 1e3:9.3f} "
              f"{t_ours / t_jnp:8.2f}", flush=True)
        rows.append(make_row(name + " (eager, small)", str(args.small), "1", t_ours,
                             t_ours / t_jnp, jnp_ms=t_jnp * 1e3))
    write_table(rows, args.json, "bench_scan", "the old path (8 devices) or jax.numpy "
                "(small arrays, one device)", "block-wise scans, repeat, tile, isin")


if __name__ == "__main__":
    main()
