"""Covers: darray/_src/api/creation.py, darray/_src/extras/creation_extra.py

Warm eager calls do not recompile: creation functions compile once per signature (shape,
layout, dtype, value types), not once per value, and common ops reuse their compilation.

Compilations are counted with darray._src.base.compat.count_compilations (jax's compile events)."""
import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.base import compat

MESH = mesh_of((2, 4), ("x", "y"))
HOST_A = np.random.default_rng(0).random((13, 7))
HOST_B = np.random.default_rng(1).random((13, 7))


def _arrays():
    x = darray.asarray(HOST_A, mesh=MESH, spec=("x", "y"))
    y = darray.asarray(HOST_B, mesh=MESH, spec=("x", "y"))
    return x, y


def _to_numpy(result):
    if isinstance(result, (list, tuple)):
        return [_to_numpy(r) for r in result]
    return np.asarray(result)


# name -> (first call, second call with other values of the same signature, numpy reference
# of the second call); both calls must give one compilation signature.
def _creation_cases():
    x, _ = _arrays()
    v = darray.asarray(np.arange(5.0), mesh=MESH)
    return {
        "arange": (lambda: darray.arange(10), lambda: darray.arange(3, 13),
                   lambda: np.arange(3, 13)),
        "arange_step": (lambda: darray.arange(1.0, 6.0, 0.5),
                        lambda: darray.arange(-2.0, 0.5, 0.25),
                        lambda: np.arange(-2.0, 0.5, 0.25)),
        "linspace": (lambda: darray.linspace(0, 1, 9), lambda: darray.linspace(-3.5, 2, 9),
                     lambda: np.linspace(-3.5, 2, 9)),
        "linspace_open": (lambda: darray.linspace(0, 1, 9, endpoint=False),
                          lambda: darray.linspace(2, 7, 9, endpoint=False),
                          lambda: np.linspace(2, 7, 9, endpoint=False)),
        "eye": (lambda: darray.eye(6, 5), lambda: darray.eye(6, 5, k=-2),
                lambda: np.eye(6, 5, k=-2)),
        "full": (lambda: darray.full((5, 3), 2.0), lambda: darray.full((5, 3), -7.5),
                 lambda: np.full((5, 3), -7.5)),
        "zeros": (lambda: darray.zeros((5, 3)), lambda: darray.zeros((5, 3)),
                  lambda: np.zeros((5, 3))),
        "ones": (lambda: darray.ones(11), lambda: darray.ones(11), lambda: np.ones(11)),
        "empty": (lambda: darray.empty(4), lambda: darray.empty(4), None),
        "zeros_like": (lambda: darray.zeros_like(x), lambda: darray.zeros_like(x),
                       lambda: np.zeros_like(HOST_A)),
        "ones_like": (lambda: darray.ones_like(x), lambda: darray.ones_like(x),
                      lambda: np.ones_like(HOST_A)),
        "full_like": (lambda: darray.full_like(x, 3.0), lambda: darray.full_like(x, 0.25),
                      lambda: np.full_like(HOST_A, 0.25)),
        "empty_like": (lambda: darray.empty_like(x), lambda: darray.empty_like(x), None),
        "asarray_numpy": (lambda: darray.asarray(HOST_A), lambda: darray.asarray(HOST_B),
                          lambda: HOST_B),
        "asarray_list": (lambda: darray.asarray([1.0, 2.0]), lambda: darray.asarray([3.0, 4.0]),
                         lambda: np.array([3.0, 4.0])),
        "asarray_jax": (lambda: darray.asarray(jax.numpy.asarray(HOST_A)),
                        lambda: darray.asarray(jax.numpy.asarray(HOST_B)), lambda: HOST_B),
        "asarray_moved": (lambda: darray.asarray(x, spec=("y", "x")),
                          lambda: darray.asarray(x, spec=("y", "x")), lambda: HOST_A),
        "from_dlpack": (lambda: darray.from_dlpack(HOST_A), lambda: darray.from_dlpack(HOST_B),
                        lambda: HOST_B),
        "meshgrid": (lambda: darray.meshgrid(v, v), lambda: darray.meshgrid(v, v),
                     lambda: np.meshgrid(np.arange(5.0), np.arange(5.0))),
        "tril": (lambda: darray.tril(x), lambda: darray.tril(x, k=-2),
                 lambda: np.tril(HOST_A, k=-2)),
        "triu": (lambda: darray.triu(x, k=1), lambda: darray.triu(x, k=3),
                 lambda: np.triu(HOST_A, k=3)),
    }


def _op_cases():
    x, y = _arrays()
    a, b = HOST_A, HOST_B
    return {
        "add": (lambda: x + y, lambda: a + b),
        "multiply_scalar": (lambda: x * 2.0, lambda: a * 2.0),
        "exp": (lambda: darray.exp(x), lambda: np.exp(a)),
        "sqrt": (lambda: darray.sqrt(x), lambda: np.sqrt(a)),
        "sum": (lambda: darray.sum(x), lambda: np.sum(a)),
        "mean_axis": (lambda: darray.mean(x, axis=0), lambda: np.mean(a, axis=0)),
        "max_axis": (lambda: darray.max(x, axis=1), lambda: np.max(a, axis=1)),
        "matmul": (lambda: x @ darray.matrix_transpose(y), lambda: a @ b.T),
        "where": (lambda: darray.where(x > 0.5, x, y), lambda: np.where(a > 0.5, a, b)),
        "astype": (lambda: darray.astype(x, darray.float32), lambda: a.astype(np.float32)),
        "reshape": (lambda: darray.reshape(x, (91,)), lambda: a.reshape(91)),
        "slice": (lambda: x[1:-1], lambda: a[1:-1]),
        "concat": (lambda: darray.concat([x, y]), lambda: np.concatenate([a, b])),
        "sort": (lambda: darray.sort(x), lambda: np.sort(a)),
    }


def _check(result, expected):
    got = _to_numpy(result)
    if isinstance(got, (list, tuple)):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.distributed_placement
@pytest.mark.parametrize("name", sorted(_creation_cases()))
def test_creation_compiles_once_per_signature(name):
    first, second, reference = _creation_cases()[name]
    jax.block_until_ready(first())
    with compat.count_compilations() as compiled:
        result = second()
        jax.block_until_ready(result)
    assert compiled.count == 0, f"{name}: a warm call with new values compiled {compiled.count}x"
    if reference is not None:
        _check(result, reference())
    outs = result if isinstance(result, (list, tuple)) else [result]
    for out in outs:  # created arrays stay distributed on their mesh
        assert isinstance(out, darray.DistArray)
        assert out.data.sharding.spec == out.layout.spec


@pytest.mark.distributed_placement
@pytest.mark.parametrize("name", sorted(_op_cases()))
def test_warm_op_does_not_compile(name):
    call, reference = _op_cases()[name]
    jax.block_until_ready(call())
    with compat.count_compilations() as compiled:
        result = call()
        jax.block_until_ready(result)
    assert compiled.count == 0, f"{name}: the second identical call compiled {compiled.count}x"
    _check(result, reference())
    if isinstance(result, darray.DistArray):
        assert result.mesh == MESH
        assert result.data.sharding.spec == result.layout.spec


def test_counter_sees_a_compilation():
    """The counter itself works: a new signature compiles."""
    with compat.count_compilations() as compiled:
        jax.block_until_ready(darray.arange(1234567 % 97 + 3001))
    assert compiled.count >= 1


def test_full_with_value_beyond_int64_still_works():
    """Values jit cannot take as a runtime input fall back to a compiled constant."""
    out = darray.full((4,), 2**70, dtype=darray.float64)
    np.testing.assert_array_equal(np.asarray(out), np.full(4, 2.0**70))
