"""XLA:CPU's local FFT beside the CPU FFT libraries, on the blocks darray's MPI slab plans
transform.

darray's MPI path runs each rank's local FFTs as XLA:CPU's FFT (ducc, inside the jitted
program). Issue #39 asks whether a native local FFT, called from the MPI handler, would beat it
by more than 20% on the blocks a plan produces; this benchmark measures exactly that, so the
answer is rerun on each machine rather than assumed. The blocks (P ranks, an n^3 grid, slab):

- c2c: ``fft2``, the 2-D FFT over the trailing axes of the (n/P, n, n) input block; ``fft1``,
  the 1-D FFT over the trailing axis of the exchanged (n/P, n, n) block.
- r2c: ``rfft2`` of the (n/P, n, n) float64 block; ``fft1``, the 1-D FFT of the exchanged
  (n/P, n/2+1, n) block; ``irfft2`` back to (n/P, n, n).

Each job runs ``--procs`` processes at once, as the ranks of one node do (every core busy),
each transforming its own block after a file barrier, each bound to one core as ``mpiexec
--bind-to core`` binds ranks (``--no-bind-to-core``: unbound), all with the glibc tunables
darray's performance guide recommends (``--glibc-tunables``; docs/performance.md, "Host
buffers: huge pages and reuse" and "Bind each process to its cores"). A job's time per call is
the slowest process's, its result the median of ``--repeats`` calls; rounds alternate the
libraries' order, and the table gives the median over rounds, the ratio to XLA and the page
faults per call (a fresh output buffer is faulted in page by page; see the performance guide). The
contenders:

- ``xla``: ``jax.numpy.fft`` under ``jax.jit``, a new output per call (as in darray's programs);
- ``pocketfft``: ``scipy.fft``, one worker, a new output per call;
- ``fftw``: ``pyfftw.FFTW``, FFTW_MEASURE, one thread, planned buffers (FFTW is GPL: measured,
  never a dependency of darray);
- ``mkl``: ``mkl_fft`` (Intel's licence), one thread, a new output per call;
- ``ducc0``: ``ducc0.fft`` from pip, one thread, a new output per call: the library XLA:CPU's
  FFT is built from, here as its own wheel builds it (GPL-2.0: measured, never a dependency),
  which tells XLA's integration apart from the FFT code.

- ``darray-fftw``: darray's FFTW provider (option ``local_fft="fftw"``): its XLA FFI handler
  under ``jax.jit``, as darray's programs call it, FFTW_ESTIMATE plans (``local_fft`` docs:
  docs/fftw.md); runs in this python, needs FFTW found (``pip install pyfftw``).

Libraries missing from ``--peer-python`` are skipped with the reason. Every contender's output
on its block is checked against numpy's FFT (complex128) before the timed calls; a wrong one is
printed as WRONG and left out of the ratios.

    python benchmarks/bench_local_fft.py --peer-python /path/to/venv/bin/python

(``pip install scipy pyfftw mkl_fft ducc0`` in that venv; all have wheels.)

``--round-trips`` measures darray itself instead: on 8 virtual CPU devices (one process), a
jitted ``ifftn(fftn(x))`` (c2c) and ``irfftn(rfftn(x))`` (r2c) of a distributed n^3 array with
``local_fft="xla"`` and ``local_fft="fftw"`` side by side, interleaved (each round's best of
``--repeats`` calls, the median over ``--rounds``), printing the ratio and each one's max error
against numpy:

    python benchmarks/bench_local_fft.py --round-trips --sizes 128,256
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _bench_common import (  # noqa: E402
    default_json_path,
    make_row,
    recommended_glibc_tunables,
    write_table,
)

LIBRARIES = ("xla", "pocketfft", "fftw", "mkl", "ducc0", "darray-fftw")
MODULES = {"xla": "jax", "pocketfft": "scipy", "fftw": "pyfftw", "mkl": "mkl_fft",
           "ducc0": "ducc0", "darray-fftw": "darray"}
IN_THIS_PYTHON = ("xla", "darray-fftw")  # the others run in --peer-python
STAGES = {"c2c": ("fft2", "fft1"), "r2c": ("rfft2", "fft1", "irfft2")}
# one thread per process in every library that reads these (FFTW and scipy are told directly)
ONE_THREAD = {"MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def block_shapes(stage: str, kind: str, n: int, procs: int):
    """(input shape, input is real, output shape) of one rank's block for `stage`."""
    m = n // procs
    if stage == "fft2" or (stage == "fft1" and kind == "c2c"):
        return (m, n, n), False, (m, n, n)
    if stage == "fft1":
        return (m, n // 2 + 1, n), False, (m, n // 2 + 1, n)
    if stage == "rfft2":
        return (m, n, n), True, (m, n, n // 2 + 1)
    if stage == "irfft2":
        return (m, n, n // 2 + 1), False, (m, n, n)
    raise ValueError(f"stage={stage!r}: expected one of fft2, fft1, rfft2, irfft2")


def numpy_reference(stage, x, n):
    import numpy as np
    if stage == "fft2":
        return np.fft.fftn(x, axes=(1, 2))
    if stage == "fft1":
        return np.fft.fft(x, axis=2)
    if stage == "rfft2":
        return np.fft.rfftn(x, axes=(1, 2))
    return np.fft.irfftn(x, s=(n, n), axes=(1, 2))


def make_transform(library, stage, x, n):
    """A zero-argument callable that transforms `x` (a new output per call, or a planned one)."""
    if library == "xla":
        import jax
        import jax.numpy as jnp
        xj = jnp.asarray(x)
        if stage == "fft1":  # the trailing axis of a contiguous block: a free 2-D view
            f = jax.jit(lambda b: jnp.fft.fft(b.reshape(-1, b.shape[-1]), axis=-1))
        else:
            f = jax.jit({"fft2": lambda b: jnp.fft.fftn(b, axes=(1, 2)),
                         "rfft2": lambda b: jnp.fft.rfftn(b, axes=(1, 2)),
                         "irfft2": lambda b: jnp.fft.irfftn(b, s=(n, n), axes=(1, 2))}[stage])
        return lambda: f(xj).block_until_ready()
    if library == "darray-fftw":
        import jax
        import jax.numpy as jnp

        from darray._src.kernels import fftw
        xj = jnp.asarray(x)
        axes = (2,) if stage == "fft1" else (1, 2)
        kind = {"rfft2": "r2c", "irfft2": "c2r"}.get(stage, "c2c")
        f = jax.jit(lambda b: fftw.transform(b, axes, kind, stage == "irfft2", (n,) * len(axes),
                                             None))
        return lambda: f(xj).block_until_ready()
    if library == "pocketfft":
        import scipy.fft as sf
        return {"fft2": lambda: sf.fftn(x, axes=(1, 2), workers=1),
                "fft1": lambda: sf.fft(x.reshape(-1, x.shape[-1]), axis=-1, workers=1),
                "rfft2": lambda: sf.rfftn(x, axes=(1, 2), workers=1),
                "irfft2": lambda: sf.irfftn(x, s=(n, n), axes=(1, 2), workers=1)}[stage]
    if library == "mkl":
        import mkl_fft
        return {"fft2": lambda: mkl_fft.fftn(x, axes=(1, 2)),
                "fft1": lambda: mkl_fft.fft(x.reshape(-1, x.shape[-1]), axis=-1),
                "rfft2": lambda: mkl_fft.rfftn(x, axes=(1, 2)),
                "irfft2": lambda: mkl_fft.irfftn(x, s=(n, n), axes=(1, 2))}[stage]
    if library == "ducc0":
        from ducc0 import fft as dfft
        # inorm=2: divided by the product of the transformed lengths, numpy's backward norm
        return {"fft2": lambda: dfft.c2c(x, axes=(1, 2), forward=True, nthreads=1),
                "fft1": lambda: dfft.c2c(x, axes=(2,), forward=True, nthreads=1),
                "rfft2": lambda: dfft.r2c(x, axes=(1, 2), forward=True, nthreads=1),
                "irfft2": lambda: dfft.c2r(x, axes=(1, 2), lastsize=n, forward=False,
                                           inorm=2, nthreads=1)}[stage]
    if library == "fftw":
        import pyfftw
        out_shape = x.shape[:2] + {"rfft2": (n // 2 + 1,), "irfft2": (n,)}.get(stage,
                                                                             x.shape[2:])
        a = pyfftw.empty_aligned(x.shape, x.dtype)
        b = pyfftw.empty_aligned(out_shape, "float64" if stage == "irfft2" else "complex128")
        axes = (2,) if stage == "fft1" else (1, 2)
        plan = pyfftw.FFTW(a, b, axes=axes, threads=1, flags=("FFTW_MEASURE",),
                           direction="FFTW_BACKWARD" if stage == "irfft2" else "FFTW_FORWARD")
        # after planning: FFTW_MEASURE overwrites the buffers. A c2r transform overwrites its
        # input too: the check runs first, on these values; later calls stay finite
        a[...] = x
        return lambda: plan()
    raise ValueError(f"library={library!r}: expected one of {LIBRARIES}")


def worker(argv):
    """One process of a job: library stage kind n procs repeats warmup rank bind barrier_dir
    result."""
    library, stage, kind = argv[0], argv[1], argv[2]
    n, procs, repeats, warmup, rank, bind = (int(a) for a in argv[3:9])
    barrier_dir, result_path = argv[9], argv[10]
    if bind:  # before any library starts its threads: XLA sizes its pools to this mask
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[rank % len(cores)]})
    if library in IN_THIS_PYTHON:
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
        os.environ["JAX_PLATFORMS"] = "cpu"
        import jax
        jax.config.update("jax_enable_x64", True)
    import numpy as np
    shape, real, _ = block_shapes(stage, kind, n, procs)
    rng = np.random.default_rng(rank)
    x = rng.standard_normal(shape)
    if not real:
        x = x + 1j * rng.standard_normal(shape)
    want = numpy_reference(stage, x, n)
    if library == "darray-fftw":
        import darray
        darray.set_config(local_fft="fftw")
    run = make_transform(library, stage, x, n)
    got = np.asarray(run()).reshape(want.shape)  # fft1 runs on a 2-D view
    error = float(np.abs(got - want).max() / np.abs(want).max())
    # warm-up beyond the first call (plans, caches; and XLA's first calls in a process run
    # 3-8x their steady time for a few hundred ms: 43-71 ms against 7-9 ms for a 128^3 fft2)
    for _ in range(warmup):
        run()
    open(os.path.join(barrier_dir, f"ready.{rank}"), "w").close()
    deadline = time.time() + 120
    while len(os.listdir(barrier_dir)) < procs and time.time() < deadline:
        time.sleep(0.005)
    import resource
    times, faults = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / repeats
    with open(result_path, "w") as f:
        json.dump({"times": times, "error": error, "faults": faults}, f)


def run_job(python, library, stage, kind, n, procs, repeats, timeout, bind, tunables,
            warmup=10):
    """`procs` processes at once; the per-call time of the slowest, or None and why."""
    env = dict(os.environ, **ONE_THREAD)
    env["GLIBC_TUNABLES"] = ":".join(t for t in (os.environ.get("GLIBC_TUNABLES"), tunables)
                                     if t)
    with tempfile.TemporaryDirectory() as tmp:
        barrier = os.path.join(tmp, "barrier")
        os.mkdir(barrier)
        results = [os.path.join(tmp, f"result.{r}.json") for r in range(procs)]
        jobs = [subprocess.Popen([python, os.path.abspath(__file__), "--worker", library,
                                  stage, kind, str(n), str(procs), str(repeats),
                                  str(warmup), str(r),
                                  str(int(bind)), barrier, results[r]],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)
                for r in range(procs)]
        logs = []
        for job in jobs:
            try:
                logs.append(job.communicate(timeout=timeout)[0])
            except subprocess.TimeoutExpired:
                for other in jobs:
                    other.kill()
                return None, f"timed out after {timeout} s"
        if any(job.returncode for job in jobs):
            return None, "failed: " + " | ".join(log[-300:] for log in logs if log)
        per_rank = []
        for path in results:
            with open(path) as f:
                per_rank.append(json.load(f))
    per_call = [max(ts) for ts in zip(*(r["times"] for r in per_rank))]
    return {"ms": 1e3 * statistics.median(per_call), "error": max(r["error"] for r in per_rank),
            "faults": max(r["faults"] for r in per_rank)}, None


def why_missing(python, library):
    if library == "darray-fftw":
        probe = subprocess.run([python, "-c", "from darray._src.kernels import fftw; "
                                "why = fftw.load(); print(why or ''); raise SystemExit(bool(why))"],
                               capture_output=True, text=True)
        return None if probe.returncode == 0 else (probe.stdout + probe.stderr).strip()[-300:]
    probe = subprocess.run([python, "-c", f"import {MODULES[library]}"], capture_output=True,
                           text=True)
    if probe.returncode == 0:
        return None
    return f"{python} cannot import {MODULES[library]}: pip install {MODULES[library]}"


def round_trips(sizes, kinds, rounds, repeats, planner):
    """darray's jitted round trips on 8 virtual CPU devices, local_fft "xla" beside "fftw"."""
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np

    import darray
    from darray._src.kernels import fftw
    why = fftw.load()
    if why:
        sys.exit(f"--round-trips needs FFTW: {why}")
    mesh = jax.make_mesh((8,), ("x",))
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"FFTW: {fftw.info()['version']}, planner {planner!r}")
    dtypes = {"c2c": ("complex64", "complex128"), "r2c": ("float32", "float64")}
    cases = [(n, kind, dtype) for n in sizes for kind in kinds for dtype in dtypes[kind]]
    times: dict = {}
    errors: dict = {}
    for rnd in range(rounds):
        for n, kind, dtype in cases:
            rng = np.random.default_rng(0)
            host = rng.standard_normal((n, n, n))
            if kind == "c2c":
                host = host + 1j * rng.standard_normal((n, n, n))
            host = host.astype(dtype)
            x = darray.asarray(host, mesh=mesh, spec=("x", None, None))
            order = ("xla", "fftw") if rnd % 2 == 0 else ("fftw", "xla")
            for provider in order:
                with darray.config_context(local_fft=provider, fftw_planner=planner):
                    if kind == "c2c":
                        f = jax.jit(lambda a: darray.fft.ifftn(darray.fft.fftn(a)))
                        spec = jax.jit(darray.fft.fftn)
                    else:
                        f = jax.jit(lambda a, n=n: darray.fft.irfftn(darray.fft.rfftn(a),
                                                                     s=(n, n, n)))
                        spec = jax.jit(darray.fft.rfftn)
                    key = (n, kind, dtype, provider)
                    if key not in errors:  # forward vs numpy in float64, relative
                        want = (np.fft.fftn if kind == "c2c" else np.fft.rfftn)(
                            host.astype(np.complex128 if kind == "c2c" else np.float64))
                        got = np.asarray(spec(x))
                        back = np.asarray(f(x))
                        errors[key] = (float(np.abs(got - want).max() / np.abs(want).max()),
                                       float(np.abs(back - host).max()))
                    f(x).data.block_until_ready()
                    ts = []
                    for _ in range(repeats):
                        t0 = time.perf_counter()
                        f(x).data.block_until_ready()
                        ts.append(time.perf_counter() - t0)
                    # the best call: on a shared machine the others measure the other jobs
                    times.setdefault(key, []).append(min(ts))
            print(f"round {rnd} {n}^3 {kind} {dtype}: " + ", ".join(
                f"{p} {1e3 * times[(n, kind, dtype, p)][-1]:.1f} ms" for p in ("xla", "fftw")),
                flush=True)
    print(f"\nuptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"{'case':28s} {'xla ms':>8s} {'fftw ms':>8s} {'fftw/xla':>8s} "
          f"{'fwd err xla':>11s} {'fwd err fftw':>12s} {'rt err fftw':>11s}")
    for n, kind, dtype in cases:
        xla = statistics.median(times[(n, kind, dtype, "xla")])
        ours = statistics.median(times[(n, kind, dtype, "fftw")])
        print(f"{f'{n}^3 {kind} {dtype}':28s} {1e3 * xla:8.1f} {1e3 * ours:8.1f} "
              f"{ours / xla:8.2f} {errors[(n, kind, dtype, 'xla')][0]:11.1e} "
              f"{errors[(n, kind, dtype, 'fftw')][0]:12.1e} "
              f"{errors[(n, kind, dtype, 'fftw')][1]:11.1e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=2, help="processes at once (ranks)")
    parser.add_argument("--sizes", default="128,256", help="grid sizes n (n^3 grids)")
    parser.add_argument("--kinds", default="c2c,r2c")
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--rounds", type=int, default=2, help="interleaved sweeps")
    parser.add_argument("--repeats", type=int, default=9, help="timed calls per job")
    parser.add_argument("--warmup", type=int, default=10,
                        help="untimed calls after the checked one, in every library")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per job")
    parser.add_argument("--peer-python", default=sys.executable,
                        help="python with scipy / pyfftw / mkl_fft / ducc0 (xla runs in this one)")
    parser.add_argument("--bind-to-core", action=argparse.BooleanOptionalAction, default=True,
                        help="bind each process to one core, as `mpiexec --bind-to core` does "
                             "(default: on)")
    parser.add_argument("--glibc-tunables", default=recommended_glibc_tunables(),
                        help="GLIBC_TUNABLES for every process (default: darray's recommended "
                             "%(default)s; '' for none)")
    parser.add_argument("--json", default=str(default_json_path("bench_local_fft")))
    parser.add_argument("--round-trips", action="store_true",
                        help="darray's round trips on 8 virtual devices, local_fft xla vs fftw")
    parser.add_argument("--planner", default="estimate", help="--round-trips: fftw_planner")
    args = parser.parse_args(argv)
    if args.round_trips:
        return round_trips([int(s) for s in args.sizes.split(",")], args.kinds.split(","),
                           args.rounds, args.repeats, args.planner)
    if args.bind_to_core and not hasattr(os, "sched_setaffinity"):
        parser.error("--bind-to-core needs os.sched_setaffinity (Linux); use --no-bind-to-core")
    pythons = {}
    for library in args.libraries.split(","):
        if library not in LIBRARIES:
            parser.error(f"--libraries: {library!r} is not one of {', '.join(LIBRARIES)}")
        python = sys.executable if library in IN_THIS_PYTHON else args.peer_python
        why = why_missing(python, library)
        if why:
            print(f"skipped {library}: {why}")
        else:
            pythons[library] = python
    if "xla" not in pythons:
        sys.exit("bench_local_fft compares with XLA: jax must import in this python")
    cases = [(n, kind, stage) for n in (int(s) for s in args.sizes.split(","))
             for kind in args.kinds.split(",") for stage in STAGES[kind]]
    for n, _, _ in cases:
        if n % args.procs:
            parser.error(f"--sizes: {n} is not a multiple of --procs {args.procs}")
    samples: dict = {}
    t_start, load_before = time.time(), os.getloadavg()
    for rnd in range(args.rounds):
        for case in cases:
            order = list(pythons) if rnd % 2 == 0 else list(reversed(pythons))
            for library in order:
                res, why = run_job(pythons[library], library, case[2], case[1], case[0],
                                   args.procs, args.repeats, args.timeout, args.bind_to_core,
                                   args.glibc_tunables, args.warmup)
                samples.setdefault((case, library), []).append(res or {"failed": why})
                print(f"round {rnd} {case[0]}^3 {case[1]} {case[2]} {library}: "
                      + (f"{res['ms']:.2f} ms" if res else why), flush=True)
    load_after = os.getloadavg()
    print(f"\n({time.time() - t_start:.0f} s; {args.procs} processes at once, "
          f"{'each bound to one core' if args.bind_to_core else 'unbound'}, "
          f"GLIBC_TUNABLES={args.glibc_tunables or '(none)'}, "
          f"{args.rounds} rounds, median of {args.repeats} calls after {args.warmup} untimed; "
          f"load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; {os.cpu_count()} cores)")
    rows = summarise(samples, cases, list(pythons), args.procs)
    if rows:
        write_table(rows, args.json, "bench_local_fft", "XLA:CPU's FFT",
                    "local FFT per block over XLA:CPU's")
    return rows


def summarise(samples, cases, libraries, procs):
    """Print one table per block; return the JSON rows of the correct contenders."""
    rows = []
    for case in cases:
        n, kind, stage = case
        shape, _, _ = block_shapes(stage, kind, n, procs)
        print(f"\n{n}^3 {kind}, {stage} of a {'x'.join(map(str, shape))} block")
        print(f"  {'library':10s} {'ms':>8s} {'x XLA':>7s} {'error':>9s} {'faults/call':>11s}")
        ok = {lib: [s for s in samples.get((case, lib), []) if "ms" in s] for lib in libraries}
        xla = ok.get("xla")
        xla_ms = statistics.median(s["ms"] for s in xla) if xla else None
        for lib in libraries:
            if not ok[lib]:
                print(f"  {lib:10s} {samples[(case, lib)][-1]['failed']}")
                continue
            ms = statistics.median(s["ms"] for s in ok[lib])
            error = max(s["error"] for s in ok[lib])
            faults = statistics.median(s["faults"] for s in ok[lib])
            correct = error < 1e-12
            ratio = ms / xla_ms if xla_ms and correct else None
            flag = ("" if correct else "  WRONG: left out of the ratios") + (
                "  (> 20% faster than XLA)" if ratio is not None and ratio < 1 / 1.2 else "")
            print(f"  {lib:10s} {ms:8.2f} {ratio if ratio else float('nan'):7.2f} "
                  f"{error:9.1e} {faults:11.0f}{flag}")
            if ratio is not None:
                rows.append(make_row(lib, f"{n}^3 {kind} {stage}", f"{procs} procs",
                                     ms / 1e3, ratio, error=error, faults_per_call=faults))
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2:])
    else:
        main()
