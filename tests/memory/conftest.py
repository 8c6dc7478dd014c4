"""The targeted memory tests in the default tier: every other case of each parametrized test
(tests/helpers.py `thin_parametrized`); the slow tier runs every case. test_memory_rule.py has
its own fast subset."""
from __future__ import annotations

import pytest
from helpers import thin_parametrized

THINNED = {"test_memory_scan.py", "test_memory_indexing.py", "test_memory_sort.py",
           "test_memory_concat.py", "test_memory_factorizations.py",
           "test_memory_spectral.py", "test_memory_contraction.py"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the slow marker
def pytest_collection_modifyitems(config, items):
    thin_parametrized(items, THINNED)
