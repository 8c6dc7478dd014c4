"""Covers: darray/_src/base/compat.py, darray/_src/placement/physical.py

Logical views of uneven splits. jax >= 0.11 refuses a sharding constraint that splits n cells
over p devices when gcd(n, p) > 1 and p does not divide n (294 over 8); darray must not pass
that refusal on to the user (compat.constrain leaves such an axis to the partitioner)."""
import numpy as np
import pytest
from helpers import mesh_of

import darray

MESH8 = mesh_of((8,), ("x",))
MESH24 = mesh_of((2, 4), ("x", "y"))


@pytest.mark.parametrize("n", [13, 100, 294, 296])
def test_to_jax_of_uneven_splits(n):
    a = np.arange(float(n))
    x = darray.asarray(a, mesh=MESH8, spec=("x",))
    np.testing.assert_array_equal(np.asarray(x.to_jax()), a)
    assert x.sharding.spec == x.layout.spec
    y = x * 2.0 + 1.0
    np.testing.assert_array_equal(np.asarray(y), a * 2.0 + 1.0)
    assert y.layout == x.layout


@pytest.mark.x64
def test_mask_update_with_values_of_an_uneven_length():
    # array-api-extra's at(x)[mask].add(...) does exactly this (294 hits over 8 devices)
    a = np.random.default_rng(0).standard_normal((64, 16))
    x = darray.asarray(a, mesh=MESH8, spec=("x", None))
    m = x > 0.5
    x[m] = x[m] + 1.0
    a[a > 0.5] += 1.0
    np.testing.assert_allclose(np.asarray(x), a, rtol=1e-15)
    assert x.layout.split == (("x",), ())


@pytest.mark.x64
def test_reduction_of_an_uneven_two_axis_split():
    a = np.random.default_rng(1).standard_normal((50, 6))
    x = darray.asarray(a, mesh=MESH24, spec=(("x", "y"), None))
    np.testing.assert_allclose(np.asarray(darray.sum(x, axis=1)), a.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(x.to_jax()), a)
