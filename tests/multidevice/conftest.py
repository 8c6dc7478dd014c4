"""The heaviest numerical sweeps of wave 6 in the default tier: every other case of each
parametrized test (tests/helpers.py `thin_parametrized`); the slow tier runs every case."""
from __future__ import annotations

import pytest
from helpers import thin_parametrized

THINNED = {"test_scan_repeat_isin_split.py", "test_exchange_gather.py",
           "test_distributed_sort.py", "test_contraction.py", "test_jacobi_eigh_svd.py",
           "test_blocked_factorizations.py", "test_stacked_factorizations.py", "test_fft_memory.py"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the slow marker
def pytest_collection_modifyitems(config, items):
    thin_parametrized(items, THINNED)
