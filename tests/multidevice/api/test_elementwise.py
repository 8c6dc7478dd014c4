"""Covers: darray/_src/api/elementwise.py, darray/_src/engine/apply.py
Covers: darray/_src/engine/operands.py

Elementwise functions and operators on 8 virtual CPU devices: values against numpy (float64),
layouts kept, broadcasting with scalars / numpy / jax / smaller DistArrays, layout mismatches."""
import operator

import helpers
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray._src.api import elementwise

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

MESH_SHAPES = [(8,), (2, 4), (4, 2), (1, 8)]
RNG = np.random.default_rng(1234)


def spec_for(mesh_shape, ndim):
    return ("x", "y")[: min(len(mesh_shape), ndim)]


def assert_layout(y, layout):
    """The Layout and the physical sharding (size-1 mesh axes may be dropped from the spec)."""
    helpers.assert_layout(y, layout)
    assert y.data.sharding.spec == layout.spec or 1 in layout.mesh.shape.values()


# -- every function of the table, once ---------------------------------------------------------
# Inputs inside each function's domain (numpy is the float64 reference).
DOMAIN = {"acos": (-0.9, 0.9), "asin": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 4.0),
          "log": (0.1, 4.0), "log2": (0.1, 4.0), "log10": (0.1, 4.0), "log1p": (-0.5, 4.0),
          "sqrt": (0.1, 4.0), "reciprocal": (0.5, 4.0), "pow": (0.5, 2.0)}
INT_OPS = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
           "bitwise_right_shift", "bitwise_invert"}


def _inputs(name, category, shape):
    if category == "bool":
        return [RNG.random(shape) > 0.5 for _ in range(2)]
    if name in INT_OPS or category in ("integral", "integer or boolean"):
        return [RNG.integers(0, 9, shape, dtype=np.int64) for _ in range(2)]
    lo, hi = DOMAIN.get(name, (-3.0, 3.0))
    a = RNG.uniform(lo, hi, shape)
    b = RNG.uniform(lo, hi, shape)
    if name in ("floor_divide", "remainder", "divide"):
        b = np.where(np.abs(b) < 0.5, 1.5, b)
    if name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                "maximum", "minimum"):
        b = np.where(RNG.random(shape) > 0.7, a, b)  # ties matter for these
    if name == "round":
        a = np.round(a * 4) / 4  # exact halves: round half to even
    return [a, b]


@pytest.mark.parametrize("row", elementwise.TABLE, ids=[r[0] for r in elementwise.TABLE])
def test_every_function_against_numpy(row):
    name, _, arity, category, _ = row
    mesh = mesh_of((2, 4))
    hosts = _inputs(name, category, (13, 10))[:arity]
    xs = [darray.asarray(h, mesh=mesh, spec=("x", "y")) for h in hosts]
    y = getattr(darray, name)(*xs)
    ref = getattr(np, name)(*hosts)
    assert_layout(y, xs[0].layout)
    assert y.dtype == ref.dtype, (name, y.dtype, ref.dtype)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-12, atol=1e-12)


def test_table_covers_the_standard():
    standard = """abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift
    bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh
    divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf
    isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or
    logical_xor maximum minimum multiply negative nextafter not_equal positive pow real
    reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc""".split()
    assert sorted(elementwise.FUNCTIONS) == sorted(standard)
    for name in standard:
        assert callable(getattr(darray, name)), name


@pytest.mark.parametrize("dtype", ["float32", "complex64", "int32"])
def test_dtypes_kept(dtype):
    mesh = mesh_of((8,))
    h = (RNG.uniform(-3, 3, 13) * (1 + 1j if dtype == "complex64" else 1)).astype(dtype)
    x = darray.asarray(h, mesh=mesh, spec=("x",))
    for name in ("negative", "square", "abs", "sign"):
        y = getattr(darray, name)(x)
        ref = getattr(np, name)(h)
        assert y.dtype == ref.dtype, name
        np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-6)
        assert_layout(y, x.layout)
    if dtype != "int32":
        wide = h.astype(np.complex128 if dtype == "complex64" else np.float64)
        np.testing.assert_allclose(np.asarray(darray.exp(x)), np.exp(wide), rtol=1e-5)


def test_clip_and_integer_rounding():
    mesh = mesh_of((8,))
    h = RNG.uniform(-3, 3, 13)
    x = darray.asarray(h, mesh=mesh, spec=("x",))
    np.testing.assert_array_equal(np.asarray(darray.clip(x, -1.0, 2.0)), np.clip(h, -1, 2))
    np.testing.assert_array_equal(np.asarray(darray.clip(x, max=0.5)), np.minimum(h, 0.5))
    lo = darray.asarray(np.full(13, -0.5), mesh=mesh, spec=("x",))
    np.testing.assert_array_equal(np.asarray(darray.clip(x, min=lo)), np.maximum(h, -0.5))
    i = darray.asarray(np.arange(-6, 7, dtype=np.int32), mesh=mesh, spec=("x",))
    c = darray.clip(i, 0, 3)
    assert c.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(c), np.clip(np.arange(-6, 7), 0, 3))
    for name in ("ceil", "floor", "trunc", "round"):
        y = getattr(darray, name)(i)
        assert y.dtype == np.int32, name
        np.testing.assert_array_equal(np.asarray(y), np.arange(-6, 7))


# -- operators ---------------------------------------------------------------------------------
BINARY = [(operator.add, "add"), (operator.sub, "subtract"), (operator.mul, "multiply"),
          (operator.truediv, "divide"), (operator.floordiv, "floor_divide"),
          (operator.mod, "remainder"), (operator.pow, "pow"), (operator.lt, "less"),
          (operator.le, "less_equal"), (operator.gt, "greater"), (operator.ge, "greater_equal"),
          (operator.eq, "equal"), (operator.ne, "not_equal")]
BITWISE = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]


@pytest.mark.parametrize("mesh_shape", [(2, 4)])
def test_operators_forward_reflected_inplace(mesh_shape):
    mesh = mesh_of(mesh_shape)
    a = RNG.uniform(0.5, 3, (13, 7))
    b = RNG.uniform(0.5, 3, (13, 7))
    x = darray.asarray(a, mesh=mesh, spec=spec_for(mesh_shape, 2))
    y = darray.asarray(b, mesh=mesh, spec=spec_for(mesh_shape, 2))
    for op, _ in BINARY:
        for got, ref in ((op(x, y), op(a, b)), (op(x, 2.0), op(a, 2.0)), (op(2.0, x), op(2.0, a))):
            assert_layout(got, x.layout)
            np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-13)
    ia, ib = RNG.integers(0, 7, (13, 7)), RNG.integers(0, 5, (13, 7))
    ix = darray.asarray(ia, mesh=mesh, spec=spec_for(mesh_shape, 2))
    iy = darray.asarray(ib, mesh=mesh, spec=spec_for(mesh_shape, 2))
    for op in BITWISE:
        np.testing.assert_array_equal(np.asarray(op(ix, iy)), op(ia, ib))
        np.testing.assert_array_equal(np.asarray(op(3, ix)), op(3, ia))
    np.testing.assert_array_equal(np.asarray(~ix), ~ia)
    np.testing.assert_allclose(np.asarray(-x), -a)
    np.testing.assert_allclose(np.asarray(+x), a)
    np.testing.assert_allclose(np.asarray(abs(x - 2)), np.abs(a - 2))
    # in place: rebinds x, keeps dtype and layout, never touches the other operand
    z = x
    z += y
    z *= 2
    z -= 1.0
    z /= y
    z **= 1
    np.testing.assert_allclose(np.asarray(z), ((a + b) * 2 - 1) / b, rtol=1e-13)
    assert_layout(z, x.layout)
    np.testing.assert_array_equal(np.asarray(y), b)
    ix2 = ix
    ix2 <<= 1
    ix2 |= 1
    ix2 //= 2
    ix2 %= 5
    np.testing.assert_array_equal(np.asarray(ix2), (((ia << 1) | 1) // 2) % 5)
    assert ix2.dtype == ix.dtype


def test_inplace_refuses_dtype_and_shape_changes():
    mesh = mesh_of((8,))
    x = darray.asarray(np.arange(13, dtype=np.int32), mesh=mesh)
    with pytest.raises(TypeError, match=r"x \+= y would change the dtype of x from int32 to "
                                        r"float64"):
        x += 1.5
    with pytest.raises(TypeError, match="would change the dtype"):
        x /= 2
    x += 1  # a Python int adopts int32
    assert x.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(x), np.arange(1, 14))
    v = darray.asarray(np.ones(7), mesh=mesh)
    m = darray.asarray(np.ones((3, 7)), mesh=mesh)
    with pytest.raises(ValueError, match=r"change the shape of x from \(7,\) to \(3, 7\)"):
        v += m


# -- scalars, numpy and jax operands -----------------------------------------------------------
@pytest.mark.parametrize("mesh_shape,shape", [(m, (13, 10, 7)) for m in MESH_SHAPES]
                         + [((8,), (7,)), ((4, 2), (5, 13))])
def test_broadcast_operands_keep_layout(mesh_shape, shape):
    mesh = mesh_of(mesh_shape)
    a = RNG.standard_normal(shape)
    x = darray.asarray(a, mesh=mesh, spec=spec_for(mesh_shape, len(shape)))
    row = RNG.standard_normal(shape[-1])
    cases = [
        (x * 2 + 1, a * 2 + 1),
        (x + row, a + row),                      # numpy, broadcast along leading axes
        (jnp.asarray(row) + x, row + a),         # jax array on the left defers to DistArray
        (row - x, row - a),                      # numpy on the left defers too
        (x - darray.mean(x), a - a.mean()),      # 0-d DistArray
        (darray.maximum(x, np.float32(0.5)), np.maximum(a, 0.5)),
    ]
    if len(shape) > 1:
        keep = darray.mean(x, axis=0, keepdims=True)
        cases.append((x / keep, a / a.mean(axis=0, keepdims=True)))
    for got, ref in cases:
        assert isinstance(got, darray.DistArray)
        assert_layout(got, x.layout)
        # atol: x - mean(x) cancels; a reduction order other than numpy's moves the last bits
        # of values near 0 (seen: 3.1e-6 off by 3.5e-18, relative 1.1e-12)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-14)


def test_broadcast_to_bigger_shape_takes_first_full_size_operand():
    mesh = mesh_of((2, 4))
    a, b = RNG.standard_normal((13, 10)), RNG.standard_normal(10)
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    v = darray.asarray(b, mesh=mesh, spec=("y",))
    got = v + x  # v is first but smaller: the output takes x's layout
    assert_layout(got, x.layout)
    np.testing.assert_allclose(np.asarray(got), b + a)
    col = darray.asarray(RNG.standard_normal((13, 1)), mesh=mesh, spec=("x",))
    outer = col * darray.asarray(b, mesh=mesh, spec=("y",))  # no operand has the result shape
    assert outer.shape == (13, 10)
    # each axis split as the operand spanning it: no operand moves (k-space wavenumbers)
    assert outer.layout.split == (("x",), ("y",))
    np.testing.assert_allclose(np.asarray(outer), np.asarray(col) * b)


def test_python_scalars_are_weak():
    mesh = mesh_of((8,))
    f32 = darray.asarray(np.ones(13, np.float32), mesh=mesh)
    i8 = darray.asarray(np.ones(13, np.int8), mesh=mesh)
    u8 = darray.asarray(np.ones(13, np.uint8), mesh=mesh)
    assert (f32 + 1.5).dtype == np.float32
    assert (f32 * 2).dtype == np.float32
    assert (f32 + 1j).dtype == np.complex64
    assert (i8 + 3).dtype == np.int8
    assert (u8 + 200).dtype == np.uint8
    assert (i8 < 2).dtype == np.bool_
    assert (i8 + u8).dtype == np.int16  # mixed signedness: the standard's table
    assert (f32 + np.ones(13, np.float64)).dtype == np.float64  # numpy arrays are strong


def test_mismatched_layouts_redistribute_or_raise():
    mesh = mesh_of((2, 4))
    a, b = RNG.standard_normal((13, 10)), RNG.standard_normal((13, 10))
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    y = darray.asarray(b, mesh=mesh, spec=("y", "x"))
    got = x + y
    assert_layout(got, x.layout)
    np.testing.assert_allclose(np.asarray(got), a + b)
    assert_layout(y - x, y.layout)
    with darray.config_context(mismatch="raise"):
        with pytest.raises(darray.LayoutError, match=r"add: operand layouts differ .*split=\(x, y\)"
                                                    r".*split=\(y, x\).*mismatch='raise'"):
            x + y
        np.testing.assert_allclose(np.asarray(x + 2 * x), 3 * a)  # same layout still runs
    assert darray.get_config("mismatch") == "redistribute"
    darray.set_config(mismatch="raise")
    try:
        with pytest.raises(darray.LayoutError, match="multiply"):
            darray.multiply(x, y)
    finally:
        darray.set_config(mismatch="redistribute")


def test_halo_operand_goes_through_the_logical_path():
    mesh = mesh_of((8,))
    a = RNG.standard_normal(29)
    x = darray.asarray(a, mesh=mesh, spec=("x",))
    h = x.halo(1)
    got = h + 1.0
    assert not got.layout.has_halo
    assert_layout(got, x.layout)
    np.testing.assert_allclose(np.asarray(got), a + 1)


def test_bad_operands_and_dtypes_are_named():
    mesh = mesh_of((8,))
    x = darray.asarray(np.ones(13), mesh=mesh)
    i = darray.asarray(np.ones(13, np.int32), mesh=mesh)
    with pytest.raises(TypeError, match="sin: x has dtype int32, but sin accepts floating-point"):
        darray.sin(i)
    with pytest.raises(TypeError, match="bitwise_and: x1 has dtype float64.*integer or boolean"):
        darray.bitwise_and(x, x)
    with pytest.raises(TypeError, match=r"add: x2 must be an array \(a DistArray, a numpy or "
                                        r"jax array\) or a Python scalar, got str"):
        darray.add(x, "1")
    # no DistArray operand: placed as darray.asarray places them (the argument policy)
    both = darray.add(np.ones(3), np.ones(3))
    assert both.layout == darray.asarray(np.ones(3)).layout
    np.testing.assert_array_equal(np.asarray(both), 2 * np.ones(3))
    with pytest.raises(ValueError, match=r"add: operand shapes do not broadcast: x1\(13,\), "
                                         r"x2\(4,\)"):
        darray.add(x, np.ones(4))


def test_jit_and_grad_through_elementwise():
    mesh = mesh_of((2, 4))
    a = RNG.standard_normal((13, 10))
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    f = jax.jit(lambda x: darray.sin(x) * x + 1.0)
    y = f(x)
    assert_layout(y, x.layout)
    np.testing.assert_allclose(np.asarray(y), np.sin(a) * a + 1, rtol=1e-12)
    # darray.sum returns a 0-d DistArray: darray.grad takes it as the loss
    g = darray.grad(lambda x: darray.sum(darray.sin(x) * x))(x)
    assert_layout(g, x.layout)
    np.testing.assert_allclose(np.asarray(g), np.cos(a) * a + np.sin(a), rtol=1e-12)


def test_inplace_after_asarray_copy_does_not_touch_the_original():
    x = darray.asarray(np.array([3.0, 5.0]))
    y = darray.asarray(x, copy=True)
    y //= 2.0
    np.testing.assert_array_equal(np.asarray(x), [3.0, 5.0])
    np.testing.assert_array_equal(np.asarray(y), [1.0, 2.0])


def test_hlo_same_layout_and_compatible_broadcasts_do_not_communicate():
    mesh = mesh_of((2, 4))
    x = darray.asarray(RNG.standard_normal((13, 10, 7)), mesh=mesh, spec=("x", "y"))
    m = darray.mean(x, axis=0, keepdims=True)  # (1, 10, 7): unsplit length-1 axis, same 'y'
    row = np.ones(7)

    def f(x, m):
        return darray.exp(x) * 2.0 + (x - m) / darray.abs(m) + row

    text = jax.jit(f).lower(x, m).compile().as_text()
    assert not any(c in text for c in ("all-gather", "all-reduce", "all-to-all",
                                       "collective-permute"))
    assert_layout(jax.jit(f)(x, m), x.layout)


def test_floor_divide_and_remainder_special_cases_follow_the_standard():
    mesh = mesh_of((8,))
    inf = np.inf
    a = np.array([-0.0, -0.0, inf, inf, -inf, 3.0, -3.0, -3.0, 7.0])
    b = np.array([2.0, -2.0, 2.0, -2.0, 2.0, -inf, inf, -inf, 2.0])
    x, y = (darray.asarray(v, mesh=mesh) for v in (a, b))
    q = np.asarray(x // y)
    # the standard: finite / -inf with opposite signs is -0 (Python's // would give -1)
    np.testing.assert_array_equal(q, [-0.0, 0.0, inf, -inf, -inf, -0.0, -0.0, 0.0, 3.0])
    np.testing.assert_array_equal(np.signbit(q), [True, False, False, True, True, True, True,
                                                  False, False])
    r = np.asarray(darray.remainder(darray.asarray(np.array([-0.0, 0.0, 4.0, 5.0]), mesh=mesh),
                                    darray.asarray(np.array([2.0, -2.0, -2.0, 3.0]), mesh=mesh)))
    np.testing.assert_array_equal(r, [0.0, -0.0, -0.0, 2.0])
    np.testing.assert_array_equal(np.signbit(r), [False, True, True, False])
