"""Distributed FFT round trips on 8 virtual CPU devices: darray vs jnp vs jaxDecomp.

Each row times one jitted program `inverse(forward(x))` (warm-up excluded, block_until_ready).
Runs are interleaved round-robin over all rows, --repeats rounds, so load from other processes
hits every row alike; each row reports the median and the minimum wall time, the median process
CPU time (all threads; less sensitive to other processes than wall time), and:

* ratios to single-device ``jnp.fft.ifftn(jnp.fft.fftn(x))`` of the same size (median/median
  and min/min) and to jaxDecomp's pure-JAX pencil round trip;
* peak memory: the compiled program's temporary + argument + output bytes per device from
  XLA's memory analysis (``compiled.memory_analysis()``, what XLA plans to allocate; this is
  a static plan, not a measured high-water mark), and "+arrays": temporary + output bytes in
  units of the input block, i.e. how many global arrays the program needs beyond its input;
* whether the compiled HLO holds an all-gather (darray rows must not).

A "shard_map minimal slab" row times the hand-written minimal pure-JAX slab round trip: one
shard_map whose body is a local 2-D fftn over axes 1-2, one tiled all_to_all (split axis 1,
concat axis 0), fft then ifft over axis 0 (k-space left transposed, as darray leaves it), the
all_to_all back and a local 2-D ifftn: two exchanges, four FFT calls, nothing else. It is the
floor for any pure-JAX slab decomposition, so "darray slab / minimal" is darray's own overhead.
Which earlier comparison misled (issue #21): comparing the compiled HLO of the two programs
showed darray's slab round trip carrying one extra full copy of the block per exchange (an
optimization_barrier in the transpose materialised the moved send buffer, so XLA could not
fuse the move into the all-to-all's send slices). This benchmark's row (darray 2.10x jnp
against 1.45x for the minimal program) was measuring that real cost; the separate check that
put darray at 0.96-0.99x of "its own minimal slab program" was the misleading one: a program
that is as slow as darray's was then cannot have been minimal. With the barrier kept only for
padded (uneven) exchanges the two programs compiled to the same HLO: the same 4 FFTs and
18 fusions, the same memory plan (checked at 64^3 on jax 0.12). darray now adds one closing
elementwise pass (the inverse's 1/n, deferred by fft_exec._deferred_stage so that a standalone
ifftn plans 2.88 arrays instead of 3.88); an A/B run at 256^3 measured 1.008x the minimal
program with it and 1.026x without it, so rows of this table within ~3% are equal. Since
then darray's slab does its transposing copy on the send side of each exchange
(fft_exec._orders_before_exchange; 0.97x the time of the receive-side copy that the minimal
program keeps), so the two programs differ in where that copy sits, not in how many there are.

Issue #30's rows ("spectral ...", also alone with --spectral): mixed per-axis transforms
(transformn+itransformn) and dstn/dctn against rfftn+irfftn and fftn+ifftn of the same shape,
and the 3/2-padded real round trip against the unpadded one at the fine size; a printed line
lists the collectives in the compiled program of k-space arithmetic with `wavenumbers` (none).

Usage: python benchmarks/bench_fft.py [--small] [--sizes 128 256] [--repeats 15] [--skip-naive]
(--small: 16^3 and 32^3, 2 repeats: a smoke run for CI). Load averages before and after are
printed: on a shared machine compare rows of one run, never across runs.

The table is also written as JSON (``--json PATH``, default benchmarks/results/bench_fft.json)
with a PNG plot beside it: per row the median wall time and the ratio to the single-device
round trip of the same size.
"""
from __future__ import annotations

import argparse
import os
import sys

if __name__ == "__main__":  # standalone: 8 virtual devices before jax starts
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import default_json_path, make_row, mesh_label, time_interleaved, write_table  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P

import darray  # noqa: E402
import darray.fft as dfft  # noqa: E402
from darray._src.base import compat  # noqa: E402


def _analyse(jitted, arg):
    compiled = jitted.lower(arg).compile()
    text = compiled.as_text()
    mem = extra = None
    try:
        m = compiled.memory_analysis()
        mem = (m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes)
        extra = (m.temp_size_in_bytes + m.output_size_in_bytes) / m.argument_size_in_bytes
    except Exception:  # memory analysis is best effort on some backends
        pass
    return compiled, "all-gather" in text, text.count("all-to-all("), mem, extra


def _row(name, jitted, arg, repeats, n):
    """A program to time: (name, compiled program, argument) plus its static facts."""
    compiled, gather, a2a, mem, extra = _analyse(jitted, arg)
    return {"name": name, "n": n, "mesh": _mesh_of(arg), "program": (name, compiled, arg),
            "all_gather": gather,
            "all_to_all": a2a, "mem_bytes": mem, "extra_arrays": extra}


def _mesh_of(arg):
    """The mesh an argument is spread over, "2x4"-style; "1" for a single device."""
    sharding = arg.data.sharding if isinstance(arg, darray.DistArray) else arg.sharding
    mesh = getattr(sharding, "mesh", None)
    return mesh_label(mesh.shape.values()) if mesh is not None else "1"


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


def _largest_prime_at_most(m):
    def prime(k):
        return k > 1 and all(k % d for d in range(2, int(k ** 0.5) + 1))
    while not prime(m):
        m -= 1
    return m


def _planner_rows(n, repeats):
    """Rows for the planner's choices: the (2, 4) input forced to pencils, a 2-D array with
    every axis split (fold), dctn if darray has it, and a 1-D prime length (Bluestein) with
    its own single-device reference row."""
    mesh = compat.make_auto_mesh((2, 4), ("x", "y"))
    rows = []
    xc = darray.asarray(_host(n, np.complex64), mesh=mesh, spec=("x", "y"))
    forced = jax.jit(lambda v: dfft.ifftn(dfft.fftn(v, decomposition="pencil"),
                                          decomposition="pencil"))
    rows.append(_row("darray pencil(2,4) forced pencil c64", forced, xc, repeats, n))
    flat = _host(n, np.complex64).reshape(n * n, n)
    x2 = darray.asarray(flat, mesh=mesh, spec=("x", "y"))
    rows.append(_row(f"darray 2-D {n * n}x{n} (x,y) fft2+ifft2 c64",
                     jax.jit(lambda v: dfft.ifftn(dfft.fftn(v))), x2, repeats, n))
    if hasattr(dfft, "dctn"):
        xr = darray.asarray(_host(n, np.float32), mesh=mesh, spec=("x", "y"))
        rows.append(_row("darray pencil(2,4) dctn+idctn f32",
                         jax.jit(lambda v: dfft.idctn(dfft.dctn(v))), xr, repeats, n))
        for fam, t in (("dct", 1), ("dct", 4), ("dst", 2)):
            fwd, inv = getattr(dfft, fam + "n"), getattr(dfft, "i" + fam + "n")
            rows.append(_row(f"darray pencil(2,4) {fam}n+i{fam}n t{t} f32",
                             jax.jit(lambda v, f=fwd, i=inv, t=t: i(f(v, type=t), type=t)),
                             xr, repeats, n))
    if n < 64:  # the smoke run skips the Bluestein rows (tests cover that path)
        return rows
    p = _largest_prime_at_most(n ** 3 // 16)
    a = (np.random.default_rng(1).standard_normal(p)).astype(np.complex64)
    one = jax.device_put(a, jax.devices()[0])
    rows.append(_row(f"jnp single-device 1-D prime {p} fft+ifft",
                     jax.jit(lambda v: jnp.fft.ifft(jnp.fft.fft(v))), one, repeats, n))
    x1 = darray.asarray(a, mesh=compat.make_auto_mesh((8,), ("d",)), spec=("d",))
    rows.append(_row(f"darray 1-D prime {p} over 8 fft+ifft",
                     jax.jit(lambda v: dfft.ifft(dfft.fft(v))), x1, repeats, n))
    return rows


MIXED_KINDS = (("fft", "dct1", "rfft"), ("dct2", "fft", "rfft"), ("dst2", "dct2", "dst4"))


def _spectral_rows(n, repeats):
    """Issue #30's rows on the (2, 4) pencil input, float32: the reference round trips of the
    same shape (fftn, rfftn, dctn, dstn), mixed transforms (transformn+itransformn), and the
    3/2-padded real round trip (irfftn then rfftn with padding=1.5, from the coarse spectrum)
    against the unpadded real round trip at the fine size floor(1.5 n)."""
    mesh = compat.make_auto_mesh((2, 4), ("x", "y"))
    xr = darray.asarray(_host(n, np.float32), mesh=mesh, spec=("x", "y"))
    xc = darray.asarray(_host(n, np.complex64), mesh=mesh, spec=("x", "y"))
    s = (n, n, n)
    rows = [
        _row("spectral pencil(2,4) fftn+ifftn c64", jax.jit(lambda v: dfft.ifftn(dfft.fftn(v))),
             xc, repeats, n),
        _row("spectral pencil(2,4) rfftn+irfftn f32",
             jax.jit(lambda v: dfft.irfftn(dfft.rfftn(v), s=s)), xr, repeats, n),
        _row("spectral pencil(2,4) dctn+idctn t2 f32",
             jax.jit(lambda v: dfft.idctn(dfft.dctn(v))), xr, repeats, n),
        _row("spectral pencil(2,4) dstn+idstn t2 f32",
             jax.jit(lambda v: dfft.idstn(dfft.dstn(v))), xr, repeats, n)]
    for kinds in MIXED_KINDS:
        rows.append(_row(f"spectral pencil(2,4) mixed {','.join(kinds)} f32",
                         jax.jit(lambda v, k=kinds: dfft.itransformn(dfft.transformn(v, k), k,
                                                                     s=s)),
                         xr, repeats, n))
    m = int(1.5 * n)
    k = dfft.rfftn(xr)
    rows.append(_row(f"spectral pencil(2,4) padded 1.5 irfftn+rfftn {n}->{m}",
                     jax.jit(lambda v: dfft.rfftn(dfft.irfftn(v, s=s, padding=1.5), s=s,
                                                  padding=1.5)), k, repeats, n))
    xf = darray.asarray(_host(m, np.float32), mesh=mesh, spec=("x", "y"))
    rows.append(_row(f"spectral pencil(2,4) unpadded rfftn+irfftn at {m}",
                     jax.jit(lambda v: dfft.irfftn(dfft.rfftn(v), s=(m, m, m))), xf, repeats,
                     n))
    return rows


def wavenumber_collectives(n):
    """The collectives in the compiled program of k-space arithmetic with `wavenumbers`
    (issue #30: it must add none): `1j * kx * k / (kx^2 + ky^2 + kz^2 + 1)`."""
    mesh = compat.make_auto_mesh((2, 4), ("x", "y"))
    xr = darray.asarray(_host(n, np.float32), mesh=mesh, spec=("x", "y"))
    k = dfft.rfftn(xr)
    kx, ky, kz = dfft.wavenumbers(k, s=xr.shape)

    def arithmetic(kd):
        kk = darray.DistArray._new(kd, k.layout)
        return (1j * kx * kk / (kx ** 2 + ky ** 2 + kz ** 2 + 1)).data
    text = jax.jit(arithmetic).lower(k.data).compile().as_text()
    names = ("all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter")
    return [c for c in names if c + "(" in text or c + "-start(" in text]


def _host(n, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n, n)).astype(np.float32)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((n, n, n)).astype(np.float32)
    return a.astype(dtype)


def _minimal_slab_row(n, repeats):
    """The hand-written minimal pure-JAX slab round trip (the reference floor)."""
    mesh = compat.make_auto_mesh((8,), ("d",))

    def body(b):
        b = jnp.fft.fftn(b, axes=(1, 2))
        b = jax.lax.all_to_all(b, "d", split_axis=1, concat_axis=0, tiled=True)
        b = jnp.fft.ifft(jnp.fft.fft(b, axis=0), axis=0)
        b = jax.lax.all_to_all(b, "d", split_axis=0, concat_axis=1, tiled=True)
        return jnp.fft.ifftn(b, axes=(1, 2))

    fn = jax.jit(compat.shard_map(body, mesh=mesh, in_specs=(P("d"),), out_specs=P("d")))
    x = jax.device_put(_host(n, np.complex64), NamedSharding(mesh, P("d")))
    return [_row("shard_map minimal slab(8,) c64", fn, x, repeats, n)]


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


def run(n, repeats, naive=True, spectral_only=False):
    rows = []
    single = jax.devices()[0]
    x1 = jax.device_put(_host(n, np.complex64), single)
    rows.append(_row("jnp single-device fftn+ifftn c64",
                     jax.jit(lambda v: jnp.fft.ifftn(jnp.fft.fftn(v))), x1, repeats, n))
    mesh = compat.make_auto_mesh((8,), ("d",))
    xs = jax.device_put(_host(n, np.complex64), NamedSharding(mesh, P("d")))
    if spectral_only:
        rows += _spectral_rows(n, repeats)
        return _timed(rows, repeats, n)
    if naive:
        rows.append(_row("jnp naive on sharded (8,) fftn+ifftn c64",
                         jax.jit(lambda v: jnp.fft.ifftn(jnp.fft.fftn(v))), xs, repeats, n))
    rows += _darray_rows(n, (8,), ("d",), repeats, "slab(8,)")
    rows += _minimal_slab_row(n, repeats)
    rows += _darray_rows(n, (2, 4), ("x", "y"), repeats, "pencil(2,4)")
    rows += _planner_rows(n, repeats)
    rows += _spectral_rows(n, repeats)
    rows += _jaxdecomp_rows(n, repeats)
    return _timed(rows, repeats, n)


def _timed(rows, repeats, n):
    timings = time_interleaved([r["program"] for r in rows], repeats, f"bench_fft {n}^3")
    for r in rows:
        r["seconds"], r["min_seconds"], r["cpu_seconds"] = timings[r.pop("program")[0]]
    return rows


def report(rows):
    by_n = {}
    for r in rows:
        by_n.setdefault(r["n"], []).append(r)
    for n, rs in by_n.items():
        single = next((r for r in rs if r["name"].startswith("jnp single")), None)
        jd = next((r for r in rs if r["name"].startswith("jaxDecomp")), None)
        print(f"\n== {n}^3 ==")
        print(f"{'program':42s} {'med ms':>7s} {'min ms':>7s} {'cpu ms':>7s} {'x1 med':>6s} "
              f"{'x1 min':>6s} {'xJD med':>7s} {'xJD min':>7s} {'a2a':>3s} {'gather':>6s} "
              f"{'MiB/dev':>7s} {'+arrays':>7s}")
        for r in rs:
            def ratio(base, key, width, r=r):
                return f"{r[key] / base[key]:{width}.2f}" if base else f"{'-':>{width}s}"
            mem = f"{r['mem_bytes'] / 2**20:7.1f}" if r["mem_bytes"] else f"{'?':>7s}"
            extra = f"{r['extra_arrays']:7.2f}" if r["extra_arrays"] else f"{'?':>7s}"
            print(f"{r['name']:42s} {r['seconds'] * 1e3:7.1f} {r['min_seconds'] * 1e3:7.1f} "
                  f"{r['cpu_seconds'] * 1e3:7.1f} {ratio(single, 'seconds', 6)} "
                  f"{ratio(single, 'min_seconds', 6)} {ratio(jd, 'seconds', 7)} "
                  f"{ratio(jd, 'min_seconds', 7)} {r['all_to_all']:3d} "
                  f"{str(r['all_gather']):>6s} {mem} {extra}")
        complex_rt = {r["name"].split()[1]: r["seconds"] for r in rs
                      if r["name"].startswith("darray") and "fftn+ifftn" in r["name"]}
        named = {r["name"]: r for r in rs}
        slab = named.get("darray slab(8,) fftn+ifftn c64")
        pencil = named.get("darray pencil(2,4) fftn+ifftn c64")
        if slab and pencil:
            print(f"  pencil(2,4) input / slab(8,) input (fftn+ifftn) = "
                  f"{pencil['seconds'] / slab['seconds']:.2f}")
        one = next((r for r in rs if r["name"].startswith("jnp single-device 1-D")), None)
        dist = next((r for r in rs if r["name"].startswith("darray 1-D prime")), None)
        if one and dist:
            print(f"  1-D prime: darray / single-device = {dist['seconds'] / one['seconds']:.2f}")
        real = named.get("darray pencil(2,4) rfftn+irfftn f32")
        for r in rs:
            if real and r["name"].startswith("darray pencil(2,4) d") and "n+i" in r["name"]:
                label = " ".join(r["name"].split()[2:-1])
                print(f"  {label} / rfftn+irfftn (pencil input) = "
                      f"{r['seconds'] / real['seconds']:.2f}")
        _report_spectral(named)
        for r in rs:
            if r["name"].startswith("darray") and "rfftn" in r["name"]:
                label = r["name"].split()[1]
                if label in complex_rt:
                    print(f"  {label}: rfftn+irfftn / fftn+ifftn = "
                          f"{r['seconds'] / complex_rt[label]:.2f}")


def _report_spectral(named):
    """Issue #30's ratios (median wall time; CPU time in brackets)."""
    def get(tail):
        return next((r for name, r in named.items()
                     if name.startswith("spectral") and name.endswith(tail)), None)

    def ratio(a, b):
        return f"{a['seconds'] / b['seconds']:.2f} (cpu {a['cpu_seconds'] / b['cpu_seconds']:.2f})"
    c2c, real = get("fftn+ifftn c64"), get("rfftn+irfftn f32")
    dct, dst = get("dctn+idctn t2 f32"), get("dstn+idstn t2 f32")
    if not (c2c and real):
        return
    if dct and dst:
        print(f"  spectral: dctn+idctn / rfftn+irfftn = {ratio(dct, real)}; dstn+idstn / "
              f"rfftn+irfftn = {ratio(dst, real)}; dstn / dctn = {ratio(dst, dct)}")
    for kinds in MIXED_KINDS:
        mixed = get(f"mixed {','.join(kinds)} f32")
        if mixed:
            print(f"  spectral: mixed {','.join(kinds)} / rfftn+irfftn = {ratio(mixed, real)}; "
                  f"/ fftn+ifftn c64 = {ratio(mixed, c2c)}")
    padded = next((r for name, r in named.items() if "padded 1.5" in name), None)
    fine = next((r for name, r in named.items() if "unpadded rfftn+irfftn at" in name), None)
    if padded and fine:
        print(f"  spectral: padded 1.5 round trip / unpadded round trip at the fine size = "
              f"{ratio(padded, fine)} (target <= 1.3)")


def _table_rows(rows):
    """The JSON/plot rows: median wall time and its ratio to the single-device row of that n
    (the 1-D prime rows too: the table keeps one reference per size, as the printed one)."""
    table = []
    for r in rows:
        single = next((s for s in rows if s["n"] == r["n"]
                       and s["name"].startswith("jnp single")), r)
        table.append(make_row(r["name"], f"{r['n']}^3", r["mesh"], r["seconds"],
                              r["seconds"] / single["seconds"],
                              min_time_ms=r["min_seconds"] * 1e3,
                              cpu_time_ms=r["cpu_seconds"] * 1e3, all_gather=r["all_gather"],
                              all_to_all=r["all_to_all"], mem_bytes=r["mem_bytes"]))
    return table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="16^3 and 32^3 smoke run")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--skip-naive", action="store_true",
                        help="leave out the (slow, all-gathering) naive jnp row")
    parser.add_argument("--spectral", action="store_true",
                        help="only issue #30's rows (mixed, padded, dct/dst) and their "
                             "references")
    parser.add_argument("--json", default=str(default_json_path("bench_fft")),
                        help="where to write the table as JSON, a PNG plot beside it "
                             "(default benchmarks/results/bench_fft.json)")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([16, 32] if args.small else [128, 256])
    repeats = args.repeats or (2 if args.small else 15)
    if jax.device_count() < 8:
        raise SystemExit(f"needs 8 devices, found {jax.device_count()} (set XLA_FLAGS="
                         f"--xla_force_host_platform_device_count=8 before jax starts)")
    rows = []
    load_before = os.getloadavg()
    for n in sizes:
        rows += run(n, repeats, naive=not args.skip_naive, spectral_only=args.spectral)
        print(f"# wavenumber arithmetic at {n}^3: collectives in its compiled program: "
              f"{wavenumber_collectives(n) or 'none'}")
    print(f"# load average (1 min) before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores; {repeats} interleaved rounds; jax {jax.__version__}")
    report(rows)
    write_table(_table_rows(rows), args.json, "bench_fft",
                "single-device jnp fftn+ifftn of the same size",
                f"FFT round trips {sizes}: median ms, ratio to one device")
    bad = [r["name"] for r in rows if r["name"].startswith("darray") and r["all_gather"]]
    if bad:
        raise SystemExit(f"all-gather found in {bad}")
    return rows


if __name__ == "__main__":
    main()
