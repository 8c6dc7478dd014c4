"""pytest plugin: scipy's own array-API tests with darray as one more backend, next to jax.numpy.

Loaded with ``-p darray_xp_plugin`` (this directory on PYTHONPATH) into a pytest run of the
installed scipy's test files (``--pyargs scipy.fft`` ...). Nothing installed is edited:

* every test that takes scipy's ``xp`` fixture is parametrized over ``darray`` and
  ``jax.numpy`` (a parametrize mark added before pytest expands scipy's own backend list, so
  the fixture runs with ``request.param`` = our namespace and keeps all of scipy's handling:
  skip/xfail markers, jax.jit wrapping for jax.numpy, namespace-checking asserts);
* "darray" joins scipy's known backends, so ``np_only`` skips apply to it, while ``cpu_only``
  and ``eager_only`` do not (darray runs eagerly on the CPU here), nor do skips that name
  another backend;
* in darray's runs, ``darray.asarray`` of host data without a placement splits the array over
  all 8 devices (the first axis longer than 1), so scipy's inputs and its own host-built
  arrays are distributed;
* each outcome goes to the JSON file named by DARRAY_XP_REPORT as
  {test id without the backend: {backend: outcome}}, for the clients tier to compare;
* darray runs listed in DARRAY_XP_XFAILS (a JSON {node id fragment: reason}) are xfailed
  (non-strict) with that reason.
"""
from __future__ import annotations

import json
import os
import re
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402

BACKENDS = ("darray", "jax.numpy")
REPORT_ENV, XFAILS_ENV = "DARRAY_XP_REPORT", "DARRAY_XP_XFAILS"
_outcomes: dict = {}
_scipy_conftest_patched = [False]


def _namespaces():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import darray
    return {"darray": darray, "jax.numpy": jnp}


def _patch_scipy_conftest():
    if _scipy_conftest_patched[0]:
        return
    for name, mod in list(sys.modules.items()):
        if name.endswith("conftest") and hasattr(mod, "xp_known_backends"):
            mod.xp_known_backends.add("darray")
    _scipy_conftest_patched[0] = True


class DarrayBackend:
    """darray as one more member of array-api-extra's `Backend` enum (its tests compare
    backends with ``==`` and ``like``, and import ``modname``)."""
    value = modname = name = "darray"

    def like(self, *others) -> bool:
        return any(getattr(o, "modname", None) == "darray" for o in others)

    def __repr__(self) -> str:
        return "Backend.DARRAY"


def _parametrize_library(metafunc) -> None:
    """array-api-extra: its `xp` fixture comes from the `library` fixture (a Backend enum);
    parametrize that over darray and jax.numpy."""
    from array_api_extra._lib._backends import Backend
    wanted = os.environ.get("DARRAY_XP_BACKENDS", ",".join(BACKENDS)).split(",")
    known = {"darray": DarrayBackend(), "jax.numpy": Backend.JAX}
    _namespaces()  # x64 on, as for scipy's suites
    params = [pytest.param(known[b], id=b) for b in BACKENDS if b in wanted]
    metafunc.definition.add_marker(pytest.mark.parametrize("library", params, indirect=True))


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc):
    if "library" in metafunc.fixturenames and "xp" in metafunc.fixturenames:
        _parametrize_library(metafunc)
        return
    if "xp" not in metafunc.fixturenames:
        return
    _patch_scipy_conftest()
    wanted = os.environ.get("DARRAY_XP_BACKENDS", ",".join(BACKENDS)).split(",")
    ns = _namespaces()
    params = [pytest.param(ns[b], id=b, marks=[pytest.mark.array_api_backends])
              for b in BACKENDS if b in wanted]
    metafunc.definition.add_marker(pytest.mark.parametrize("xp", params, indirect=True))


def _backend_of(item) -> str | None:
    spec = getattr(item, "callspec", None)
    if spec is None:
        return None
    if hasattr(spec.params.get("library"), "modname"):  # array-api-extra's Backend
        return spec.params["library"].modname
    if spec.params.get("array_namespace") in BACKENDS:  # scikit-learn (sklearn_xp_plugin)
        return spec.params["array_namespace"]
    if "xp" not in spec.params:
        return None
    return spec.params["xp"].__name__


def _split_asarray(original):
    import numpy as np

    def asarray(obj, /, *, dtype=None, device=None, copy=None, mesh=None, spec=None):
        import darray
        if (mesh is None and device is None and spec is None
                and not isinstance(obj, darray.DistArray)):
            try:
                shape = np.shape(obj)
            except Exception:  # not array-like: let darray say why
                shape = ()
            if shape and max(shape) > 1:
                axis = next(a for a, n in enumerate(shape) if n > 1)
                spec = (None,) * axis + (darray.default_mesh().axis_names[0],)
        return original(obj, dtype=dtype, device=device, copy=copy, mesh=mesh, spec=spec)
    asarray.__wrapped__ = original
    return asarray


@pytest.fixture(autouse=True)
def _darray_inputs_split(request):
    """In darray's runs, host data given to darray.asarray without a placement is split
    (scipy's and array-api-extra's; scikit-learn's inputs keep darray's default placement)."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    if _backend_of(request.node) != "darray" or "array_namespace" in params:
        yield
        return
    import darray
    original = darray.asarray
    darray.asarray = _split_asarray(original)
    try:
        yield
    finally:
        darray.asarray = original


def _function_of(item) -> str:
    return item.nodeid.split("[", 1)[0]


def _sample(config, items):
    """At most DARRAY_XP_PER_FUNCTION parametrizations of each test function (evenly spread
    over its list, the same ones for every backend; DARRAY_XP_PER_FUNCTION_MORE, a JSON
    {function id fragment: count}, raises it for some), so that a suite of thousands of cases
    fits the clients tier's time while every test function still runs."""
    per = int(os.environ.get("DARRAY_XP_PER_FUNCTION", "0"))
    more = json.loads(os.environ.get("DARRAY_XP_PER_FUNCTION_MORE", "{}"))
    if per <= 0:
        return
    groups: dict = {}
    for item in items:
        backend = _backend_of(item)
        key = _key(item.nodeid, backend) if backend else item.nodeid
        groups.setdefault(_function_of(item), {}).setdefault(key, []).append(item)
    keep, drop = [], []
    for function, cases in groups.items():
        keys = list(cases)
        n = max([per] + [m for fragment, m in more.items() if fragment in function])
        step = max(1, -(-len(keys) // n))
        chosen = set(keys[::step][:n])
        for k in keys:
            (keep if k in chosen else drop).extend(cases[k])
    kept = set(map(id, keep))
    items[:] = [i for i in items if id(i) in kept]
    config.hook.pytest_deselected(items=drop)


def pytest_collection_modifyitems(config, items):
    _sample(config, items)
    xfails = json.loads(os.environ.get(XFAILS_ENV, "{}"))
    if not xfails:
        return
    for item in items:
        if _backend_of(item) != "darray":
            continue
        for fragment, reason in xfails.items():
            if fragment in item.nodeid:
                item.add_marker(pytest.mark.xfail(strict=False, reason=f"darray: {reason}"))
                break


def _key(nodeid: str, backend: str) -> str:
    """The test id without its backend parameter (darray's and jax's runs share it)."""
    return re.sub(rf"(?<=[\[-]){re.escape(backend)}(?=[\]-])", "XP", nodeid, count=1)


def pytest_runtest_logreport(report):
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    backend = next((b for b in BACKENDS if f"[{b}" in report.nodeid or f"-{b}" in report.nodeid),
                   None)
    if backend is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        else:
            outcome = report.outcome
        entry = {"outcome": outcome}
        if report.failed:
            entry["error"] = str(report.longrepr).strip().splitlines()[-1][:300]
        _outcomes.setdefault(_key(report.nodeid, backend), {})[backend] = entry


def pytest_sessionfinish(session):
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "w") as f:
            json.dump(_outcomes, f, indent=0, sort_keys=True)
