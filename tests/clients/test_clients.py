"""Covers: darray/_src/api/elementwise.py, darray/_src/api/statistical.py
Covers: darray/_src/api/manipulation.py, darray/_src/api/linalg.py, darray/_src/api/indexing.py
Covers: darray/_src/methods/table.py

Real array-API clients on DistArrays: every case of the registry on both placements.

Each case runs on numpy and on DistArrays and the results are compared (see clients_harness.py); the
terminal summary prints the counts per library (conftest.py). Run the tier with
    python3 -m pytest -o addopts="" -m clients -q tests/clients
"""
import json
import os
import subprocess
import sys
import tempfile

# Importing the case modules fills the registry.
import clients_cases_array_api_extra  # noqa: F401
import clients_cases_einops  # noqa: F401
import clients_cases_scipy  # noqa: F401
import clients_cases_sklearn  # noqa: F401
import clients_cases_xarray  # noqa: F401
import pytest
from clients_harness import LIBRARIES, REGISTRY, REPORT_ENV, check, params, require

pytestmark = pytest.mark.clients


def _scipy_array_api_on() -> bool:
    from scipy._lib import _array_api
    return bool(_array_api.SCIPY_ARRAY_API)


_child_outcomes = None


def _scipy_outcomes(config) -> dict:
    """Outcomes of the scipy cases re-run in a subprocess with SCIPY_ARRAY_API=1 set before
    anything imports scipy (needed only when scipy was imported earlier in this process).
    The child runs the scipy cases this run selected (the parent's -k, if any)."""
    global _child_outcomes
    if _child_outcomes is None:
        keyword = "test_client and scipy-"
        if config.getoption("keyword"):
            keyword += f" and ({config.getoption('keyword')})"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "outcomes.json")
            env = dict(os.environ, SCIPY_ARRAY_API="1", **{REPORT_ENV: path})
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            cmd = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider",
                   "-q", "-m", "clients", "-k", keyword, os.path.relpath(__file__, root)]
            done = subprocess.run(cmd, cwd=root, env=env, timeout=900, capture_output=True,
                                  text=True)
            if not os.path.exists(path):
                pytest.fail(f"the SCIPY_ARRAY_API=1 subprocess reported nothing:\n"
                            f"{done.stdout[-3000:]}{done.stderr[-3000:]}", pytrace=False)
            with open(path) as f:
                _child_outcomes = json.load(f)
    return _child_outcomes


@pytest.mark.parametrize("case_, placement", params())
def test_client(case_, placement, record_property, request):
    if case_.library == "scipy" and require("scipy") and not _scipy_array_api_on():
        child = _scipy_outcomes(request.config)[request.node.name]
        for name, value in child["properties"]:
            record_property(name, value)
        if child["outcome"] == "failed":
            pytest.fail(f"(scipy case run in a subprocess with SCIPY_ARRAY_API=1)\n"
                        f"{child['longrepr']}", pytrace=False)
        if child["outcome"] == "xfailed":
            raise AssertionError("xfailed in the SCIPY_ARRAY_API=1 subprocess")
        return
    check(case_, placement, record_property)


def test_scipy_sees_array_api_switch(request):
    """The scipy cases test scipy's array-API path, not its numpy fallback."""
    require("scipy")
    assert os.environ.get("SCIPY_ARRAY_API") == "1"
    if not _scipy_array_api_on():
        # scipy was imported before conftest.py set the switch; the cases ran in a subprocess.
        assert _scipy_outcomes(request.config), "the scipy subprocess reported no outcomes"


def test_registry_is_representative():
    """At least 100 calls in all, every library represented, names unique."""
    assert len(REGISTRY) >= 100, len(REGISTRY)
    counts = {lib: sum(c.library == lib for c in REGISTRY) for lib in LIBRARIES}
    assert all(n >= 5 for n in counts.values()), counts
    assert len({c.id for c in REGISTRY}) == len(REGISTRY)
