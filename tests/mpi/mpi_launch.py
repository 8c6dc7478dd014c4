"""A bounded mpiexec for the MPI tests: on timeout every rank is killed, not only mpiexec."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _descendants(root: int) -> list[int]:
    """`root` and every process below it, from /proc. Killing mpiexec's process group is not
    enough: MPICH's Hydra starts its proxy and every rank in sessions of their own."""
    parent_of = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent_of[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue  # ended meanwhile
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parent_of.items() if parent in frontier]
        found.extend(frontier)
    return found


def _kill_tree(root: int) -> None:
    # stop the launcher first so it cannot start or restart ranks, then everything below it
    for pid in _descendants(root):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_bounded(cmd, timeout_s: float, *, env=None, cwd=ROOT,
                **kwargs) -> subprocess.CompletedProcess:
    """Run `cmd`; on timeout kill it and every process descended from it (mpiexec AND every
    rank it started), so no rank outlives the test, then fail with the output so far. The
    default environment imports darray from this checkout with one CPU device per process."""
    if env is None:
        env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
        env.pop("XLA_FLAGS", None)  # one CPU device per process
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd, start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_tree(proc.pid)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} ran past {timeout_s} s (all ranks killed):\n"
                    f"{out[-3000:]}{err[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def mpiexec(ranks: int, script: str, *args, timeout_s: float = 600):
    """`mpiexec -n ranks python3 script args...`, bounded by `run_bounded`."""
    return run_bounded(["mpiexec", "-n", str(ranks), sys.executable,
                        os.path.join(HERE, script), *args], timeout_s)
