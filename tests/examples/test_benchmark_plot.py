"""Covers: none (benchmarks/plot.py)

benchmarks/plot.py draws a JSON table to a PNG and rejects malformed tables clearly."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

PLOT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "plot.py"
ROWS = [{"label": "single device", "median_ms": 310.0, "min_ms": 290.5},
        {"label": "darray slab", "median_ms": 480.0, "min_ms": 455.0}]


def run(*args):
    return subprocess.run([sys.executable, str(PLOT), *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def test_table_becomes_png(tmp_path):
    table = tmp_path / "fft.json"
    table.write_text(json.dumps({"rows": ROWS}))
    before = table.read_text()
    proc = run(table, "--columns", "median_ms", "min_ms", "--log")
    assert proc.returncode == 0, proc.stderr
    png = tmp_path / "fft.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert table.read_text() == before          # input untouched


def test_bad_column_names_row_and_value(tmp_path):
    table = tmp_path / "bad.json"
    table.write_text(json.dumps([{"label": "x", "median_ms": "fast"}]))
    proc = run(table, "--columns", "median_ms")
    assert proc.returncode == 2
    assert "row 0 ('x'): column 'median_ms' must be a finite number, got 'fast'" in proc.stderr
    assert not (tmp_path / "bad.png").exists()


def test_not_a_table(tmp_path):
    table = tmp_path / "bad.json"
    table.write_text(json.dumps({"rows": 3}))
    proc = run(table, "--columns", "a")
    assert proc.returncode == 2 and "expected a non-empty list of row objects" in proc.stderr
