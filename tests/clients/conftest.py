"""Clients tier setup: scipy's array-API switch, and the per-library count table.

scipy reads SCIPY_ARRAY_API once, when it is first imported. tests/conftest.py (which runs before
this file) does not import scipy, nor does jax or darray, so setting it here is in time in a
normal run; `test_clients.py` checks that scipy really picked it up and otherwise runs the scipy
cases in a subprocess that has it set from the start (see `scipy_outcomes` there).

The clients run darray as their users do, with the shipped small-array placement, whatever
tests/conftest.py set for the rest of the suite (`_shipped_placement` below; the jaxDecomp suite's
subprocess drops the variable itself).
"""
import collections
import json
import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402
from clients_harness import REPORT_ENV  # noqa: E402

import darray  # noqa: E402
from darray._src.base.config import OPTIONS  # noqa: E402

SHIPPED_SMALL_ARRAY_CELLS = OPTIONS["small_array_cells"].default


@pytest.fixture(autouse=True)
def _shipped_placement():
    """Every clients test runs under darray's default small_array_cells (process-wide, so that
    threads a library starts see it too), and the suite's own value comes back afterwards."""
    before = darray.get_config("small_array_cells")
    darray.set_config(small_array_cells=SHIPPED_SMALL_ARRAY_CELLS)
    try:
        yield
    finally:
        darray.set_config(small_array_cells=before)

_outcomes = {}


def pytest_runtest_logreport(report):
    path = os.environ.get(REPORT_ENV)
    if not path or "tests/clients/" not in report.nodeid.replace(os.sep, "/"):
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        if hasattr(report, "wasxfail") and report.passed:
            outcome = "xpassed"
        _outcomes[report.nodeid.split("::")[-1]] = {
            "outcome": outcome,
            "longrepr": str(report.longrepr) if report.failed else "",
            "properties": list(report.user_properties),
        }
        with open(path, "w") as f:
            json.dump(_outcomes, f)


def pytest_terminal_summary(terminalreporter):
    """Counts per library: cases, passing and distributed, passing via a host round trip,
    library-side xfails, darray-side failures (failed, or xfailed as a darray bug)."""
    rows = collections.defaultdict(collections.Counter)
    host_cases = collections.defaultdict(set)
    for status in ("passed", "failed", "xfailed", "xpassed"):
        for rep in terminalreporter.stats.get(status, []):
            props = dict(getattr(rep, "user_properties", ()))
            lib = props.get("client_library")
            if lib is None or (rep.when != "call" and status != "failed"):
                continue
            row = rows[lib]
            row["cases"] += 1
            reason = getattr(rep, "wasxfail", "")
            if status == "passed" or status == "xpassed":
                distributed = props.get("client_result") == "distributed"
                row["distributed" if distributed else "host"] += 1
                if not distributed:
                    host_cases[lib].add(props.get("client_case", "?").split("-", 1)[-1])
                if status == "xpassed":
                    row["xpassed"] += 1
            elif status == "xfailed" and reason.startswith("library bug"):
                row["library xfail"] += 1
            else:
                row["darray failure"] += 1
    _scipy_suites_summary(terminalreporter)
    if not rows:
        return
    cols = ("cases", "distributed", "host", "library xfail", "darray failure")
    tr = terminalreporter
    tr.section("array-API clients: counts per library (case x placement)")
    tr.write_line(f"{'library':18}" + "".join(f"{c:>16}" for c in cols))
    total = collections.Counter()
    for lib in sorted(rows):
        total.update(rows[lib])
        tr.write_line(f"{lib:18}" + "".join(f"{rows[lib][c]:16d}" for c in cols))
    tr.write_line(f"{'total':18}" + "".join(f"{total[c]:16d}" for c in cols))
    for lib in sorted(host_cases):
        tr.write_line(f"via host ({lib}): " + ", ".join(sorted(host_cases[lib])))


def _scipy_suites_summary(tr):
    """scipy's own suites (test_scipy_suites.py): outcomes per backend, side by side."""
    rows = []
    for status in ("passed", "failed", "xfailed", "xpassed"):
        for rep in tr.stats.get(status, []):
            props = dict(getattr(rep, "user_properties", ()))
            if "scipy_suite_counts" in props and rep.when == "call":
                rows.append((props["scipy_suite"], json.loads(props["scipy_suite_counts"])))
    if not rows:
        return
    outcomes = ("passed", "failed", "xfailed", "skipped", "xpassed")
    tr.section("other projects' own array-API suites: darray vs jax.numpy (tests per outcome)")
    tr.write_line(f"{'suite':20}{'backend':11}" + "".join(f"{o:>9}" for o in outcomes))
    for suite, counts in sorted(rows):
        for backend in ("darray", "jax.numpy"):
            c = counts.get(backend, {})
            tr.write_line(f"{suite:20}{backend:11}" + "".join(f"{c.get(o, 0):9d}"
                                                               for o in outcomes))
