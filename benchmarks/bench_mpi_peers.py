"""darray's MPI FFT against the CPU distributed FFTs cluster users pick: dtFFT and mpi4py-fft.

One run launches, for each process count (`--procs`, default 2 and 4), grid (`--sizes`,
default 128^3 and 256^3) and kind (`--kinds`: c2c complex128, r2c float64), one `mpiexec` job
per contender, and repeats the whole sweep `--rounds` times with the contenders interleaved, so
that a load that comes and goes weighs on all of them alike. The contenders:

* ``darray-eager``: ``darray.fft.fftn`` then ``ifftn`` (``rfftn`` / ``irfftn``), called eagerly,
  with the MPI transport (``darray.set_config(transpose_backend="mpi")``), slab split;
* ``darray-jit``: the same round trip inside one ``jax.jit``;
* ``darray-fftw-eager``, ``darray-fftw-jit``: the same two with FFTW as the local FFT
  (``local_fft="fftw"``, docs/fftw.md; ``--fftw-planner``, default ``measure``, its planning
  flag, planned during the warm-up calls): skipped with
  the reason where no FFTW library is found (``pip install pyfftw``);
* ``dtfft-default``: dtFFT's C2C / R2C plan with its default configuration (FFTW executor);
* ``dtfft-p2p``, ``dtfft-p2p-pipelined``, ``dtfft-a2a``: the same with one configuration line,
  ``Config(backend=MPI_P2P / MPI_P2P_PIPELINED / MPI_A2A)``; "dtfft-best" is the fastest
  correct one of these three, per case;
* ``mpi4py-fft``: PFFT, slab, FFTW backend.

Every contender runs with the glibc tunables darray's performance guide recommends for CPU runs
(``--glibc-tunables``, default ``darray._src.layout.memory.HOST_BUFFER_TUNABLES``; ``""`` leaves
them out): large buffers then come as transparent huge pages and smaller ones are reused,
instead of being page-faulted 4 KiB at a time on every call, which is what darray's jitted and
eager calls pay for each buffer; the peers, which plan their buffers once, are run the same way
for fairness.

Every job times a forward + backward round trip (median of `--repeats` after `--warmup`
untimed ones, 10 by default, their times printed: the first compiles or plans, over the next
the allocator's heaps grow to their working set, as in a simulation's thousands of calls;
darray's eager calls take up to 6 to settle; each between barriers),
checks the round trip, and checks the forward transform on a non-cubic grid (`--check-shape`,
default 24x20x18) against numpy's ``fftn`` / ``rfftn`` of the gathered input in float64.
Memory comes from an untimed job of its own per contender and round (the largest over rounds
reported): the resident set size sampled every 2 ms (the largest over the ranks; peak during
the round trips minus the RSS just before the input was made, in blocks of the local complex
array ``n^3 / P * 16`` bytes; darray compiles on an array of its own first), with glibc
returning every freed block of 1 MiB or more (`_MEMORY_TUNABLES`), so that it counts live
arrays, not buffers kept for reuse. The timed jobs sample nothing: the sampling thread would
share the rank's one core. A contender whose check fails is printed as WRONG and left out of
the ratios. Every contender's ranks are bound to one core each (`--no-bind-to-core` leaves
binding to each mpiexec's default: none for MPICH's, cores for Open MPI's at 2 ranks): XLA
sizes its thread pools to the cores a process may run on, so unbound ranks each start a pool
as wide as the node.

Set-up of the peers (none is a dependency of darray; a peer that is missing is skipped with
the reason):

* dtFFT: ``python3 -m pip install dtfft-fftw-mpich`` (GPL-3.0, used only here). Its wheel links
  ``libmpi.so.12``, ``libmpifort.so.12``, ``libmpicxx.so.12``, FFTW and libgfortran, which
  neither the ``mpich`` wheel nor Debian ship under those names. On Debian 12:
  ``apt-get install libmpich12 libfftw3-double3 libfftw3-single3 libgfortran5``, then a
  directory of symlinks ``libmpi.so.12 -> libmpich.so.12``, ``libmpifort.so.12 ->
  libmpichfort.so.12``, ``libmpicxx.so.12 -> libmpichcxx.so.12`` (all in
  /usr/lib/x86_64-linux-gnu), passed as ``--dtfft-libs DIR`` (it goes on the dtFFT jobs'
  LD_LIBRARY_PATH only). ``--dtfft-python`` names the interpreter that has dtfft (default
  this one).
* mpi4py-fft: Debian's ``apt-get install python3-mpi4py-fft`` (built on Open MPI): its jobs run
  with ``--pfft-python /usr/bin/python3`` under ``--pfft-mpiexec mpiexec.openmpi``.

darray's jobs (and dtFFT's) run under the ``mpiexec`` on PATH (the ``mpich`` wheel's).

Usage::

    python3 benchmarks/bench_mpi_peers.py --dtfft-python /tmp/vpeer/bin/python \\
        --dtfft-libs /tmp/mpishim --pfft-python /usr/bin/python3
    python3 benchmarks/bench_mpi_peers.py --procs 2 --sizes 64 --rounds 1   # a quick look
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _bench_common import (  # noqa: E402
    default_json_path,
    make_row,
    recommended_glibc_tunables,
    write_table,
)
from bench_multiprocess import PeakRss, _timed, run_job  # noqa: E402

CONTENDERS = ("darray-eager", "darray-jit", "darray-fftw-eager", "darray-fftw-jit",
              "dtfft-default", "dtfft-p2p", "dtfft-p2p-pipelined", "dtfft-a2a", "mpi4py-fft")
# The memory jobs (one per contender per round, untimed): every allocation of 1 MiB or more is
# its own mapping, returned when freed (in place of the tunables that keep freed buffers for
# reuse), so the RSS measures the arrays alive at the peak, not buffers kept for the next call
_MEMORY_TUNABLES = "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=1048576"
MEMORY_JOB_ENV = "DARRAY_BENCH_MEMORY_JOB"  # "1": sample the RSS (timed jobs do not)
FFTW_PLANNER_ENV = "DARRAY_BENCH_FFTW_PLANNER"  # darray-fftw-*'s fftw_planner
DTFFT_BACKENDS = {"dtfft-p2p": "MPI_P2P", "dtfft-p2p-pipelined": "MPI_P2P_PIPELINED",
                  "dtfft-a2a": "MPI_A2A"}


# ---------------------------------------------------------------- one rank of a job

def _rel_err(got, want) -> float:
    import numpy as np
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-300))


def _check_forward(library, kind, shape, comm):
    """The forward transform of a seeded array of `shape` by `library`, on the root, against
    numpy's in float64: the largest error relative to the largest magnitude (None off-root)."""
    import numpy as np
    rng = np.random.default_rng(7)
    full = rng.standard_normal(shape)
    if kind == "c2c":
        full = full + 1j * rng.standard_normal(shape)
    want = np.fft.fftn(full) if kind == "c2c" else np.fft.rfftn(full)
    got = _forward_gathered(library, kind, full, comm)
    return None if got is None else _rel_err(got, want)


def _forward_gathered(library, kind, full, comm):
    """`library`'s forward transform of the global array `full` (each rank gives its own part),
    gathered in numpy's axis order on the root."""
    import numpy as np
    if library.startswith("darray"):
        import jax
        _, darray, mesh = _darray_started(library)
        x = darray.asarray(full, mesh=mesh, spec=("x",))
        fwd = darray.fft.fftn if kind == "c2c" else darray.fft.rfftn
        y = jax.jit(fwd)(x) if library.endswith("-jit") else fwd(x)
        gathered = darray.distributed.gather(y)  # collective: every rank takes part
        return gathered if comm.rank == 0 else None
    if library == "mpi4py-fft":
        from mpi4py_fft import PFFT, newDistArray
        fft = PFFT(comm, full.shape, dtype=full.dtype, backend="fftw", slab=True)
        u = newDistArray(fft, False)
        u[:] = full[tuple(slice(s, s + n) for s, n in zip(u.substart, u.shape))]
        u_hat = fft.forward(u, newDistArray(fft, True), normalize=False)  # numpy's scale
        pieces = comm.gather((u_hat.substart, np.asarray(u_hat)), root=0)
        return _assemble(pieces, _spectrum_shape(full.shape, kind)) if comm.rank == 0 else None
    plan, cin, cout = _dtfft_plan(library, kind, full.shape, comm)
    local_in, out_buf = _dtfft_buffers(plan, kind, cin, cout)
    local_in[...] = full[tuple(slice(s, s + n) for s, n in zip(*cin))]
    import dtfft
    plan.execute(local_in, out_buf, dtfft.Execute.FORWARD)
    # dtFFT's forward leaves the transposed layout: C order (y, x, z) from (z, y, x)
    out = out_buf.transpose(2, 0, 1)
    starts = (cout[0][2], cout[0][0], cout[0][1])
    pieces = comm.gather((starts, np.array(out)), root=0)
    result = _assemble(pieces, _spectrum_shape(full.shape, kind)) if comm.rank == 0 else None
    plan.destroy()
    return result


def _spectrum_shape(shape, kind):
    """The forward transform's shape: r2c halves the last axis, as numpy's rfftn."""
    return tuple(shape[:-1]) + (shape[-1] // 2 + 1,) if kind == "r2c" else tuple(shape)


def _assemble(pieces, shape):
    import numpy as np
    out = np.zeros(shape, complex)
    for starts, piece in pieces:
        out[tuple(slice(s, s + n) for s, n in zip(starts, piece.shape))] = piece
    return out


_DARRAY: dict = {}


def _darray_started(library="darray-jit"):
    if not _DARRAY:
        import jax
        jax.config.update("jax_enable_x64", True)
        import darray
        darray.distributed.initialize()
        darray.set_config(transpose_backend="mpi")
        if library.startswith("darray-fftw"):  # a job runs one contender: set once
            darray.set_config(local_fft="fftw",
                              fftw_planner=os.environ.get(FFTW_PLANNER_ENV, "measure"))
        mesh = jax.make_mesh((jax.process_count(),), ("x",),
                             axis_types=(jax.sharding.AxisType.Auto,))
        _DARRAY.update(jax=jax, darray=darray, mesh=mesh)
    return _DARRAY["jax"], _DARRAY["darray"], _DARRAY["mesh"]


def _dtfft_plan(library, kind, shape, comm):
    """A dtFFT plan of the C-order `shape` (dtFFT takes Fortran order: reversed), its C-order
    (starts, counts) of the input slab and of the output block (the latter in dtFFT's order)."""
    import dtfft
    config = None
    if library in DTFFT_BACKENDS:
        config = dtfft.Config(backend=getattr(dtfft.Backend, DTFFT_BACKENDS[library]))
    cls = dtfft.PlanC2C if kind == "c2c" else dtfft.PlanR2C
    kwargs = {"config": config} if config is not None else {}
    plan = cls(list(shape[::-1]), comm, dtfft.Precision.DOUBLE, dtfft.Effort.ESTIMATE,
               dtfft.Executor.FFTW3, **kwargs)
    in_starts, in_counts, out_starts, out_counts, _ = plan.local_sizes
    cin = (in_starts[::-1], in_counts[::-1])
    cout = (out_starts[::-1], out_counts[::-1])
    return plan, cin, cout


def _dtfft_buffers(plan, kind, cin, cout):
    import numpy as np
    size = plan.alloc_size
    in_dtype = complex if kind == "c2c" else float
    in_elems = size * (1 if kind == "c2c" else 2)  # R2C: alloc_size counts complex elements
    local_in = np.zeros(in_elems, in_dtype)[: int(np.prod(cin[1]))].reshape(cin[1])
    out_buf = np.zeros(size, complex)[: int(np.prod(cout[1]))].reshape(cout[1])
    return local_in, out_buf


def _round_trip_job(library, kind, n, repeats, warmup, comm):
    """Time `library`'s round trip on an n^3 grid: returns the times, the RSS growth, the
    round-trip error."""
    import numpy as np
    shape = (n, n, n)
    rng = np.random.default_rng(comm.rank)
    if library.startswith("darray"):
        jax, darray, mesh = _darray_started(library)
        dtype = np.complex128 if kind == "c2c" else np.float64
        fwd, inv = ((darray.fft.fftn, darray.fft.ifftn) if kind == "c2c"
                    else (darray.fft.rfftn, lambda y: darray.fft.irfftn(y, s=shape)))
        both = (jax.jit(lambda a: inv(fwd(a))) if library.endswith("-jit")
                else (lambda a: inv(fwd(a))))
        # compile on an array of its own, dropped before the baseline: the programs stay
        # resident like a peer's plan, the compiler's working memory is not counted. glibc
        # keeps what XLA freed for reuse unless told to return large blocks (`_MEMORY_TUNABLES`,
        # set on darray's memory jobs only: it costs page faults, so they are not timed)
        def make(seed):
            return darray.random.normal(jax.random.key(seed), shape, dtype, mesh=mesh,
                                        spec=("x",))
        both(make(1)).data.block_until_ready()
        rss_before = _settled_rss()
        x = make(0)
        x.data.block_until_ready()
        holder = {}

        def round_trip():
            # the last result is dropped first: the peers write each round trip into the one
            # output buffer they allocated, and a user's `u = step(u)` keeps no old result
            holder.pop("y", None)
            holder["y"] = both(x)
            holder["y"].data.block_until_ready()

        def error():
            return float(darray.max(darray.abs(holder.pop("y") - x)))
    elif library == "mpi4py-fft":
        from mpi4py_fft import PFFT, newDistArray
        fft = PFFT(comm, shape, dtype=complex if kind == "c2c" else float, backend="fftw",
                   slab=True)
        rss_before = PeakRss.now()
        u = newDistArray(fft, False)
        u[:] = rng.standard_normal(u.shape)
        if kind == "c2c":
            u += 1j * rng.standard_normal(u.shape)
        u_hat, back = newDistArray(fft, True), newDistArray(fft, False)

        def round_trip():
            fft.forward(u, u_hat)
            fft.backward(u_hat, back)

        def error():
            return float(np.abs(back - u).max())
    else:
        import dtfft
        plan, cin, cout = _dtfft_plan(library, kind, shape, comm)
        # the reference values, made before the baseline: dtFFT may use its input as scratch,
        # so every round trip starts from a copy (a benchmark's need, not a user's)
        original = rng.standard_normal(cin[1])
        if kind == "c2c":
            original = original + 1j * rng.standard_normal(cin[1])
        rss_before = PeakRss.now()
        u, u_hat = _dtfft_buffers(plan, kind, cin, cout)
        u[...] = original
        back = np.empty_like(u)
        aux = np.empty(plan.aux_size, complex)

        def round_trip():
            u[...] = original
            plan.execute(u, u_hat, dtfft.Execute.FORWARD, aux)
            plan.execute(u_hat, back, dtfft.Execute.BACKWARD, aux)

        def error():
            # dtFFT's backward is unnormalised
            return float(np.abs(back / (n ** 3) - original).max())
    # Only memory jobs sample the RSS: the sampler is a thread that wakes every 2 ms on the
    # rank's one bound core, which slows a contender that releases the GIL while it computes
    # (darray's XLA calls: 0-10% in interleaved runs) and not one that holds it.
    sampler = PeakRss() if os.environ.get(MEMORY_JOB_ENV) == "1" else contextlib.nullcontext()
    with sampler:
        # untimed by the median, but printed: the first compiles or plans; over the next the
        # allocator's heaps grow to their working set (darray's eager 128^3 c2c round trips:
        # 120-150 ms for calls 2-4, 40-45 ms from the sixth), which a simulation's thousands
        # of calls do not see
        warm = _timed(round_trip, comm, warmup)
        times = _timed(round_trip, comm, repeats)
    growth = sampler.peak - rss_before if isinstance(sampler, PeakRss) else None
    return {"times": times, "growth": growth, "error": error(), "warmup_times": warm}


def _settled_rss() -> int:
    """The RSS once the warm-up's arrays are gone: the CPU client frees buffers after their
    last use asynchronously, so wait until the RSS stops falling (at most 2 s)."""
    import gc
    gc.collect()
    rss = PeakRss.now()
    for _ in range(20):
        time.sleep(0.1)
        now = PeakRss.now()
        if now >= rss:
            return now
        rss = now
    return rss


def rank_main(argv):
    """One rank of one job: argv = result_path, library, kind, n, repeats, warm-up calls,
    check shape."""
    result_path, library, kind = argv[0], argv[1], argv[2]
    n, repeats, warmup = int(argv[3]), int(argv[4]), int(argv[5])
    check_shape = tuple(int(s) for s in argv[6].split("x"))
    if library.startswith("darray"):
        os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=1 "
                                   + os.environ.get("DARRAY_BENCH_XLA_FLAGS", ""))
        os.environ["JAX_PLATFORMS"] = "cpu"
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    result = {"status": "ok"}
    check = _check_forward(library, kind, check_shape, comm)
    result.update(_round_trip_job(library, kind, n, repeats, warmup, comm))
    every = comm.gather(result, root=0)
    if comm.rank == 0:
        with open(result_path, "w") as f:
            json.dump(_merge_ranks(every, check), f)


def _merge_ranks(every, check):
    """One job's result from its ranks': each call's time is the slowest rank's, the memory
    growth and the error the largest."""
    merged = dict(every[0])
    merged["check"] = check
    growths = [r["growth"] for r in every if r["growth"] is not None]
    merged["growth"] = max(growths) if growths else None
    merged["error"] = max(r["error"] for r in every)
    for key in ("times", "warmup_times"):
        merged[key] = [max(ts) for ts in zip(*(r[key] for r in every))]
    return merged


# ---------------------------------------------------------------- the driver

def _launch(cmd_prefix, nproc, args, timeout, env, bind=True):
    """One mpiexec job of `nproc` ranks: cmd_prefix is (mpiexec, python). `bind`: each rank
    bound to one core (MPICH's mpiexec binds nothing unless told; Open MPI's binds to cores for
    2 ranks by default), so that XLA sizes its thread pools to that core, not to the node."""
    binding = ["--bind-to", "core" if bind else "none"]
    return run_job(lambda result_path: [
        cmd_prefix[0], *binding, "-n", str(nproc), *cmd_prefix[1:], os.path.abspath(__file__),
        "--rank", result_path, *map(str, args)], timeout, env, prefix="bench-peers-")


def _why_missing(python, module, env) -> str | None:
    probe = subprocess.run([python, "-c", f"import {module}"], env=env, capture_output=True,
                           text=True, timeout=120)
    if probe.returncode == 0:
        return None
    return probe.stderr.strip().splitlines()[-1][:200] if probe.stderr else "import failed"


def _why_no_fftw(env) -> str | None:
    """None where darray finds an FFTW library (its local_fft="fftw" provider), else why not."""
    probe = subprocess.run(
        [sys.executable, "-c", "from darray._src.kernels import fftw; print(fftw.load() or '')"],
        env=env, capture_output=True, text=True, timeout=120)
    why = probe.stdout.strip() if probe.returncode == 0 else (probe.stderr.strip() or "failed")
    return why.splitlines()[-1][:200] if why else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="2,4")
    parser.add_argument("--sizes", default="128,256")
    parser.add_argument("--kinds", default="c2c,r2c")
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--rounds", type=int, default=3, help="interleaved sweeps")
    parser.add_argument("--repeats", type=int, default=5, help="timed round trips per job")
    parser.add_argument("--warmup", type=int, default=10,
                        help="untimed round trips first (printed): the first compiles or plans, "
                             "the next grow the allocator's heaps to their working set")
    parser.add_argument("--check-shape", default="24x20x18")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per mpiexec job")
    parser.add_argument("--fftw-planner", default="measure", choices=("estimate", "measure"),
                        help="darray-fftw-*'s fftw_planner option (measure: FFTW_ESTIMATE's "
                             "2-D plans of 256^2 planes took 3x XLA's time, docs/fftw.md)")
    parser.add_argument("--dtfft-python", default=sys.executable)
    parser.add_argument("--dtfft-libs", default=None, help="directory for dtFFT's LD_LIBRARY_PATH")
    parser.add_argument("--pfft-python", default=sys.executable)
    parser.add_argument("--pfft-mpiexec", default=None,
                        help="mpiexec for mpi4py-fft (default: the one on PATH)")
    parser.add_argument("--glibc-tunables", default=recommended_glibc_tunables(),
                        help="GLIBC_TUNABLES for every contender, peers too (default: darray's "
                             "recommended %(default)s; '' for none)")
    parser.add_argument("--bind-to-core", action=argparse.BooleanOptionalAction, default=True,
                        help="bind every contender's ranks to one core each (default: on)")
    parser.add_argument("--json", default=str(default_json_path("bench_mpi_peers")),
                        help="where to write the table (correct contenders, time and ratio to "
                             "dtFFT's best backend) as JSON, a PNG plot beside it")
    args = parser.parse_args(argv)
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        sys.exit("bench_mpi_peers needs mpiexec and mpi4py: pip install 'darray[mpi]'")
    root = os.path.dirname(HERE)
    base_env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    if args.glibc_tunables:  # kept beside any tunables already set
        base_env["GLIBC_TUNABLES"] = ":".join(
            t for t in (os.environ.get("GLIBC_TUNABLES"), args.glibc_tunables) if t)
    dtfft_env = dict(base_env)
    if args.dtfft_libs:
        dtfft_env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (args.dtfft_libs, os.environ.get("LD_LIBRARY_PATH")) if p)
    launchers, skipped = {}, {}
    wanted = args.contenders.split(",")
    fftw_env = dict(base_env, **{FFTW_PLANNER_ENV: args.fftw_planner})
    for lib in wanted:
        if lib.startswith("darray-fftw"):
            why = _why_no_fftw(base_env)
            if why:
                skipped[lib] = why
            else:
                launchers[lib] = ([mpiexec, sys.executable], fftw_env)
        elif lib.startswith("darray"):
            launchers[lib] = ([mpiexec, sys.executable], base_env)
        elif lib.startswith("dtfft"):
            why = _why_missing(args.dtfft_python, "dtfft", dtfft_env)
            if why:
                skipped[lib] = why
            else:
                launchers[lib] = ([mpiexec, args.dtfft_python], dtfft_env)
        elif lib == "mpi4py-fft":
            why = _why_missing(args.pfft_python, "mpi4py_fft", base_env)
            if why:
                skipped[lib] = why
            else:
                # Open MPI refuses root and more ranks than cores unless told
                pfft_env = dict(base_env, OMPI_ALLOW_RUN_AS_ROOT="1",
                                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                                OMPI_MCA_rmaps_base_oversubscribe="1")
                launchers[lib] = ([shutil.which(args.pfft_mpiexec or "mpiexec") or mpiexec,
                                   args.pfft_python], pfft_env)
    for lib, why in skipped.items():
        print(f"skipped {lib}: {why}")
    procs = [int(p) for p in args.procs.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = args.kinds.split(",")
    runs: dict = {}
    t_start, load_before = time.time(), os.getloadavg()
    for rnd in range(args.rounds):
        for p in procs:
            for n in sizes:
                for kind in kinds:
                    order = list(launchers)
                    if rnd % 2:
                        order.reverse()  # alternate who goes first
                    for lib in order:
                        prefix, env = launchers[lib]
                        res = _launch(prefix, p, [lib, kind, n, args.repeats, args.warmup,
                                                  args.check_shape],
                                      args.timeout, env, args.bind_to_core)
                        runs.setdefault((p, n, kind, lib), []).append(res)
                        # every round, every contender: one memory job's peak is a sample
                        memory = _launch(prefix, p, [lib, kind, n, 1, args.warmup,
                                                     args.check_shape],
                                         args.timeout, dict(env, GLIBC_TUNABLES=_MEMORY_TUNABLES,
                                                            **{MEMORY_JOB_ENV: "1"}),
                                         args.bind_to_core)
                        res["memory_growth"] = memory.get("growth")
                        status = res["status"]
                        med = statistics.median(res["times"]) if status == "ok" else None
                        warm = res.get("warmup_times") or []
                        print(f"round {rnd} P={p} {n}^3 {kind} {lib}: "
                              + (f"{med * 1e3:.1f} ms (after {len(warm)} warm-up: "
                                 + ", ".join(f"{t * 1e3:.0f}" for t in warm) + " ms)"
                                 if med is not None else status),
                              flush=True)
                        if status != "ok" and "log" in res:
                            print(res["log"][-800:])
    load_after = os.getloadavg()
    print(f"\n(all jobs: {time.time() - t_start:.0f} s; "
          f"GLIBC_TUNABLES={base_env.get('GLIBC_TUNABLES', '(unset)')} for every contender, "
          f"ranks bound to {'one core each' if args.bind_to_core else 'nothing'}; "
          f"{args.rounds} interleaved rounds, "
          f"median of {args.repeats} round trips per job, median over rounds; load average "
          f"{load_before[0]:.2f}/{load_before[1]:.2f} before, {load_after[0]:.2f}/"
          f"{load_after[1]:.2f} after (1/5 min), {os.cpu_count()} cores)")
    cases = _summarise(runs, procs, sizes, kinds, list(launchers))
    rows = [make_row(lib, f"{case['n']}^3 {case['kind']}", f"{case['procs']} ranks",
                     r["ms"] / 1e3, r["ms"] / case["dtfft_best_ms"], blocks=r["blocks"],
                     forward_error=r["check"], round_trip_error=r["round_trip_error"])
            for case in cases if case["dtfft_best_ms"]
            for lib, r in case["contenders"].items() if r.get("correct")]
    if rows:
        write_table(rows, args.json, "bench_mpi_peers", "dtFFT's fastest correct backend",
                    "MPI FFT round trip over dtFFT's best backend")


def _memory_growth(lib, result) -> float | None:
    """The peak memory a contender's round trip adds, from its memory job of that round (None
    where that job failed). Timed jobs sample nothing; and their tunables keep freed buffers
    for reuse, which at 128^3 read as up to 10 blocks of darray's that no array holds."""
    return result.get("memory_growth")


def _summarise(runs, procs, sizes, kinds, libs):
    rows = []
    for p in procs:
        for n in sizes:
            for kind in kinds:
                block = n ** 3 / p * 16
                case = {}
                for lib in libs:
                    results = [r for r in runs.get((p, n, kind, lib), []) if r["status"] == "ok"]
                    if not results:
                        case[lib] = {"status": runs[(p, n, kind, lib)][-1]["status"]}
                        continue
                    tol = 1e-9
                    checks = [r["check"] for r in results]
                    errors = [r["error"] for r in results]
                    correct = max(checks) < tol and max(errors) < 1e-9 * 64
                    growths = [g for g in (_memory_growth(lib, r) for r in results)
                               if g is not None]
                    case[lib] = {"ms": 1e3 * statistics.median(
                                     statistics.median(r["times"]) for r in results),
                                 "blocks": max(growths) / block if growths else math.nan,
                                 "check": max(checks), "round_trip_error": max(errors),
                                 "correct": correct,
                                 "warmup": max(len(r.get("warmup_times") or []) for r in results)}
                dt = [case[k]["ms"] for k in DTFFT_BACKENDS
                      if k in case and case[k].get("correct")]
                best = min(dt) if dt else None
                print(f"\nP={p} {n}^3 {kind}" + (f"  (dtfft-best {best:.1f} ms)" if best else ""))
                print(f"  {'contender':22s} {'ms':>9s} {'x best dtFFT':>13s} {'blocks':>7s} "
                      f"{'forward err':>12s} {'round trip':>11s} {'warm-up':>8s}")
                for lib, r in case.items():
                    if "ms" not in r:
                        print(f"  {lib:22s} {r['status']}")
                        continue
                    ratio = (f"{r['ms'] / best:13.2f}" if best and r["correct"]
                             else f"{'-':>13s}")
                    flag = "" if r["correct"] else "  WRONG: left out of the ratios"
                    print(f"  {lib:22s} {r['ms']:9.1f} {ratio} {r['blocks']:7.2f} "
                          f"{r['check']:12.1e} {r['round_trip_error']:11.1e} "
                          f"{r['warmup']:8d}{flag}")
                rows.append({"procs": p, "n": n, "kind": kind, "dtfft_best_ms": best,
                             "contenders": case})
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2:])
    else:
        main()
