"""Covers: darray/_src/engine/arguments.py, darray/_src/engine/placing.py

One argument policy (issue 36, part 2): every public function takes a numpy array or a
jax.Array wherever it takes a DistArray, as jax.numpy does, and places it as darray.asarray
places it.

The table is the differential registry (one Case per function and argument family, covering
every public function; test_coverage.py checks that) plus the rows below for the functions it
excludes. Each row runs once with its array operands given as numpy arrays, once as jax.Arrays,
and once as ``darray.asarray`` of the same values: results must agree in values, dtypes and
layouts.
"""
from __future__ import annotations

import tempfile

import diff_cases  # noqa: F401  (fills the registry)
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from diff_registry import EXCLUDED, REGISTRY, allowed_refusal, public_functions
from diff_support import Operand
from hypothesis import given, settings
from hypothesis import strategies as st

import darray
from darray._src.distarray.array import DistArray

KINDS = {"numpy": lambda h: h.copy(), "jax": jnp.asarray, "asarray": darray.asarray}

# cases that call a method or an operator of their first argument: a numpy or jax array has its
# own (the policy is for darray's functions; a DistArray method's self is a DistArray)
METHOD_CASES = {"DistArray.__getitem__", "DistArray.__setitem__"}


def _convert(arg, kind):
    if isinstance(arg, Operand):
        return KINDS[kind](arg.host)
    if isinstance(arg, (list, tuple)) and arg and all(isinstance(a, Operand) for a in arg):
        return type(arg)(KINDS[kind](a.host) for a in arg)
    return arg


def _leaves(result):
    if isinstance(result, (list, tuple)):
        return [leaf for r in result for leaf in _leaves(r)]
    return [result]


def assert_same(got, want, what):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        where = f"{what} [result {i}]"
        if isinstance(w, DistArray):
            assert isinstance(g, DistArray), f"{where}: {type(g).__name__}, not a DistArray"
            assert g.layout == w.layout, f"{where}: {g.layout} != {w.layout} (asarray's)"
            assert g.dtype == w.dtype, where
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=where)
        elif isinstance(w, (np.ndarray, jax.Array, np.generic)):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=where)
        else:
            assert type(g) is type(w), where


# registry cases whose function is not darray's function of the operand, with the reason
NOT_AN_ARGUMENT = {
    "grad": "the operand is the argument of the user's function: jax.grad's rules, which "
            "differentiate a numpy or jax input as JAX does (a jax gradient)",
    "value_and_grad": "as grad",
    "from_callback": "takes a shape and a callback; the case reads the operand's x.mesh",
    "save": "the case reads the operand's x.mesh to load it back; save is a row below",
}
# the one documented exception to asarray's placement (the `spec` of engine/arguments.py's
# ensure_array): the dct/dst family places a 1-D host signal whole on every device
R2R = {f"fft.{n}" for n in ("dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn")}


def _covers(case):
    return set(case.covers) - METHOD_CASES


CASES = [c for c in REGISTRY if _covers(c) and not c.mutates and not c.xfail
         and c.name.split("[")[0] not in NOT_AN_ARGUMENT]


def _placed(case, host):
    if case.name.split("[")[0] in R2R and host.ndim == 1:
        return darray.asarray(host, spec=(None,))
    return darray.asarray(host)


def _run_case(case, example, kind):
    want = case.fn(*[_placed(case, a.host) if isinstance(a, Operand) else
                     _convert(a, "asarray") for a in example.args], **example.params)
    got = case.fn(*[_convert(a, kind) for a in example.args], **example.params)
    assert_same(got, want, f"{case.name} with {kind} operands on {example!r}")


@pytest.mark.parametrize("kind", ["numpy", "jax"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_foreign_arrays_are_placed_like_asarray(case, kind):
    @settings(settings.get_profile("darray-fast"), max_examples=1)
    @given(data=st.data())
    def check(data):
        example = data.draw(case.draw, label="example")
        if not any(isinstance(a, Operand) or isinstance(a, (list, tuple)) and a
                   and isinstance(a[0], Operand) for a in example.args):
            return  # creation from scalars: no array operand
        try:
            _run_case(case, example, kind)
        except NotImplementedError:
            if allowed_refusal(case, example) is None:
                raise
    check.hypothesis.inner_test._hypothesis_internal_add_digest = case.name.encode()
    check()


# -- the functions the registry excludes, with array operands ---------------------------------
H = np.arange(48.0).reshape(6, 8)
ROWS = {  # each takes the converter of its operands (numpy, jax or darray.asarray)
    "halo": lambda c: darray.halo(c(H), 1),
    "unhalo": lambda c: darray.unhalo(c(H)),
    "halo_reduce": lambda c: darray.halo_reduce(c(H)),
    "map_blocks": lambda c: darray.map_blocks(lambda b: b * 2, c(H)),
    "cross": lambda c: darray.cross(c(H[:, :3]), c(H[:, 3:6])),
    "diag": lambda c: darray.diag(c(H)),
    "dynamic_slice": lambda c: darray.dynamic_slice(c(H), (1, 2), (3, 4)),
    "fft.wavenumbers": lambda c: darray.fft.wavenumbers(c(H.astype(np.complex128)), s=H.shape),
    "save": lambda c: _save_load(c(H)),
}


def _save_load(x):
    with tempfile.TemporaryDirectory() as tmp:
        darray.save(f"{tmp}/ckpt", x)
        return darray.load(f"{tmp}/ckpt")
NO_ARRAY = {"build_info", "config_context", "record_backends", "get_config", "set_config",
            "default_mesh", "vmap", "autotune", "logspace", "from_callback", "load", "grad",
            "value_and_grad", "check_memory"}


def test_every_public_function_is_in_the_table():
    in_table = {n for c in CASES for n in c.covers} | set(ROWS) | NO_ARRAY
    left = sorted(public_functions() - in_table)
    assert not left, f"public functions not run with numpy/jax operands: {left}"
    assert set(EXCLUDED) <= set(ROWS) | NO_ARRAY


@pytest.mark.parametrize("kind", ["numpy", "jax"])
@pytest.mark.parametrize("name", sorted(ROWS))
def test_excluded_functions_take_foreign_arrays(name, kind):
    fn = ROWS[name]
    assert_same(fn(KINDS[kind]), fn(KINDS["asarray"]), f"{name} with a {kind} array")


@pytest.mark.parametrize("value", [[1.0, 2.0], "abc", object()])
def test_other_objects_are_refused_naming_the_function(value):
    with pytest.raises(TypeError, match=r"^sum: x must be an array"):
        darray.sum(value)
    with pytest.raises(TypeError, match=r"^reshape: x must be an array"):
        darray.reshape(value, (2,))
