"""Square svd (one-sided Jacobi) before and after the rank completion (issue 50), side by side
in one run: full-rank and rank-8 matrices, meshes 8 and 2x4, min of 3 interleaved reps.

    git show <old commit>:darray/_src/linalg/jacobi.py > /tmp/jacobi_old.py
    PYTHONPATH=. N=203 python benchmarks/bench_svd_rank.py /tmp/jacobi_old.py
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

import darray  # noqa: E402
from darray._src.linalg import jacobi as new  # noqa: E402


def load_old(path):
    spec = importlib.util.spec_from_file_location("darray._src.linalg.jacobi_old", path)
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old
    spec.loader.exec_module(old)
    return old


def mesh(shape):
    return jax.make_mesh(shape, ("x", "y")[:len(shape)], devices=jax.devices()[:8],
                         axis_types=(jax.sharding.AxisType.Auto,) * len(shape))


def main():
    old = load_old(sys.argv[1])
    rng = np.random.default_rng(0)
    n = int(os.environ.get("N", 256))
    print("load", os.getloadavg())
    for dt in ["float64", "float32"]:
        for kind in ["random", "rank8"]:
            a = (rng.standard_normal((n, n)) if kind == "random"
                 else rng.standard_normal((n, 8)) @ rng.standard_normal((8, n))).astype(dt)
            for shape, spec in [((8,), ("x",)), ((2, 4), ("x", "y"))]:
                x = darray.asarray(a, mesh=mesh(shape), spec=spec)
                mods = {"old": old, "new": new}
                for mod in mods.values():
                    jax.block_until_ready(mod.svd(x)[0].data)  # compile
                best = dict.fromkeys(mods, float("inf"))
                for _ in range(3):
                    for name, mod in mods.items():
                        t = time.perf_counter()
                        jax.block_until_ready(mod.svd(x)[0].data)
                        best[name] = min(best[name], time.perf_counter() - t)
                print(f"{dt} {kind} n={n} mesh {shape}: old {best['old']:.3f}s new "
                      f"{best['new']:.3f}s new/old {best['new'] / best['old']:.2f}")
    print("load", os.getloadavg())


if __name__ == "__main__":
    main()
