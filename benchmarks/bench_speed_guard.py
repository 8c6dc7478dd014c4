"""Issue 49's speed guard: every function rewritten to avoid gathers, beside XLA's old path and
single-device jax.numpy, in one interleaved run.

Rows ("split" arrays, placed explicitly on the 8 or the 2x4 mesh, uneven shapes):

* ``new``: darray's function as users call it, traced in one ``jax.jit`` (so both sides pay
  no Python dispatch); it takes whatever path darray picks at that size (a distributed
  kernel, or XLA's path below the kernel's size threshold).
* ``old``: the path these functions had before issue 49 - the same numpy-semantics function
  on the *logical* arrays, partitioned by XLA (``engine.apply.apply_logical``, as darray's
  generic path still does), with the output placed in the layout of the new result. This is
  an emulation of the old code, not a checkout: the old code called apply_logical with these
  same jnp bodies, and one process cannot import two darray checkouts.

Columns: new / old (flagged ``SLOW`` when > 1.5, issue 49's done-when) and the planned
temporaries of both programs in blocks per device (XLA's memory_analysis).

Small rows (``--small``): arrays of 2^12 cells placed by darray's shipped default
(``small_array_cells``, so on one device) called eagerly, beside the eager jax.numpy call on
one device (flagged ``SLOW`` when > 2).

    python benchmarks/bench_speed_guard.py [--sizes 12 16 20] [--meshes 8 2x4]
        [--only sort take ...] [--small] [--repeats 5]

Keep each run under 3 minutes on a shared machine: pick sizes / functions per run.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import time_interleaved  # noqa: E402

import darray  # noqa: E402
from darray._src.api import taking  # noqa: E402
from darray._src.distarray.array import DistArray  # noqa: E402
from darray._src.engine.apply import apply_logical  # noqa: E402

# cells of a 1-D case and rows x cols of a 2-D case per size exponent: uneven on 8 and 2x4
SHAPES_1D = {12: 4099, 16: 65557, 20: 1048583, 22: 4194319}
SHAPES_2D = {12: (61, 67), 16: (257, 259), 20: (1021, 1031), 22: (2039, 2053)}
SHAPES_3D = {12: (13, 17, 19), 16: (37, 43, 41), 20: (101, 103, 99), 22: (163, 157, 167)}


# -- the old path's bodies (module level: apply_logical caches one program per function) -----
def _sort0(a):
    return jnp.sort(a, axis=0)


def _argsort0(a):
    return jnp.argsort(a, axis=0, stable=True)


def _searchsorted(a, v):
    return jnp.searchsorted(a, v)


def _take0(a, i):
    return taking._take(a, i, 0)  # the old path's own body (an exact read, -0.0 kept)


def _take_along0(a, i):
    return jnp.take_along_axis(a, i, axis=0, mode="clip")


def _set_at(a, i, v):
    return a.at[i].set(v)


def _cumsum0(a):
    return jnp.cumsum(a, axis=0)


def _tile3(a):
    return jnp.tile(a, (3,) + (1,) * (a.ndim - 1))


def _repeat2(a):
    return jnp.repeat(a, 2, axis=0)


def _isin(a, b):
    return jnp.isin(a, b)


def _argmax(a):
    return jnp.argmax(a)


def _argmax0(a):
    return jnp.argmax(a, axis=0)


def _hist(a):
    return jnp.histogram(a, bins=64, range=(-4.0, 4.0))[0]


def _interp(q, xp, fp):
    return jnp.interp(q, xp, fp)


def _matmul(a, b):
    return jnp.matmul(a, b)


def _tensordot0(a, b):
    return jnp.tensordot(a, b, axes=([0], [0]))


def _concat0(a, b):
    return jnp.concatenate([a, b], axis=0)


def _reshape_to(shape):
    return lambda a: jnp.reshape(a, shape)


_RESHAPES: dict = {}


def _reshape_body(shape):
    """One function object per target shape (apply_logical's cache key)."""
    return _RESHAPES.setdefault(shape, _reshape_to(shape))


# -- cases -----------------------------------------------------------------------------------
def _put(host, mesh, spec):
    return darray.asarray(host, mesh=mesh, spec=spec)


def cases(e: int, mesh_shape):
    """(name, new(*args), old body, args) for size 2^e on mesh_shape."""
    rng = np.random.default_rng(e)
    mesh = darray_mesh(mesh_shape)
    two_d = len(mesh_shape) == 2
    spec1 = (("x", "y"),) if two_d else ("x",)
    spec2 = ("x", "y") if two_d else ("x", None)
    n = SHAPES_1D[e]
    r, c = SHAPES_2D[e]
    f32 = np.float32
    x1 = _put(rng.standard_normal(n).astype(f32), mesh, spec1)
    x2 = _put(rng.standard_normal((r, c)).astype(f32), mesh, spec2)
    sorted1 = _put(np.sort(rng.standard_normal(n)).astype(f32), mesh, spec1)
    q1 = _put(rng.standard_normal(n).astype(f32), mesh, spec1)
    idx = _put(rng.integers(-n, n, n // 4).astype(np.int32), mesh, spec1)
    idx2 = _put(rng.integers(0, r, (r, c)).astype(np.int32), mesh, spec2)
    upd = _put(rng.standard_normal(n // 4).astype(f32), mesh, spec1)
    fidx = _put(rng.integers(0, n, n // 4).astype(np.int32), mesh, spec1)
    # distinct indices: .set with repeated ones leaves either value (JAX's rule)
    uidx = _put(rng.permutation(n)[:n // 4].astype(np.int32), mesh, spec1)
    small2 = _put(rng.standard_normal(max(n // 8, 16)).astype(f32), mesh, spec1)
    sq = int(round(np.sqrt(n))) | 1
    a_sq = _put(rng.standard_normal((sq, sq)).astype(f32), mesh, spec2)
    b_sq = _put(rng.standard_normal((sq, sq)).astype(f32), mesh, spec2)
    tall = _put(rng.standard_normal((r, c)).astype(f32), mesh, spec2)
    shape3 = SHAPES_3D[e]
    x3 = _put(rng.standard_normal(shape3).astype(f32), mesh,
              ("x", "y") if two_d else (None, "x"))
    yield "sort 1-D", lambda a: darray.sort(a), _sort0, (x1,)
    yield "sort 2-D axis 0", lambda a: darray.sort(a, axis=0), _sort0, (x2,)
    yield "argsort 1-D", lambda a: darray.argsort(a, stable=True), _argsort0, (x1,)
    yield "searchsorted", lambda a, v: darray.searchsorted(a, v), _searchsorted, (sorted1, q1)
    yield "take n/4", lambda a, i: darray.take(a, i, axis=0), _take0, (x1, idx)
    yield "x[idx] n/4", lambda a, i: a[i], _take0, (x1, fidx)
    yield ("take_along_axis 0", lambda a, i: darray.take_along_axis(a, i, axis=0),
           _take_along0, (x2, idx2))
    yield "at[idx].set n/4", lambda a, i, v: a.at[i].set(v), _set_at, (x1, uidx, upd)
    yield "cumulative_sum 0", lambda a: darray.cumulative_sum(a, axis=0), _cumsum0, (x2,)
    yield "tile 3", lambda a: darray.tile(a, (3, 1)), _tile3, (x2,)
    yield "repeat 2 axis 0", lambda a: darray.repeat(a, 2, axis=0), _repeat2, (x2,)
    if n * small2.shape[0] <= 1 << 34:
        yield "isin n/8", lambda a, b: darray.isin(a, b), _isin, (x1, small2)
    else:  # jax.numpy's isin compares all n x m pairs: the old path cannot run at this size
        print(f"isin n/8 2^{e}: old path skipped ({n} x {small2.shape[0]} comparisons; "
              f"it was killed for memory on 24 GB)")
    yield "argmax flat", lambda a: darray.argmax(a), _argmax, (x2,)
    yield "argmax axis 0", lambda a: darray.argmax(a, axis=0), _argmax0, (x2,)
    yield ("histogram 64", lambda a: darray.histogram(a, bins=64, range=(-4.0, 4.0))[0],
           _hist, (x1,))
    yield "interp", lambda q, xp, fp: darray.interp(q, xp, fp), _interp, (q1, sorted1, x1)
    yield ("reshape 3-D -> -1", lambda a: darray.reshape(a, (-1,)),
           _reshape_body((-1,)), (x3,))
    yield (f"reshape 3-D -> (-1, {shape3[2]})", lambda a: darray.reshape(a, (-1, shape3[2])),
           _reshape_body((-1, shape3[2])), (x3,))
    yield "matmul square", lambda a, b: darray.matmul(a, b), _matmul, (a_sq, b_sq)
    yield ("tensordot axis 0", lambda a, b: darray.tensordot(a, b, axes=([0], [0])),
           _tensordot0, (tall, tall))
    yield "concat axis 0", lambda a, b: darray.concat([a, b], axis=0), _concat0, (x2, x2)


_MESHES: dict = {}


def darray_mesh(mesh_shape):
    if mesh_shape not in _MESHES:
        names = ("x", "y")[:len(mesh_shape)]
        _MESHES[mesh_shape] = jax.make_mesh(mesh_shape, names)
    return _MESHES[mesh_shape]


def _blocks(fn, args) -> float:
    m = fn.lower(*args).compile().memory_analysis()
    return m.temp_size_in_bytes / max(m.argument_size_in_bytes, m.output_size_in_bytes, 1)


def _pair(new, old_body, args):
    """(new, old) as jitted functions of the args' pytrees."""
    out = new(*args)
    if not isinstance(out, DistArray):
        raise TypeError(f"expected a DistArray, got {type(out)}")
    layout = out.layout
    new_j = jax.jit(new)
    old_j = jax.jit(lambda *a: apply_logical(old_body, list(a), layout))
    want = np.asarray(out)
    got = np.asarray(old_j(*args))
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want)
    return new_j, old_j


def _star(fn):
    return lambda args: fn(*args)


def run_split(sizes, meshes, only, repeats, ratios):
    print(f"{'case':28s} {'size':>5s} {'mesh':>4s} {'old ms':>9s} {'new ms':>9s} "
          f"{'new/old':>7s} {'old blk':>7s} {'new blk':>7s}")
    for e in sizes:
        for mesh_shape in meshes:
            for name, new, old_body, args in cases(e, mesh_shape):
                if only and not any(o in name for o in only):
                    continue
                new_j, old_j = _pair(new, old_body, args)
                t = time_interleaved([("old", _star(old_j), args), ("new", _star(new_j), args)],
                                     repeats, desc=name)
                ratio = t["new"][0] / t["old"][0]
                mesh = "x".join(map(str, mesh_shape))
                ratios.append((name, e, mesh, ratio))
                flag = "  SLOW" if ratio > 1.5 else ""
                print(f"{name:28s} {'2^' + str(e):>5s} {mesh:>4s} {t['old'][0] * 1e3:9.2f} "
                      f"{t['new'][0] * 1e3:9.2f} {ratio:7.2f} {_blocks(old_j, args):7.2f} "
                      f"{_blocks(new_j, args):7.2f}{flag}", flush=True)


def small_cases():
    """(name, darray call, jnp call, darray args, jnp args) on 2^12-cell arrays."""
    rng = np.random.default_rng(7)
    f32 = np.float32
    h1 = rng.standard_normal(4099).astype(f32)
    h2 = rng.standard_normal((61, 67)).astype(f32)
    hs = np.sort(h1)
    hi = rng.integers(0, 4099, 1024).astype(np.int32)
    hsq = rng.standard_normal((64, 64)).astype(f32)
    d = darray.asarray
    j = jnp.asarray
    yield "sort", darray.sort, jnp.sort, (d(h1),), (j(h1),)
    yield "argsort", darray.argsort, jnp.argsort, (d(h1),), (j(h1),)
    yield "searchsorted", darray.searchsorted, jnp.searchsorted, (d(hs), d(h1)), (j(hs), j(h1))
    yield "take", darray.take, jnp.take, (d(h1), d(hi)), (j(h1), j(hi))
    yield ("x[idx]", lambda a, i: a[i], lambda a, i: a[i], (d(h1), d(hi)), (j(h1), j(hi)))
    yield ("at[idx].set", lambda a, i: a.at[i].set(1.0), lambda a, i: a.at[i].set(1.0),
           (d(h1), d(hi)), (j(h1), j(hi)))
    yield ("cumulative_sum", lambda a: darray.cumulative_sum(a, axis=0),
           lambda a: jnp.cumulative_sum(a, axis=0), (d(h2),), (j(h2),))
    yield ("tile", lambda a: darray.tile(a, (3, 1)), lambda a: jnp.tile(a, (3, 1)),
           (d(h2),), (j(h2),))
    yield ("repeat", lambda a: darray.repeat(a, 2, axis=0),
           lambda a: jnp.repeat(a, 2, axis=0), (d(h2),), (j(h2),))
    yield "isin", darray.isin, jnp.isin, (d(h1), d(h1[:512])), (j(h1), j(h1[:512]))
    yield "argmax", darray.argmax, jnp.argmax, (d(h2),), (j(h2),)
    yield ("histogram", lambda a: darray.histogram(a, bins=64, range=(-4.0, 4.0)),
           lambda a: jnp.histogram(a, bins=64, range=(-4.0, 4.0)), (d(h1),), (j(h1),))
    yield "interp", darray.interp, jnp.interp, (d(h1), d(hs), d(h1)), (j(h1), j(hs), j(h1))
    yield ("reshape", lambda a: darray.reshape(a, (-1,)), lambda a: jnp.reshape(a, (-1,)),
           (d(h2),), (j(h2),))
    yield "matmul", darray.matmul, jnp.matmul, (d(hsq), d(hsq)), (j(hsq), j(hsq))
    yield ("tensordot", lambda a, b: darray.tensordot(a, b, axes=([0], [0])),
           lambda a, b: jnp.tensordot(a, b, axes=([0], [0])), (d(hsq), d(hsq)),
           (j(hsq), j(hsq)))
    yield ("concat", lambda a, b: darray.concat([a, b]), lambda a, b: jnp.concatenate([a, b]),
           (d(h2), d(h2)), (j(h2), j(h2)))


def run_small(only, repeats, ratios):
    print(f"\nsmall arrays (2^12 cells, darray's shipped placement, eager): darray / jnp on "
          f"one device\n{'case':28s} {'jnp ms':>9s} {'darray ms':>9s} {'ratio':>7s}")
    for name, dfn, jfn, dargs, jargs in small_cases():
        if only and not any(o in name for o in only):
            continue
        t = time_interleaved([("jnp", _star(jfn), jargs), ("darray", _star(dfn), dargs)],
                             repeats * 4, desc=name)
        ratio = t["darray"][0] / t["jnp"][0]
        ratios.append((name, 12, "small", ratio))
        flag = "  SLOW" if ratio > 2 else ""
        print(f"{name:28s} {t['jnp'][0] * 1e3:9.3f} {t['darray'][0] * 1e3:9.3f} "
              f"{ratio:7.2f}{flag}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[16, 20],
                        choices=sorted(SHAPES_1D))
    parser.add_argument("--meshes", nargs="*", default=["8", "2x4"])
    parser.add_argument("--only", nargs="*", default=[], help="case name substrings")
    parser.add_argument("--small", action="store_true", help="also the small-array rows")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"jax {jax.__version__}, {jax.device_count()} {jax.devices()[0].platform} devices, "
          f"x64 {jax.config.read('jax_enable_x64')}, loadavg {' '.join(load)}")
    meshes = [tuple(int(s) for s in m.split("x")) for m in args.meshes]
    ratios: list = []
    if args.sizes and meshes:
        run_split(args.sizes, meshes, args.only, args.repeats, ratios)
    if args.small:
        run_small(args.only, args.repeats, ratios)
    slow = [r for r in ratios if r[3] > (2 if r[2] == "small" else 1.5)]
    print(f"\n{len(ratios)} rows, {len(slow)} over the bound (1.5x old; small: 2x jnp)")
    with open("/proc/loadavg") as f:
        print("loadavg at the end", " ".join(f.read().split()[:3]))


if __name__ == "__main__":
    main()
