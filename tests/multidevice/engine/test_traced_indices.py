"""Covers: darray/_src/api/indexing.py

Traced indices under jit (#28.4): ``x[i]``, ``x[i, :]``, ``x[i, j]`` with a traced integer on
split axes give jax.numpy's answers (negative from the end, out-of-range clamped, as JAX reads
them), keep the layout of the surviving axes and never gather x; ``x[i:i + k]`` raises JAX's
static-bounds error naming `darray.dynamic_slice`, which takes the window as
`jax.lax.dynamic_slice` does."""
import helpers
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray

MESH = mesh_of((2, 4), ("x", "y"))
A = helpers.host(np.random.default_rng(5).standard_normal((13, 10)))
TOL = helpers.tol(A.dtype)  # float64 data is float32 with x64 off
X = darray.asarray(A, mesh=MESH, spec=("x", "y"))
J = jnp.asarray(A)
INDICES = (-20, -13, -1, 0, 5, 12, 13, 100)


def test_traced_int_reads_match_jax_numpy():
    row = jax.jit(lambda x, i: x[i])
    row_colon = jax.jit(lambda x, i: x[i, :])
    col = jax.jit(lambda x, j: x[:, j])
    cell = jax.jit(lambda x, i, j: x[i, j])
    for i in INDICES:
        ref = jax.jit(lambda a, i: a[i])(J, i)
        for got in (row(X, i), row_colon(X, i)):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
            assert got.layout.split == (("y",),), got.layout
            assert got.mesh == MESH
        got = col(X, i)
        want = jax.jit(lambda a, j: a[:, j])(J, i)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert got.layout.split == (("x",),)
        for j in (-3, 4, 50):
            got = cell(X, i, j)
            np.testing.assert_array_equal(np.asarray(got),
                                          np.asarray(jax.jit(lambda a, i, j: a[i, j])(J, i, j)))
            assert got.shape == ()


def test_traced_read_never_gathers_x():
    hlo = jax.jit(lambda x, i: x[i]).lower(X, 3).compile().as_text()
    assert "all-gather" not in hlo


def test_traced_index_in_a_loop_body():
    def body(k, acc):
        return acc + X[k]
    total = jax.jit(lambda: jax.lax.fori_loop(0, 13, body, darray.zeros((10,), mesh=MESH,
                                                                        spec=("y",))))()
    np.testing.assert_allclose(np.asarray(total), A.sum(axis=0), rtol=TOL)
    assert total.layout.split == (("y",),)


def test_traced_slice_bounds_and_writes_are_refused_clearly():
    with pytest.raises(IndexError, match="darray.dynamic_slice"):
        jax.jit(lambda x, i: x[i:i + 3])(X, 2)
    with pytest.raises(IndexError, match="traced index"):
        def write(x, i):
            x[i] = 0.0
            return x
        jax.jit(write)(X, 2)


def test_dynamic_slice_matches_lax():
    window = jax.jit(lambda x, i, j: darray.dynamic_slice(x, (i, j), (4, 3)))
    for i in (-3, 0, 5, 11, 100):
        for j in (-1, 2, 9):
            got = window(X, i, j)
            ref = jax.lax.dynamic_slice(J, (i, j), (4, 3))
            np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
            assert got.layout.split == (("x",), ("y",)) and got.shape == (4, 3)
    eager = darray.dynamic_slice(X, (2, 3), (5, 4))
    np.testing.assert_array_equal(np.asarray(eager), A[2:7, 3:7])
    with pytest.raises(ValueError, match="slice_sizes\\[0\\]=14"):
        darray.dynamic_slice(X, (0, 0), (14, 2))
    with pytest.raises(ValueError, match="one entry per axis"):
        darray.dynamic_slice(X, (0,), (1,))
