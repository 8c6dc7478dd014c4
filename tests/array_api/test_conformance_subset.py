"""Covers: darray/_src/api/manipulation.py, darray/_src/api/indexing.py, darray/_src/api/sorting.py
Covers: darray/_src/api/set_functions.py, darray/_src/api/linalg.py

A fast conformance subset for the manipulation, indexing, sorting, set and linalg families,
run in the default test run (the full data-apis/array-api-tests suite is run separately, with
the command and the xfails in tests/array_api/xfails.txt).

Each check follows a rule of the Array API standard (2025.12; 2024.12 where a result changed)
and compares with numpy.
"""
import inspect

import numpy as np
import pytest

import darray

# The standard's signatures (2025.12), parameter kinds and defaults included: "/" ends the
# positional-only parameters, "*" starts the keyword-only ones.
MAIN = {
    "broadcast_arrays": "(*arrays)",
    "broadcast_to": "(x, /, shape)",
    "concat": "(arrays, /, *, axis=0)",
    "expand_dims": "(x, /, axis=0)",
    "flip": "(x, /, *, axis=None)",
    "moveaxis": "(x, source, destination, /)",
    "permute_dims": "(x, /, axes)",
    "repeat": "(x, repeats, /, *, axis=None)",
    "reshape": "(x, /, shape, *, copy=None)",
    "roll": "(x, /, shift, *, axis=None)",
    "squeeze": "(x, /, axis)",
    "stack": "(arrays, /, *, axis=0)",
    "tile": "(x, repetitions, /)",
    "unstack": "(x, /, *, axis=0)",
    "take": "(x, indices, /, *, axis=None)",
    "take_along_axis": "(x, indices, /, *, axis=-1)",
    "argsort": "(x, /, *, axis=-1, descending=False, stable=True)",
    "sort": "(x, /, *, axis=-1, descending=False, stable=True)",
    "unique_all": "(x, /)",
    "unique_counts": "(x, /)",
    "unique_inverse": "(x, /)",
    "unique_values": "(x, /)",
    "matmul": "(x1, x2, /)",
    "matrix_transpose": "(x, /)",
    "tensordot": "(x1, x2, /, *, axes=2)",
    "vecdot": "(x1, x2, /, *, axis=-1)",
}
LINALG = {
    "cholesky": "(x, /, *, upper=False)",
    "cross": "(x1, x2, /, *, axis=-1)",
    "det": "(x, /)",
    "diagonal": "(x, /, *, offset=0)",
    "eigh": "(x, /)",
    "eigvalsh": "(x, /)",
    "inv": "(x, /)",
    "matmul": "(x1, x2, /)",
    "matrix_norm": "(x, /, *, keepdims=False, ord='fro')",
    "matrix_power": "(x, n, /)",
    "matrix_rank": "(x, /, *, rtol=None)",
    "matrix_transpose": "(x, /)",
    "outer": "(x1, x2, /)",
    "pinv": "(x, /, *, rtol=None)",
    "qr": "(x, /, *, mode='reduced')",
    "slogdet": "(x, /)",
    "solve": "(x1, x2, /)",
    "svd": "(x, /, *, full_matrices=True)",
    "svdvals": "(x, /)",
    "tensordot": "(x1, x2, /, *, axes=2)",
    "trace": "(x, /, *, offset=0, dtype=None)",
    "vecdot": "(x1, x2, /, *, axis=-1)",
    "vector_norm": "(x, /, *, axis=None, keepdims=False, ord=2)",
}


def _signature(fn) -> str:
    """The signature without annotations: names, kinds and defaults only."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


@pytest.mark.parametrize("name", list(MAIN))
def test_main_namespace_signature(name):
    assert _signature(getattr(darray, name)) == MAIN[name]


@pytest.mark.parametrize("name", list(LINALG))
def test_linalg_extension_signature(name):
    assert _signature(getattr(darray.linalg, name)) == LINALG[name]


def test_result_types_and_named_tuples():
    x = darray.asarray(np.array([[2.0, 1.0], [1.0, 3.0]]))
    assert darray.linalg.eigh(x)._fields == ("eigenvalues", "eigenvectors")
    assert darray.linalg.qr(x)._fields == ("Q", "R")
    assert darray.linalg.slogdet(x)._fields == ("sign", "logabsdet")
    assert darray.linalg.svd(x)._fields == ("U", "S", "Vh")
    assert darray.unique_all(x)._fields == ("values", "indices", "inverse_indices", "counts")
    assert darray.unique_counts(x)._fields == ("values", "counts")
    assert darray.unique_inverse(x)._fields == ("values", "inverse_indices")
    assert isinstance(darray.unstack(x), tuple)
    assert isinstance(darray.broadcast_arrays(x, x), tuple)  # a list before 2025.12
    old = x.__array_namespace__(api_version="2024.12")
    assert isinstance(old.broadcast_arrays(x, x), list)


def test_sort_nan_last_and_stable_descending():
    a = np.array([3.0, np.nan, 1.0, 3.0, -0.0, 0.0])
    x = darray.asarray(a)
    np.testing.assert_array_equal(np.asarray(darray.sort(x)), np.sort(a))
    # stable descending: the two 3.0s keep their order, as do -0.0 and 0.0
    idx = np.asarray(darray.argsort(x, descending=True))
    assert list(idx) == [1, 0, 3, 2, 4, 5]


def test_unique_nans_are_distinct():
    x = darray.asarray(np.array([np.nan, 1.0, np.nan, 1.0]))
    vals = np.asarray(darray.unique_values(x))
    assert vals.shape == (3,) and np.isnan(vals).sum() == 2
    counts = np.asarray(darray.unique_counts(x).counts)
    assert sorted(counts.tolist()) == [1, 1, 2]


def test_indexing_rules():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = darray.asarray(a)
    np.testing.assert_array_equal(np.asarray(x[..., ::-1]), a[..., ::-1])
    np.testing.assert_array_equal(np.asarray(x[None, 1, :, -1]), a[None, 1, :, -1])
    np.testing.assert_array_equal(np.asarray(x[a > 10]), a[a > 10])
    assert x[1, 2, 3].shape == ()
    with pytest.raises(IndexError):
        x[2]
    np.testing.assert_array_equal(np.asarray(darray.take(x, np.array([-1]), axis=2)),
                                  a[:, :, [-1]])


def test_expand_dims_squeeze_errors_are_index_and_value_errors():
    x = darray.asarray(np.ones((2, 3)))
    with pytest.raises(IndexError):
        darray.expand_dims(x, axis=3)
    with pytest.raises(ValueError):
        darray.squeeze(x, axis=0)


@pytest.mark.x64
def test_matmul_shapes_follow_numpy():
    rng = np.random.default_rng(0)
    for s1, s2 in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4)),
                   ((1, 2, 3), (6, 3, 4))]:
        a, b = rng.standard_normal(s1), rng.standard_normal(s2)
        got = darray.matmul(darray.asarray(a), darray.asarray(b))
        np.testing.assert_allclose(np.asarray(got), a @ b, atol=1e-12)
