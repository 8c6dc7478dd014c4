"""What every benchmark shares: interleaved timing, progress on long runs and the JSON table
+ PNG it leaves behind.

Each benchmark's ``--json PATH`` (default ``benchmarks/results/<name>.json``) receives
``{"benchmark", "command", "jax", "columns", "rows"}``; every row holds ``label`` (program, size
and mesh in one string, for the plot's x axis), ``program``, ``size``, ``mesh``, ``time_ms``,
``ratio`` (what the ratio is relative to is in the benchmark's ``ratio_to`` entry) and any
benchmark-specific extras. ``benchmarks/plot.py`` reads that file; the PNG beside it draws
``time_ms`` and ``ratio`` per row on a log axis.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import pathlib
import statistics
import sys
import time

RESULTS_DIR = pathlib.Path(__file__).resolve().parent / "results"
PLOTTED_COLUMNS = ("time_ms", "ratio")


def default_json_path(benchmark: str) -> pathlib.Path:
    return RESULTS_DIR / f"{benchmark}.json"


def progress(items, desc: str, total: int | None = None):
    """Yield ``items`` while showing progress on stderr: a tqdm bar where tqdm is installed,
    else one line per step (stderr so the table on stdout stays clean to pipe)."""
    if total is None:
        items = list(items)
        total = len(items)
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        yield from tqdm(items, desc=desc, total=total, file=sys.stderr, leave=False)
        return
    for i, item in enumerate(items, 1):
        print(f"[{desc}] {i}/{total}", file=sys.stderr, flush=True)
        yield item


def time_interleaved(programs, repeats, desc="timing"):
    """Per program: (median wall s, min wall s, median CPU s). Runs are interleaved round-robin
    (program 1, 2, ..., 1, 2, ...) so that load from other processes on a shared machine hits
    every program alike."""
    import jax
    for _, fn, arg in progress(programs, f"{desc} warm-up"):
        jax.block_until_ready(fn(arg))  # warm-up (compile + first run)
        jax.block_until_ready(fn(arg))
    wall = {name: [] for name, _, _ in programs}
    cpu = {name: [] for name, _, _ in programs}
    for _ in progress(range(repeats), f"{desc} rounds"):
        for name, fn, arg in programs:
            c0, t0 = time.process_time(), time.perf_counter()
            jax.block_until_ready(fn(arg))
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {name: (statistics.median(wall[name]), min(wall[name]), statistics.median(cpu[name]))
            for name in wall}


def make_row(program: str, size: str, mesh: str, seconds: float, ratio: float, **extra) -> dict:
    """One table row; times are stored in milliseconds (the unit the printed tables use)."""
    return {"label": f"{program} | {size} | {mesh}", "program": program, "size": size,
            "mesh": mesh, "time_ms": seconds * 1e3, "ratio": ratio, **extra}


def mesh_label(shape) -> str:
    """(2, 4) -> "2x4"; a single device -> "1"."""
    return "x".join(str(int(s)) for s in shape) or "1"


def write_table(rows: list[dict], path, benchmark: str, ratio_to: str, title: str) -> pathlib.Path:
    """Write the rows as JSON at ``path`` and the bar chart of time and ratio beside it (same
    name, .png). Without matplotlib the PNG is skipped with a printed note, the JSON still
    written. Returns the JSON path."""
    for i, row in enumerate(rows):
        for column in PLOTTED_COLUMNS:
            value = row.get(column)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{benchmark}: row {i} ({row.get('label')!r}) has "
                                 f"{column}={value!r}; expected a finite number")
    import jax
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = {"benchmark": benchmark, "command": " ".join([os.path.basename(sys.argv[0])]
                                                         + sys.argv[1:]),
             "jax": jax.__version__, "devices": jax.device_count(), "ratio_to": ratio_to,
             "columns": ["label", "program", "size", "mesh", *PLOTTED_COLUMNS], "rows": rows}
    path.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {path}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"matplotlib is not installed: no PNG plot beside {path}")
        return path
    # benchmarks/ is a folder of scripts, not a package: load plot.py by its path so that no
    # other module named "plot" on sys.path can stand in for it.
    spec = importlib.util.spec_from_file_location(
        "_darray_bench_plot", pathlib.Path(__file__).resolve().parent / "plot.py")
    plot_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot_module)
    import matplotlib.pyplot as plt
    fig = plot_module.plot(rows, list(PLOTTED_COLUMNS), "label", title, log=True)
    png = path.with_suffix(".png")
    fig.savefig(png, dpi=100)
    plt.close(fig)
    print(f"wrote {png}")
    return path


def recommended_glibc_tunables() -> str:
    """The GLIBC_TUNABLES darray's performance guide recommends for CPU runs (huge pages for
    large host buffers, smaller ones reused). Imported when called, not with this module: a
    benchmark's ranks may run in a peer's python, without jax."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from darray._src.layout.memory import HOST_BUFFER_TUNABLES
    return HOST_BUFFER_TUNABLES
