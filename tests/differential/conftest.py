"""Hypothesis profiles for the differential suite.

fast (default): few examples per case, reproducible (derandomize), no shrinking, so the whole
suite fits the default run's budget; every new (shape, layout, dtype) compiles, which dominates.
large: 10x the examples, with shrinking; selected by DARRAY_DIFF_PROFILE=large or run as the
slow tier (`-m slow`, test_differential_large in test_differential.py).

DARRAY_DIFF_KERNELS=1 lowers every size threshold below which darray keeps XLA's program
(`KERNEL_THRESHOLDS`), so the distributed kernels written for issue 49 (block-wise reshape,
index ring, distributed sort and search, SUMMA and ring contractions, tile, distinct) run on
the suite's small uneven examples too, where the default thresholds take XLA's path.
"""
import importlib
import os

import pytest
from hypothesis import HealthCheck, Phase, settings

# (module, threshold, value that lets every array through); each threshold is a speed
# crossover, not a precondition of its kernel
KERNEL_THRESHOLDS = (
    ("darray._src.engine.reshaping", "MIN_CELLS", 0),
    ("darray._src.engine.exchange_gather", "MIN_RING_CELLS", 0),
    ("darray._src.engine.repeating", "TILE_MIN_CELLS", 0),
    ("darray._src.engine.distinct", "MIN_CELLS", 0),
    ("darray._src.engine.distributed_sort", "MIN_BLOCK_ELEMENTS", 1),
    ("darray._src.api.searching", "_ONE_BUFFER_SEARCH_CELLS", 0),
    ("darray._src.linalg.contraction", "MIN_ELEMENTS", 0),
    ("darray._src.linalg.contraction", "MIN_STEP_WORK", 0),
)


@pytest.fixture(autouse=True)
def _kernels_at_every_size(monkeypatch):
    if os.environ.get("DARRAY_DIFF_KERNELS") == "1":
        for module, name, value in KERNEL_THRESHOLDS:
            monkeypatch.setattr(importlib.import_module(module), name, value)

FAST_EXAMPLES = 3
LARGE_EXAMPLES = 10 * FAST_EXAMPLES
_COMMON = dict(derandomize=True, deadline=None, database=None, print_blob=False,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
settings.register_profile("darray-fast", max_examples=FAST_EXAMPLES,
                          phases=[Phase.explicit, Phase.generate], **_COMMON)
# DARRAY_DIFF_SHRINK=0 skips shrinking in the large profile (a quicker survey of failures)
_LARGE_PHASES = ([Phase.explicit, Phase.generate] if os.environ.get("DARRAY_DIFF_SHRINK") == "0"
                 else list(Phase))
settings.register_profile("darray-large", max_examples=LARGE_EXAMPLES, phases=_LARGE_PHASES,
                          **_COMMON)

# seeded: random draws (pytest's --hypothesis-seed=N picks them), DARRAY_DIFF_EXAMPLES per case;
# for surveys beyond the fixed draws of the other two profiles
settings.register_profile("darray-seeded",
                          max_examples=int(os.environ.get("DARRAY_DIFF_EXAMPLES", "9")),
                          phases=[Phase.explicit, Phase.generate],
                          **dict(_COMMON, derandomize=False))

PROFILE = os.environ.get("DARRAY_DIFF_PROFILE", "fast")
if PROFILE not in ("fast", "large", "seeded"):
    raise ValueError(f"DARRAY_DIFF_PROFILE={PROFILE!r}; use 'fast', 'large' or 'seeded'")


def pytest_terminal_summary(terminalreporter):
    """State the fft refusals (NotImplementedError on a drawn layout) the suite recorded."""
    try:
        import diff_runner as runner
    except ImportError:
        return
    if runner.REFUSALS:
        terminalreporter.section("darray differential: NotImplementedError refusals")
        for line in sorted(set(runner.REFUSALS)):
            terminalreporter.write_line(line)
