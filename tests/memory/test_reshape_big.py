"""Covers: darray/_src/engine/reshaping.py

Issue 49's real case: ``x.reshape(-1)`` then one read, with x a 1291^3 int8 array (2.15 GB,
split unevenly over 8 virtual CPU devices), used to be killed for memory on a 24 GB machine
(XLA's partitioner gathered the operand: more than 10x the array). Now the peak resident
memory of the process, from before the array exists to after the read, stays within 4x the
array. Measured in a subprocess (its own peak, VmHWM in /proc/self/status), with x64 on.

Slow tier: about a minute and 6-9 GB of memory. ``DARRAY_BIG_RESHAPE_N`` runs another size by
hand (e.g. 512).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = r"""
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import darray
from helpers import mesh_of

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)

n = int(sys.argv[1])
mesh = mesh_of((8,))
darray.zeros((8,), dtype=darray.int8, mesh=mesh)  # jax and darray's first programs loaded
before = status("VmRSS")
x = darray.fromfunction(lambda i, j, k: ((i * 7 + j * 3 + k) % 101).astype("int8"), (n,) * 3,
                        dtype=darray.int32, mesh=mesh, spec=("x",))
y = x.reshape(-1)
flat = n ** 3 - 1  # past 2^31 at 1291^3: the read's index arithmetic must not wrap
i, rest = divmod(flat, n * n)
j, k = divmod(rest, n)
value = int(y[flat])
print(json.dumps({"before": before, "peak": status("VmHWM"), "value": value,
                  "expected": (i * 7 + j * 3 + k) % 101, "split": str(y.layout.split),
                  "nbytes": n ** 3}))
"""


def _run(n: int) -> dict:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu", DARRAY_SMALL_ARRAY_CELLS="0",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests"),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(n)], env=env, capture_output=True,
                         text=True, timeout=1500, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.x64
@pytest.mark.timeout(1600)
def test_reshape_of_a_1291_cubed_int8_array_then_a_read_within_4x_its_memory():
    n = int(os.environ.get("DARRAY_BIG_RESHAPE_N", "1291"))
    got = _run(n)
    assert got["value"] == got["expected"]
    assert got["split"] == "(('x',),)"
    used = got["peak"] - got["before"]
    assert used <= 4 * got["nbytes"], (
        f"peak {used / 1e9:.2f} GB over the process's memory before the array, for a "
        f"{got['nbytes'] / 1e9:.2f} GB array: {used / got['nbytes']:.2f}x")
