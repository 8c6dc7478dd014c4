"""Covers: darray/_src/placement/distributed.py, darray/_src/extras/io.py
Covers: darray/_src/extras/random.py

Creation, random fields, checkpoints and failure bounds across 2 processes x 4 CPU devices.

Every rank runs worker_beyond.py; the test kills every rank if any runs past its timeout.
"""
import os
import shutil
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray

WORKER = os.path.join(os.path.dirname(__file__), "worker_beyond.py")
TIMEOUT_S = 240


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(nproc, mode, outdir, timeout=TIMEOUT_S, wait_for=None, mpiexec=False, extra_env=None):
    """Run every rank (or one mpiexec); wait (polling) until the ranks in `wait_for` (default:
    all) exit. Output goes to files, not pipes: polling must never block on a full pipe."""
    wait_for = range(nproc) if wait_for is None else wait_for
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS",)}
    env.update(extra_env or {})
    if mpiexec:
        log = open(os.path.join(outdir, f"{mode}-mpiexec.log"), "w+")
        logs = [log]
        procs = [subprocess.Popen([shutil.which("mpiexec"), "-n", str(nproc), sys.executable,
                                   WORKER, "0", "0", "0", mode, str(outdir)],
                                  stdout=log, stderr=subprocess.STDOUT, env=env)]
        wait_for = [0]
    else:
        logs = [open(os.path.join(outdir, f"{mode}-rank{rank}.log"), "w+")
                for rank in range(nproc)]
        procs = [subprocess.Popen([sys.executable, WORKER, str(port), str(nproc), str(rank),
                                   mode, str(outdir)], stdout=log, stderr=subprocess.STDOUT,
                                  env=env)
                 for rank, log in enumerate(logs)]
    ended = [None] * len(procs)
    deadline = time.monotonic() + timeout
    try:
        while any(ended[r] is None for r in wait_for):
            for rank, p in enumerate(procs):
                if ended[rank] is None and p.poll() is not None:
                    ended[rank] = time.monotonic()
            if time.monotonic() > deadline:
                pytest.fail(f"a rank did not finish within {timeout} s")
            time.sleep(0.1)
        outputs = []
        for log in logs:
            log.seek(0)
            outputs.append(log.read())
    finally:
        for p in procs:  # a failed rank must not leave the others waiting forever
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    return procs, outputs, ended


def _has_mpiexec():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return shutil.which("mpiexec") is not None


@pytest.mark.x64
@pytest.mark.multiprocess
def test_two_processes_create_draw_save_load_like_one(tmp_path):
    _features_like_one_process(tmp_path, 2, mpiexec=False)


@pytest.mark.slow
@pytest.mark.multiprocess
@pytest.mark.skipif(not _has_mpiexec(), reason="needs mpiexec and mpi4py (darray[mpi])")
@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_under_mpiexec_create_draw_save_load_like_one(tmp_path, nproc):
    _features_like_one_process(tmp_path, nproc, mpiexec=True)


@pytest.mark.slow
@pytest.mark.multiprocess
@pytest.mark.skipif(not _has_mpiexec(), reason="needs mpiexec (darray[mpi])")
def test_under_mpiexec_without_mpi4py_on_one_node(tmp_path):
    # a package that shadows mpi4py and fails to import: the ranks must agree on an address
    # from the launcher's environment alone
    shadow = tmp_path / "shadow" / "mpi4py"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('mpi4py hidden by the test')\n")
    path = os.pathsep.join([str(tmp_path / "shadow"), os.environ.get("PYTHONPATH", "")])
    _features_like_one_process(tmp_path, 2, mpiexec=True, extra_env={"PYTHONPATH": path})


def _features_like_one_process(tmp_path, nproc, mpiexec, extra_env=None):
    mesh = mesh_of((2, 4), ("x", "y"))
    parent_host = np.random.default_rng(3).standard_normal((11, 9, 5))
    darray.save(tmp_path / "saved_by_parent",
                darray.asarray(parent_host, mesh=mesh, spec=("x", "y")))
    procs, outputs, _ = _run(nproc, "features", tmp_path, mpiexec=mpiexec, extra_env=extra_env)
    for rank, (p, out) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0 and out.count("RESULT ok") == (nproc if mpiexec else 1), \
            f"rank {rank} failed:\n{out[-3000:]}"
    # random: the 2-process draw equals this single process's draw on another mesh
    one = darray.random.normal(jax.random.key(7), (13, 10, 7), mesh=(8,))
    np.testing.assert_array_equal(np.load(tmp_path / "random_normal.npy"), np.asarray(one))
    ints = darray.random.integers(jax.random.key(7), -4, 4, (37,), mesh=mesh, spec=("y",))
    np.testing.assert_array_equal(np.load(tmp_path / "random_integers.npy"), np.asarray(ints))
    # saved by 2 processes, loaded by 1 on another mesh; saved by 1, loaded by 2
    for name in ["saved_by_procs"] + (["saved_by_procs_ts"] if darray._src.extras.io._tensorstore()
                                      is not None else []):
        loaded = darray.load(tmp_path / name, mesh=(8,), spec=(None, None, "x"), engine="numpy")
        assert loaded.layout.split == ((), (), ("x",))
        np.testing.assert_array_equal(np.asarray(loaded), np.asarray(one))
    assert darray._src.extras.io.read_metadata(tmp_path / "saved_by_procs")[
        "attributes"]["darray"]["process_count"] == nproc
    np.testing.assert_array_equal(np.load(tmp_path / "loaded.npy"), parent_host)


BOUND_S = 25  # heartbeat_timeout=10 in the worker; a closed socket is seen at once


def _assert_named_and_bounded(outputs, ended, survivor, dead, nproc=2):
    out = outputs[survivor]
    assert "RESULT survived" not in out, out[-3000:]
    assert f"darray.distributed: process {dead} of {nproc} died" in out, out[-3000:]
    # the dead rank dies about 1 s after "started"; the survivor must be gone BOUND_S later
    assert ended[survivor] - ended[dead] < BOUND_S, f"lived on {ended[survivor] - ended[dead]} s"


@pytest.mark.multiprocess
def test_a_dead_rank_ends_the_others_naming_it(tmp_path):
    procs, outputs, ended = _run(2, "die1", tmp_path)
    assert procs[1].returncode == 9, outputs[1][-2000:]
    assert procs[0].returncode == darray.distributed.DEAD_PEER_EXIT, outputs[0][-3000:]
    _assert_named_and_bounded(outputs, ended, survivor=0, dead=1)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_dead_coordinator_ends_the_others_naming_it(tmp_path):
    procs, outputs, ended = _run(2, "die0", tmp_path)
    assert procs[0].returncode == 9, outputs[0][-2000:]
    assert procs[1].returncode == darray.distributed.DEAD_PEER_EXIT, outputs[1][-3000:]
    _assert_named_and_bounded(outputs, ended, survivor=1, dead=0)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_hung_rank_is_found_by_its_missing_heartbeat(tmp_path):
    start = time.monotonic()
    procs, outputs, ended = _run(2, "hang1", tmp_path, wait_for=[0])
    assert procs[0].returncode == darray.distributed.DEAD_PEER_EXIT, outputs[0][-3000:]
    assert "darray.distributed: process 1 of 2 died" in outputs[0], outputs[0][-3000:]
    assert ended[0] - start < 60 + BOUND_S  # start-up plus heartbeat_timeout=10


@pytest.mark.slow
@pytest.mark.multiprocess
def test_an_uncaught_exception_counts_as_a_death(tmp_path):
    procs, outputs, ended = _run(2, "raise1", tmp_path)
    assert procs[1].returncode != 0 and "simulated failure in user code" in outputs[1]
    assert procs[0].returncode == darray.distributed.DEAD_PEER_EXIT, outputs[0][-3000:]
    assert "darray.distributed: process 1 of 2 died" in outputs[0], outputs[0][-3000:]
