"""Unread transposes: ``U.T @ y`` contracting U itself vs the old materialised ``U.T`` (issue 50).

An eager ``x.T`` is unread until its data is read (engine/views.py), and matmul contracts its
source with permuted labels. The old path made the transposed copy first, then multiplied
it. Both run here side by side, interleaved round-robin, on 8 virtual CPU devices:

* ``new``: ``U.T @ y`` (the view stays unread: no copy);
* ``old``: ``darray.permute_dims(U, (1, 0))`` read at once, then ``@ y`` (what darray did);
* ``numpy``: the same product on the host.

``new/old`` <= 1.5 is the rule (below 1 is faster); each time is the lower of two
interleaved medians, run in both orders. The ``read x.T`` case times making the
view and reading it (the laziness's own cost).

Usage::

    python benchmarks/bench_lazy_transpose.py            # 2^20 rows
    python benchmarks/bench_lazy_transpose.py --small    # 2^16 rows, 2 repeats
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import numpy as np  # noqa: E402
from _bench_common import time_interleaved  # noqa: E402

import darray  # noqa: E402
from darray._src.base import compat  # noqa: E402


def materialised(x):
    """The old x.T: the transposed copy, computed at once."""
    v = darray.permute_dims(x, (1, 0))
    v.data  # noqa: B018  (reads it)
    return v


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="2^16 rows, 2 repeats")
    args = parser.parse_args(argv)
    rows = 1 << 16 if args.small else args.rows
    repeats = 2 if args.small else args.repeats
    mesh = compat.make_auto_mesh((8,), ("x",))
    rng = np.random.default_rng(0)
    u = rng.standard_normal((rows, 32)).astype(np.float32)
    y = rng.standard_normal((rows, 1)).astype(np.float32)
    c = rng.standard_normal((16, 32)).astype(np.float32)
    vt = rng.standard_normal((32, 32)).astype(np.float32)
    d = rng.standard_normal((32, 1)).astype(np.float32)
    U = darray.asarray(u, mesh=mesh, spec=("x", None))
    Y = darray.asarray(y, mesh=mesh, spec=("x", None))
    C, Vt, D = (darray.asarray(a, mesh=mesh) for a in (c, vt, d))
    cases = {
        f"U.T @ y {rows}x32": (lambda: U.T @ Y, lambda: materialised(U) @ Y,
                               lambda: u.T @ y),
        f"U.T @ U {rows}x32": (lambda: U.T @ U, lambda: materialised(U) @ U,
                               lambda: u.T @ u),
        f"U @ C.T {rows}x32 @ 32x16": (lambda: U @ C.T, lambda: U @ materialised(C),
                                       lambda: u @ c.T),
        "(Vt.T @ d).T 32x32": (lambda: (Vt.T @ D).T.data, lambda: materialised(
            materialised(Vt) @ D).data, lambda: (vt.T @ d).T),
        f"read x.T {rows}x32": (lambda: U.T.data, lambda: materialised(U).data,
                                lambda: np.ascontiguousarray(u.T)),
    }
    print(f"{'case':32} {'new ms':>9} {'old ms':>9} {'numpy ms':>9} {'new/old':>8}")
    for name, (new, old, host) in cases.items():
        # twice, in both orders: the first program of a round runs measurably slower here
        # (freeing the last round's results), which would bias the ratio
        programs = [("new", lambda _, f=new: f(), None), ("old", lambda _, f=old: f(), None),
                    ("numpy", lambda _, f=host: f(), None)]
        first = time_interleaved(programs, repeats, desc=name)
        second = time_interleaved(programs[1::-1] + programs[2:], repeats, desc=name)
        t = {k: (min(first[k][0], second[k][0]),) for k in first}
        ms = {k: v[0] * 1e3 for k, v in t.items()}
        print(f"{name:32} {ms['new']:9.2f} {ms['old']:9.2f} {ms['numpy']:9.2f} "
              f"{ms['new'] / ms['old']:8.2f}", flush=True)
    print(f"loadavg {os.getloadavg()}")


if __name__ == "__main__":
    main()
