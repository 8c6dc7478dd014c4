"""pytest plugin: scikit-learn's own array-API tests with darray and jax.numpy as the namespaces.

Loaded with ``-p sklearn_xp_plugin`` (with ``-p darray_xp_plugin`` for the outcome report)
into a pytest run of the installed scikit-learn's test files. scikit-learn parametrizes its
array-API tests with ``yield_namespace_device_dtype_combinations()``, which lists the
namespaces it knows (numpy, array_api_strict, cupy, torch, dpnp) and imports each by name in
``_array_api_for_tests``. Here that list is darray and jax.numpy, side by side (each with the
default device and dtype), before any test module is collected. Nothing installed is edited.
"""
from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("SCIPY_ARRAY_API", "1")

NAMESPACES = ("darray", "jax.numpy")


def _namespaces(include_numpy_namespaces=True):
    del include_numpy_namespaces  # neither is a numpy namespace
    yield from NAMESPACES


def pytest_configure(config):
    import jax
    jax.config.update("jax_enable_x64", True)
    from sklearn.utils import _array_api
    _array_api.yield_namespaces = _namespaces
