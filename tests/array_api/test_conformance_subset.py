"""A fast conformance subset for the manipulation, indexing, sorting, set and linalg families,
run in the default test run (the full data-apis/array-api-tests suite is run separately, with
the command and the xfails in tests/array_api/xfails.txt).

Each check follows a rule of the Array API standard (2025.12; 2024.12 where a result changed)
and compares with numpy.
"""
import inspect

import numpy as np
import pytest

import darray

MAIN = ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
        "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
        "take", "take_along_axis", "argsort", "sort", "unique_all", "unique_counts",
        "unique_inverse", "unique_values", "matmul", "matrix_transpose", "tensordot", "vecdot"]
LINALG = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
          "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
          "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
          "vector_norm"]

KEYWORDS = {  # keyword-only parameters the standard names
    "reshape": {"copy"}, "roll": {"axis"}, "flip": {"axis"}, "concat": {"axis"},
    "stack": {"axis"}, "unstack": {"axis"}, "repeat": {"axis"}, "take": {"axis"},
    "take_along_axis": {"axis"}, "sort": {"axis", "descending", "stable"},
    "argsort": {"axis", "descending", "stable"}, "tensordot": {"axes"}, "vecdot": {"axis"},
}


@pytest.mark.parametrize("name", MAIN)
def test_main_namespace_has(name):
    fn = getattr(darray, name)
    params = inspect.signature(fn).parameters
    for kw in KEYWORDS.get(name, ()):
        assert params[kw].kind == inspect.Parameter.KEYWORD_ONLY, (name, kw)


@pytest.mark.parametrize("name", LINALG)
def test_linalg_extension_has(name):
    assert callable(getattr(darray.linalg, name))


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


def test_matmul_shapes_follow_numpy():
    rng = np.random.default_rng(0)
    for s1, s2 in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4)),
                   ((1, 2, 3), (6, 3, 4))]:
        a, b = rng.standard_normal(s1), rng.standard_normal(s2)
        got = darray.matmul(darray.asarray(a), darray.asarray(b))
        np.testing.assert_allclose(np.asarray(got), a @ b, atol=1e-12)
