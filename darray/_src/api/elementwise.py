"""Every elementwise function of the Array API 2024.12, built from one table.

Complex kernels with inf/NaN special cases the standard states come from complex_special.

Each row of `TABLE` names a function, the jax.numpy function that computes it, its arity and
the dtype category the standard accepts. `elementwise` is the one engine behind all of them
(and behind `where` and the DistArray operators, which look the functions up by name).

Operands: DistArrays; Python scalars (weak: they adopt the array's dtype, as the standard says);
numpy and jax arrays (treated as arrays of their own dtype, broadcast, never the output layout).

Layout rule: the output takes the layout of the first DistArray operand whose shape is the
result shape (else the first DistArray's layout extended with unsplit leading axes). When every
DistArray operand fits that layout physically (same split for full-size axes, unsplit size-1
axes, no halo) the function runs on the physical arrays: no communication. Otherwise the
operands are moved to the output layout inside one compiled function (or LayoutError under
``darray.set_config(mismatch="raise")``).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from darray._src.api.creation import asarray
from darray._src.base import dtypes as _dt
from darray._src.base.config import get_config
from darray._src.base.errors import LayoutError
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import (
    all_local,
    apply_local,
    apply_logical,
    apply_physical,
    local_scalar_data,
)
from darray._src.engine.arguments import array_operand, ensure_array
from darray._src.engine.donation import donatable
from darray._src.engine.operands import check_operand_meshes
from darray._src.kernels import complex_special as _cs
from darray._src.layout.layout import Layout

_PY_SCALARS = (bool, int, float, complex)

def _is_float_result(x1, x2) -> bool:
    return np.dtype(jnp.result_type(x1, x2)).kind == "f"


def _sign(x):
    """jnp.sign, with +0 for both zeros as the standard says (jnp.sign(-0.0) is -0.0)."""
    if np.dtype(x.dtype).kind == "c":
        return _cs.sign_complex(x)
    out = jnp.sign(x)
    if np.dtype(out.dtype).kind != "f":
        return out
    return jnp.where(x == 0, jnp.zeros((), out.dtype), out)


def _floor_divide(x1, x2):
    """jnp.floor_divide (numpy's, exact for finite values) with the standard's special cases:
    signed zeros and infinities follow floor(x1 / x2)."""
    out = jnp.floor_divide(x1, x2)
    if not _is_float_result(x1, x2):
        return out
    special = jnp.isinf(x1) | jnp.isinf(x2) | (x1 == 0)
    return jnp.where(special, jnp.floor(jnp.true_divide(x1, x2)), out)


def _remainder(x1, x2):
    """jnp.remainder with the standard's signed zero: a zero result takes the sign of x2."""
    out = jnp.remainder(x1, x2)
    if not _is_float_result(x1, x2):
        return out
    return jnp.where(out == 0, jnp.copysign(jnp.zeros_like(out), x2), out)


# (name, jax.numpy function, arity, accepted dtype category, one-line summary)
TABLE = (
    ("abs", jnp.abs, 1, "numeric", "Absolute value (modulus for complex; real result)."),
    ("acos", _cs.acos, 1, "floating-point", "Inverse cosine."),
    ("acosh", _cs.acosh, 1, "floating-point", "Inverse hyperbolic cosine."),
    ("add", jnp.add, 2, "numeric or boolean",
     "Sum x1 + x2 (of two booleans: logical or, as in numpy)."),
    ("asin", jnp.arcsin, 1, "floating-point", "Inverse sine."),
    ("asinh", _cs.asinh, 1, "floating-point", "Inverse hyperbolic sine."),
    ("atan", jnp.arctan, 1, "floating-point", "Inverse tangent."),
    ("atan2", jnp.arctan2, 2, "real floating", "Quadrant-aware inverse tangent of x1 / x2."),
    ("atanh", _cs.atanh, 1, "floating-point", "Inverse hyperbolic tangent."),
    ("bitwise_and", jnp.bitwise_and, 2, "integer or boolean", "Bitwise AND."),
    ("bitwise_left_shift", jnp.left_shift, 2, "integral", "Shift x1 left by x2 bits."),
    ("bitwise_invert", jnp.invert, 1, "integer or boolean", "Bitwise NOT."),
    ("bitwise_or", jnp.bitwise_or, 2, "integer or boolean", "Bitwise OR."),
    ("bitwise_right_shift", jnp.right_shift, 2, "integral", "Shift x1 right by x2 bits."),
    ("bitwise_xor", jnp.bitwise_xor, 2, "integer or boolean", "Bitwise XOR."),
    ("ceil", jnp.ceil, 1, "real numeric", "Round toward +infinity."),
    ("conj", jnp.conj, 1, "numeric", "Complex conjugate."),
    ("copysign", jnp.copysign, 2, "real floating", "Magnitude of x1 with the sign of x2."),
    ("cos", _cs.cos, 1, "floating-point", "Cosine."),
    ("cosh", _cs.cosh, 1, "floating-point", "Hyperbolic cosine."),
    ("divide", jnp.true_divide, 2, "numeric", "True division x1 / x2."),
    ("equal", jnp.equal, 2, "any", "x1 == x2."),
    ("exp", _cs.exp, 1, "floating-point", "Exponential."),
    ("expm1", _cs.expm1, 1, "floating-point", "exp(x) - 1, accurate near 0."),
    ("floor", jnp.floor, 1, "real numeric", "Round toward -infinity."),
    ("floor_divide", _floor_divide, 2, "real numeric", "Floor of x1 / x2."),
    ("greater", jnp.greater, 2, "real numeric", "x1 > x2."),
    ("greater_equal", jnp.greater_equal, 2, "real numeric", "x1 >= x2."),
    ("hypot", jnp.hypot, 2, "real floating", "sqrt(x1**2 + x2**2) without overflow."),
    ("imag", jnp.imag, 1, "numeric", "Imaginary component (real result)."),
    ("isfinite", jnp.isfinite, 1, "numeric", "Whether finite."),
    ("isinf", jnp.isinf, 1, "numeric", "Whether infinite."),
    ("isnan", jnp.isnan, 1, "numeric", "Whether NaN."),
    ("less", jnp.less, 2, "real numeric", "x1 < x2."),
    ("less_equal", jnp.less_equal, 2, "real numeric", "x1 <= x2."),
    ("log", _cs.log, 1, "floating-point", "Natural logarithm."),
    ("log1p", _cs.log1p, 1, "floating-point", "log(1 + x), accurate near 0."),
    ("log2", jnp.log2, 1, "floating-point", "Base-2 logarithm."),
    ("log10", jnp.log10, 1, "floating-point", "Base-10 logarithm."),
    ("logaddexp", jnp.logaddexp, 2, "real floating", "log(exp(x1) + exp(x2))."),
    ("logical_and", jnp.logical_and, 2, "bool", "Logical AND."),
    ("logical_not", jnp.logical_not, 1, "bool", "Logical NOT."),
    ("logical_or", jnp.logical_or, 2, "bool", "Logical OR."),
    ("logical_xor", jnp.logical_xor, 2, "bool", "Logical XOR."),
    ("maximum", jnp.maximum, 2, "real numeric", "Larger of x1 and x2 (NaN propagates)."),
    ("minimum", jnp.minimum, 2, "real numeric", "Smaller of x1 and x2 (NaN propagates)."),
    ("multiply", jnp.multiply, 2, "numeric or boolean",
     "Product x1 * x2 (of two booleans: logical and, as in numpy)."),
    ("negative", jnp.negative, 1, "numeric", "-x."),
    ("nextafter", jnp.nextafter, 2, "real floating", "Next representable x1 toward x2."),
    ("not_equal", jnp.not_equal, 2, "any", "x1 != x2."),
    ("positive", jnp.positive, 1, "numeric", "+x."),
    ("pow", jnp.power, 2, "numeric", "x1 ** x2."),
    ("real", jnp.real, 1, "numeric", "Real component (real result)."),
    ("reciprocal", jnp.reciprocal, 1, "floating-point", "1 / x."),
    ("remainder", _remainder, 2, "real numeric", "x1 mod x2, with the sign of x2."),
    ("round", jnp.round, 1, "numeric", "Round half to even."),
    ("sign", _sign, 1, "numeric", "Sign (``x / |x|`` for complex)."),
    ("signbit", jnp.signbit, 1, "real floating", "Whether the sign bit is set."),
    ("sin", _cs.sin, 1, "floating-point", "Sine."),
    ("sinh", _cs.sinh, 1, "floating-point", "Hyperbolic sine."),
    ("square", jnp.square, 1, "numeric", "x * x."),
    ("sqrt", _cs.sqrt, 1, "floating-point", "Square root."),
    ("subtract", jnp.subtract, 2, "numeric", "Difference x1 - x2."),
    ("tan", _cs.tan, 1, "floating-point", "Tangent."),
    ("tanh", _cs.tanh, 1, "floating-point", "Hyperbolic tangent."),
    ("trunc", jnp.trunc, 1, "real numeric", "Round toward zero."),
)

_LAYOUT_DOC = """
Layout:
  The first DistArray operand's layout (see darray._src.api.elementwise). No communication when
  all DistArray operands share it; otherwise they are redistributed in one compiled function
  (LayoutError instead under darray.set_config(mismatch="raise")).
"""


# -- operands --------------------------------------------------------------------------------
def _is_dist(x) -> bool:
    return isinstance(x, DistArray)


def _operand(a, argname: str, fname: str):
    """The argument policy for an elementwise operand (engine/arguments.py)."""
    return array_operand(fname, a, argname)


@functools.cache
def _in_category(dtype, category: str) -> bool:
    # cached: a tuple scan of np.dtype comparisons costs microseconds on every eager op
    return np.dtype(dtype) in _dt.CATEGORIES[category]


def _check_category(fname, category, ops, argnames):
    if category == "any":
        return
    for a, n in zip(ops, argnames):
        if isinstance(a, _PY_SCALARS):
            continue
        if not _in_category(a.dtype, category):
            raise TypeError(f"{fname}: {n} has dtype {a.dtype}, but {fname} accepts "
                            f"{category} dtypes only")


def _result_layout(ops, shape) -> Layout:
    """Layout of the first DistArray whose shape is `shape`; else, axis by axis, the split of
    the first operand that spans that axis and whose mesh axes are still free (an outer
    product of vectors split on different mesh axes, ``kx**2 + ky**2``, then needs no data
    movement: each operand is split where the result is)."""
    dists = [a for a in ops if _is_dist(a)]
    for a in dists:
        if a.shape == shape:
            return a.layout.without_halo()
    first = dists[0].layout
    split = [()] * len(shape)
    used: set = set()
    for a in dists:
        lay = a.layout
        if lay.mesh != first.mesh:
            continue
        grow = len(shape) - lay.ndim
        for i, (s, n) in enumerate(zip(lay.split, lay.shape)):
            axis = i + grow
            if s and not split[axis] and n == shape[axis] and not used.intersection(s):
                split[axis] = tuple(s)
                used.update(s)
    return Layout(shape, first.mesh, tuple(split), ((0, 0),) * len(shape))


def _fits(a, out: Layout) -> bool:
    """Whether operand `a` can be combined with physical data of layout `out` as it is stored."""
    if isinstance(a, _PY_SCALARS):
        return True
    if _is_dist(a):
        return _layout_fits(a.layout, out)
    # A replicated host/jax array broadcasts against unpadded axes only.
    off = out.ndim - np.ndim(a)
    return all(n == 1 or out.physical_shape[i + off] == out.shape[i + off]
               for i, n in enumerate(np.shape(a)))


def _layout_fits(lay: Layout, out: Layout) -> bool:
    """Same split for full-length axes, unsplit length-1 axes, no halo, same mesh."""
    if lay == out:
        return True
    if lay.has_halo or lay.mesh != out.mesh:
        return False
    off = out.ndim - lay.ndim
    return all((n == 1 and not s) or (n == out.shape[i + off] and s == out.split[i + off])
               for i, (n, s) in enumerate(zip(lay.shape, lay.split)))


def _shared_layout(ops) -> Layout | None:
    """The layout of the DistArray operands when they all have one halo-free layout and every
    other operand is a Python scalar (then the general rule gives that layout and runs on the
    physical arrays as they are); None otherwise."""
    shared = None
    for a in ops:
        if isinstance(a, DistArray):
            lay = a.layout
            if shared is None:
                shared = lay
            elif lay is not shared and lay != shared:
                return None
        elif not isinstance(a, _PY_SCALARS) and not _movable_scalar(a):
            return None
    if shared is None or shared.has_halo:
        return None
    return shared


def _movable_scalar(a) -> bool:
    """A 0-d jax array that jit moves to the other operands' devices itself: uncommitted (a
    small darray scalar's data, `jnp.asarray(1.0)`) or traced."""
    return isinstance(a, jax.Array) and a.ndim == 0 and (
        isinstance(a, jax.core.Tracer) or not a.committed)


def _describe(ops, argnames) -> str:
    return "; ".join(f"{n}: {a.layout!r}" for a, n in zip(ops, argnames) if _is_dist(a))


def elementwise(fname: str, fn, args, argnames, category: str = "any",
                donate: DistArray | None = None) -> DistArray:
    """Run `fn` (a jax function, hashable and stable, so compilations are cached) elementwise.

    Args:
      fname: the public name, for error messages.
      fn: the function of len(args) jax arrays / scalars.
      args: the operands; at least one must be a DistArray.
      argnames: their parameter names, for error messages.
      category: dtype category (a key of dtypes.CATEGORIES) every array operand must be in.
      donate: the first operand, for an in-place operator (see `inplace`): its buffer may be
        taken over by the program (engine/donation.py). None: never.
    """
    if all_local(args):  # small arrays only: a one-device program (engine/apply.py)
        for a, n in zip(args, argnames):
            if not _is_dist(a):
                _operand(a, n, fname)
        _check_category(fname, category, args, argnames)
        return apply_local(fn, args)
    ops = [_operand(a, n, fname) for a, n in zip(args, argnames)]
    if not any(_is_dist(a) for a in ops):
        # no DistArray: the arrays (or, with none, the scalars) are placed as darray.asarray
        # places them (engine/arguments.py), as jax.numpy places host data
        scalars_only = all(isinstance(a, _PY_SCALARS) for a in ops)
        ops = [a if isinstance(a, _PY_SCALARS) and not scalars_only
               else ensure_array(fname, a, n) for a, n in zip(ops, argnames)]
    _check_category(fname, category, ops, argnames)
    if all_local(ops):  # bare jax scalars, wrapped as small 0-d arrays above
        return apply_local(fn, ops)
    ops = local_scalar_data(ops)
    shared = _shared_layout(ops)
    if shared is not None:  # the common eager case, with no shape or layout arithmetic
        return apply_physical(fn, ops, shared, _donation(donate, fn, ops, shared))
    ops = list(check_operand_meshes(fname, *zip(ops, argnames)))  # the mesh rule (operands.py)
    try:
        shape = tuple(np.broadcast_shapes(*[a.shape if _is_dist(a) else np.shape(a) for a in ops]))
    except ValueError:
        shapes = ", ".join(f"{n}{tuple(a.shape if _is_dist(a) else np.shape(a))}"
                           for a, n in zip(ops, argnames))
        raise ValueError(f"{fname}: operand shapes do not broadcast: {shapes}") from None
    out = _result_layout(ops, shape)
    if all(_fits(a, out) for a in ops):
        leaves = [a if not _is_dist(a) or a.layout == out else a.data for a in ops]
        return apply_physical(fn, [_placed(a, out) for a in leaves], out,
                              _donation(donate, fn, leaves, out))
    if get_config("mismatch") == "raise":
        # Ghost cells are dropped locally; only a change of split counts as redistribution.
        if not all(_layout_fits(a.layout.without_halo(), out) for a in ops if _is_dist(a)):
            raise LayoutError(f"{fname}: operand layouts differ ({_describe(ops, argnames)}) and "
                              "darray config mismatch='raise' forbids redistributing; move "
                              "operands with darray.asarray(x, mesh=..., spec=...) first")
    ops = [_moved(a, out) for a in ops]
    return apply_logical(fn, [_placed(a, out) for a in ops], out,
                         donate=_donation(donate, fn, ops, out))


def _donation(x: DistArray | None, fn, ops, out: Layout) -> int | None:
    """0 when the program may take over the buffer of ops[0], the array `x` of ``x <op>= y``:
    x is no other operand, the result keeps x's dtype (checked before anything runs: a
    refused ``x <op>= y`` must leave x intact) and engine/donation.py finds it safe."""
    if x is None or ops[0] is not x or any(a is x for a in ops[1:]):
        return None
    if _result_dtype(fn, tuple(_dtype_key(a) for a in ops)) != x.dtype:
        return None
    return 0 if donatable(x, out) else None


def _dtype_key(a):
    """What the result dtype depends on: a Python scalar's type, an array's dtype and weak
    type."""
    if isinstance(a, _PY_SCALARS):
        return type(a)
    leaf = a._leaf() if _is_dist(a) else a
    return np.dtype(a.dtype), bool(getattr(leaf, "weak_type", False))


@functools.lru_cache(maxsize=512)
def _result_dtype(fn, keys) -> np.dtype:
    """The dtype fn gives operands of these `_dtype_key`s (plain data: no program kept)."""
    operands = [key(1) if isinstance(key, type) else
                jax.ShapeDtypeStruct((), key[0], weak_type=key[1]) for key in keys]
    return np.dtype(jax.eval_shape(fn, *operands).dtype)


def _placed(a, out: Layout):
    """jax arrays committed elsewhere are replicated onto the output mesh (small operands)."""
    if isinstance(a, jax.Array) and not isinstance(a, DistArray) and not _movable_scalar(a):
        return jax.device_put(a, NamedSharding(out.mesh, PartitionSpec()))
    return a


def _moved(a, out: Layout):
    """0-d DistArrays on another mesh come over to the output mesh (check_operand_meshes has
    placed the others)."""
    if _is_dist(a) and a.layout.mesh != out.mesh:
        return asarray(a, mesh=out.mesh)
    return a


# -- the generated functions -------------------------------------------------------------------
def _make(name, fn, arity, category, summary):
    function: Callable[..., DistArray]
    if arity == 1:
        def unary(x, /):
            return elementwise(name, fn, (x,), ("x",), category)
        function, args = unary, "  x: DistArray"
    else:
        def binary(x1, x2, /):
            return elementwise(name, fn, (x1, x2), ("x1", "x2"), category)
        function = binary
        args = ("  x1, x2: DistArrays, Python scalars or numpy/jax arrays (at least one\n"
                "    DistArray); they broadcast")
    function.__name__ = function.__qualname__ = name
    function.__module__ = "darray"
    # the code's own name too: tracebacks and the memory check (base/memory_budget.py) say
    # ``add`` rather than ``binary``
    function.__code__ = function.__code__.replace(co_name=name, co_qualname=name)
    function.__doc__ = (f"{summary}\n\nArgs:\n{args} of {category} dtype.\n\nReturns:\n"
                        f"  DistArray of the broadcast shape and the promoted dtype.\n"
                        f"{_LAYOUT_DOC}")
    return function


for _row in TABLE:
    globals()[_row[0]] = _make(*_row)
del _row

if TYPE_CHECKING:
    # The functions made above, as type checkers see them: a stub generated from TABLE
    # (tools/gen_typing_stubs.py; tests/unit/test_typing_stubs.py keeps the two in step).
    from darray._src.api.elementwise_functions import *  # noqa: F403 (the generated names)

FUNCTIONS = tuple(row[0] for row in TABLE) + ("clip",)


@functools.cache
def _clip_fn(has_min: bool, has_max: bool):
    def run(x, *bounds):
        it = iter(bounds)
        lo = next(it) if has_min else None
        hi = next(it) if has_max else None
        return jnp.clip(x, lo, hi).astype(x.dtype)
    return run


def clip(x, /, min=None, max=None):  # noqa: A002 - the standard's names
    """Clamp each element to [min, max].

    Args:
      x: DistArray of real numeric dtype.
      min, max: lower/upper bound (Python scalar, array or None); the result keeps x's dtype.
    """
    bounds = [(b, n) for b, n in ((min, "min"), (max, "max")) if b is not None]
    return elementwise("clip", _clip_fn(min is not None, max is not None),
                       (x,) + tuple(b for b, _ in bounds), ("x",) + tuple(n for _, n in bounds),
                       "real numeric")


clip.__doc__ = (clip.__doc__ or "") + _LAYOUT_DOC


_SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//",
            "remainder": "%", "pow": "**", "matmul": "@", "bitwise_and": "&", "bitwise_or": "|",
            "bitwise_xor": "^", "bitwise_left_shift": "<<", "bitwise_right_shift": ">>"}


_ROWS = {row[0]: row for row in TABLE}


def inplace(name: str, x: DistArray, other) -> DistArray | None:
    """``x <name> other`` for the in-place operator ``x <op>= other``, which may write the
    result into x's buffer (engine/donation.py): then x's old data is deleted, so the caller
    rebinds x to the result at once (`DistArray._mutate`). None when `name` is not an
    elementwise function (matmul): the caller computes it as usual."""
    row = _ROWS.get(name)
    if row is None or row[2] != 2:
        return None
    return elementwise(name, row[1], (x, other), ("x1", "x2"), row[3], donate=x)


def check_inplace(x: DistArray, result: DistArray, name: str) -> None:
    """In-place operators keep x's dtype and shape (the standard forbids changing them)."""
    op = _SYMBOLS.get(name, name)
    if result.dtype != x.dtype:
        raise TypeError(f"x {op}= y would change the dtype of x from {x.dtype} to "
                        f"{result.dtype}; write x = x {op} y, or cast y to {x.dtype} first")
    if result.shape != x.shape:
        raise ValueError(f"x {op}= y would change the shape of x from {x.shape} to "
                         f"{result.shape} by broadcasting; write x = x {op} y")
