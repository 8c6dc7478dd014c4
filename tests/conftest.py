"""Test configuration: 8 virtual CPU devices, set before jax initialises its backend.

Two switches select the configuration JAX users run by default (the py3.12 leg of .ci/run):

* ``DARRAY_TEST_X64=0`` leaves ``jax_enable_x64`` at JAX's default (off); tests marked ``x64``
  (they need float64 arrays) are deselected then, and the count is printed.
* ``DARRAY_TEST_DEFAULT_PLACEMENT=1`` leaves ``DARRAY_SMALL_ARRAY_CELLS`` unset, so darray's
  shipped small-array placement applies; tests marked ``distributed_placement`` (they test how
  small arrays and 0-d results are laid out over a mesh) still run, with small_array_cells=0.
"""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

X64 = os.environ.get("DARRAY_TEST_X64", "1") != "0"
DEFAULT_PLACEMENT = os.environ.get("DARRAY_TEST_DEFAULT_PLACEMENT", "0") == "1"

if not DEFAULT_PLACEMENT:
    # The suite builds small arrays to exercise distributed layouts, so it keeps them
    # distributed: darray's default places arrays under small_array_cells (and eager 0-d
    # results) on one device. Tests of that placement turn it on with
    # darray.config_context(small_array_cells=...) (tests/multidevice/api/test_small_arrays.py).
    os.environ.setdefault("DARRAY_SMALL_ARRAY_CELLS", "0")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)
if X64:
    # float64 references need float64 arrays; tests that want float32 ask for it.
    jax.config.update("jax_enable_x64", True)


import pytest  # noqa: E402

_DESELECTED_X64: list[int] = []


@pytest.fixture(autouse=True)
def _distributed_placement(request):
    """Under the shipped placement, a test marked `distributed_placement` runs with
    small_array_cells=0 (process-wide, as DARRAY_SMALL_ARRAY_CELLS=0 would set it)."""
    if not DEFAULT_PLACEMENT or request.node.get_closest_marker("distributed_placement") is None:
        yield
        return
    import darray
    before = darray.get_config("small_array_cells")
    darray.set_config(small_array_cells=0)
    try:
        yield
    finally:
        darray.set_config(small_array_cells=before)


def pytest_report_header(config):
    placement = ("shipped default" if DEFAULT_PLACEMENT
                 else f"DARRAY_SMALL_ARRAY_CELLS={os.environ['DARRAY_SMALL_ARRAY_CELLS']}")
    return [f"darray: jax_enable_x64 {'on' if X64 else 'off (JAX default)'}, "
            f"small-array placement {placement}"]


# The per-test timeout (pyproject.toml) is 120 s, so a hung collective fails the default tier
# quickly; the tiers outside it run minutes-long suites and sweeps (and launch subprocesses
# with their own, longer, timeouts), so they keep 900 s unless a test sets its own.
LONG_TIERS = ("slow", "clients", "gpu")
LONG_TIER_TIMEOUT = 900


@pytest.hookimpl(trylast=True)  # after -m, so the count is of tests that would have run
def pytest_collection_modifyitems(config, items):
    """Longer timeouts for the long tiers; with x64 off, deselect the tests marked `x64` (they
    need float64 arrays)."""
    if bool(jax.config.jax_enable_x64) != X64:  # a test module flipped it while imported
        raise pytest.UsageError(
            f"jax_enable_x64 is {jax.config.jax_enable_x64} after collection, but "
            f"DARRAY_TEST_X64 asks for {X64}: a test module must not change it at import")
    for item in items:
        if item.get_closest_marker("timeout") is None and any(
                item.get_closest_marker(tier) for tier in LONG_TIERS):
            item.add_marker(pytest.mark.timeout(LONG_TIER_TIMEOUT))
    if X64:
        return
    dropped = [item for item in items if item.get_closest_marker("x64")]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not item.get_closest_marker("x64")]
    _DESELECTED_X64.append(len(dropped))
    if hasattr(config, "workeroutput"):  # an xdist worker: the controller prints the count
        config.workeroutput["darray_x64_deselected"] = len(dropped)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: every worker collects the same tests; keep one worker's count."""
    count = getattr(node, "workeroutput", {}).get("darray_x64_deselected")
    if count is not None and not _DESELECTED_X64:
        _DESELECTED_X64.append(count)


def pytest_terminal_summary(terminalreporter):
    if not X64:
        count = _DESELECTED_X64[0] if _DESELECTED_X64 else 0
        terminalreporter.write_line(
            f"darray: x64 off, {count} tests marked x64 (they need float64) deselected")
    if DEFAULT_PLACEMENT:
        marked = sum(1 for status in ("passed", "failed", "error", "xfailed", "xpassed")
                     for rep in terminalreporter.stats.get(status, [])
                     if rep.when == "call" and "distributed_placement" in rep.keywords)
        terminalreporter.write_line(
            f"darray: shipped placement, {marked} tests marked distributed_placement ran "
            f"with small_array_cells=0")
