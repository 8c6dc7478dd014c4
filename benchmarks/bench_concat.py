"""concat along a split axis (engine/joining.py) beside the kernel it replaced, in one run:
each row times the new program and the old one on the same float32 operands, interleaved,
and prints new / old.

The old kernel, rebuilt here: each device joined its blocks of all inputs into one copy framed
by zeros, then cut every round's window from that copy, all rounds unrolled (XLA held every
window at once). The new one reads each window straight from the blocks and runs the rounds in
a loop, one window in flight.

    python3 benchmarks/bench_concat.py [--repeats 5] [--json PATH]

Rule (helper brief): new <= 1.5x old on arrays that fit.
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
from darray._src.base import compat
from darray._src.engine import joining
from darray._src.layout.layout import make_out_layout
from darray._src.placement import physical


def _old_join_blocks(blocks, sizes, out, axis, dtype):
    """The join along a split axis before: a framed copy of the blocks, rounds unrolled."""
    split = out.split[axis]
    me = jax.lax.axis_index(split[0] if len(split) == 1 else split)
    rounds = joining.plan_rounds(tuple(sizes), out.parts(axis))
    frame = joining.source_frame(rounds, sum(b.shape[axis] for b in blocks))
    if frame:
        zshape = list(blocks[0].shape)
        zshape[axis] = frame
        blocks = [jnp.zeros(zshape, dtype), *blocks, jnp.zeros(zshape, dtype)]
    source = jnp.concatenate(blocks, axis=axis)
    result = jnp.zeros(out.block_shape, dtype)

    def at_me(table):
        return jnp.asarray(np.asarray(table, np.int32))[me]
    for r in rounds:
        buf = jax.lax.dynamic_slice_in_dim(source, at_me(r.send_start) + frame, r.length, axis)
        if any(b != q for b, q in r.pairs):
            buf = compat.ppermute_blocks(buf, split, r.pairs, out.mesh)
        start = at_me(r.place)
        w = jnp.arange(r.length)
        shape = [1] * out.ndim
        shape[axis] = r.length
        keep = ((w >= at_me(r.keep_lo)) & (w < at_me(r.keep_hi))).reshape(shape)
        here = jax.lax.dynamic_slice_in_dim(result, start, r.length, axis)
        result = jax.lax.dynamic_update_slice_in_dim(result, jnp.where(keep, buf, here), start,
                                                     axis)
    return result


def old_concat(arrays, axis):
    """The old program on operands of one split (the new path's only change there)."""
    lays = [a.layout for a in arrays]
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = make_out_layout(arrays[0].mesh, shape, lays[0].split)

    def local(*blocks):
        blocks = [physical.strip_ghosts(b, lay) for b, lay in zip(blocks, lays)]
        return _old_join_blocks(blocks, [lay.shape[axis] for lay in lays], out, axis,
                                blocks[0].dtype)
    fn = compat.shard_map(local, mesh=out.mesh, in_specs=tuple(lay.spec for lay in lays),
                          out_specs=out.spec)
    return jax.jit(fn)


CASES = [  # name, mesh shape, operand shapes, split, join axis
    ("1-D, 3 operands", (8,), [(2**22 + 3,), (2**20 + 5,), (2**21 + 1,)], ("x",), 0),
    ("2-D axis 0", (8,), [(4001, 1003), (1203, 1003)], ("x", None), 0),
    ("2x4 axis 1", (2, 4), [(201, 1067, 45), (201, 230, 45)], ("x", "y", None), 1),
    ("4x2 two mesh axes, 3 operands", (4, 2), [(4001, 403), (377, 403), (1300, 403)],
     (("x", "y"), None), 0),
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=str(default_json_path("bench_concat")))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'case':34s} {'cells':>10s} {'new ms':>9s} {'old ms':>9s} {'new/old':>8s}")
    for name, mesh_shape, shapes, split, axis in CASES:
        names = ("x", "y")[:len(mesh_shape)]
        mesh = jax.make_mesh(mesh_shape, names,
                             axis_types=(jax.sharding.AxisType.Auto,) * len(mesh_shape))
        xs = [darray.asarray(rng.standard_normal(s).astype(np.float32), mesh=mesh, spec=split)
              for s in shapes]
        new_fn = jax.jit(lambda arrays, axis=axis: darray.concat(arrays, axis=axis).data)
        old_fn = old_concat(xs, axis)
        datas = [x.data for x in xs]
        want = np.concatenate([np.asarray(x) for x in xs], axis=axis)
        got = darray.concat(xs, axis=axis)
        assert np.array_equal(np.asarray(got), want), name
        old_out = old_fn(*datas)
        assert np.array_equal(np.asarray(physical.physical_to_logical(old_out, got.layout)),
                              want), name
        times = time_interleaved([("new", new_fn, xs),
                                  ("old", lambda d, f=old_fn: f(*d), datas)], args.repeats,
                                 desc=name)
        t_new, t_old = times["new"][0], times["old"][0]
        cells = sum(int(np.prod(s)) for s in shapes)
        print(f"{name:34s} {cells:10d} {t_new * 1e3:9.3f} {t_old * 1e3:9.3f} "
              f"{t_new / t_old:8.2f}", flush=True)
        rows.append(make_row(name, str(cells), "x".join(map(str, mesh_shape)), t_new,
                             t_new / t_old, old_ms=t_old * 1e3))
    write_table(rows, args.json, "bench_concat", "the old kernel", "concat along a split axis")


if __name__ == "__main__":
    main()
