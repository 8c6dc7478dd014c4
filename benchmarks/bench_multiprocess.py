"""Several processes under mpiexec: darray's fftn round trip next to mpi4py-fft, and checkpoints.

One run of this script launches, for 2 and 4 processes with 1 CPU device each (`mpiexec -n P`,
this file as the rank program), one job per case and prints every result side by side:

* fftn round trip (`ifftn(fftn(x))`) of an n^3 complex128 array (`--dtype complex64` for
  single precision), slab split over the processes, for n = 128 and 256: darray with the JAX
  transpose backend (gloo collectives between processes); darray with the MPI transport backend
  (`darray.set_config(transpose_backend="mpi")`, only in a darray built with
  -DDARRAY_ENABLE_MPI=ON, installed or given as `--native-so PATH`: otherwise the row says "not
  built"); mpi4py-fft's PFFT (slab, FFTW backend) on the same grid. Time: median over
  `--repeats` round trips after one warm-up (compilation/planning), between barriers. Memory
  per process (the largest over the ranks): ru_maxrss (the job's lifetime peak; each case is
  its own job), the RSS once the input exists, and the RSS growth (peak RSS sampled every 2 ms
  during warm-up and timed round trips, minus that). Every round trip is checked:
  max |ifftn(fftn(x)) - x| must be at rounding level.
* darray.save / darray.load (onto another spec) of a 256^3 float32 array (`--io-n`) by P
  processes, each engine available (built-in "numpy" writer, "tensorstore"), in MB/s of the
  logical array, next to np.save / np.load of the same values from this one process.

Each job is one `mpiexec` launch (bounded: `--timeout` per job, then mpiexec and every process
under it are killed). The table is also written as JSON (default
benchmarks/results/bench_multiprocess.json) with a PNG beside it: `ratio` is the time over
mpi4py-fft's for the same grid and process count (fft rows; over darray-jax's when mpi4py-fft
is missing) or over np.save's / np.load's (io rows).

Needs MPICH's or Open MPI's mpiexec and mpi4py (`pip install 'darray[mpi]'`). mpi4py-fft has no
wheels: it compiles against FFTW, so install FFTW's headers first, e.g.
``apt-get install libfftw3-dev && python3 -m pip install mpi4py-fft``; without it its rows are
skipped with a note.

Usage::

    python3 benchmarks/bench_multiprocess.py                 # 2 and 4 processes, 128^3, 256^3
    python3 benchmarks/bench_multiprocess.py --procs 2 --sizes 64 --io-n 64 --repeats 2
    python3 benchmarks/bench_multiprocess.py --one-thread    # 1 compute thread per process
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FFT_LIBRARIES = ("darray-jax", "darray-mpi", "mpi4py-fft")


# ---------------------------------------------------------------- one rank of a job

class PeakRss:
    """Sample this process's resident set size in a thread; `peak` is the largest seen."""

    def __init__(self, every_s=0.002):
        self.every_s, self.peak, self._stop = every_s, self.now(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def now() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.now())
            time.sleep(self.every_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.now())


def _timed(fn, comm, repeats):
    times = []
    for _ in range(repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        comm.Barrier()
        times.append(time.perf_counter() - t0)
    return times


def _start_darray(transpose_backend="jax"):
    import jax
    jax.config.update("jax_enable_x64", True)
    import darray
    darray.distributed.initialize()
    darray.set_config(transpose_backend=transpose_backend)
    mesh = jax.make_mesh((jax.process_count(),), ("x",),
                         axis_types=(jax.sharding.AxisType.Auto,))
    return jax, darray, mesh


def _fft_job(library, n, dtype_name, repeats, comm):
    import numpy as np
    dtype = np.dtype(dtype_name)
    tol = 1e-10 if dtype == np.complex128 else 1e-4
    result = {"status": "ok"}
    if library == "mpi4py-fft":
        from mpi4py_fft import PFFT, newDistArray
        fft = PFFT(comm, (n, n, n), dtype=dtype, backend="fftw", slab=True)
        u = newDistArray(fft, False)
        rng = np.random.default_rng(comm.rank)
        u[:] = rng.standard_normal(u.shape) + 1j * rng.standard_normal(u.shape)
        u_hat, back = newDistArray(fft, True), newDistArray(fft, False)

        def round_trip():
            fft.forward(u, u_hat)
            fft.backward(u_hat, back)

        def error():
            return comm.allreduce(float(np.abs(back - u).max()), op=max_op(comm))
    else:
        jax, darray, mesh = _start_darray("mpi" if library == "darray-mpi" else "jax")
        from darray._src.backends.registry import BackendUnavailableError
        x = darray.random.normal(jax.random.key(0), (n, n, n), dtype, mesh=mesh, spec=("x",))
        x.data.block_until_ready()
        holder = {}

        def round_trip():
            y = darray.fft.ifftn(darray.fft.fftn(x))
            y.data.block_until_ready()
            holder["y"] = y

        def error():
            return float(darray.max(darray.abs(holder.pop("y") - x)))
        try:
            round_trip()
        except BackendUnavailableError as err:
            return {"status": "not built", "why": str(err)[:300]}
    rss_before = PeakRss.now()
    with PeakRss() as sampler:
        round_trip()  # warm-up: compile (darray) or plan (FFTW)
        times = _timed(round_trip, comm, repeats)
    err = error()
    if not err < tol:
        raise AssertionError(f"{library} {n}^3 {dtype}: round trip error {err} >= {tol}")
    result.update(times=times, error=err, rss_before=rss_before,
                  growth=sampler.peak - rss_before)
    return result


def max_op(comm):
    from mpi4py import MPI
    return MPI.MAX


def _io_job(n, repeats, root, comm):
    import numpy as np
    jax, darray, mesh = _start_darray()
    x = darray.random.normal(jax.random.key(0), (n, n, n), np.float32, mesh=mesh, spec=("x",))
    x.data.block_until_ready()
    has_tensorstore = darray._src.extras.io._tensorstore() is not None
    engines = ["numpy"] + (["tensorstore"] if has_tensorstore else [])
    out = {}
    for engine in engines:
        paths = [os.path.join(root, f"{engine}-{i}.zarr") for i in range(repeats)]
        it = iter(paths)
        save_times = _timed(lambda it=it, engine=engine: darray.save(next(it), x, engine=engine),
                            comm, repeats)
        loaded = {}

        def load(path=paths[-1], engine=engine, loaded=loaded):
            y = darray.load(path, mesh=mesh, spec=(None, "x"), engine=engine)
            y.data.block_until_ready()
            loaded["y"] = y
        load_times = _timed(load, comm, repeats)
        y = loaded.pop("y")
        assert y.layout.split == ((), ("x",), ()), y.layout
        assert bool(darray.all(y == x)), f"{engine}: loaded values differ from the saved ones"
        out[engine] = {"save": save_times, "load": load_times}
    return {"status": "ok", "engines": out}


def rank_main(argv):
    """One rank of one job: argv = kind, result_path, then the job's parameters."""
    kind, result_path = argv[0], argv[1]
    os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=1 "
                               + os.environ.get("DARRAY_BENCH_XLA_FLAGS", ""))
    os.environ["JAX_PLATFORMS"] = "cpu"
    native_so = os.environ.get("DARRAY_BENCH_NATIVE_SO")
    if native_so:  # an MPI-enabled build kept outside the installed package (--native-so)
        import importlib.util
        spec = importlib.util.spec_from_file_location("darray._native", native_so)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["darray._native"] = module
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if kind == "fft":
        library, n, dtype, repeats = argv[2], int(argv[3]), argv[4], int(argv[5])
        result = _fft_job(library, n, dtype, repeats, comm)
    else:
        n, repeats, root = int(argv[2]), int(argv[3]), argv[4]
        result = _io_job(n, repeats, root, comm)
    result["maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    every = comm.gather(result, root=0)
    if comm.rank == 0:
        merged = dict(every[0])
        for key in ("maxrss", "growth", "rss_before"):
            if key in merged:
                merged[key] = max(r[key] for r in every)  # the hungriest process
        with open(result_path, "w") as f:
            json.dump(merged, f)


# ---------------------------------------------------------------- the driver

def _launch(nproc, args, timeout, env):
    """One mpiexec job; returns its result dict, or {"status": "failed", ...}."""
    return run_job(lambda result_path: [
        shutil.which("mpiexec"), "-n", str(nproc), sys.executable, os.path.abspath(__file__),
        "--rank", args[0], result_path, *map(str, args[1:])], timeout, env)


def run_job(command_for, timeout, env, prefix="bench-mp-"):
    """Run ``command_for(result_path)`` (an mpiexec command line whose root rank writes its
    result as JSON at result_path), killing every process of it after `timeout` s. Returns the
    result dict, or {"status": "failed ..." / "timed out ...", "log": ...}."""
    fd, result_path = tempfile.mkstemp(suffix=".json", prefix=prefix)
    os.close(fd)
    os.remove(result_path)
    proc = subprocess.Popen(command_for(result_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    try:
        log, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_tree(proc.pid)
        proc.communicate()
        return {"status": f"timed out after {timeout} s"}
    if proc.returncode != 0 or not os.path.exists(result_path):
        tail = "\n".join(line for line in log.splitlines() if "[Gloo]" not in line)[-2000:]
        return {"status": f"failed (exit {proc.returncode})", "log": tail}
    with open(result_path) as f:
        result = json.load(f)
    os.remove(result_path)
    return result


def _kill_tree(root):
    """SIGKILL mpiexec and every process descended from it, all found before any dies (Hydra
    starts each rank in a session of its own: mpiexec's process group does not hold them)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]),
                                        []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _have_mpi4py_fft():
    try:
        import mpi4py_fft  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="2,4", help="process counts (comma-separated)")
    parser.add_argument("--sizes", default="128,256", help="fft grid sizes n (n^3)")
    parser.add_argument("--dtype", default="complex128", choices=("complex128", "complex64"))
    parser.add_argument("--io-n", type=int, default=256, help="save/load an n^3 float32 array")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per mpiexec job")
    parser.add_argument("--native-so", default=None,
                        help="a darray._native built with -DDARRAY_ENABLE_MPI=ON, used by the "
                             "ranks instead of the installed one (for the darray-mpi rows)")
    parser.add_argument("--one-thread", action="store_true",
                        help="one compute thread per process (XLA's intra-op pool, OpenMP), as "
                             "FFTW in mpi4py-fft uses; default: XLA's own thread pools")
    parser.add_argument("--json", default=None, help="where to write the table as JSON "
                        "(default benchmarks/results/bench_multiprocess.json)")
    args = parser.parse_args(argv)
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.dirname(HERE))
    import jax
    import numpy as np
    from _bench_common import default_json_path, make_row, progress, write_table

    import darray

    if shutil.which("mpiexec") is None:
        sys.exit("bench_multiprocess needs mpiexec and mpi4py: pip install 'darray[mpi]'")
    procs = [int(p) for p in args.procs.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    mpi_built = bool(darray.build_info().get("mpi")) or args.native_so is not None
    have_pfft = _have_mpi4py_fft()
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if args.one_thread:
        env.update(DARRAY_BENCH_XLA_FLAGS="--xla_cpu_multi_thread_eigen=false "
                   "intra_op_parallelism_threads=1", OMP_NUM_THREADS="1")
    if args.native_so:
        env["DARRAY_BENCH_NATIVE_SO"] = os.path.abspath(args.native_so)
    load_before = os.getloadavg()

    jobs = [("fft", p, lib, n) for p in procs for n in sizes for lib in FFT_LIBRARIES]
    jobs += [("io", p, None, args.io_n) for p in procs]
    results = {}
    root = tempfile.mkdtemp(prefix="darray-bench-mp-")
    try:
        for kind, p, lib, n in progress(jobs, "bench_multiprocess jobs"):
            if lib == "darray-mpi" and not mpi_built:
                results[kind, p, lib, n] = {"status": "not built"}
            elif lib == "mpi4py-fft" and not have_pfft:
                results[kind, p, lib, n] = {"status": "not installed"}
            elif kind == "fft":
                results[kind, p, lib, n] = _launch(p, ("fft", lib, n, args.dtype, args.repeats),
                                                   args.timeout, env)
            else:
                job_root = os.path.join(root, f"io-{p}")
                os.makedirs(job_root)
                results[kind, p, lib, n] = _launch(p, ("io", n, args.repeats, job_root),
                                                   args.timeout, env)
                shutil.rmtree(job_root, ignore_errors=True)
        # np.save / np.load of the same values from this one process (1 device)
        host = darray.distributed.gather(darray.random.normal(jax.random.key(0), (args.io_n,) * 3,
                                               np.float32, mesh=(1,), spec=("x",)))
        npy = os.path.join(root, "a.npy")
        t_np_save = statistics.median(_wall(lambda: np.save(npy, host)) for _ in
                                      range(args.repeats))
        t_np_load = statistics.median(_wall(lambda: np.load(npy)) for _ in range(args.repeats))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load_after = os.getloadavg()

    mb = 1e6
    rows = []
    print(f"\nbench_multiprocess: jax {jax.__version__}, {os.cpu_count()} CPU cores, "
          f"1 CPU device per process, "
          f"{'1 thread' if args.one_thread else 'default threads'} per process, "
          f"{args.dtype}, median of {args.repeats}; load average "
          f"{load_before[0]:.2f}/{load_before[1]:.2f} before, {load_after[0]:.2f}/"
          f"{load_after[1]:.2f} after (1/5 min)")
    print(f"{'fftn round trip':14s} {'procs':>5s} {'n^3':>5s} {'time ms':>9s} {'x pfft':>7s} "
          f"{'maxrss MB':>10s} {'input MB':>9s} {'growth MB':>10s} {'x pfft mem':>10s}  status")
    for p in procs:
        for n in sizes:
            ref = results["fft", p, "mpi4py-fft", n]
            if ref.get("status") != "ok":
                ref = results["fft", p, "darray-jax", n]
            for lib in FFT_LIBRARIES:
                r = results["fft", p, lib, n]
                if r.get("status") != "ok":
                    print(f"{lib:14s} {p:5d} {n:5d} {'':>9s} {'':>7s} {'':>10s} {'':>9s} "
                          f"{'':>10s} {'':>10s}  {r['status']}")
                    if "log" in r:
                        print(r["log"])
                    continue
                t = statistics.median(r["times"])
                ratio = t / statistics.median(ref["times"]) if ref.get("status") == "ok" else 1.0
                mem_ratio = (r["maxrss"] / ref["maxrss"]) if ref.get("status") == "ok" else 1.0
                print(f"{lib:14s} {p:5d} {n:5d} {t * 1e3:9.1f} {ratio:7.2f} "
                      f"{r['maxrss'] / mb:10.0f} {r['rss_before'] / mb:9.0f} "
                      f"{r['growth'] / mb:10.0f} {mem_ratio:10.2f}  "
                      f"ok (err {r['error']:.1e})")
                rows.append(make_row(f"{lib} fftn+ifftn", f"{n}^3 {args.dtype}", f"{p} proc",
                                     t, ratio, maxrss_mb=r["maxrss"] / mb,
                                     rss_with_input_mb=r["rss_before"] / mb,
                                     rss_growth_mb=r["growth"] / mb, error=r["error"]))
    io_mb = args.io_n ** 3 * 4 / mb
    print(f"\n{'checkpoint ' + str(args.io_n) + '^3 float32':32s} {'procs':>5s} "
          f"{'save MB/s':>10s} {'load MB/s':>10s} {'x np.save':>10s} {'x np.load':>10s} "
          f"{'maxrss MB':>10s}")
    print(f"{'np.save / np.load':32s} {1:5d} {io_mb / t_np_save:10.0f} {io_mb / t_np_load:10.0f}"
          f" {1:10.2f} {1:10.2f}")
    rows.append(make_row("np.save", f"{args.io_n}^3 f32", "1 proc", t_np_save, 1.0,
                         mb_per_s=io_mb / t_np_save))
    rows.append(make_row("np.load", f"{args.io_n}^3 f32", "1 proc", t_np_load, 1.0,
                         mb_per_s=io_mb / t_np_load))
    for p in procs:
        r = results["io", p, None, args.io_n]
        if r.get("status") != "ok":
            print(f"{'darray save/load':32s} {p:5d}  {r['status']}\n{r.get('log', '')}")
            continue
        for engine, times in r["engines"].items():
            ts, tl = statistics.median(times["save"]), statistics.median(times["load"])
            print(f"{'darray ' + engine:32s} {p:5d} {io_mb / ts:10.0f} {io_mb / tl:10.0f} "
                  f"{t_np_save / ts:10.2f} {t_np_load / tl:10.2f} {r['maxrss'] / mb:10.0f}")
            rows.append(make_row(f"darray {engine} save", f"{args.io_n}^3 f32", f"{p} proc", ts,
                                 ts / t_np_save, mb_per_s=io_mb / ts, maxrss_mb=r["maxrss"] / mb))
            rows.append(make_row(f"darray {engine} load", f"{args.io_n}^3 f32", f"{p} proc", tl,
                                 tl / t_np_load, mb_per_s=io_mb / tl, maxrss_mb=r["maxrss"] / mb))
    print("(x pfft: time or ru_maxrss over mpi4py-fft's; x np.save/np.load: MB/s over numpy's)")
    for row in rows:  # a shared machine: the load the numbers were taken under
        row["load_average_1min"] = [round(load_before[0], 2), round(load_after[0], 2)]
        row["threads"] = "1" if args.one_thread else "default"
    path = args.json or str(default_json_path("bench_multiprocess"))
    write_table(rows, path, "bench_multiprocess",
                "mpi4py-fft round trip (fft rows), np.save / np.load from one process (io rows)",
                "multi-process fftn round trip and checkpoints: ms, time ratio")
    return rows


def _wall(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2:])
    else:
        main()
