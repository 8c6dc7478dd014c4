"""Covers: darray/_src/placement/distributed.py, darray/_src/fft/api.py, darray/_src/api/blocks.py

darray across processes: 2 processes x 4 CPU devices, jax.distributed on 127.0.0.1 (gloo).

Every rank runs worker.py; the test fails (never hangs) if any rank fails or times out.
"""
import os
import socket
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(__file__), "worker.py")
TIMEOUT_S = 240


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.multiprocess
def test_two_processes_fft_halo_reduce_grad():
    port, nproc = _free_port(), 2
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS",)}
    procs = [subprocess.Popen([sys.executable, WORKER, str(port), str(nproc), str(rank)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for rank in range(nproc)]
    outputs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=TIMEOUT_S)
            outputs.append(out)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a rank did not finish within {TIMEOUT_S} s")
    finally:
        for p in procs:  # a failed rank must not leave the others waiting forever
            if p.poll() is None:
                p.kill()
    for rank, (p, out) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0 and "RESULT ok" in out, f"rank {rank} failed:\n{out[-3000:]}"
