"""GPU: darray on cuDecomp, on NCCL and on the JAX backend vs single-GPU jnp, side by side.

For every size it runs, each in a fresh process (so each has its own peak-memory counter):

* ``fftn round trip``: ``ifftn(fftn(x))`` of an n^3 complex64 array;
* ``halo``: ghost cells of width 2 on every axis of an n^3 float32 array (periodic);

as ``darray cudecomp`` (``transpose_backend="cudecomp"``), ``darray nccl`` (darray's handlers
on XLA's NCCL communicator; ``darray nccl 1-rank`` forces them over size-1 mesh axes too),
``darray jax`` (the JAX backend:
shard_map + XLA's NCCL all-to-all) and ``jnp`` (``jnp.fft.fftn``/``jnp.pad(mode="wrap")`` on one
GPU). darray runs on a (rows, cols) mesh of all GPUs in the X-pencil layout (c, r, None).
Printed: median time, its ratio to ``jnp``, and the peak device memory
(``memory_stats()["peak_bytes_in_use"]``) as a multiple of the input array.

Usage::

    python benchmarks/bench_gpu.py                  # 256^3 and 512^3
    python benchmarks/bench_gpu.py --n 128 --repeats 5
    mpiexec -n 4 python benchmarks/bench_gpu.py     # several GPUs (one per rank)

Needs an NVIDIA GPU; ``darray cudecomp`` rows fail without a cuDecomp build, and ``darray nccl``
runs on "jax" without the NCCL handlers (its Selection says so). ``--largest`` adds the largest
N^3 complex64 round trip that fits for jnp, darray jax and darray nccl.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

PROGRAMS = ("jnp", "darray jax", "darray cudecomp", "darray nccl", "darray nccl 1-rank")
# program -> darray backend; "darray nccl 1-rank" runs the nccl handlers even over size-1 mesh
# axes (pack, a 1-rank exchange, unpack), which otherwise move nothing: on one GPU it shows the
# handlers' own cost.
BACKEND = {"darray jax": "jax", "darray cudecomp": "cudecomp", "darray nccl": "nccl",
           "darray nccl 1-rank": "nccl"}
LARGEST_PROGRAMS = ("jnp", "darray jax", "darray nccl")
LARGEST_N = (512, 768, 1024, 1152, 1280, 1290, 1400, 1536, 1664, 1792, 2048)
OPS = ("fftn round trip", "halo")


def _one(program: str, op: str, n: int, repeats: int) -> dict:
    """Time one (program, op, n) in this process; returns the measurement."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    import darray
    dtype = np.complex64 if op.startswith("fftn") else np.float32
    host = np.random.default_rng(0).standard_normal((n, n, n)).astype(dtype)
    if program == "jnp":
        x = jax.device_put(host)
        f = (jax.jit(lambda a: jnp.fft.ifftn(jnp.fft.fftn(a))) if op.startswith("fftn")
             else jax.jit(lambda a: jnp.pad(a, 2, mode="wrap")))
    else:
        backend = BACKEND[program]
        if program.endswith("1-rank"):
            from darray._src.backends import nccl
            nccl.EXCHANGE_SIZE_ONE = True
        devs = jax.devices()
        rows = int(np.sqrt(len(devs)))
        while len(devs) % rows:
            rows -= 1
        mesh = Mesh(np.array(devs).reshape(rows, len(devs) // rows), ("r", "c"))
        x = darray.asarray(host, mesh=mesh, spec=P("c", "r", None))

        def run(a):
            with darray.config_context(transpose_backend=backend):
                if op.startswith("fftn"):
                    return darray.fft.ifftn(darray.fft.fftn(a))
                return a.halo(2)
        f = jax.jit(run)
    del host
    jax.block_until_ready(f(x))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(f(x))
        times.append(time.perf_counter() - start)
    stats = jax.devices()[0].memory_stats() or {}
    return {"program": program, "op": op, "n": n, "seconds": statistics.median(times),
            "peak_bytes": stats.get("peak_bytes_in_use", float("nan")),
            "array_bytes": n ** 3 * np.dtype(dtype).itemsize}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="*", default=[256, 512])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", default=None)
    parser.add_argument("--largest", action="store_true",
                        help="also find the largest N^3 complex64 fftn round trip that fits "
                             f"for {', '.join(LARGEST_PROGRAMS)} (N from {LARGEST_N})")
    parser.add_argument("--one", nargs=3, metavar=("PROGRAM", "OP", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        program, op, n = args.one
        print("RESULT " + json.dumps(_one(program, op, int(n), args.repeats)), flush=True)
        return
    from _bench_common import default_json_path, make_row, progress, write_table
    results = []
    cases = [(n, op, p) for n in args.n for op in OPS for p in PROGRAMS]
    for n, op, program in progress(cases, "bench_gpu"):
        proc = subprocess.run([sys.executable, __file__, "--repeats", str(args.repeats),
                               "--one", program, op, str(n)], capture_output=True, text=True)
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            print(f"{program:16s} {op:16s} n={n}: failed: {' | '.join(tail)}")
            continue
        results.append(json.loads(line[len("RESULT "):]))
    rows = []
    print(f"{'op':16s} {'n':>5s} {'program':16s} {'time ms':>9s} {'vs jnp':>7s} "
          f"{'peak MiB':>9s} {'peak/array':>10s}")
    for r in results:
        base = next((b for b in results if b["program"] == "jnp" and b["op"] == r["op"]
                     and b["n"] == r["n"]), None)
        ratio = r["seconds"] / base["seconds"] if base else float("nan")
        peak = r["peak_bytes"]
        print(f"{r['op']:16s} {r['n']:5d} {r['program']:16s} {r['seconds'] * 1e3:9.2f} "
              f"{ratio:7.2f} {peak / 2 ** 20:9.0f} {peak / r['array_bytes']:10.2f}")
        if ratio == ratio:
            rows.append(make_row(f"{r['program']} {r['op']}", f"{r['n']}^3", "gpu",
                                 r["seconds"], ratio, peak_bytes=peak))
    if args.largest:
        _largest(args)
    if rows:
        write_table(rows, args.json or default_json_path("bench_gpu"), "bench_gpu",
                    "jnp on one GPU", "darray on GPU: cuDecomp vs JAX backend vs jnp")


def _largest(args) -> None:
    """Per program: the largest N of LARGEST_N whose round trip runs (each try in a fresh
    process; the first failure, normally out of memory, ends the scan)."""
    print(f"\n{'program':16s} {'largest N^3 c64 round trip':>28s}")
    for program in LARGEST_PROGRAMS:
        best = None
        for n in LARGEST_N:
            proc = subprocess.run([sys.executable, __file__, "--repeats", "1", "--one", program,
                                   "fftn round trip", str(n)], capture_output=True, text=True)
            if not any(ln.startswith("RESULT ") for ln in proc.stdout.splitlines()):
                break
            best = n
        print(f"{program:16s} {str(best):>28s}")


if __name__ == "__main__":
    main()
