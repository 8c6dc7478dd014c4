"""In-place operators with buffer donation (engine/donation.py) beside the same operators
without it, in one run: each row times ``x *= s`` (s a Python scalar, and svd_flip's
``u *= signs[None, :]``, a row split otherwise) on a row-split float32 array, donating and not,
interleaved, and prints donating / plain.

Donation adds checks before each call (reference counts, a scan of jax.live_arrays for other
arrays over x's buffers); `--live` extra arrays stay alive so that the scan has work to do.

    python3 benchmarks/bench_inplace.py [--repeats 7] [--live 200] [--json PATH]

Rule (helper brief): new <= 1.5x old on arrays that fit.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax
import jax.numpy as jnp
import numpy as np
from _bench_common import default_json_path, make_row, time_interleaved, write_table

import darray
from darray._src.engine import donation

NEVER = 1 << 62  # a MIN_BYTES no array reaches: donation off


def _program(operand, min_bytes):
    def run(x):
        donation.MIN_BYTES = min_bytes
        x *= operand
        return x.data
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--live", type=int, default=200, help="extra live jax arrays")
    ap.add_argument("--json", default=str(default_json_path("bench_inplace")))
    args = ap.parse_args()
    default_min = donation.MIN_BYTES
    mesh = jax.make_mesh((8,), ("d",))
    keep = [jnp.full((4,), float(i)) for i in range(args.live)]  # noqa: F841 (kept alive)
    signs = darray.sign(darray.asarray(np.where(np.arange(32) % 2, -1.0, 1.0).astype(np.float32)))
    rows = []
    print(f"{'operand':>12} {'MiB':>5} {'donating ms':>12} {'plain ms':>9} {'ratio':>6}")
    for mib in (1, 16, 128):
        n = mib * (1 << 20) // (4 * 32)
        x = darray.asarray(np.ones((n + 3, 32), np.float32), mesh=mesh, spec=("d", None)) * 1
        for name, operand in (("scalar", 1.0), ("signs row", signs[None, :])):
            times = time_interleaved([("donating", _program(operand, default_min), x),
                                      ("plain", _program(operand, NEVER), x)],
                                     args.repeats, desc=f"{name} {mib} MiB")
            t_new, t_old = times["donating"][0], times["plain"][0]
            print(f"{name:>12} {mib:>5} {t_new * 1e3:12.2f} {t_old * 1e3:9.2f} "
                  f"{t_new / t_old:6.2f}")
            rows.append(make_row(name, f"{mib} MiB", "8", t_new, t_new / t_old))
    donation.MIN_BYTES = default_min
    print(f"load average {os.getloadavg()}")
    write_table(rows, args.json, "bench_inplace", "the plain in-place operator",
                "in-place operators with buffer donation")


if __name__ == "__main__":
    main()
