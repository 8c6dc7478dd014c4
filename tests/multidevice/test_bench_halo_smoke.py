"""CI smoke run of benchmarks/bench_halo.py (tiny sizes): it runs and times every row."""
import importlib.util
import pathlib


def test_bench_halo_small_smoke():
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "bench_halo.py"
    spec = importlib.util.spec_from_file_location("bench_halo", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    times = bench.main(["--small"])
    assert set(times) == {"halo", "halo_reduce", "pad", "local_pad"}
    assert all(0 < t < 60 for t in times.values()), times
