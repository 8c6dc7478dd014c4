"""Checkpoint throughput: darray.save / darray.load vs np.save / np.load of the same data.

Runs in one process on 8 virtual CPU devices (set before jax starts); every engine writes the
same n^3 float32 array into a temporary directory. Prints the median of a few runs in MB/s
(logical array bytes / wall time, including fsync of the metadata but not of the chunks,
as np.save does not fsync either) and the ratio to np.save / np.load.

Usage::

    python benchmarks/bench_io.py              # 256^3 float32 (64 MiB), mesh (2, 4)
    python benchmarks/bench_io.py --n 128
    python benchmarks/bench_io.py --json /tmp/io.json   # table (and PNG) elsewhere

The table is also written as JSON (default benchmarks/results/bench_io.json) with a PNG plot
beside it: one row per engine and direction, its median time and the ratio of that time to
np.save / np.load's (above 1: slower than numpy), MB/s as an extra column.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import default_json_path, make_row, progress, write_table  # noqa: E402

import darray  # noqa: E402
from darray._src.extras import io  # noqa: E402


def median_seconds(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=str(default_json_path("bench_io")),
                        help="where to write the table as JSON, a PNG plot beside it "
                             "(default benchmarks/results/bench_io.json)")
    args = parser.parse_args(argv)
    n = args.n
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    x = darray.random.normal(jax.random.key(0), (n, n, n), darray.float32, mesh=mesh,
                             spec=("x", "y"))
    host = np.asarray(x)
    mb = host.nbytes / 1e6
    root = tempfile.mkdtemp(prefix="darray-bench-io-")
    try:
        rows = []
        npy = os.path.join(root, "a.npy")
        t_save = median_seconds(lambda: np.save(npy, host), args.repeats)
        t_load = median_seconds(lambda: np.load(npy), args.repeats)
        rows.append(("np.save / np.load (1 host array)", t_save, t_load))
        engines = ["numpy"] + (["tensorstore"] if io._tensorstore() is not None else [])
        for engine in progress(engines, "bench_io engines"):
            path = os.path.join(root, f"{engine}.zarr")
            t_save_d = median_seconds(
                lambda path=path, engine=engine: darray.save(path, x, engine=engine),
                args.repeats)
            t_load_d = median_seconds(
                lambda path=path, engine=engine: darray.load(
                    path, mesh=mesh, spec=(None, "x", "y"),
                    engine=engine).data.block_until_ready(), args.repeats)
            np.testing.assert_array_equal(np.asarray(darray.load(path, engine=engine)), host)
            rows.append((f"darray {engine} (8 blocks; load onto another spec)", t_save_d,
                         t_load_d))
        print(f"{n}^3 float32 = {mb:.0f} MB, jax {jax.__version__}, {jax.device_count()} devices")
        print(f"{'engine':55s} {'save MB/s':>10s} {'load MB/s':>10s} {'save x':>7s} {'load x':>7s}")
        for name, ts, tl in rows:
            print(f"{name:55s} {mb / ts:10.0f} {mb / tl:10.0f} {rows[0][1] / ts:7.2f} "
                  f"{rows[0][2] / tl:7.2f}")
        table = []
        for (name, ts, tl), mesh in zip(rows, ["1 host"] + ["2x4"] * len(engines)):
            short = name.split(" (")[0]   # "darray numpy", "darray tensorstore"
            save, load = ((f"{short} save", f"{short} load") if short.startswith("darray")
                          else ("np.save", "np.load"))
            table.append(make_row(save, f"{n}^3", mesh, ts, ts / rows[0][1], mb_per_s=mb / ts))
            table.append(make_row(load, f"{n}^3", mesh, tl, tl / rows[0][2], mb_per_s=mb / tl))
        write_table(table, args.json, "bench_io", "np.save / np.load time of the same array",
                    f"checkpoint {n}^3 f32: ms, time ratio to numpy")
        return table
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
