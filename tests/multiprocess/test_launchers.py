"""Covers: darray/_src/placement/distributed.py, darray/_src/extras/random.py

darray under a real launcher: `mpiexec -n 2` (2 CPU devices per process), `-n 3` and `-n 4`
(1 CPU device per process), the PyPI mpich (Hydra) and mpi4py wheels.

Each process count runs worker_launchers.py once with every check batched into that run (a jax
start on each rank costs seconds on a small machine): fft round trips, halo fill and reduce,
reductions, from_callback, fromfunction, random fields and checkpoints written by 4 processes
and read by 2 and 3 on other meshes and specs. This process then compares the random fields
with its own draws on 1 and on 8 devices. The failure case kills one rank and times how long
the others live on. Every run is bounded: past its timeout every rank is killed (SIGKILL to
mpiexec and every process descended from it, and to each rank's recorded pid) and the test fails
with the logs.
"""
from __future__ import annotations

import glob
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray

WORKER = os.path.join(os.path.dirname(__file__), "worker_launchers.py")
TIMEOUT_S = 300
CHECKS = ("fftn_ifftn", "rfftn_irfftn", "halo_width1", "halo_reduce_width1", "halo_width2",
          "halo_reduce_width2", "reductions", "from_callback", "fromfunction", "random")
# Survivors must be gone this long after the crash: the worker's heartbeat_timeout is 10 s,
# but a closed connection is seen at once.
BOUND_S = 20


def _hydra_mpiexec():
    """mpiexec of MPICH (Hydra: the options used here) with mpi4py, or None."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    exe = shutil.which("mpiexec")
    if exe is None:
        return None
    try:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return exe if "HYDRA" in version else None


MPIEXEC = _hydra_mpiexec()
needs_mpiexec = pytest.mark.skipif(MPIEXEC is None,
                                   reason="needs MPICH's mpiexec and mpi4py (darray[mpi])")


def _alive(pid):
    """Running or stopped; an exited rank that its launcher has not reaped yet (a zombie:
    Hydra's proxy reaps late) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _process_tree(root):
    """`root` and every process descended from it. Hydra starts its proxy and each rank in a
    session of their own: killing mpiexec's process group would leave the ranks running."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
            children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def _kill(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _logs(outdir, nproc):
    parts = []
    for rank in range(nproc):
        for stream in ("out", "err"):
            path = os.path.join(outdir, f"rank{rank}.{stream}")
            text = pathlib.Path(path).read_text() if os.path.exists(path) else "(no file)"
            text = "\n".join(line for line in text.splitlines() if "[Gloo]" not in line)
            parts.append(f"--- rank {rank} std{stream} (last 2500 chars):\n{text[-2500:]}")
    return "\n".join(parts)


def _mpiexec(nproc, args, outdir, *, options=(), timeout=TIMEOUT_S, reap=None):
    """Run the worker under mpiexec; per-rank logs in outdir/rank<r>.{out,err}. Rank `reap`
    (a stopped one) is killed once every other rank has ended.

    Returns (mpiexec's status, its own output, {rank: wall-clock time (time.time()) at which
    that rank's pid was last seen alive}). Past `timeout` every rank is killed and the test
    fails."""
    for stale in glob.glob(os.path.join(outdir, "pid-*")):
        os.remove(stale)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    cmd = [MPIEXEC, *options, "-outfile-pattern", os.path.join(outdir, "rank%r.out"),
           "-errfile-pattern", os.path.join(outdir, "rank%r.err"), "-n", str(nproc),
           sys.executable, WORKER, *map(str, args)]
    own = open(os.path.join(outdir, "mpiexec.log"), "w+")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=own, stderr=subprocess.STDOUT, env=env)
    pids, last_alive = {}, {}
    try:
        while proc.poll() is None:
            now = time.monotonic() - start
            for path in glob.glob(os.path.join(outdir, "pid-*")):
                rank = int(path.rsplit("-", 1)[1])
                if rank not in pids:
                    try:
                        pids[rank] = int(pathlib.Path(path).read_text())
                    except ValueError:
                        continue  # written as we read it; next round
            for rank, pid in pids.items():
                if _alive(pid):
                    last_alive[rank] = time.time()
            others = [pid for rank, pid in pids.items() if rank != reap]
            if (reap in pids and len(pids) == nproc and not any(map(_alive, others))
                    and _alive(pids[reap])):
                os.kill(pids[reap], signal.SIGKILL)
            if now > timeout:
                pytest.fail(f"mpiexec -n {nproc} {args} ran past {timeout} s; every rank was "
                            f"killed\n{_logs(outdir, nproc)}")
            time.sleep(0.05)
    finally:
        if proc.poll() is None:  # mpiexec, its proxies and every rank, found before any dies
            _kill(_process_tree(proc.pid))
            proc.wait()
        _kill(pid for pid in pids.values() if _alive(pid))  # a rank orphaned some other way
        own.seek(0)
        launcher_out = own.read()
        own.close()
    return proc.returncode, launcher_out, last_alive


def _checks_pass(nproc, devices_per_process, outdir, expect):
    rc, launcher_out, _ = _mpiexec(nproc, (devices_per_process, "checks", outdir), outdir)
    logs = _logs(outdir, nproc)
    assert rc == 0, f"mpiexec -n {nproc} exited {rc}:\n{launcher_out[-2000:]}\n{logs}"
    for rank in range(nproc):
        out = pathlib.Path(outdir, f"rank{rank}.out").read_text()
        missing = [c for c in CHECKS + expect if f"CHECK {c} ok" not in out]
        assert not missing and "RESULT ok" in out, \
            f"rank {rank} of {nproc}: checks {missing} did not pass\n{logs}"


def _single_process_draws():
    key = jax.random.key(7)
    one = mesh_of((1,), ("x",))
    eight = mesh_of((2, 4), ("x", "y"))
    draws = {}
    for name, mesh, spec in (("1 device", one, ("x",)), ("8 devices", eight, ("y", "x"))):
        draws[name] = {
            "normal": darray.random.normal(key, (13, 10, 7), mesh=mesh, spec=spec),
            "uniform": darray.random.uniform(key, (37, 5), np.float32, mesh=mesh, spec=spec),
            "integers": darray.random.integers(key, -4, 4, (37,), mesh=mesh, spec=spec[:1])}
        assert draws[name]["normal"].layout.mesh.size == mesh.size
    return {where: {k: np.asarray(v) for k, v in d.items()} for where, d in draws.items()}


# about 50 s (three mpiexec launches); the other launchers stay in the default tier
@pytest.mark.slow
@pytest.mark.multiprocess
@needs_mpiexec
def test_under_mpiexec_2_3_4_processes_match_numpy_and_one_process(tmp_path):
    # 4 first: it writes the checkpoints that 2 and 3 processes read back on their meshes
    _checks_pass(4, 1, tmp_path, expect=("save",))
    _checks_pass(2, 2, tmp_path, expect=("load",))
    _checks_pass(3, 1, tmp_path, expect=("load",))
    draws = _single_process_draws()
    for nproc in (2, 3, 4):
        for name in ("normal", "uniform", "integers"):
            got = np.load(tmp_path / f"random_{name}_{nproc}.npy")
            for where, values in draws.items():
                np.testing.assert_array_equal(
                    got, values[name], err_msg=f"{name} drawn by {nproc} processes differs "
                                               f"from the draw on {where}")
    for nproc in (2, 3):  # read on 2 and 3 processes what 4 processes wrote
        np.testing.assert_array_equal(np.load(tmp_path / f"loaded_{nproc}.npy"),
                                      draws["1 device"]["normal"])


def _died_at(outdir):
    return float(pathlib.Path(outdir, "died_at").read_text())


@pytest.mark.x64
@pytest.mark.multiprocess
@needs_mpiexec
def test_under_mpiexec_a_killed_rank_ends_every_other_rank_naming_it(tmp_path):
    # Hydra's own cleanup is switched off: darray's watchdog alone must end the survivors.
    # Rank 1 is not the coordinator: ranks 0 and 2 both learn of its death and must name it.
    nproc, dead = 3, 1
    rc, launcher_out, last_alive = _mpiexec(
        nproc, (1, "die", tmp_path, dead), tmp_path,
        options=("-disable-auto-cleanup", "-print-all-exitcodes"), timeout=180)
    logs = _logs(tmp_path, nproc)
    codes = re.search(r"Exit codes: \[[^\]]*\] ([\d,]+)", launcher_out)
    assert codes, f"no per-rank exit codes from mpiexec:\n{launcher_out}\n{logs}"
    statuses = [int(c) >> 8 for c in codes.group(1).split(",")]  # wait statuses
    assert statuses[dead] == 9, f"{statuses}\n{logs}"
    died = _died_at(tmp_path)
    for rank in set(range(nproc)) - {dead}:
        assert statuses[rank] == darray.distributed.DEAD_PEER_EXIT, \
            f"rank {rank}: {statuses}\n{logs}"
        err = (tmp_path / f"rank{rank}.err").read_text()
        assert f"darray.distributed: process {dead} of {nproc} died" in err, logs
        assert "RESULT survived" not in (tmp_path / f"rank{rank}.out").read_text(), logs
        lived_on = last_alive[rank] - died
        print(f"rank {rank} ended {lived_on:.2f} s after rank {dead} crashed")
        assert lived_on < BOUND_S, f"rank {rank} lived on {lived_on:.1f} s\n{logs}"


@pytest.mark.slow
@pytest.mark.multiprocess
@needs_mpiexec
@pytest.mark.parametrize("dead", [0, 3])
def test_under_mpiexec_with_its_cleanup_a_killed_rank_ends_all(tmp_path, dead):
    # What a user sees by default: Hydra kills the others when a rank dies; whoever is first
    # (Hydra or the watchdog), every rank must be gone within the bound and mpiexec fail.
    nproc = 4
    rc, launcher_out, last_alive = _mpiexec(nproc, (1, "die", tmp_path, dead), tmp_path,
                                            timeout=180)
    logs = _logs(tmp_path, nproc)
    assert rc != 0, f"mpiexec exited 0 after a rank was killed\n{launcher_out}\n{logs}"
    died = _died_at(tmp_path)
    assert sorted(last_alive) == list(range(nproc)), (last_alive, logs)
    for rank in set(range(nproc)) - {dead}:
        assert "RESULT survived" not in (tmp_path / f"rank{rank}.out").read_text(), logs
        lived_on = last_alive[rank] - died
        print(f"rank {rank} ended {lived_on:.2f} s after rank {dead} crashed")
        assert lived_on < BOUND_S, f"rank {rank} lived on {lived_on:.1f} s\n{logs}"


@pytest.mark.slow
@pytest.mark.multiprocess
@needs_mpiexec
def test_under_mpiexec_a_hung_rank_is_found_by_its_missing_heartbeat(tmp_path):
    # A stopped rank closes no socket and exits with no status: Hydra cannot see it, only the
    # heartbeat (10 s in the worker) can. Every other rank must name it and exit with status 75.
    nproc, hung = 3, 2
    rc, launcher_out, last_alive = _mpiexec(
        nproc, (1, "hang", tmp_path, hung), tmp_path, timeout=180, reap=hung,
        options=("-disable-auto-cleanup", "-print-all-exitcodes"))
    logs = _logs(tmp_path, nproc)
    codes = re.search(r"Exit codes: \[[^\]]*\] ([\d,]+)", launcher_out)
    assert codes, f"no per-rank exit codes from mpiexec:\n{launcher_out}\n{logs}"
    statuses = [int(c) >> 8 for c in codes.group(1).split(",")]
    stopped = _died_at(tmp_path)
    for rank in set(range(nproc)) - {hung}:
        assert statuses[rank] == darray.distributed.DEAD_PEER_EXIT, \
            f"rank {rank}: {statuses}\n{logs}"
        err = (tmp_path / f"rank{rank}.err").read_text()
        assert f"darray.distributed: process {hung} of {nproc} died" in err, logs
        lived_on = last_alive[rank] - stopped
        print(f"rank {rank} ended {lived_on:.2f} s after rank {hung} stopped")
        assert lived_on < 10 + BOUND_S, f"rank {rank} lived on {lived_on:.1f} s\n{logs}"


@pytest.mark.slow
@pytest.mark.multiprocess
@needs_mpiexec
def test_bench_multiprocess_runs_and_writes_its_table(tmp_path):
    import json
    bench = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks",
                         "bench_multiprocess.py")
    out = subprocess.run([sys.executable, bench, "--procs", "2", "--sizes", "16", "--io-n", "16",
                          "--repeats", "1", "--timeout", "240", "--json",
                          str(tmp_path / "t.json")], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    programs = {row["program"] for row in rows}
    assert {"darray-jax fftn+ifftn", "np.save", "np.load", "darray numpy save",
            "darray numpy load"} <= programs, programs
    for row in rows:
        assert row["time_ms"] > 0 and row["ratio"] > 0, row
        if "fftn" in row["program"]:
            assert row["error"] < 1e-10 and row["maxrss_mb"] > 0, row
    if darray.build_info().get("mpi"):
        assert "darray-mpi fftn+ifftn" in programs, out.stdout
    else:
        assert "not built" in out.stdout, out.stdout
