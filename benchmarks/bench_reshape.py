"""The block-wise reshape (darray/_src/engine/reshaping.py) beside XLA's path, in one run.

A reshape that merges or cuts split axes of an uneven shape: XLA's partitioner all-gathers
the operand (the old path, `apply_logical`); the block-wise path moves only the pieces each
device needs. Both run here on the same arrays, interleaved, and the ratio new / old is
printed per case, with both programs' temporaries in blocks (XLA's plan).

    python benchmarks/bench_reshape.py [--repeats N] [--big]

Cases: float32 arrays of 1-10 MB, uneven shapes, on the 8 and 2x4 meshes (8 virtual CPU
devices); --big adds 40-80 MB ones.
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

import numpy as np  # noqa: E402
from _bench_common import time_interleaved  # noqa: E402
from helpers import mesh_of  # noqa: E402

import darray  # noqa: E402
from darray._src.api import manipulation  # noqa: E402
from darray._src.engine import apply, reshaping  # noqa: E402

CASES = [  # (shape, mesh, spec, new shape)
    ((101, 67, 45), (2, 4), ("x", "y"), (-1, 45)),
    ((101, 67, 45), (2, 4), ("x", "y"), (-1,)),
    ((37, 203, 19), (8,), (None, "x"), (-1,)),
    ((37, 203, 19), (8,), (None, "x"), (37 * 203, 19)),
    ((6767, 45), (2, 4), (("x", "y"),), (101, 67, 45)),
    ((201, 131, 91), (2, 4), ("x", "y"), (-1,)),
    ((201, 131, 91), (8,), ("x",), (201 * 131, 91)),
    ((1001, 403), (2, 4), ("x", "y"), (-1,)),
    ((403, 1001), (8,), (None, "x"), (-1,)),
]
BIG = [
    ((301, 251, 211), (2, 4), ("x", "y"), (-1,)),
    ((301, 251, 211), (8,), (None, "x"), (-1, 211)),
]


def _blocks(fn, arg) -> float:
    m = fn.lower(arg).compile().memory_analysis()
    return m.temp_size_in_bytes / max(m.argument_size_in_bytes, m.output_size_in_bytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--big", action="store_true")
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.device_count()} {jax.devices()[0].platform} devices")
    print(f"{'shape':>16} {'mesh':>4} {'new':>14} {'MB':>6} {'xla ms':>8} {'new ms':>8} "
          f"{'new/xla':>8} {'xla blk':>8} {'new blk':>8}  path")
    worst = 0.0
    for shape, mesh_shape, spec, new in CASES + (BIG if args.big else []):
        host = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        x = darray.asarray(host, mesh=mesh_of(mesh_shape), spec=spec)
        new = host.reshape(new).shape
        out, local = manipulation._reshape_layout(x.layout, new)
        if local:
            print(f"{str(shape):>16} {'x'.join(map(str, mesh_shape)):>4} {str(new):>14}: local, "
                  f"no data moves")
            continue
        old_fn = apply._logical_fn(manipulation._physical_reshape, (x.layout,), out,
                                   (out.shape,))
        new_fn = reshaping.reshape_fn(x.layout, out)
        np.testing.assert_array_equal(np.asarray(darray.DistArray._new(new_fn(x.data), out)),
                                      host.reshape(new))
        times = time_interleaved([("xla", old_fn, x.data), ("new", new_fn, x.data)],
                                 args.repeats, desc=str(shape))
        ratio = times["new"][0] / times["xla"][0]
        taken = "blockwise" if reshaping.takes_blockwise(x.layout, out) else "xla"
        if taken == "blockwise":
            worst = max(worst, ratio)
        print(f"{str(shape):>16} {'x'.join(map(str, mesh_shape)):>4} {str(new):>14} "
              f"{host.nbytes / 1e6:6.1f} {times['xla'][0] * 1e3:8.2f} "
              f"{times['new'][0] * 1e3:8.2f} {ratio:8.2f} {_blocks(old_fn, x.data):8.2f} "
              f"{_blocks(new_fn, x.data):8.2f}  {taken}", flush=True)
    print(f"worst new/xla where the block-wise path is taken: {worst:.2f}")


if __name__ == "__main__":
    main()
