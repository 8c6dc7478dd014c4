"""Covers: darray/_src/layout/host.py, darray/_src/placement/distributed.py

Host reads made by one process alone on a multi-process array (worker_rank_local.py): they
answer from that process's data or raise at once naming darray.distributed.gather; 2 processes
with jax.distributed on 127.0.0.1, every process killed if the run exceeds the timeout."""
import os
import socket
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(__file__), "worker_rank_local.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_S = 180


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.multiprocess
def test_one_process_reading_a_multiprocess_array_never_hangs():
    port, nproc = _free_port(), 2
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    procs = [subprocess.Popen([sys.executable, WORKER, str(port), str(nproc), str(rank)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for rank in range(nproc)]
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=TIMEOUT_S)[0])
    except subprocess.TimeoutExpired:
        pytest.fail(f"a rank ran past {TIMEOUT_S} s (a rank-local read started a collective?)")
    finally:
        for proc in procs:  # every rank, whatever happened
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for rank, (proc, out) in enumerate(zip(procs, outputs)):
        assert proc.returncode == 0, f"rank {rank} failed:\n{out[-4000:]}"
        for check in ("refused", "local", "gather"):
            assert f"RANK {rank} ok {check}" in out, (check, out[-3000:])
