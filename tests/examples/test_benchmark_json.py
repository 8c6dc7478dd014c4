"""Covers: darray/_src/fft/r2r.py

Benchmarks leave their table as JSON that benchmarks/plot.py reads, with a PNG beside it.

(bench_halo's JSON is checked by its smoke run, tests/multidevice/halo/test_bench_halo_smoke.py.)
"""
from __future__ import annotations

import importlib.util
import json
import math
import pathlib
import sys

import numpy as np
import pytest
from helpers import mesh_of

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def load(name):
    spec = importlib.util.spec_from_file_location(f"_test_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# about 18 s; the JSON table's writer and benchmarks/plot.py keep default-tier tests
@pytest.mark.slow
def test_bench_eager_tiny_run_writes_json_and_png(tmp_path, capsys):
    bench = load("bench_eager")
    table = tmp_path / "eager.json"
    rows = bench.main(["--shape", "16,8", "--mesh", "2,4", "--repeats", "2",
                       "--json", str(table)])
    assert json.loads(table.read_text())["rows"] == rows      # JSON round trip, nothing lost
    read = load("plot").load_rows(table)
    programs = [r["program"] for r in read]
    # the small-operation rows (against one-device jax.numpy), the large rows (against
    # jax.numpy on the same sharding), and the scipy solver row (against numpy inputs)
    assert programs[:6] == ["t[i] (16,)", "0-d a - b", "bool(a <= x)", "t + 1 (16,)",
                            "sum(t) (16,)", "loop step"]
    assert programs[6:9] == ["add", "multiply", "exp"] and programs[-1] == "scipy tanhsinh"
    assert len(read) == 21
    for r in read:
        small = r["program"] in programs[:6] or r["program"] == "scipy tanhsinh"
        assert r["size"] == ("small" if small else "16x8") and r["mesh"] == "2x4"
        assert r["label"] == f"{r['program']} | {r['size']} | 2x4"
        assert r["reference"] == ("numpy" if r["program"] == "scipy tanhsinh" else
                                  "jax.numpy, one device" if small else "jax.numpy, same sharding")
        assert r["time_ms"] > 0 and r["reference_time_ms"] > 0
        assert math.isclose(r["ratio"], r["time_ms"] / r["reference_time_ms"], rel_tol=1e-12)
    load("plot").plot(read, ["time_ms", "ratio"], "label")   # plot.py accepts the rows
    png = table.with_suffix(".png")
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    err = capsys.readouterr().err
    assert "[bench_eager rounds] 2/2" in err                  # progress went to stderr


def test_write_table_rejects_non_finite_time(tmp_path):
    common = load("_bench_common")
    row = common.make_row("halo", "8^3", "2x4", float("nan"), 1.0)
    with pytest.raises(ValueError, match=r"row 0 \('halo \| 8\^3 \| 2x4'\) has time_ms=nan"):
        common.write_table([row], tmp_path / "t.json", "bench_x", "ref", "title")
    assert not (tmp_path / "t.json").exists()


def test_without_matplotlib_json_written_png_skipped(tmp_path, monkeypatch, capsys):
    common = load("_bench_common")
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib -> ImportError
    rows = [common.make_row("pad", "8^3", "1", 0.002, 1.0),
            common.make_row("halo", "8^3", "2x4", 0.003, 1.5)]
    path = common.write_table(rows, tmp_path / "t.json", "bench_x", "pad", "title")
    assert json.loads(path.read_text())["rows"] == rows
    assert not path.with_suffix(".png").exists()
    assert "matplotlib is not installed: no PNG plot" in capsys.readouterr().out


def test_default_path_is_the_ignored_results_folder():
    common = load("_bench_common")
    assert common.default_json_path("bench_fft") == BENCHMARKS / "results" / "bench_fft.json"


@pytest.mark.x64
def test_bench_r2r_floor_tiny_run_restores_the_kernels(tmp_path):
    import scipy.fft

    import darray
    import darray.fft as dfft
    bench = load("bench_r2r_floor")
    table = tmp_path / "floor.json"
    rows = bench.main(["--size", "16", "--rows", "64", "--repeats", "1", "--json", str(table)])
    assert json.loads(table.read_text())["rows"] == rows
    assert [r["program"] for r in rows] == [
        "rfftn+irfftn", "dctn+idctn", "structure floor",
        "rfft", "irfft", "one elementwise pass", "dct-II kernel", "dct-III kernel"]
    assert [r["mesh"] for r in rows] == ["2x4"] * 3 + ["8x1"] * 5
    assert rows[0]["ratio"] == 1.0 and rows[3]["ratio"] == 1.0
    for r in rows:
        assert r["time_ms"] > 0 and math.isfinite(r["ratio"])
    # the stand-ins compute something else while they are in place, and are gone afterwards:
    # darray's dctn traced after the run matches scipy again
    mesh = mesh_of((2, 4), ("x", "y"), explicit=True)
    host = np.random.default_rng(3).standard_normal((16, 16, 16))
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    want = scipy.fft.dctn(host, type=2)
    with bench.stand_in_kernels():
        assert not np.allclose(np.asarray(dfft.dctn(x)), want, rtol=1e-3)
    got = dfft.dctn(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)
    assert any(got.layout.split) and len(got.data.sharding.device_set) == 8  # still split


@pytest.mark.slow  # compiles ten programs (~2 minutes on 2 cores)
def test_bench_pm_smoke_run(tmp_path, capsys):
    # 16^3: darray and one-device jax.numpy rows always; JaxPM's rows where jaxpm imports,
    # otherwise a printed reason (never a silent gap).
    bench = load("bench_pm")
    table = tmp_path / "pm.json"
    assert bench.main(["--small", "--json", str(table)]) == 0
    rows = json.loads(table.read_text())["rows"]
    programs = [r["program"] for r in rows]
    assert {"darray step", "darray grad", "jnp step", "jnp grad"} <= set(programs)
    # the 2x finer force mesh (issue 38): a catalogue, against one-device jax.numpy only
    assert {"darray-2x step", "darray-2x grad", "jnp-2x step", "jnp-2x grad"} <= set(programs)
    out = capsys.readouterr().out
    if "jaxpm step" not in programs:
        assert "JaxPM rows skipped" in out
    base = "jaxpm" if "jaxpm step" in programs else "jnp"
    for r in rows:
        assert r["size"] == "16^3" and r["time_ms"] > 0 and r["peak_mib"] > 0
        program, kind = r["program"].split()
        ref = next(x for x in rows if x["program"] == (
            f"jnp-2x {kind}" if program.endswith("-2x") else f"{base} {kind}"))
        assert math.isclose(r["ratio"], r["time_ms"] / ref["time_ms"], rel_tol=1e-12)
    assert table.with_suffix(".png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.slow  # compiles three gradient programs (~2.5 minutes on 2 cores)
def test_bench_remat_smoke_run(tmp_path):
    # 16^3, 3 steps: the three loops give one gradient (the script asserts it) and each row has
    # its run time, compile time and planned memory; the checkpointed scan plans the least.
    bench = load("bench_remat")
    table = tmp_path / "remat.json"
    assert bench.main(["--small", "--json", str(table)]) == 0
    rows = {r["program"]: r for r in json.loads(table.read_text())["rows"]}
    assert set(rows) == {"unrolled", "scan", "scan+remat"}
    for r in rows.values():
        assert r["size"] == "16^3 x 3 steps" and r["time_ms"] > 0 and r["compile_s"] > 0
        assert math.isclose(r["ratio"], r["time_ms"] / rows["scan"]["time_ms"], rel_tol=1e-12)
    assert rows["scan+remat"]["peak_mib"] < min(rows["scan"]["peak_mib"],
                                                rows["unrolled"]["peak_mib"])
    assert table.with_suffix(".png").read_bytes()[:8] == PNG_MAGIC
