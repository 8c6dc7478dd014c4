"""Covers: none (benchmarks/bench_mpi_peers.py's summary)

bench_mpi_peers' summary: what it counts as a contender's memory and which contenders enter
the ratios (no MPI needed: the summary reads finished jobs' results)."""
from __future__ import annotations

import importlib.util
import math
import pathlib

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
MIB = 1 << 20


def load_bench():
    spec = importlib.util.spec_from_file_location(
        "_test_bench_mpi_peers", BENCHMARKS / "bench_mpi_peers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def job(ms, growth, check=0.0, error=1e-15, **extra):
    return {"status": "ok", "times": [ms / 1e3] * 3, "growth": growth, "check": check,
            "error": error, **extra}


def test_memory_comes_from_the_memory_jobs_only(capsys):
    bench = load_bench()
    n, procs = 32, 2
    block = n ** 3 / procs * 16
    runs = {
        # a timed job's RSS holds what glibc kept for reuse (10 blocks): not counted
        (procs, n, "c2c", "darray-jit"): [
            job(10.0, 10 * block, memory_growth=2.0 * block),
            job(12.0, 10 * block, memory_growth=3.0 * block)],
        # a failed memory job leaves no sample
        (procs, n, "c2c", "darray-eager"): [job(20.0, 10 * block, memory_growth=None)],
        # timed jobs sample nothing (growth None): every contender's memory is its memory jobs'
        (procs, n, "c2c", "dtfft-p2p"): [job(8.0, None, memory_growth=4 * block),
                                          job(9.0, None, memory_growth=5 * block)],
        (procs, n, "c2c", "dtfft-a2a"): [job(6.0, None, check=0.5,  # wrong: left out
                                          memory_growth=2 * block)],
    }
    libs = ["darray-jit", "darray-eager", "dtfft-p2p", "dtfft-a2a"]
    [case] = bench._summarise(runs, [procs], [n], ["c2c"], libs)
    got = case["contenders"]
    assert got["darray-jit"]["blocks"] == 3.0          # the larger memory job, not 10
    assert math.isnan(got["darray-eager"]["blocks"])
    assert got["dtfft-p2p"]["blocks"] == 5.0           # the larger of the peer's two
    assert got["darray-jit"]["ms"] == 11.0             # median over rounds
    assert case["dtfft_best_ms"] == 8.5                # the wrong a2a is not the best
    assert not got["dtfft-a2a"]["correct"]
    assert "WRONG" in capsys.readouterr().out


def test_a_jobs_calls_take_the_slowest_ranks_time():
    bench = load_bench()
    every = [{"times": [0.04, 0.05], "warmup_times": [0.4, 0.12], "growth": None,
              "error": 1e-15},
             {"times": [0.06, 0.03], "warmup_times": [0.3, 0.13], "growth": None,
              "error": 2e-15}]
    merged = bench._merge_ranks(every, check=0.0)
    assert merged["times"] == [0.06, 0.05]
    assert merged["warmup_times"] == [0.4, 0.13]
    assert merged["growth"] is None and merged["error"] == 2e-15 and merged["check"] == 0.0
