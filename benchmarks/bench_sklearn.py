"""scikit-learn on darray vs scikit-learn on numpy (issue 50's "real users" target).

Each estimator is fitted on a tall float32 matrix (default 2^22 x 32) twice over:

* ``numpy``: scikit-learn on the numpy array (its own LAPACK/BLAS paths);
* ``darray``: the same estimator under ``sklearn.set_config(array_api_dispatch=True)`` on a
  DistArray split by rows over 8 virtual CPU devices.

Every (estimator, contender, repeat) runs in its own subprocess, so each peak resident set
(``VmHWM``) belongs to one fit; repeats are interleaved (numpy, darray, numpy, darray, ...) so
that load from other processes on a shared machine hits both alike. Each child builds the
same data from a seeded generator, chunk by chunk (the darray child builds each device's
block from the chunks it covers, so the matrix never exists whole on the host), records its
resident set before and after, fits once cold (darray: compiles) and once warm, and writes
the fitted attributes for the parent to compare with numpy's.

Columns: cold and warm fit seconds per contender, the ratio darray/numpy of each, and peak
memory as a multiple of the data (``(VmHWM - resident set before the data) / X.nbytes``).

Usage::

    python benchmarks/bench_sklearn.py                       # 2^22 x 32, 3 repeats
    python benchmarks/bench_sklearn.py --rows 262144 --repeats 1
    python benchmarks/bench_sklearn.py --estimators PCA Ridge_svd
    python benchmarks/bench_sklearn.py --blas-threads 1      # both contenders single-threaded BLAS

Ridge(solver="cholesky") under array_api_dispatch is refused by scikit-learn itself (1.9:
"Array API dispatch ... only supports solver 'svd'"); its darray row then records that error.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ESTIMATORS = ("PCA", "Ridge_svd", "Ridge_cholesky", "LDA")
CHUNK = 1 << 16  # rows per generator chunk: the data is the same whatever the split


# -- data ---------------------------------------------------------------------------------------

def _chunk(seed, index, cols):
    """Chunk `index` of the data: X rows (float32), the regression target and 3 class labels."""
    import numpy as np
    mixing = np.random.default_rng([seed, 10**9]).standard_normal((cols, cols)) / cols**0.5
    coef = np.random.default_rng([seed, 10**9 + 1]).standard_normal(cols)
    rng = np.random.default_rng([seed, index])
    x = (rng.standard_normal((CHUNK, cols)) @ mixing).astype(np.float32)
    y = (x @ coef + 0.1 * rng.standard_normal(CHUNK)).astype(np.float32)
    labels = (x[:, 0] > 0.4).astype(np.int32) + (x[:, 1] > -0.2).astype(np.int32)
    x[:, 0] += labels  # the classes differ in mean, as LDA assumes
    return x, y, labels


def rows_of(seed, start, stop, cols):
    """Rows [start, stop) of X, y and the labels, built from the chunks they touch."""
    import numpy as np
    parts = []
    for index in range(start // CHUNK, (stop - 1) // CHUNK + 1):
        x, y, labels = _chunk(seed, index, cols)
        lo, hi = max(start - index * CHUNK, 0), min(stop - index * CHUNK, CHUNK)
        parts.append((x[lo:hi], y[lo:hi], labels[lo:hi]))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def host_data(seed, rows, cols):
    import numpy as np
    x = np.empty((rows, cols), np.float32)
    y = np.empty(rows, np.float32)
    labels = np.empty(rows, np.int32)
    for start in range(0, rows, CHUNK):
        stop = min(start + CHUNK, rows)
        x[start:stop], y[start:stop], labels[start:stop] = rows_of(seed, start, stop, cols)
    return x, y, labels


def darray_data(seed, rows, cols, devices):
    """X, y and labels as DistArrays split by rows, each device's block built on its own."""
    import jax
    import numpy as np

    import darray
    mesh = jax.make_mesh((devices,), ("x",))
    cache = {}

    def block(index, which):
        start, stop, _ = index[0].indices(rows)
        if (start, stop) not in cache:
            cache.clear()  # one block at a time on the host
            cache[(start, stop)] = rows_of(seed, start, stop, cols)
        return np.ascontiguousarray(cache[(start, stop)][which][(slice(None),) + index[1:]])

    out = []
    for which, shape in enumerate(((rows, cols), (rows,), (rows,))):
        spec = jax.sharding.PartitionSpec("x", *([None] * (len(shape) - 1)))
        sharding = jax.sharding.NamedSharding(mesh, spec)
        made = jax.make_array_from_callback(shape, sharding, lambda i, w=which: block(i, w))
        out.append(darray.asarray(made))
    cache.clear()
    return tuple(out)


# -- the fits -----------------------------------------------------------------------------------

def fit(name, x, y, labels):
    """Fit estimator `name`; returns {attribute: array} to compare across contenders."""
    if name == "PCA":
        from sklearn.decomposition import PCA
        p = PCA(n_components=8, svd_solver="full").fit(x)
        return {"components_": p.components_, "explained_variance_": p.explained_variance_}
    if name.startswith("Ridge_"):
        from sklearn.linear_model import Ridge
        r = Ridge(alpha=1.0, solver=name.split("_", 1)[1]).fit(x, y)
        return {"coef_": r.coef_, "intercept_": r.intercept_}
    if name == "LDA":
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
        lda = LinearDiscriminantAnalysis(solver="svd").fit(x, labels)
        return {"coef_": lda.coef_, "intercept_": lda.intercept_, "means_": lda.means_}
    raise ValueError(f"estimator {name!r}; expected one of {ESTIMATORS}")


def resident(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def child(args):
    """One contender's fits in this process; writes a JSON result to args.out."""
    import numpy as np
    if args.contender == "darray":
        os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={args.devices}")
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        sys.path.insert(0, ROOT)
        import jax

        import darray  # noqa: F401
        assert jax.device_count() == args.devices, jax.devices()
    import sklearn
    import sklearn.decomposition  # noqa: F401  (imports before the baseline)
    import sklearn.discriminant_analysis  # noqa: F401
    import sklearn.linear_model  # noqa: F401
    base = resident("VmRSS")
    if args.contender == "darray":
        x, y, labels = darray_data(args.seed, args.rows, args.cols, args.devices)
        sklearn.set_config(array_api_dispatch=True)
    else:
        x, y, labels = host_data(args.seed, args.rows, args.cols)
    result = {"data_bytes": args.rows * args.cols * 4, "base": base}
    try:
        times = []
        for _ in range(2):  # cold (darray compiles), then warm
            t0 = time.perf_counter()
            fitted = fit(args.estimator, x, y, labels)
            times.append(time.perf_counter() - t0)
        result.update(cold=times[0], warm=times[1],
                      out_split=_splits(args.estimator, x, y, labels) if args.contender == "darray"
                      else None,
                      attrs={k: np.asarray(v, dtype=np.float64).tolist()
                             for k, v in fitted.items()})
    except Exception as e:  # noqa: BLE001 - reported in the table, not raised
        result["error"] = f"{type(e).__name__}: {e}"
    result["peak"] = resident("VmHWM")
    with open(args.out, "w") as f:
        json.dump(result, f)


def _splits(name, x, y, labels):
    """For PCA: whether transform's output stays split by rows like X (no gather)."""
    if name != "PCA":
        return None
    from sklearn.decomposition import PCA
    t = PCA(n_components=8, svd_solver="full").fit(x[:4096]).transform(x)
    return str(getattr(t, "layout", type(t).__name__))


# -- the parent ---------------------------------------------------------------------------------

def run_child(args, estimator, contender):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--contender", contender,
           "--estimator", estimator, "--rows", str(args.rows), "--cols", str(args.cols),
           "--devices", str(args.devices), "--seed", str(args.seed), "--out", out]
    env = dict(os.environ, SCIPY_ARRAY_API="1")  # sklearn's array_api_dispatch needs it
    if args.blas_threads:  # the same BLAS threads for both contenders
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(args.blas_threads)
    if contender == "numpy":
        env.pop("XLA_FLAGS", None)
    done = subprocess.run(cmd, env=env, timeout=args.timeout)
    try:
        with open(out) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"error": f"child exited {done.returncode} without a result"}
    finally:
        os.unlink(out)


def agree(ref, got):
    """Largest difference of the fitted attributes relative to numpy's scale, components and
    coefficients up to sign per row (scikit-learn's svd_flip may choose either)."""
    import numpy as np
    worst = 0.0
    for key, want in ref.items():
        a, b = np.asarray(want), np.asarray(got[key])
        if a.shape != b.shape:
            return float("inf")
        if key == "components_":
            a, b = np.abs(a), np.abs(b)
        worst = max(worst, float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-30)))
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1 << 22)
    parser.add_argument("--cols", type=int, default=32)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=ESTIMATORS)
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="largest relative difference from numpy's fit (float32)")
    parser.add_argument("--blas-threads", type=int, default=0,
                        help="OPENBLAS_NUM_THREADS and OMP_NUM_THREADS of both contenders "
                             "(default: inherited)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per child")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--contender", choices=("numpy", "darray"), help=argparse.SUPPRESS)
    parser.add_argument("--estimator", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    with open("/proc/loadavg") as f:
        load_before = f.read().split()[:3]
    results = {(e, c): [] for e in args.estimators for c in ("numpy", "darray")}
    for repeat in range(args.repeats):
        for estimator in args.estimators:
            for contender in ("numpy", "darray"):
                r = run_child(args, estimator, contender)
                results[(estimator, contender)].append(r)
                print(f"[{repeat + 1}/{args.repeats}] {estimator:<14} {contender:<6} "
                      + (r.get("error") or f"cold {r['cold']:.2f} s warm {r['warm']:.2f} s "
                         f"peak {(r['peak'] - r['base']) / r['data_bytes']:.2f}x data"),
                      file=sys.stderr, flush=True)
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[:3]

    data_mib = args.rows * args.cols * 4 / 2**20
    print(f"\n{args.rows} x {args.cols} float32 ({data_mib:.0f} MiB), darray on "
          f"{args.devices} CPU devices split by rows; medians of {args.repeats}; BLAS threads "
          f"{args.blas_threads or os.environ.get('OPENBLAS_NUM_THREADS', 'default')}; "
          f"loadavg before {' '.join(load_before)}, after {' '.join(load_after)}")
    print(f"{'estimator':<15}{'numpy s':>9}{'darray s':>10}{'ratio':>7}{'warm ratio':>11}"
          f"{'np mem':>8}{'da mem':>8}{'max rel diff':>14}  note")
    failed = False
    for estimator in args.estimators:
        rows = {c: [r for r in results[(estimator, c)] if "error" not in r]
                for c in ("numpy", "darray")}
        errors = {r["error"] for c in ("numpy", "darray") for r in results[(estimator, c)]
                  if "error" in r}
        if not rows["numpy"] or not rows["darray"]:
            print(f"{estimator:<15}  error: {'; '.join(sorted(errors))[:200]}")
            continue

        def med(c, key, rows=rows):
            return statistics.median(r[key] for r in rows[c])

        def mem(c, rows=rows):
            return max((r["peak"] - r["base"]) / r["data_bytes"] for r in rows[c])

        diff = max(agree(rows["numpy"][0]["attrs"], r["attrs"]) for r in rows["darray"])
        note = "" if diff <= args.tolerance else "DISAGREES"
        failed |= bool(note)
        split = rows["darray"][0].get("out_split")
        note += f" transform -> {split}" if split else ""
        print(f"{estimator:<15}{med('numpy', 'cold'):>9.2f}{med('darray', 'cold'):>10.2f}"
              f"{med('darray', 'cold') / med('numpy', 'cold'):>7.2f}"
              f"{med('darray', 'warm') / med('numpy', 'warm'):>11.2f}"
              f"{mem('numpy'):>7.2f}x{mem('darray'):>7.2f}x{diff:>14.1e}  {note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
