"""Eager (un-jitted) latency of common ops: darray vs jax.numpy, small operations and large.

Runs on 8 virtual CPU devices (set before jax starts). Each op is called twice to compile and
warm up, then timed call by call (dispatch + execution, `block_until_ready` after each call), all
rows interleaved round-robin in one run (so machine load hits every row alike); the table gives
the median and the ratio darray / jax.numpy.

Two groups of rows:

* small operations, against single-device jax.numpy (what a scalar loop costs in plain JAX):
  ``t[i]`` on a (16,) array, 0-d ``a - b``, ``bool(a <= x)``, ``t + 1`` and ``sum(t)`` on (16,),
  and a scipy-style loop step (``t[i]``, 0-d arithmetic, ``bool``), with darray arrays created
  with no placement given (darray's defaults); plus a real iterative solver from scipy
  (``scipy.integrate.tanhsinh`` through the Array API, SCIPY_ARRAY_API=1) on darray inputs.
  scipy's elementwise solvers write into their work arrays, which jax.numpy refuses
  (immutable), so that row's reference is the same call on numpy inputs.
* large-array ops, against jax.numpy on a jax.Array with the DistArray's own sharding (so the
  ratio is darray's dispatch on top of the same XLA program).

The jax.numpy side uses a jax.Array with the same NamedSharding as the DistArray's data (for
creation functions: the jax.numpy call followed by placing the result in that sharding with
`jax.device_put`, the cheapest way plain JAX gets a sharded creation eagerly).

Usage::

    python benchmarks/bench_eager.py                 # (64, 16) float32 on a mesh of 8
    python benchmarks/bench_eager.py --repeats 50    # quicker
    python benchmarks/bench_eager.py --shape 1024,64 --mesh 2,4
    python benchmarks/bench_eager.py --json /tmp/eager.json   # table (and PNG) elsewhere

The table is also written as JSON (default benchmarks/results/bench_eager.json) with a PNG
plot of darray's time per call and the ratio darray / jax.numpy beside it.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("SCIPY_ARRAY_API", "1")  # scipy's Array API dispatch (the solver row)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import default_json_path, make_row, mesh_label, time_interleaved, write_table  # noqa: E402

import darray  # noqa: E402
from darray._src.base import compat  # noqa: E402

SMALL_N = 16  # the tiny 1-D array of the small rows


def small_cases(dtype):
    """(name, darray call, jax.numpy call) for small operations: darray arrays made with no
    placement given, jax.numpy arrays on the default device (single-device jax.numpy)."""
    host = np.linspace(0.5, 2.0, SMALL_N, dtype=dtype)
    t_d, t_j = darray.asarray(host), jnp.asarray(host)
    a_d, a_j = darray.sum(t_d), jnp.sum(t_j)          # 0-d results, as a loop meets them
    b_d, b_j = t_d[3], t_j[3]
    x_d, x_j = b_d * 2, b_j * 2
    i = 5

    def loop_step(t, a, x):
        # one step of scipy's elementwise loops: read a cell, 0-d arithmetic, a Python branch
        v = t[i]
        d = (v - a) * 0.5 + x
        return bool(d <= x)

    return [
        ("t[i] (16,)", lambda: t_d[i], lambda: t_j[i]),
        ("0-d a - b", lambda: a_d - b_d, lambda: a_j - b_j),
        ("bool(a <= x)", lambda: bool(a_d <= x_d), lambda: bool(a_j <= x_j)),
        ("t + 1 (16,)", lambda: t_d + 1, lambda: t_j + 1),
        ("sum(t) (16,)", lambda: darray.sum(t_d), lambda: jnp.sum(t_j)),
        ("loop step", lambda: loop_step(t_d, a_d, x_d), lambda: loop_step(t_j, a_j, x_j)),
    ]


def scipy_case(dtype):
    """scipy.integrate.tanhsinh of exp(-x**2) over [0, 1] (67 evaluations, ~10 iterations of
    scipy's elementwise loop): darray inputs against numpy inputs (jax.numpy is refused: the
    loop writes into its work arrays). None when scipy lacks the Array API switch."""
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        return None
    from scipy.integrate import tanhsinh
    lo, hi = np.zeros((), dtype), np.ones((), dtype)

    def run(xp):
        def call():
            value = float(tanhsinh(lambda x: xp.exp(-x * x), xp.asarray(lo),
                                   xp.asarray(hi)).integral)
            # the solver leaves results it never reads queued on the device: wait for them
            # here, so they count in this row and not in the next row's time
            jax.block_until_ready(jnp.zeros(()) + 1)
            return value
        return call
    return ("scipy tanhsinh", run(darray), run(np))


def cases(x, y, a, b, sharding, n):
    """(name, darray call, jax.numpy call) for a dozen common ops; x, y DistArrays with the
    layouts of the jax arrays a, b (same sharding)."""
    m = x.shape[1]
    cond_d, cond_j = x > 0.5, a > 0.5
    sq_d = darray.asarray(np.ones((m, m), np.float32), mesh=x.mesh, spec=(None, None))
    sq_j = jax.device_put(np.ones((m, m), np.float32), jax.sharding.NamedSharding(
        sharding.mesh, jax.sharding.PartitionSpec()))
    put = lambda v: jax.device_put(v, sharding)  # noqa: E731
    put1 = lambda v: jax.device_put(v, jax.sharding.NamedSharding(  # noqa: E731
        sharding.mesh, jax.sharding.PartitionSpec(sharding.spec[0])))
    mesh = x.mesh
    spec0 = (sharding.spec[0],)
    return [
        ("add", lambda: darray.add(x, y), lambda: jnp.add(a, b)),
        ("multiply", lambda: x * y, lambda: a * b),
        ("exp", lambda: darray.exp(x), lambda: jnp.exp(a)),
        ("sum", lambda: darray.sum(x), lambda: jnp.sum(a)),
        ("mean(axis=0)", lambda: darray.mean(x, axis=0), lambda: jnp.mean(a, axis=0)),
        ("matmul", lambda: x @ sq_d, lambda: a @ sq_j),
        ("where", lambda: darray.where(cond_d, x, y), lambda: jnp.where(cond_j, a, b)),
        ("astype", lambda: darray.astype(x, darray.float64 if jax.config.jax_enable_x64
                                          else darray.int32),
         lambda: a.astype(jnp.float64 if jax.config.jax_enable_x64 else jnp.int32)),
        ("reshape", lambda: darray.reshape(x, (n * m,)), lambda: jnp.reshape(a, (n * m,))),
        ("slice [1:-1]", lambda: x[1:-1], lambda: a[1:-1]),
        ("arange", lambda: darray.arange(n, mesh=mesh, spec=spec0),
         lambda: put1(jnp.arange(n))),
        ("linspace", lambda: darray.linspace(0.0, 1.0, n, mesh=mesh, spec=spec0),
         lambda: put1(jnp.linspace(0.0, 1.0, n))),
        ("eye", lambda: darray.eye(n, m, mesh=mesh, spec=tuple(sharding.spec) + (None,) * (
            2 - len(sharding.spec))), lambda: put(jnp.eye(n, m))),
        ("zeros", lambda: darray.zeros((n, m), mesh=mesh, spec=tuple(sharding.spec) + (None,) * (
            2 - len(sharding.spec))), lambda: put(jnp.zeros((n, m)))),
    ]


def size_label(shape) -> str:
    return "x".join(map(str, shape))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="64,16", help="array shape (default 64,16)")
    parser.add_argument("--mesh", default="8", help="mesh shape, e.g. 8 or 2,4 (default 8)")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--x64", action="store_true", help="enable jax_enable_x64")
    parser.add_argument("--json", default=str(default_json_path("bench_eager")),
                        help="where to write the table as JSON, a PNG plot beside it "
                             "(default benchmarks/results/bench_eager.json)")
    args = parser.parse_args(argv)
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    shape = tuple(int(s) for s in args.shape.split(","))
    mesh_shape = tuple(int(s) for s in args.mesh.split(","))
    names = ("x", "y")[:len(mesh_shape)]
    mesh = compat.make_auto_mesh(mesh_shape, names)
    spec = names  # axis i split over mesh axis i
    rng = np.random.default_rng(0)
    host_a = rng.random(shape, dtype=np.float32)
    host_b = rng.random(shape, dtype=np.float32)
    x = darray.asarray(host_a, mesh=mesh, spec=spec)
    y = darray.asarray(host_b, mesh=mesh, spec=spec)
    sharding = x.data.sharding
    a = jax.device_put(host_a, sharding)
    b = jax.device_put(host_b, sharding)
    assert x.data.sharding.is_equivalent_to(a.sharding, 2), (x.data.sharding, a.sharding)

    print(f"jax {jax.__version__}, {jax.device_count()} {jax.default_backend()} devices, "
          f"shape {shape} float32 on mesh {dict(mesh.shape)}, spec {spec}, "
          f"median of {args.repeats}")
    small_dtype = np.float64 if args.x64 else np.float32
    groups = [("small", "small ops vs jax.numpy on one device", "jax.numpy, one device",
               small_cases(small_dtype)),
              (size_label(shape), f"{size_label(shape)} vs jax.numpy on the same sharding",
               "jax.numpy, same sharding", cases(x, y, a, b, sharding, shape[0]))]
    solver = scipy_case(small_dtype)
    if solver is not None:
        groups.append(("small", "scipy's elementwise loop vs the same call on numpy inputs",
                       "numpy", [solver]))
    # Each group starts with an untimed call of its first reference: the first 8-device
    # program after a run of one-device ones waits for XLA:CPU's idle device threads to wake
    # (measured: 3-170 ms, whichever library runs it), which no row should be charged for.
    programs = [(f"{name}|{side}", lambda _, call=call: call(), None)
                for *_, ops in groups
                for name, dfn, jfn in [("wake", None, ops[0][2])] + ops
                for side, call in (("darray", dfn), ("ref", jfn)) if call is not None]
    timed = time_interleaved(programs, args.repeats, "bench_eager")
    rows, mesh_name = [], mesh_label(mesh_shape)
    for size, title, reference, ops in groups:
        print(f"\n{title}")
        print(f"{'op':<16}{'darray (us)':>13}{'reference (us)':>16}{'ratio':>8}")
        ratios = []
        for name, _, _ in ops:
            td, tr = timed[f"{name}|darray"][0], timed[f"{name}|ref"][0]
            ratios.append(td / tr)
            rows.append(make_row(name, size, mesh_name, td, td / tr,
                                 reference_time_ms=tr * 1e3, reference=reference))
            print(f"{name:<16}{td * 1e6:>13.1f}{tr * 1e6:>16.1f}{td / tr:>8.2f}")
        if len(ratios) > 1:
            geomean = float(np.exp(np.mean(np.log(ratios))))
            print(f"{'geomean':<16}{'':>13}{'':>16}{geomean:>8.2f}")
    write_table(rows, args.json, "bench_eager", "each row's reference column",
                f"eager ops on {mesh_name}: darray ms, ratio to the reference")
    return rows


if __name__ == "__main__":
    main()
