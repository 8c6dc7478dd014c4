"""Covers: darray/_src/api/transforms.py

`jax.grad` of a function returning a 0-d DistArray: both the eager and the jitted error name
the fix (darray.grad, loss.to_jax()), and printing or formatting a traced DistArray inside jit
never concretizes it (as for a jax array)."""
from __future__ import annotations

import traceback

import jax
import numpy as np
import pytest

import darray

HOST = np.arange(16.0)


def _x():
    return darray.asarray(HOST, mesh=(8,), spec=("x",))


def _loss(a):
    return darray.sum(a * a)


def _assert_names_the_fix(err):
    assert "Gradient only defined for scalar-output functions" in str(err.value)
    cause = str(err.value.__cause__)
    assert "darray.grad(f)" in cause and "loss.to_jax()" in cause, cause
    shown = "".join(traceback.format_exception(err.value))
    assert "darray.grad(f)" in shown and "ConcretizationTypeError" not in shown


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_jax_grad_of_a_distarray_loss_names_the_fix(wrap):
    with pytest.raises(TypeError) as err:
        wrap(jax.grad(_loss))(_x())
    _assert_names_the_fix(err)


def test_the_fixes_named_give_the_gradient():
    x = _x()
    for grad in (darray.grad(_loss), jax.grad(lambda a: _loss(a).to_jax()),
                 jax.jit(darray.grad(_loss))):
        g = grad(x)
        np.testing.assert_allclose(np.asarray(g), 2 * HOST, rtol=1e-12)
        assert g.layout == x.layout


@pytest.mark.x64
def test_print_repr_and_format_of_traced_distarrays_inside_jit(capsys):
    @jax.jit
    def f(a):
        s = darray.sum(a)
        print(a)
        print(s)
        print(f"{s}|{a!r}")
        return s
    s = f(_x())
    out = capsys.readouterr().out.splitlines()
    assert out == ["DistArray(float64[16], mesh=(x:8), split=(x,))",
                   "DistArray(float64[], mesh=(x:8), split=())",
                   "DistArray(float64[], mesh=(x:8), split=())|"
                   "DistArray(float64[16], mesh=(x:8), split=(x,))"], out
    assert float(s) == HOST.sum()  # outside jit the values print again
    assert f"{s:.1f}" == f"{HOST.sum():.1f}" and str(s) == str(np.float64(HOST.sum()))
