"""argmax, interp and histogram, rewritten to stay within 3 blocks, beside jax.numpy's, in one run.

Each darray call runs eagerly on a float32 (201, 131, 91) array split (x, y) over a 2x4 mesh of
8 virtual CPU devices; the reference is the jax.numpy function on a jax.Array of the same
shape, sharded the same way (XLA's partitioner), interleaved in the same run. Prints the
times and the ratio darray / jax.numpy.

    python benchmarks/bench_kernels_memory.py [--repeats N]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import time_interleaved  # noqa: E402
from helpers import mesh_of  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

import darray  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    mesh = mesh_of((2, 4))
    host = np.random.default_rng(0).standard_normal((201, 131, 91)).astype(np.float32)
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    even = host[:200, :128]  # jax.Array shardings must divide the shape
    j = jax.device_put(even, NamedSharding(mesh, PartitionSpec("x", "y")))
    xe = darray.asarray(even, mesh=mesh, spec=("x", "y"))
    xp = np.linspace(-3, 3, 50)
    fp = np.sin(xp)
    cases = [
        ("argmax axis=1", lambda a: darray.argmax(a, axis=1), jax.jit(lambda a: jnp.argmax(a, 1))),
        ("argmax", lambda a: darray.argmax(a), jax.jit(jnp.argmax)),
        ("interp", lambda a: darray.interp(a, xp, fp), jax.jit(lambda a: jnp.interp(a, xp, fp))),
        ("histogram", lambda a: darray.histogram(a, bins=64, range=(-3, 3))[0],
         jax.jit(lambda a: jnp.histogram(a, bins=64, range=(-3, 3))[0])),
    ]
    print(f"jax {jax.__version__}; float32 {even.shape} split (x, y) on 2x4 (even, darray also "
          f"on uneven {host.shape})")
    print(f"{'function':>14} {'jnp ms':>8} {'darray ms':>10} {'ratio':>6} {'uneven ms':>10}")
    for name, dfn, jfn in cases:
        t = time_interleaved([("jnp", jfn, j), ("darray", dfn, xe), ("uneven", dfn, x)],
                             args.repeats, desc=name)
        print(f"{name:>14} {t['jnp'][0] * 1e3:8.2f} {t['darray'][0] * 1e3:10.2f} "
              f"{t['darray'][0] / t['jnp'][0]:6.2f} {t['uneven'][0] * 1e3:10.2f}", flush=True)


if __name__ == "__main__":
    main()
