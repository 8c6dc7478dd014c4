"""Covers: darray/_src/halo/api.py

CI smoke run of benchmarks/bench_halo.py (tiny sizes): it runs, times every row and leaves
its table as JSON (which benchmarks/plot.py reads back) with a PNG plot beside it."""
import importlib.util
import json
import pathlib

BENCHMARKS = pathlib.Path(__file__).parents[3] / "benchmarks"


def load(name):
    spec = importlib.util.spec_from_file_location(f"_test_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_halo_small_smoke(tmp_path):
    bench = load("bench_halo")
    table = tmp_path / "out" / "halo.json"        # a folder that does not exist yet
    times = bench.main(["--small", "--json", str(table)])
    assert set(times) == {"halo", "halo_reduce", "pad", "local_pad"}
    assert all(0 < t < 60 for t in times.values()), times

    data = json.loads(table.read_text())
    assert data["benchmark"] == "bench_halo"
    rows = load("plot").load_rows(table)
    assert [r["program"] for r in rows] == ["halo", "halo_reduce", "jnp.pad wrap", "local pad"]
    assert [r["mesh"] for r in rows] == ["2x4", "2x4", "1", "2x4"]
    assert all(r["size"] == "48^3 w1" for r in rows)
    by_program = dict(zip(("halo", "halo_reduce", "pad", "local_pad"), rows))
    for key, row in by_program.items():
        assert row["time_ms"] == times[key] * 1e3          # the JSON holds what was measured
        assert row["ratio"] == times[key] / times["pad"]   # ratio to the one-device jnp.pad
    png = table.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
