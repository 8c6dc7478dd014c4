"""Covers: darray/_src/kernels/complex_special.py, darray/_src/api/elementwise.py

Complex elementwise functions follow the Array API's special cases for inf/NaN operands, the
symmetries it states (f(conj z) = conj f(z); odd/even functions), and numpy on finite operands
(branch cuts with signed zeros included); results keep the operand's layout."""
import math

import numpy as np
import pytest
from helpers import mesh_of

import darray

INF, NAN, PI = math.inf, math.nan, math.pi
MESH = mesh_of((2, 4), ("x", "y"))

NUMPY = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "sqrt": np.sqrt,
         "acos": np.arccos, "acosh": np.arccosh, "asinh": np.arcsinh, "atanh": np.arctanh,
         "cosh": np.cosh, "sinh": np.sinh, "tanh": np.tanh, "cos": np.cos, "sin": np.sin,
         "tan": np.tan}
ODD = {"asinh", "atanh", "sinh", "tanh", "sin", "tan"}
EVEN = {"cosh", "cos"}

# (function, operand, the standard's result); None for a component whose sign the standard
# leaves unspecified is written as the magnitude and checked up to sign.
SPEC = [
    ("acos", complex(0.0, NAN), (PI / 2, NAN)),
    ("acos", complex(-0.0, NAN), (PI / 2, NAN)),
    ("acos", complex(1.5, NAN), (NAN, NAN)),
    ("acos", complex(-INF, 1.0), (PI, -INF)),
    ("acos", complex(INF, INF), (PI / 4, -INF)),
    ("acos", complex(NAN, INF), (NAN, -INF)),
    ("acosh", complex(0.0, NAN), (NAN, PI / 2), "imag sign"),
    ("acosh", complex(-INF, INF), (INF, 3 * PI / 4)),
    ("acosh", complex(INF, NAN), (INF, NAN)),
    ("asinh", complex(NAN, 0.0), (NAN, 0.0)),
    ("asinh", complex(1.0, INF), (INF, PI / 2)),
    ("asinh", complex(INF, INF), (INF, PI / 4)),
    ("atanh", complex(0.0, NAN), (0.0, NAN)),
    ("atanh", complex(2.0, NAN), (NAN, NAN)),
    ("atanh", complex(INF, NAN), (0.0, NAN)),
    ("atanh", complex(NAN, NAN), (NAN, NAN)),
    ("atanh", complex(NAN, 1.0), (NAN, NAN)),
    ("atanh", complex(1.0, 0.0), (INF, 0.0)),
    ("atanh", complex(INF, 2.0), (0.0, PI / 2)),
    ("atanh", complex(NAN, INF), (0.0, PI / 2), "real sign"),
    ("cosh", complex(0.0, INF), (NAN, 0.0), "imag sign"),
    ("cosh", complex(0.0, NAN), (NAN, 0.0), "imag sign"),
    ("cosh", complex(INF, INF), (INF, NAN), "real sign"),
    ("cosh", complex(INF, NAN), (INF, NAN)),
    ("cosh", complex(INF, 0.0), (INF, 0.0)),
    ("exp", complex(INF, INF), (INF, NAN), "real sign"),
    ("exp", complex(INF, NAN), (INF, NAN), "real sign"),
    ("exp", complex(-INF, INF), (0.0, 0.0), "both signs"),
    ("exp", complex(-INF, NAN), (0.0, 0.0), "both signs"),
    ("exp", complex(NAN, 0.0), (NAN, 0.0)),
    ("expm1", complex(INF, INF), (INF, NAN), "real sign"),
    ("expm1", complex(INF, NAN), (INF, NAN), "real sign"),
    ("expm1", complex(-INF, INF), (-1.0, 0.0), "imag sign"),
    ("expm1", complex(-INF, NAN), (-1.0, 0.0), "imag sign"),
    ("expm1", complex(INF, 0.0), (INF, 0.0)),
    ("log", complex(INF, NAN), (INF, NAN)),
    ("log", complex(-INF, NAN), (INF, NAN)),
    ("log", complex(NAN, INF), (INF, NAN)),
    ("log", complex(-0.0, 0.0), (-INF, PI)),
    ("log", complex(-INF, INF), (INF, 3 * PI / 4)),
    ("log1p", complex(INF, NAN), (INF, NAN)),
    ("log1p", complex(-INF, NAN), (INF, NAN)),
    ("log1p", complex(NAN, INF), (INF, NAN)),
    ("log1p", complex(-1.0, 0.0), (-INF, 0.0)),
    ("sinh", complex(0.0, INF), (0.0, NAN), "real sign"),
    ("sinh", complex(0.0, NAN), (0.0, NAN), "real sign"),
    ("sinh", complex(INF, INF), (INF, NAN), "real sign"),
    ("sinh", complex(INF, NAN), (INF, NAN), "real sign"),
    ("sinh", complex(NAN, 0.0), (NAN, 0.0)),
    ("sqrt", complex(INF, NAN), (INF, NAN)),
    ("sqrt", complex(-INF, NAN), (NAN, INF), "imag sign"),
    ("sqrt", complex(NAN, INF), (INF, INF)),
    ("sqrt", complex(-INF, 1.0), (0.0, INF)),
    ("tanh", complex(0.0, INF), (0.0, NAN)),
    ("tanh", complex(0.0, NAN), (0.0, NAN)),
    ("tanh", complex(INF, 1.0), (1.0, 0.0)),
    ("tanh", complex(INF, INF), (1.0, 0.0), "imag sign"),
    ("tanh", complex(NAN, 0.0), (NAN, 0.0)),
    ("sign", complex(-0.0, -0.0), (0.0, 0.0)),
    ("sign", complex(0.0, -0.0), (0.0, 0.0)),
    ("sign", complex(NAN, 1.0), (NAN, NAN)),
    ("sign", complex(3.0, -4.0), (0.6, -0.8)),
]


def _same_component(got, want, unsigned):
    if math.isnan(want):
        return math.isnan(got)
    if unsigned:
        return abs(got) == abs(want) or math.isclose(abs(got), abs(want), rel_tol=1e-15)
    if want == 0:
        return got == 0 and math.copysign(1, got) == math.copysign(1, want)
    return got == want or math.isclose(got, want, rel_tol=1e-15)


N = 512  # every test below uses one 1-D layout, so each function compiles once for the file


def _dist(values):
    """A DistArray of N cells over the (2, 4) mesh holding `values` first (zeros after)."""
    host = np.zeros(N, np.complex128)
    host[:len(values)] = values
    return darray.asarray(host, mesh=MESH), host


def test_spec_special_cases():
    by_function = {}
    for row in SPEC:
        by_function.setdefault(row[0], []).append(row)
    failures = []
    for fname, rows in by_function.items():
        x, _ = _dist([r[1] for r in rows])
        out = getattr(darray, fname)(x)
        assert out.layout == x.layout and out.data.sharding.spec == x.layout.spec
        got = np.asarray(out)
        for i, row in enumerate(rows):
            note = row[3] if len(row) > 3 else ""
            re_ok = _same_component(got[i].real, row[2][0], "real" in note or "both" in note)
            im_ok = _same_component(got[i].imag, row[2][1], "imag" in note or "both" in note)
            if not (re_ok and im_ok):
                failures.append(f"{fname}({row[1]}) = {got[i]}, standard: {row[2]} {note}")
    assert not failures, "\n".join(failures)


_EDGES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, INF, -INF, NAN]
GRID = np.array([complex(a, b) for a in _EDGES for b in _EDGES])
_RNG = np.random.default_rng(7)
# random finite operands, and branch cuts approached from both sides through a signed zero
FINITE = np.concatenate([
    _RNG.normal(size=40) * 2 + 1j * _RNG.normal(size=40) * 2,
    [-2 + 0j, complex(-2, -0.0), 2 + 0j, complex(2, -0.0), 3j, -3j, complex(0.0, 3),
     complex(-0.0, 3), complex(-0.0, -3), 0.5j]])


def _equal_or_both_nan(x, y):
    return bool(np.all(((x == y) | (np.isnan(x) & np.isnan(y)))
                       | np.isclose(x, y, rtol=1e-14, atol=0)))


@pytest.mark.x64
@pytest.mark.parametrize("fname", sorted(NUMPY))
def test_symmetries_and_finite_operands(fname):
    """f(conj z) = conj f(z) everywhere (and f(-z) = -f(z) / f(z) for odd / even functions),
    up to the sign of a NaN and of components the standard leaves unspecified: magnitudes of
    both components, and signs where the result is finite and nonzero. Finite operands match
    numpy. One call evaluates all of them."""
    n = len(GRID)
    x, _ = _dist(np.concatenate([GRID, np.conj(GRID), -GRID, FINITE]))
    out = getattr(darray, fname)(x)
    assert out.layout == x.layout and out.data.sharding.spec == x.layout.spec
    got = np.asarray(out)
    plain, conj, neg = got[:n], got[n:2 * n], got[2 * n:3 * n]
    pairs = [(np.conj(plain), conj)]
    if fname in ODD:
        pairs.append((-plain, neg))
    if fname in EVEN:
        pairs.append((plain, neg))
    # a NaN part has no sign the standard looks at (f(0 + NaN j) may fold either way)
    signed = ~(np.isnan(GRID.real) | np.isnan(GRID.imag))
    for want, have in pairs:
        for part in (np.real, np.imag):
            w, g = part(want), part(have)
            assert _equal_or_both_nan(np.abs(w), np.abs(g)), (fname, GRID, w, g)
            definite = np.isfinite(w) & (w != 0) & signed
            assert np.array_equal(np.sign(w[definite]), np.sign(g[definite])), fname
    finite = got[3 * n:3 * n + len(FINITE)]
    np.testing.assert_allclose(finite, NUMPY[fname](FINITE), rtol=1e-13, atol=1e-300)


@pytest.mark.x64
def test_gradient_through_finite_values():
    """The special-case patch costs no gradient: d/dx real(exp((1+1j) x)) as numpy's formula,
    also with an inf/NaN operand elsewhere in the array."""
    x0 = np.array([0.3, 1.2, -0.7, 0.0])

    def loss(t):
        z = t * (1 + 1j)
        return darray.sum(darray.real(darray.exp(z)) + darray.real(darray.sqrt(z + 4.0)))

    x = darray.asarray(x0, mesh=MESH)
    grad = darray.grad(loss)(x)
    assert grad.layout == x.layout
    z = x0 * (1 + 1j)
    want = np.real(np.exp(z) * (1 + 1j)) + np.real((1 + 1j) / (2 * np.sqrt(z + 4.0)))
    np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-12)


@pytest.mark.x64
def test_real_operands_unchanged():
    x = darray.asarray(np.array([-1.0, 0.0, 2.0, INF, -INF, NAN]), mesh=MESH)
    for fname in ("exp", "log", "sqrt", "tanh", "cosh", "sin"):
        with np.errstate(all="ignore"):
            want = NUMPY[fname](x.__array__())
        np.testing.assert_allclose(getattr(darray, fname)(x).__array__(), want, rtol=1e-15)
