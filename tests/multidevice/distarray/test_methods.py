"""Covers: darray/_src/methods/table.py, darray/_src/extras/at.py, darray/_src/extras/reinterpret.py

DistArray methods (darray/_src/methods/table.py) against numpy's methods, with their layouts.

Each method is the namespace function, so each case also checks that the method's layout is
the namespace function's layout.
"""
import helpers
import jax
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import NamedSharding
from scalar_check import assert_replicated_scalar

import darray
from darray._src.base import compat
from darray._src.methods.table import METHODS

RNG = np.random.default_rng(11)
MESH = mesh_of((2, 4), ("x", "y"))
A = helpers.host(RNG.standard_normal((13, 7)))
TOL = helpers.tol(A.dtype)  # float64 data is float32 with x64 off
X = darray.asarray(A, mesh=MESH, spec=("x", "y"))
SX, SY = ("x",), ("y",)

# name: (method call on the DistArray, the same call on numpy, expected split or None for 0-d,
#        the namespace call that the method must equal, layout included)
CASES = {
    "sum": (lambda x: x.sum(), lambda a: a.sum(), None, lambda x: darray.sum(x)),
    "sum_axis0": (lambda x: x.sum(axis=0), lambda a: a.sum(axis=0), (SY,),
                  lambda x: darray.sum(x, axis=0)),
    "sum_keepdims": (lambda x: x.sum(1, keepdims=True), lambda a: a.sum(1, keepdims=True),
                     (SX, ()), lambda x: darray.sum(x, axis=1, keepdims=True)),
    "prod": (lambda x: x.prod(axis=1), lambda a: a.prod(axis=1), (SX,),
             lambda x: darray.prod(x, axis=1)),
    "mean": (lambda x: x.mean(0), lambda a: a.mean(0), (SY,), lambda x: darray.mean(x, axis=0)),
    "mean_dtype": (lambda x: x.mean(dtype=darray.float32), lambda a: a.mean(dtype=np.float32),
                   None, lambda x: darray.mean(darray.astype(x, darray.float32))),
    "std_ddof": (lambda x: x.std(ddof=1), lambda a: a.std(ddof=1), None,
                 lambda x: darray.std(x, correction=1)),
    "var_axis": (lambda x: x.var(axis=1), lambda a: a.var(axis=1), (SX,),
                 lambda x: darray.var(x, axis=1)),
    "min": (lambda x: x.min(axis=0), lambda a: a.min(axis=0), (SY,),
            lambda x: darray.min(x, axis=0)),
    "max": (lambda x: x.max(), lambda a: a.max(), None, lambda x: darray.max(x)),
    "argmin": (lambda x: x.argmin(axis=1), lambda a: a.argmin(axis=1), (SX,),
               lambda x: darray.argmin(x, axis=1)),
    "argmax": (lambda x: x.argmax(), lambda a: a.argmax(), None, lambda x: darray.argmax(x)),
    "any": (lambda x: (x > 1).any(axis=0), lambda a: (a > 1).any(axis=0), (SY,),
            lambda x: darray.any(x > 1, axis=0)),
    "all": (lambda x: (x > -5).all(), lambda a: (a > -5).all(), None,
            lambda x: darray.all(x > -5)),
    "cumsum_axis": (lambda x: x.cumsum(axis=1), lambda a: a.cumsum(axis=1), (SX, SY),
                    lambda x: darray.cumulative_sum(x, axis=1)),
    "cumsum_flat": (lambda x: x.cumsum(), lambda a: a.cumsum(), ((("x", "y")),),
                    lambda x: darray.cumulative_sum(darray.reshape(x, (-1,)))),
    "cumprod": (lambda x: x.cumprod(axis=0), lambda a: a.cumprod(axis=0), (SX, SY),
                lambda x: darray.cumulative_prod(x, axis=0)),
    "reshape_args": (lambda x: x.reshape(7, 13), lambda a: a.reshape(7, 13), None,
                     lambda x: darray.reshape(x, (7, 13))),
    "reshape_tuple": (lambda x: x.reshape((91,)), lambda a: a.reshape((91,)), None,
                      lambda x: darray.reshape(x, (91,))),
    "reshape_F": (lambda x: x.reshape((7, 13), order="F"), lambda a: a.reshape((7, 13), order="F"),
                  None, None),
    "ravel": (lambda x: x.ravel(), lambda a: a.ravel(), None, lambda x: darray.reshape(x, (-1,))),
    "flatten": (lambda x: x.flatten(), lambda a: a.flatten(), None,
                lambda x: darray.reshape(x, (-1,))),
    "transpose": (lambda x: x.transpose(), lambda a: a.transpose(), (SY, SX),
                  lambda x: darray.permute_dims(x, (1, 0))),
    "transpose_axes": (lambda x: x.transpose(1, 0), lambda a: a.transpose(1, 0), (SY, SX),
                       lambda x: darray.permute_dims(x, (1, 0))),
    "swapaxes": (lambda x: x.swapaxes(0, -1), lambda a: a.swapaxes(0, -1), (SY, SX),
                 lambda x: darray.permute_dims(x, (1, 0))),
    "squeeze": (lambda x: x[:, :1].squeeze(), lambda a: a[:, :1].squeeze(), None,
                lambda x: darray.squeeze(x[:, :1], axis=1)),
    "astype": (lambda x: x.astype(darray.float32), lambda a: a.astype(np.float32), (SX, SY),
               lambda x: darray.astype(x, darray.float32)),
    "copy": (lambda x: x.copy(), lambda a: a.copy(), (SX, SY), lambda x: darray.asarray(x)),
    "clip": (lambda x: x.clip(-0.5, 0.5), lambda a: a.clip(-0.5, 0.5), (SX, SY),
             lambda x: darray.clip(x, min=-0.5, max=0.5)),
    "clip_max": (lambda x: x.clip(max=0.1), lambda a: a.clip(max=0.1), (SX, SY),
                 lambda x: darray.clip(x, max=0.1)),
    "round": (lambda x: x.round(), lambda a: a.round(), (SX, SY), lambda x: darray.round(x)),
    "round_decimals": (lambda x: x.round(2), lambda a: a.round(2), (SX, SY), None),
    "conj": (lambda x: (x * 1j).conj(), lambda a: (a * 1j).conj(), (SX, SY),
             lambda x: darray.conj(x * 1j)),
    "conjugate": (lambda x: (x * 1j).conjugate(), lambda a: (a * 1j).conjugate(), (SX, SY),
                  lambda x: darray.conj(x * 1j)),
    "dot_2d": (lambda x: x.dot(x.T), lambda a: a.dot(a.T), None,
               lambda x: darray.matmul(x, x.T)),
    "dot_1d": (lambda x: x[0].dot(x[1]), lambda a: a[0].dot(a[1]), None,
               lambda x: darray.vecdot(x[0], x[1])),
    "dot_numpy_operand": (lambda x: x.dot(A[0]), lambda a: a.dot(A[0]), None, None),
    "dot_3d": (lambda x: darray.reshape(x[:12], (2, 6, 7)).dot(x[:7, :3]),
               lambda a: a[:12].reshape(2, 6, 7).dot(a[:7, :3]), None, None),
    "argsort": (lambda x: x.argsort(axis=0), lambda a: a.argsort(axis=0, kind="stable"),
                (SX, SY), lambda x: darray.argsort(x, axis=0)),
    "sort": (lambda x: x.sort(), lambda a: np.sort(a), (SX, SY), lambda x: darray.sort(x)),
    "sort_none": (lambda x: x.sort(axis=None), lambda a: np.sort(a, axis=None), None, None),
    "take_axis": (lambda x: x.take([0, 12, 3], axis=0), lambda a: a.take([0, 12, 3], axis=0),
                  None, lambda x: darray.take(x, darray.asarray(np.array([0, 12, 3]),
                                                                device=x.mesh), axis=0)),
    "take_flat": (lambda x: x.take([5, 90]), lambda a: a.take([5, 90]), None, None),
    "take_scalar": (lambda x: x.take(4, axis=1), lambda a: a.take(4, axis=1), None, None),
    "repeat": (lambda x: x.repeat(2, axis=1), lambda a: a.repeat(2, axis=1), None,
               lambda x: darray.repeat(x, 2, axis=1)),
    "diagonal": (lambda x: x.diagonal(), lambda a: a.diagonal(), None,
                 lambda x: darray.linalg.diagonal(x)),
    "diagonal_axes": (lambda x: x.diagonal(1, 1, 0), lambda a: a.diagonal(1, 1, 0), None, None),
    "trace": (lambda x: x.trace(), lambda a: a.trace(), None, lambda x: darray.linalg.trace(x)),
    "searchsorted": (lambda x: x[:, 0].sort().searchsorted(A[:3, 1]),
                     lambda a: np.sort(a[:, 0]).searchsorted(A[:3, 1]), None, None),
    "view": (lambda x: (x * (1 + 2j)).view(float), lambda a: (a * (1 + 2j)).view(float),
             (SX, SY), None),
    "view_int": (lambda x: x.view(darray.int64), lambda a: a.view(np.int64), (SX, SY), None),
    "real": (lambda x: (x * (1 + 2j)).real, lambda a: (a * (1 + 2j)).real, (SX, SY), None),
    "imag": (lambda x: (x * (1 + 2j)).imag, lambda a: (a * (1 + 2j)).imag, (SX, SY), None),
}


def _check(got, want, split, same=None):
    want = np.asarray(want)
    if want.ndim == 0:
        assert_replicated_scalar(got, MESH, want, rtol=1e-5, atol=1e-6)
        return
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    assert got.shape == want.shape, (got, want.shape)
    assert got.dtype == helpers.canonical_dtype(want.dtype), (got, want.dtype)
    assert got.data.sharding.is_equivalent_to(NamedSharding(MESH, got.layout.spec),
                                              got.data.ndim)
    if split is not None:
        assert got.layout.split == split, got.layout
    if same is not None:  # the method is the namespace function: same layout
        assert got.layout == same.layout, (got.layout, same.layout)


@pytest.mark.x64
@pytest.mark.parametrize("name", sorted(CASES))
def test_method_matches_numpy_and_namespace(name):
    method, reference, split, namespace = CASES[name]
    got = method(X)
    same = namespace(X) if namespace is not None else None
    if same is not None and np.ndim(reference(A)) == 0:
        assert_replicated_scalar(same, MESH)
    _check(got, reference(A), split, same if same is not None and same.ndim else None)


def test_every_method_in_the_table_is_tested():
    names = {n.split("_")[0] for n in CASES} | {"item", "tolist", "nonzero", "at"}
    assert set(METHODS) <= names, set(METHODS) - names


def test_nonzero_item_tolist():
    host = np.where(A > 0.5, A, 0.0)
    x = darray.asarray(host, mesh=MESH, spec=("x", "y"))
    for got, want in zip(x.nonzero(), host.nonzero()):
        np.testing.assert_array_equal(np.asarray(got), want)
    assert X.item(5) == A.item(5) and X.item(3, 2) == A.item(3, 2)
    assert X.item((12, 6)) == A.item((12, 6))
    assert X[2, 3].item() == A[2, 3] and isinstance(X[2, 3].item(), float)
    assert darray.sum(X > 0).item() == int((A > 0).sum())
    assert X.tolist() == A.tolist() and X[0, 0].tolist() == A[0, 0]
    with pytest.raises(ValueError, match=r"item\(\) needs an array of size 1, got shape"):
        X.item()


def test_method_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"x.sum\(out=...\) is not supported"):
        X.sum(out=np.zeros(()))
    with pytest.raises(ValueError, match=r"x.reshape: order='K' is not accepted"):
        X.reshape(91, order="K")
    with pytest.raises(TypeError, match=r"x.reshape: shape must be ints"):
        X.reshape("a")
    with pytest.raises(ValueError, match=r"give ddof= or correction=, not both"):
        X.var(ddof=1, correction=1)
    with pytest.raises(ValueError, match="axis1 and axis2 must differ"):
        X.diagonal(0, 1, 1)


def test_methods_under_jit_and_grad():
    f = jax.jit(lambda x: x.reshape(91).cumsum().max())
    assert_replicated_scalar(f(X), MESH, A.reshape(91).cumsum().max(), rtol=TOL)
    g = darray.grad(lambda x: (x * x).sum())(X)
    np.testing.assert_allclose(np.asarray(g), 2 * A, rtol=TOL)
    assert g.layout == X.layout


# -- x.at[...] --------------------------------------------------------------------------------
def _numpy_at(a, key, how, v):
    out = a.copy()
    ufunc = {"add": np.add, "multiply": np.multiply, "divide": np.divide, "power": np.power,
             "min": np.minimum, "max": np.maximum}
    if how == "set":
        out[key] = v
    else:
        ufunc[how].at(out, key, v)
    return out


AT_KEYS = {
    "int": (3,), "int_pair": ((12, 6),), "slice": ((slice(2, 9), 1),),
    "step": ((slice(None, None, 3),),), "ellipsis": ((Ellipsis, slice(5, None)),),
    "int_array_repeats": (([0, 0, 5, 12],),), "mask": (None,),
}


HOWS = ("set", "add", "multiply", "divide", "power", "min", "max")
# every op on an int and a slice key; the other keys share those paths (the basic select, the
# array-key scatter), so a few ops cover them
FEW = {"int": HOWS, "slice": HOWS, "mask": ("set", "add", "power", "max"),
       "int_array_repeats": ("set", "add", "power", "max")}
AT_CASES = [(k, h) for k in sorted(AT_KEYS) for h in FEW.get(k, ("set", "multiply"))]


@pytest.mark.parametrize("keyname,how", AT_CASES)
def test_at_matches_numpy_and_keeps_layout(keyname, how):
    (key,) = AT_KEYS[keyname]
    if keyname == "mask":
        key = A > 0.3
    value = 0.5 if how != "power" else 2.0
    if how == "set" and keyname == "int_array_repeats":
        key = [0, 5, 12]  # set with repeats is unspecified in JAX and numpy alike
    host = np.abs(A) + 0.1 if how == "power" else A
    x = darray.asarray(host, mesh=MESH, spec=("x", "y"))
    k = darray.asarray(key, mesh=MESH, spec=("x", "y")) if keyname == "mask" else key
    y = getattr(x.at[k], how)(value)
    np.testing.assert_allclose(np.asarray(y), _numpy_at(host, key, how, value), rtol=TOL)
    assert y.layout == x.layout and y.data.sharding.spec == x.layout.spec
    np.testing.assert_array_equal(np.asarray(x), host)  # functional: x is unchanged


def test_at_array_values_get_and_jit():
    v = RNG.standard_normal(7)
    y = X.at[4].add(darray.asarray(v, mesh=MESH))
    ref = A.copy()
    ref[4] += v
    np.testing.assert_allclose(np.asarray(y), ref, rtol=TOL)
    assert y.layout == X.layout
    np.testing.assert_array_equal(np.asarray(X.at[1:3].get()), A[1:3])
    z = jax.jit(lambda x: x.at[2:5, 1].multiply(3.0))(X)
    ref = A.copy()
    ref[2:5, 1] *= 3.0
    np.testing.assert_allclose(np.asarray(z), ref, rtol=TOL)
    assert z.layout == X.layout
    with pytest.raises(NotImplementedError, match="mode='clip'"):
        X.at[0].get(mode="clip")
    with pytest.raises(IndexError):
        X.at[[0, 13]].add(1.0)


@pytest.mark.parametrize("how", ["set", "add"])
def test_at_scalar_update_is_block_local(how):
    """A basic key with a scalar value is one select on the blocks: no collective at all, and
    new index values reuse the compiled program."""
    f = jax.jit(lambda x: getattr(x.at[2:9, ::2], how)(1.0).data)
    hlo = f.lower(X).compile().as_text()
    for collective in ("all-gather", "all-reduce", "all-to-all", "collective-permute"):
        assert collective not in hlo, collective
    jax.block_until_ready(X.at[4].add(1.0).data)  # warm
    with compat.count_compilations() as compiled:
        y = X.at[5].add(2.0)
        z = X.at[7, 1:].add(3.0)
        jax.block_until_ready((y.data, z.data))
    assert compiled.count == 0, compiled.count


@pytest.mark.x64
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float64, np.complex128])
def test_real_and_imag_properties_follow_numpy_for_every_dtype(dtype):
    a = (np.arange(13) % 3 - 1).astype(dtype)
    if a.dtype.kind == "c":
        a = a + 2j * a[::-1]
    mesh = mesh_of((2, 4), ("x", "y"))
    x = darray.asarray(a, mesh=mesh, spec=("x",))
    for got, want in ((x.real, a.real), (x.imag, a.imag)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
        assert got.layout == x.layout
    assert hasattr(x == x, "imag")  # xarray's duck-array probe on bool arrays
