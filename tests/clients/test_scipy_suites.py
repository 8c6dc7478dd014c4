"""scipy's own array-API tests (shipped in the installed wheel) with darray as one more backend,
side by side with jax.numpy (issue 19).

Each suite runs in a subprocess: pytest on the installed scipy's test files with
`darray_xp_plugin` (this directory), which parametrizes scipy's `xp` fixture over darray and
jax.numpy, splits darray's inputs over 8 devices, and reports every outcome. A test that fails
on darray where it passes on jax.numpy is a darray bug: this test fails, unless the case is in
XFAILS below with the reason the standard allows the difference (or, for a darray bug being
fixed elsewhere, the owner). The counts per backend are printed in the terminal summary.

To fit the tier's time, each test function runs at most PER_FUNCTION of its parametrizations
(evenly spread, the same ones on both backends; `darray_xp_plugin._sample`); every function of
the suite runs. scipy's test_many_sizes over all 604 lengths in one process is in the slow tier
(tests/multidevice/test_program_cache.py).

Run one suite by hand (all parametrizations):
    cd /tmp && PYTHONPATH=<repo>:<repo>/tests/clients python -m pytest -p darray_xp_plugin \\
        -o addopts="" -m array_api_backends --rootdir=<scipy> <scipy>/signal/tests/test_signaltools.py
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile

import pytest

from clients_harness import require

pytestmark = pytest.mark.clients

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# suite name -> (test path under the scipy package, parametrizations per test function)
SUITES = {
    "scipy.fft": ("fft/tests", 1),
    "scipy.signal": ("signal/tests/test_signaltools.py", 1),
    "scipy.special": ("special/tests", 1),
}
# functions that run more of their parametrizations (id fragment -> count)
MORE = {
    "TestFFTConvolve::test_many_sizes": 8,  # lengths 1..99, 1000..1499 and five larger
    "TestOAConvolve::": 3,  # jax.numpy skips them; darray must pass (writes through views)
}

# darray runs expected to fail (where jax.numpy passes, or where jax.numpy skips them for
# lacking what darray offers): node id fragment -> reason.
XFAILS = {
    "::test_device[": (
        "Array API 2025.12 makes __array_namespace_info__().devices() a tuple; scipy's "
        "`devices` fixture appends a list to it (jax.numpy xfails these for jax-ml/jax#26000)"),
    "test_logsumexp.py::TestLogSoftmax::test_log_softmax_int_array": (
        "the standard asks exp for a floating-point input; darray refuses int64 where "
        "jax.numpy promotes it"),
    "test_logsumexp.py::TestSoftmax::test_softmax_int_array": (
        "the standard asks exp for a floating-point input; darray refuses int64 where "
        "jax.numpy promotes it"),
}


def _run_suite(path: str, per_function: int) -> tuple[dict, str]:
    scipy = require("scipy")
    base = os.path.dirname(scipy.__file__)
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "outcomes.json")
        env = dict(os.environ, SCIPY_ARRAY_API="1", DARRAY_XP_REPORT=report,
                   DARRAY_XP_XFAILS=json.dumps(XFAILS),
                   DARRAY_XP_PER_FUNCTION=str(per_function),
                   DARRAY_XP_PER_FUNCTION_MORE=json.dumps(MORE),
                   PYTHONPATH=os.pathsep.join([ROOT, HERE, os.environ.get("PYTHONPATH", "")]))
        cmd = [sys.executable, "-m", "pytest", "-p", "darray_xp_plugin", "-p", "no:cacheprovider",
               "-p", "no:warnings", "-o", "addopts=", "-q", "-m", "array_api_backends",
               f"--rootdir={base}", os.path.join(base, path)]
        # run outside the repository: its pyproject.toml would be the rootdir's config
        done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=1800)
        if not os.path.exists(report):
            pytest.fail(f"the scipy suite reported nothing (rc {done.returncode}):\n"
                        f"{done.stdout[-4000:]}{done.stderr[-4000:]}", pytrace=False)
        with open(report) as f:
            return json.load(f), done.stdout[-2000:]


# a suite is one subprocess of several hundred tests: 15 CPU-minutes on a loaded 2-core machine
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("suite", list(SUITES))
def test_scipy_suite_on_darray_and_jax(suite, record_property):
    path, per_function = SUITES[suite]
    outcomes, tail = _run_suite(path, per_function)
    counts = {b: collections.Counter() for b in ("darray", "jax.numpy")}
    for per_backend in outcomes.values():
        for backend, entry in per_backend.items():
            counts[backend][entry["outcome"]] += 1
    record_property("scipy_suite", suite)
    record_property("scipy_suite_counts", json.dumps({b: dict(c) for b, c in counts.items()}))
    assert counts["darray"]["passed"] > 0 and counts["jax.numpy"]["passed"] > 0, (counts, tail)
    ours = {k: v["darray"].get("error", "") for k, v in outcomes.items()
            if v.get("jax.numpy", {}).get("outcome") == "passed"
            and v.get("darray", {}).get("outcome") == "failed"}
    assert not ours, (f"{len(ours)} tests fail on darray and pass on jax.numpy:\n"
                      + "\n".join(f"{k}: {e}" for k, e in sorted(ours.items())))
    # oaconvolve writes through slices (`ret_overpart += overpart`): jax.numpy skips these
    # tests, so they are darray's alone to pass (docs/numpy_users.md, views)
    views = {k: v["darray"] for k, v in outcomes.items() if "TestOAConvolve::" in k}
    if suite == "scipy.signal":
        assert views and all(v["outcome"] == "passed" for v in views.values()), views
