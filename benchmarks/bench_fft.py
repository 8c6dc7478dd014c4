"""Distributed FFT round trips on 8 virtual CPU devices: darray vs jnp vs jaxDecomp.

Each row times one jitted program `inverse(forward(x))` (warm-up excluded, block_until_ready,
median of --repeats runs) and reports:

* ratio to single-device ``jnp.fft.ifftn(jnp.fft.fftn(x))`` of the same size;
* peak memory: the compiled program's temporary + argument + output bytes per device from
  XLA's memory analysis (``compiled.memory_analysis()``, what XLA plans to allocate; this is
  a static plan, not a measured high-water mark);
* whether the compiled HLO holds an all-gather (darray rows must not).

Usage: python benchmarks/bench_fft.py [--small] [--sizes 128 256] [--repeats 5]
(--small: 16^3 and 32^3, 2 repeats: a smoke run for CI).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

if __name__ == "__main__":  # standalone: 8 virtual devices before jax starts
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

import darray  # noqa: E402
import darray.fft as dfft  # noqa: E402
from darray._src import compat  # noqa: E402


def _time_interleaved(programs, repeats):
    """Median seconds per program. Runs are interleaved round-robin (program 1, 2, ..., 1, 2,
    ...) so that load from other processes on a shared machine hits every program alike."""
    for _, fn, arg in programs:
        jax.block_until_ready(fn(arg))  # warm-up (compile + first run)
    times = {name: [] for name, _, _ in programs}
    for _ in range(repeats):
        for name, fn, arg in programs:
            t0 = time.perf_counter()
            jax.block_until_ready(fn(arg))
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def _analyse(jitted, arg):
    compiled = jitted.lower(arg).compile()
    text = compiled.as_text()
    mem = None
    try:
        m = compiled.memory_analysis()
        mem = (m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes)
    except Exception:  # memory analysis is best effort on some backends
        pass
    return "all-gather" in text, text.count("all-to-all("), mem


def _row(name, jitted, arg, repeats, n):
    """A program to time: (name, jitted function, argument) plus its static facts."""
    gather, a2a, mem = _analyse(jitted, arg)
    return {"name": name, "n": n, "program": (name, jitted, arg), "all_gather": gather,
            "all_to_all": a2a, "mem_bytes": mem}


def _darray_rows(n, mesh_shape, names, repeats, label):
    mesh = compat.make_auto_mesh(mesh_shape, names)
    spec = names if len(names) > 1 else (names[0],)
    rows = []
    xc = darray.asarray(_host(n, np.complex64), mesh=mesh, spec=spec)
    roundtrip = jax.jit(lambda v: dfft.ifftn(dfft.fftn(v)))
    rows.append(_row(f"darray {label} fftn+ifftn c64", roundtrip, xc, repeats, n))
    xr = darray.asarray(_host(n, np.float32), mesh=mesh, spec=spec)
    real = jax.jit(lambda v: dfft.irfftn(dfft.rfftn(v), s=(n, n, n)))
    rows.append(_row(f"darray {label} rfftn+irfftn f32", real, xr, repeats, n))
    return rows


def _host(n, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n, n)).astype(np.float32)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((n, n, n)).astype(np.float32)
    return a.astype(dtype)


def _jaxdecomp_rows(n, repeats):
    try:
        import jaxdecomp  # noqa: F401
        import jaxdecomp.fft as jdfft
    except Exception as err:  # not installed: skip its rows
        print(f"# jaxDecomp rows skipped: {type(err).__name__}: {err}")
        return []
    mesh = compat.make_auto_mesh((2, 4), ("x", "y"))
    x = jax.device_put(_host(n, np.complex64), NamedSharding(mesh, P("x", "y")))
    try:
        with jax.set_mesh(mesh):
            fn = jax.jit(lambda v: jdfft.pifft3d(jdfft.pfft3d(v)))
            return [_row("jaxDecomp pencil(2,4) pfft3d+pifft3d c64", fn, x, repeats, n)]
    except Exception as err:
        print(f"# jaxDecomp rows skipped: {type(err).__name__}: {str(err)[:200]}")
        return []


def run(n, repeats):
    rows = []
    single = jax.devices()[0]
    x1 = jax.device_put(_host(n, np.complex64), single)
    rows.append(_row("jnp single-device fftn+ifftn c64",
                     jax.jit(lambda v: jnp.fft.ifftn(jnp.fft.fftn(v))), x1, repeats, n))
    mesh = compat.make_auto_mesh((8,), ("d",))
    xs = jax.device_put(_host(n, np.complex64), NamedSharding(mesh, P("d")))
    rows.append(_row("jnp naive on sharded (8,) fftn+ifftn c64",
                     jax.jit(lambda v: jnp.fft.ifftn(jnp.fft.fftn(v))), xs, repeats, n))
    rows += _darray_rows(n, (8,), ("d",), repeats, "slab(8,)")
    rows += _darray_rows(n, (2, 4), ("x", "y"), repeats, "pencil(2,4)")
    rows += _jaxdecomp_rows(n, repeats)
    medians = _time_interleaved([r["program"] for r in rows], repeats)
    for r in rows:
        r["seconds"] = medians[r.pop("program")[0]]
    return rows


def report(rows):
    by_n = {}
    for r in rows:
        by_n.setdefault(r["n"], []).append(r)
    for n, rs in by_n.items():
        base = next(r["seconds"] for r in rs if r["name"].startswith("jnp single"))
        jd = next((r["seconds"] for r in rs if r["name"].startswith("jaxDecomp")), None)
        print(f"\n== {n}^3 ==")
        print(f"{'program':44s} {'median ms':>10s} {'x single':>9s} {'x jaxDecomp':>11s} "
              f"{'a2a':>4s} {'gather':>6s} {'MiB/dev':>8s}")
        for r in rs:
            vs_jd = f"{r['seconds'] / jd:11.2f}" if jd else f"{'-':>11s}"
            mem = f"{r['mem_bytes'] / 2**20:8.1f}" if r["mem_bytes"] else f"{'?':>8s}"
            print(f"{r['name']:44s} {r['seconds'] * 1e3:10.1f} {r['seconds'] / base:9.2f} "
                  f"{vs_jd} {r['all_to_all']:4d} {str(r['all_gather']):>6s} {mem}")
        complex_rt = {r["name"].split()[1]: r["seconds"] for r in rs
                      if r["name"].startswith("darray") and "fftn+ifftn" in r["name"]}
        for r in rs:
            if r["name"].startswith("darray") and "rfftn" in r["name"]:
                label = r["name"].split()[1]
                print(f"  {label}: rfftn+irfftn / fftn+ifftn = "
                      f"{r['seconds'] / complex_rt[label]:.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="16^3 and 32^3 smoke run")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args(argv)
    sizes = args.sizes or ([16, 32] if args.small else [128, 256])
    repeats = args.repeats or (2 if args.small else 7)
    if jax.device_count() < 8:
        raise SystemExit(f"needs 8 devices, found {jax.device_count()} (set XLA_FLAGS="
                         f"--xla_force_host_platform_device_count=8 before jax starts)")
    rows = []
    for n in sizes:
        rows += run(n, repeats)
    report(rows)
    bad = [r["name"] for r in rows if r["name"].startswith("darray") and r["all_gather"]]
    if bad:
        raise SystemExit(f"all-gather found in {bad}")
    return rows


if __name__ == "__main__":
    main()
