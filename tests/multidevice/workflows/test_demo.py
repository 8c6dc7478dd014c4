"""Covers: darray/_src/api/blocks.py, darray/_src/fft/freq.py

The README demo runs and checks itself against numpy (exit 0, prints OK)."""
import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("mesh", ["8", "2,4"])
def test_demo_runs(mesh):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-m", "darray.demo", "--n", "16", "--mesh", mesh],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.rstrip().endswith("OK"), out.stdout
    assert "split=" in out.stdout and "stencil check" in out.stdout
