"""A user's script, as a type checker reads it: every result is a DistArray.

tests/unit/test_typing_stubs.py runs mypy on this file; `assert_type` fails the check when a
method, operator, property or namespace function is seen as anything else (`Any` included).
It is never run, only checked.
"""
from __future__ import annotations

from typing import assert_type

import jax
import numpy as np

import darray
from darray import DistArray

mesh = jax.make_mesh((2, 4), ("x", "y"))
x = darray.asarray(np.ones((8, 8, 8)), mesh=mesh, spec=("x", "y"))
assert_type(x, DistArray)

# methods and reductions
assert_type(x.sum(), DistArray)
assert_type(x.sum(axis=0, keepdims=True), DistArray)
assert_type(x.mean(axis=(0, 1)), DistArray)
assert_type(x.std(ddof=1), DistArray)
assert_type(x.max(), DistArray)
assert_type(x.reshape(64, 8), DistArray)
assert_type(x.reshape((64, 8)), DistArray)
assert_type(x.astype(darray.float32), DistArray)
assert_type(x.cumsum(axis=0), DistArray)
assert_type(x.transpose(2, 1, 0), DistArray)
assert_type(x.copy(), DistArray)

# operators, reflected and in-place, comparisons
y = x + 1
assert_type(y, DistArray)
assert_type(2.0 * x, DistArray)
assert_type(x / x, DistArray)
assert_type(x**2, DistArray)
assert_type(-x, DistArray)
assert_type(abs(x), DistArray)
assert_type(x < 0.5, DistArray)
assert_type(x == x, DistArray)
y += x
assert_type(y, DistArray)

# properties, indexing, matmul
m = x[0]
assert_type(m, DistArray)
assert_type(m.T, DistArray)
assert_type(m.T @ m, DistArray)
assert_type(m.mT, DistArray)
assert_type(x[:, 1:3, ...], DistArray)
assert_type(x.at[0].set(1.0), DistArray)

# halos
assert_type(x.halo(1), DistArray)
assert_type(x.halo(2, boundary="reflect").halo_reduce(), DistArray)
assert_type(x.halo(1).unhalo(), DistArray)

# namespace functions, elementwise ones included
assert_type(darray.sin(x), DistArray)
assert_type(darray.add(x, 1.0), DistArray)
assert_type(darray.sum(x, axis=0), DistArray)
assert_type(darray.reshape(x, (512,)), DistArray)
assert_type(darray.zeros((4, 4), mesh=mesh), DistArray)

# the fft extension
k = darray.fft.fftn(x)
assert_type(k, DistArray)
assert_type(darray.fft.fftn(x).real, DistArray)
assert_type(darray.fft.rfftn(x), DistArray)
assert_type(darray.fft.irfftn(darray.fft.rfftn(x), s=x.shape), DistArray)
assert_type(darray.fft.dctn(x), DistArray)
assert_type(darray.fft.fftfreq(8), DistArray)

# host values
value: float = float(x.sum())
array: np.ndarray = np.asarray(x)
