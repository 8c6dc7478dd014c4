"""Covers: darray/_src/extras/binning.py, darray/_src/engine/reduce_scatter.py

CI smoke run of benchmarks/bench_binning.py (tiny sizes): it runs, times every row, finds
one all-reduce in each binning program and one reduce-scatter in the spec'd sum, and leaves
its table as JSON."""
import importlib.util
import json
import pathlib

BENCHMARKS = pathlib.Path(__file__).parents[3] / "benchmarks"


def load(name):
    spec = importlib.util.spec_from_file_location(f"_test_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_binning_small_smoke(tmp_path):
    bench = load("bench_binning")
    table = tmp_path / "binning.json"
    times, found = bench.main(["--small", "--json", str(table)])
    assert all(0 < t < 60 for t in times.values()), times
    assert found == {"histogram": ["all-reduce"], "bincount": ["all-reduce"],
                     "sum": ["all-reduce"], "sum spec": ["reduce-scatter"]}, found
    data = json.loads(table.read_text())
    assert data["benchmark"] == "bench_binning"
    assert [r["program"] for r in data["rows"]][:3] == ["darray.histogram", "jnp.histogram",
                                                        "np.histogram"]
