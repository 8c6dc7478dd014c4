"""Turn a benchmark JSON table into a grouped bar chart (PNG).

    python3 benchmarks/plot.py results.json --columns median_ms min_ms [--label name]
                               [--out results.png] [--title TEXT] [--log]

The JSON is a list of rows (or an object with a "rows" list), each row a dict holding a label
(the `--label` key, default "label") and numeric columns. One group of bars per row, one bar per
column. Used by the documentation's performance page; any benchmark that can dump its table as
JSON can be drawn with it.
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys


def load_rows(path: pathlib.Path) -> list[dict]:
    data = json.loads(path.read_text())
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows) or not rows:
        raise ValueError(f"{path}: expected a non-empty list of row objects (or {{'rows': [...]}}),"
                         f" got {type(rows).__name__}")
    return rows


def plot(rows, columns, label_key="label", title=None, log=False):
    import matplotlib
    matplotlib.use("Agg")   # files only: no display on CI or a cluster
    import matplotlib.pyplot as plt

    for i, row in enumerate(rows):
        if label_key not in row:
            raise ValueError(f"row {i} has no label key {label_key!r}; its keys: {sorted(row)}")
        for c in columns:
            value = row.get(c)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(
                    value):
                raise ValueError(f"row {i} ({row[label_key]!r}): column {c!r} must be a finite "
                                 f"number, got {value!r}")
    width = 0.8 / len(columns)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(rows) * len(columns) ** 0.5), 3.5))
    for j, c in enumerate(columns):
        xs = [i + (j - (len(columns) - 1) / 2) * width for i in range(len(rows))]
        ax.bar(xs, [row[c] for row in rows], width, label=c)
    ax.set_xticks(range(len(rows)), [str(row[label_key]) for row in rows], rotation=20,
                  ha="right")
    if log:
        ax.set_yscale("log")
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=pathlib.Path, help="JSON file with the rows")
    parser.add_argument("--columns", nargs="+", required=True, help="numeric columns to draw")
    parser.add_argument("--label", default="label", help="row key naming each group")
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help="PNG path (default: the table's path with .png)")
    parser.add_argument("--title", default=None)
    parser.add_argument("--log", action="store_true", help="logarithmic y axis")
    args = parser.parse_args(argv)
    try:
        fig = plot(load_rows(args.table), args.columns, args.label, args.title, args.log)
    except ValueError as exc:
        print(f"plot.py: {exc}", file=sys.stderr)
        return 2
    out = args.out or args.table.with_suffix(".png")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
