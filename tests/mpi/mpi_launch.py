"""A bounded mpiexec for the MPI tests: on timeout every rank is killed, not only mpiexec."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_bounded(cmd, timeout_s: float, **kwargs) -> subprocess.CompletedProcess:
    """Run `cmd` in its own process group; on timeout kill the whole group (mpiexec AND every
    rank it started), so no rank outlives the test, then fail with the output so far."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
    env.pop("XLA_FLAGS", None)  # one CPU device per process
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT, start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} ran past {timeout_s} s (all ranks killed):\n"
                    f"{out[-3000:]}{err[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def mpiexec(ranks: int, script: str, *args, timeout_s: float = 600):
    """`mpiexec -n ranks python3 script args...`, bounded by `run_bounded`."""
    return run_bounded(["mpiexec", "-n", str(ranks), sys.executable,
                        os.path.join(HERE, script), *args], timeout_s)
