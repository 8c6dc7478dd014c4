"""Covers: none (benchmarks/bench_local_fft.py)

bench_local_fft end to end on tiny blocks: two processes at once per job, XLA beside
pocketfft (scipy comes with jax), the check against numpy, the table and its JSON."""
from __future__ import annotations

import importlib.util
import json
import math
import pathlib

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def load_bench():
    spec = importlib.util.spec_from_file_location(
        "_test_bench_local_fft", BENCHMARKS / "bench_local_fft.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_block_shapes_are_the_slab_plans_blocks():
    bench = load_bench()
    assert bench.block_shapes("fft2", "c2c", 128, 2) == ((64, 128, 128), False, (64, 128, 128))
    assert bench.block_shapes("fft1", "r2c", 128, 2) == ((64, 65, 128), False, (64, 65, 128))
    assert bench.block_shapes("rfft2", "r2c", 16, 4) == ((4, 16, 16), True, (4, 16, 9))
    assert bench.block_shapes("irfft2", "r2c", 16, 4) == ((4, 16, 9), False, (4, 16, 16))


def test_tiny_run_checks_every_library_and_writes_the_ratios(tmp_path, capsys):
    bench = load_bench()
    table = tmp_path / "local_fft.json"
    rows = bench.main(["--sizes", "8", "--kinds", "r2c", "--libraries", "xla,pocketfft",
                       "--procs", "2", "--rounds", "1", "--repeats", "2",
                       "--json", str(table)])
    out = capsys.readouterr().out
    assert "WRONG" not in out and "failed" not in out, out
    assert "2 processes at once, each bound to one core" in out
    # every stage of the r2c plan, both libraries, each checked against numpy
    assert [(r["program"], r["size"]) for r in rows] == [
        (lib, f"8^3 r2c {stage}") for stage in ("rfft2", "fft1", "irfft2")
        for lib in ("xla", "pocketfft")]
    for r in rows:
        assert r["error"] < 1e-14 and r["time_ms"] > 0 and r["mesh"] == "2 procs"
        assert math.isclose(r["ratio"], 1.0) if r["program"] == "xla" else r["ratio"] > 0
    assert json.loads(table.read_text())["rows"] == rows


def test_round_trips_put_darray_fftw_beside_xla(tmp_path):
    """--round-trips on 8 virtual devices, tiny: both providers timed, each checked against
    numpy (skipped where FFTW is not found: it measures the optional provider)."""
    import os
    import subprocess
    import sys

    import pytest

    from darray._src.kernels import fftw
    why = fftw.load()
    if why is not None:
        pytest.skip(f"FFTW is not available: {why}")
    root = str(BENCHMARKS.parent)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, str(BENCHMARKS / "bench_local_fft.py"),
                          "--round-trips", "--sizes", "8", "--rounds", "1", "--repeats", "1"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("8^3")]
    assert [(r[1], r[2]) for r in rows] == [("c2c", "complex64"), ("c2c", "complex128"),
                                             ("r2c", "float32"), ("r2c", "float64")]
    for row in rows:
        tol = 1e-15 if row[2] in ("complex128", "float64") else 2e-6
        assert float(row[6]) < tol and float(row[7]) < tol and float(row[8]) < 100 * tol, row
    assert "uptime:" in out.stdout
