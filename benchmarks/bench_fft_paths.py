"""Two darray checkouts side by side: the time of the same FFT programs under each (issue 49).

Used to show that a memory change of darray.fft does not slow the transforms down: every row
is one jitted program (dctn and idstn of type 1, dctn type 2 as a control),
timed in two worker processes, one per checkout (``PYTHONPATH`` switched: ``--old`` is the
reference checkout, e.g. /work/main, ``--new`` this one). The workers run in rounds, one row
at a time each and alternating old/new, so load from other processes hits both alike; each row
prints both medians (wall time of ``block_until_ready``, warm-up excluded), new/old, and the
temporaries per device in blocks (XLA's memory plan, as tests/memory/memory_survey.py counts
them) under both.

    python benchmarks/bench_fft_paths.py --old /work/main --new . --repeats 7

8 virtual CPU devices, float32, x64 off; shapes 64^3, 128^3 (odd M: one FFT per row), (101, 67, 45)
and 129^3 (even M: the recursion), on an (8,) slab split on axis 0
and a (2, 4) pencil split on axes 0 and 1.

Other rows: ``--programs`` (names below, e.g. ``irfftn,ifftn,ifftshift``; programs named
with a leading ``i`` other than the shifts and r2r ones get a complex64 input), ``--shapes``
(``37x203x19,101x67x45``) and ``--meshes`` (``8``, ``8b``: split on axis 1, ``2x4``):

    python benchmarks/bench_fft_paths.py --old /work/main --new . --programs irfftn,ifftshift \
        --shapes 37x203x19,101x67x45,128x128x128,129x129x129 --meshes 8b,2x4
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SHAPES = ((64, 64, 64), (128, 128, 128), (101, 67, 45), (129, 129, 129))
MESHES = {"8": ((8,), ("a",), ("a", None, None)), "2x4": ((2, 4), ("x", "y"), ("x", "y", None)),
          "8b": ((8,), ("a",), (None, "a", None))}
PROGRAMS = ("dctn1", "idstn1", "dctn2")
COMPLEX_INPUT = ("ifftn", "irfftn", "ifft", "fftn", "fft")


def _rows(programs=PROGRAMS, shapes=SHAPES, meshes=("8", "2x4")):
    return [(p, s, m) for s in shapes for m in meshes for p in programs]


def worker(repeats: int, rows) -> None:
    """Compile every row, then time them in rounds; print one JSON line per row."""
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import time

    import jax
    import numpy as np

    import darray
    jax.config.update("jax_num_cpu_devices", 8)
    fns = {
        "ifftshift": darray.fft.ifftshift,
        "fftshift": darray.fft.fftshift,
        "rfftn+irfftn": lambda v: darray.fft.irfftn(darray.fft.rfftn(v), s=v.shape),
        "fftn": darray.fft.fftn, "ifftn": darray.fft.ifftn, "irfftn": darray.fft.irfftn,
        "rfftn": darray.fft.rfftn, "fft": darray.fft.fft, "ifft": darray.fft.ifft,
    }
    def typed(fn, kind):
        return lambda v: fn(v, type=kind)
    for name in ("dctn", "idctn", "dstn", "idstn"):
        for kind in (1, 2, 4):
            fns[f"{name}{kind}"] = typed(getattr(darray.fft, name), kind)
    compiled, args, blocks = {}, {}, {}
    for prog, shape, mesh_name in rows:
        mshape, names, spec = MESHES[mesh_name]
        mesh = jax.make_mesh(mshape, names)
        host = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        if prog in COMPLEX_INPUT:
            host = (host + 1j * host[::-1]).astype(np.complex64)
        x = darray.asarray(host, mesh=mesh, spec=spec)
        key = (prog, shape, mesh_name)
        c = jax.jit(fns[prog]).lower(x).compile()
        m = c.memory_analysis()
        blocks[key] = m.temp_size_in_bytes / max(m.argument_size_in_bytes,
                                                 m.output_size_in_bytes, 4096)
        compiled[key], args[key] = c, x
        jax.block_until_ready(c(x))
    times: dict = {k: [] for k in compiled}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for _ in range(repeats):
        for key in compiled:
            sys.stdin.readline()  # the driver's go: old and new alternate row by row
            t0 = time.perf_counter()
            jax.block_until_ready(compiled[key](args[key]))
            times[key].append(time.perf_counter() - t0)
            sys.stdout.write("done\n")
            sys.stdout.flush()
    for key, ts in times.items():
        print(json.dumps({"key": list(map(str, key)), "median": float(np.median(ts)),
                          "blocks": blocks[key]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="reference checkout (PYTHONPATH)")
    ap.add_argument("--new", default=".", help="checkout under test (PYTHONPATH)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in SHAPES))
    ap.add_argument("--meshes", default="8,2x4")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    rows = _rows(tuple(a.programs.split(",")),
                 tuple(tuple(int(n) for n in s.split("x")) for s in a.shapes.split(",")),
                 tuple(a.meshes.split(",")))
    if a.worker:
        worker(a.repeats, rows)
        return
    procs = {}
    for tag, path in (("old", a.old), ("new", a.new)):
        env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
        procs[tag] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", "--old", a.old,
             "--repeats", str(a.repeats), "--programs", a.programs, "--shapes", a.shapes,
             "--meshes", a.meshes], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, cwd="/")
    for p in procs.values():
        while p.stdout.readline().strip() != "ready":
            pass
    for _ in range(a.repeats * len(rows)):
        for p in procs.values():
            p.stdin.write("go\n")
            p.stdin.flush()
            assert p.stdout.readline().strip() == "done"
    results = {}
    for tag, p in procs.items():
        p.stdin.close()
        out = p.stdout.read()  # not communicate(): it would skip what readline buffered
        p.wait()
        rows = [json.loads(line[line.index("{"):]) for line in out.splitlines()
                if '{"key"' in line]
        results[tag] = {tuple(r["key"]): r for r in rows}
        if len(results[tag]) != len(rows):
            raise RuntimeError(f"the {tag} worker reported {len(rows)} rows: {out[-2000:]}")
    print(f"{'program':14s} {'shape':16s} {'mesh':4s} {'old ms':>8s} {'new ms':>8s} "
          f"{'new/old':>8s} {'old blk':>8s} {'new blk':>8s}")
    for key in results["old"]:
        o, n = results["old"][key], results["new"][key]
        print(f"{key[0]:14s} {key[1]:16s} {key[2]:4s} {1e3 * o['median']:8.2f} "
              f"{1e3 * n['median']:8.2f} {n['median'] / o['median']:8.2f} "
              f"{o['blocks']:8.2f} {n['blocks']:8.2f}")


if __name__ == "__main__":
    main()
