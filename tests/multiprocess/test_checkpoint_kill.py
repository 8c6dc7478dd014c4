"""Covers: darray/_src/extras/io.py

A save killed half-way leaves the old checkpoint readable, never a mix of old and new chunks
(darray/_src/extras/io.py's commit protocol), with both engines. The writer
(worker_save_kill.py) is a separate process killed with SIGKILL at a chosen point; every
writer is bounded by a timeout and killed at the end whatever happens."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import darray
from darray._src.extras import io

WRITER = os.path.join(os.path.dirname(__file__), "worker_save_kill.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_S = 120
ENGINES = ["numpy"] + (["tensorstore"] if io._tensorstore() is not None else [])
CASES = [(engine, "chunks") for engine in ENGINES] + [(ENGINES[-1], "commit")]


def _start(path, engine, mode):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    return subprocess.Popen([sys.executable, WRITER, str(path), engine, mode],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)


def _kill_when_ready(proc):
    """Wait for the writer's READY line (bounded), then SIGKILL its whole session."""
    deadline = time.monotonic() + TIMEOUT_S
    lines = []
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.strip() == "READY":
                return lines
        pytest.fail("the writer never reached its kill point:\n" + "".join(lines[-40:]))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()  # an open pipe would be a ResourceWarning, an error in this suite


@pytest.mark.x64
@pytest.mark.multiprocess
def test_killed_saves_leave_the_old_checkpoint(tmp_path):
    old = np.arange(64 * 48, dtype=np.float32).reshape(64, 48)
    x = darray.asarray(old, mesh=(4, 2), spec=("x", "y"))
    paths = {case: tmp_path / f"ck-{case[0]}-{case[1]}" for case in CASES}
    for (engine, _), path in paths.items():
        darray.save(path, x, engine=engine)
    writers = {case: _start(path, *case) for case, path in paths.items()}  # run side by side
    for case, proc in writers.items():
        _kill_when_ready(proc)
        assert proc.returncode == -signal.SIGKILL, case
    for (engine, mode), path in paths.items():
        leftovers = {"chunks": path.with_name(path.name + io.PARTIAL),
                     "commit": path.with_name(path.name + io.PREVIOUS)}[mode]
        assert leftovers.is_dir(), (mode, sorted(os.listdir(tmp_path)))  # killed mid-way indeed
        for read_engine in ENGINES:
            got = darray.load(path, engine=read_engine, mesh=(4, 2), spec=("x", "y"))
            np.testing.assert_array_equal(np.asarray(got), old)  # the old one, whole
            assert got.layout.spec == x.layout.spec
        # the next save replaces the debris and the old checkpoint
        darray.save(path, x + 1, engine=engine)
        np.testing.assert_array_equal(np.asarray(darray.load(path, engine=engine)), old + 1)
        assert not leftovers.exists(), mode
