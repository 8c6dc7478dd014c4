"""Complex elementwise kernels with the Array API's special cases (inf/NaN operands).

jax.numpy's complex kernels are right for finite operands but not for many inf/NaN ones (e.g.
``exp(+inf + NaN j)`` gives NaN + NaN j where the standard says infinity + NaN j). Each kernel
here runs the jax.numpy function, then replaces the result where the operand hits one of the
standard's special cases, with `jnp.where` on the standard's own conditions: the finite path is
untouched (same speed, same gradients there).

The standard states the cases for the upper half-plane (and for the odd/even functions, the
right half as well) and fills the rest by symmetry: f(conj(z)) = conj(f(z)) for every function
here, and f(-z) = -f(z) (odd) or f(-z) = f(z) (even) where it says so. So each table is written
for a = real(z) >= 0 (when symmetric) and b = imag(z) >= 0, and `_with_special_cases` folds the
operand into that quarter and the result back out.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

_PI = math.pi
_NAN = float("nan")
_INF = float("inf")


def _pos_finite(v):
    return jnp.isfinite(v) & (v > 0)


def _nonzero_finite(v):
    return jnp.isfinite(v) & (v != 0)


def _cis_scaled(r, b):
    """r * cis(b) = r cos(b) + r sin(b) j, for r = 0 or infinity (0 * finite stays 0)."""
    return r * jnp.cos(b), r * jnp.sin(b)


# Each table: (a, b) -> list of (condition, real part, imaginary part), first match wins,
# in the folded quarter (b >= +0 or NaN; a >= +0 or NaN for symmetric functions).
def _exp_cases(a, b):
    cis_re, cis_im = _cis_scaled(jnp.where(a > 0, _INF, 0.0), b)
    return [
        (jnp.isfinite(a) & (jnp.isinf(b) | jnp.isnan(b)), _NAN, _NAN),
        ((a == _INF) & (b == 0), _INF, b),
        ((a == -_INF) & jnp.isfinite(b), cis_re, cis_im),
        ((a == _INF) & _nonzero_finite(b), cis_re, cis_im),
        ((a == -_INF) & (jnp.isinf(b) | jnp.isnan(b)), 0.0, 0.0),
        ((a == _INF) & (jnp.isinf(b) | jnp.isnan(b)), _INF, _NAN),
        (jnp.isnan(a) & (b == 0), _NAN, b),
        (jnp.isnan(a), _NAN, _NAN),
    ]


def _expm1_cases(a, b):
    cases = _exp_cases(a, b)
    # exp's results minus 1 where they differ: -inf rows give -1 (+0 * cis(b) - 1).
    cis_re, cis_im = _cis_scaled(jnp.where(a > 0, _INF, 0.0), b)
    return [cases[0], cases[1],
            ((a == -_INF) & jnp.isfinite(b), cis_re - 1.0, cis_im),
            ((a == _INF) & _nonzero_finite(b), cis_re - 1.0, cis_im),
            ((a == -_INF) & (jnp.isinf(b) | jnp.isnan(b)), -1.0, 0.0)] + cases[5:]


def _log_cases(a, b):
    return [
        (jnp.isfinite(a) & (b == _INF), _INF, _PI / 2),
        (jnp.isfinite(a) & jnp.isnan(b), _NAN, _NAN),
        ((a == -_INF) & _pos_finite(b), _INF, _PI),
        ((a == _INF) & _pos_finite(b), _INF, 0.0),
        ((a == -_INF) & (b == _INF), _INF, 3 * _PI / 4),
        ((a == _INF) & (b == _INF), _INF, _PI / 4),
        (jnp.isinf(a) & jnp.isnan(b), _INF, _NAN),
        (jnp.isnan(a) & jnp.isfinite(b), _NAN, _NAN),
        (jnp.isnan(a) & (b == _INF), _INF, _NAN),
        (jnp.isnan(a) & jnp.isnan(b), _NAN, _NAN),
    ]


def _sqrt_cases(a, b):
    return [
        (b == _INF, _INF, _INF),
        (jnp.isfinite(a) & jnp.isnan(b), _NAN, _NAN),
        ((a == -_INF) & _pos_finite(b), 0.0, _INF),
        ((a == _INF) & _pos_finite(b), _INF, 0.0),
        ((a == -_INF) & jnp.isnan(b), _NAN, _INF),
        ((a == _INF) & jnp.isnan(b), _INF, _NAN),
        (jnp.isnan(a), _NAN, _NAN),
    ]


def _acos_cases(a, b):
    return [
        ((a == 0) & jnp.isnan(b), _PI / 2, _NAN),
        (jnp.isfinite(a) & (b == _INF), _PI / 2, -_INF),
        (_nonzero_finite(a) & jnp.isnan(b), _NAN, _NAN),
        ((a == -_INF) & _pos_finite(b), _PI, -_INF),
        ((a == _INF) & _pos_finite(b), 0.0, -_INF),
        ((a == -_INF) & (b == _INF), 3 * _PI / 4, -_INF),
        ((a == _INF) & (b == _INF), _PI / 4, -_INF),
        (jnp.isinf(a) & jnp.isnan(b), _NAN, _INF),
        (jnp.isnan(a) & jnp.isfinite(b), _NAN, _NAN),
        (jnp.isnan(a) & (b == _INF), _NAN, -_INF),
        (jnp.isnan(a) & jnp.isnan(b), _NAN, _NAN),
    ]


def _acosh_cases(a, b):
    return [
        (jnp.isfinite(a) & (b == _INF), _INF, _PI / 2),
        (_nonzero_finite(a) & jnp.isnan(b), _NAN, _NAN),
        ((a == 0) & jnp.isnan(b), _NAN, _PI / 2),
        ((a == -_INF) & _pos_finite(b), _INF, _PI),
        ((a == _INF) & _pos_finite(b), _INF, 0.0),
        ((a == -_INF) & (b == _INF), _INF, 3 * _PI / 4),
        ((a == _INF) & (b == _INF), _INF, _PI / 4),
        (jnp.isinf(a) & jnp.isnan(b), _INF, _NAN),
        (jnp.isnan(a) & jnp.isfinite(b), _NAN, _NAN),
        (jnp.isnan(a) & (b == _INF), _INF, _NAN),
        (jnp.isnan(a) & jnp.isnan(b), _NAN, _NAN),
    ]


def _asinh_cases(a, b):  # odd: a >= 0 here
    return [
        (_pos_finite(a) & (b == _INF), _INF, _PI / 2),
        (jnp.isfinite(a) & jnp.isnan(b), _NAN, _NAN),
        ((a == _INF) & _pos_finite(b), _INF, 0.0),
        ((a == _INF) & (b == _INF), _INF, _PI / 4),
        ((a == _INF) & jnp.isnan(b), _INF, _NAN),
        (jnp.isnan(a) & (b == 0), _NAN, b),
        (jnp.isnan(a) & _nonzero_finite(b), _NAN, _NAN),
        (jnp.isnan(a) & (b == _INF), _INF, _NAN),
        (jnp.isnan(a) & jnp.isnan(b), _NAN, _NAN),
    ]


def _atanh_cases(a, b):  # odd: a >= 0 here
    return [
        ((a == 0) & jnp.isnan(b), a, _NAN),
        ((a == 1) & (b == 0), _INF, b),
        (_pos_finite(a) & (b == _INF), 0.0, _PI / 2),
        (_nonzero_finite(a) & jnp.isnan(b), _NAN, _NAN),
        ((a == _INF) & _pos_finite(b), 0.0, _PI / 2),
        ((a == _INF) & (b == _INF), 0.0, _PI / 2),
        ((a == _INF) & jnp.isnan(b), 0.0, _NAN),
        (jnp.isnan(a) & jnp.isfinite(b), _NAN, _NAN),
        (jnp.isnan(a) & (b == _INF), 0.0, _PI / 2),
        (jnp.isnan(a) & jnp.isnan(b), _NAN, _NAN),
    ]


def _cosh_cases(a, b):  # even: a >= 0 here
    cis_re, cis_im = _cis_scaled(_INF, b)
    return [
        ((a == 0) & (jnp.isinf(b) | jnp.isnan(b)), _NAN, 0.0),
        (_nonzero_finite(a) & (jnp.isinf(b) | jnp.isnan(b)), _NAN, _NAN),
        ((a == _INF) & (b == 0), _INF, b),
        ((a == _INF) & _nonzero_finite(b), cis_re, cis_im),
        ((a == _INF) & (jnp.isinf(b) | jnp.isnan(b)), _INF, _NAN),
        (jnp.isnan(a) & (b == 0), _NAN, 0.0),
        (jnp.isnan(a), _NAN, _NAN),
    ]


def _sinh_cases(a, b):  # odd: a >= 0 here
    cis_re, cis_im = _cis_scaled(_INF, b)
    return [
        ((a == 0) & (jnp.isinf(b) | jnp.isnan(b)), a, _NAN),
        (_pos_finite(a) & (jnp.isinf(b) | jnp.isnan(b)), _NAN, _NAN),
        ((a == _INF) & (b == 0), _INF, b),
        ((a == _INF) & _pos_finite(b), cis_re, cis_im),
        ((a == _INF) & (jnp.isinf(b) | jnp.isnan(b)), _INF, _NAN),
        (jnp.isnan(a) & (b == 0), _NAN, b),
        (jnp.isnan(a), _NAN, _NAN),
    ]


def _tanh_cases(a, b):  # odd: a >= 0 here
    return [
        (_pos_finite(a) & (jnp.isinf(b) | jnp.isnan(b)), _NAN, _NAN),
        ((a == 0) & (jnp.isinf(b) | jnp.isnan(b)), a, _NAN),
        ((a == _INF) & jnp.isfinite(b), 1.0, 0.0 * b),
        ((a == _INF) & (jnp.isinf(b) | jnp.isnan(b)), 1.0, 0.0),
        (jnp.isnan(a) & (b == 0), _NAN, b),
        (jnp.isnan(a), _NAN, _NAN),
    ]


def _with_special_cases(fn, cases, symmetry=None):
    """fn with the standard's special cases for complex operands (real operands: fn itself).

    symmetry: None (only f(conj z) = conj f(z)), "odd" (also f(-z) = -f(z)) or "even"
    (also f(-z) = f(z)); `cases` is written for the folded quarter (see the module doc). The
    operand is folded before fn runs too: jax.numpy's kernels ignore the sign of a zero
    imaginary part on branch cuts (jnp.sqrt(-1 - 0j) is +1j), the folded operand never has one.
    """
    def kernel(z):
        if np.dtype(z.dtype).kind != "c":
            return fn(z)
        a, b = jnp.real(z), jnp.imag(z)
        flip = jnp.zeros(a.shape, bool)
        if symmetry is not None:
            flip = jnp.signbit(a) & ~jnp.isnan(a)  # fold -z onto z
            a, b = jnp.where(flip, -a, a), jnp.where(flip, -b, b)
        mirror = jnp.signbit(b) & ~jnp.isnan(b)  # fold conj(z) onto z
        b = jnp.where(mirror, -b, b)
        out = fn(jax_complex(a, b, z.dtype))
        hit = jnp.zeros(a.shape, bool)
        re = jnp.zeros(a.shape, a.dtype)
        im = jnp.zeros(a.shape, a.dtype)
        # The special values are constants of the operand's class: no gradient flows through
        # them (inf * cos(b) would turn a zero cotangent into NaN).
        for cond, case_re, case_im in cases(jax.lax.stop_gradient(a), jax.lax.stop_gradient(b)):
            new = cond & ~hit
            re = jnp.where(new, jnp.asarray(case_re, a.dtype), re)
            im = jnp.where(new, jnp.asarray(case_im, a.dtype), im)
            hit = hit | new
        re = jnp.where(hit, re, jnp.real(out))
        im = jnp.where(hit, im, jnp.imag(out))
        im = jnp.where(mirror, -im, im)
        if symmetry == "odd":
            re, im = jnp.where(flip, -re, re), jnp.where(flip, -im, im)
        return jax_complex(re, im, out.dtype)
    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


def jax_complex(re, im, dtype):
    """re + im j without arithmetic (0 * inf would give NaN)."""
    return jax.lax.complex(re, im).astype(dtype)


def _sign(z):
    """Complex sign(z) = z / |z|, with 0 + 0j for both signed zeros and NaN + NaN j for a NaN
    part."""
    out = jnp.sign(z)
    if np.dtype(out.dtype).kind != "c":
        return out
    nan = jnp.isnan(jnp.real(z)) | jnp.isnan(jnp.imag(z))
    out = jnp.where(z == 0, jnp.zeros((), out.dtype), out)
    return jnp.where(nan, jnp.asarray(complex(_NAN, _NAN), out.dtype), out)


def _times_i(z):
    return jax_complex(-jnp.imag(z), jnp.real(z), z.dtype)


def _over_i(z):  # -1j * z
    return jax_complex(jnp.imag(z), -jnp.real(z), z.dtype)


exp = _with_special_cases(jnp.exp, _exp_cases)
expm1 = _with_special_cases(jnp.expm1, _expm1_cases)
log = _with_special_cases(jnp.log, _log_cases)
sqrt = _with_special_cases(jnp.sqrt, _sqrt_cases)
acos = _with_special_cases(jnp.arccos, _acos_cases)
acosh = _with_special_cases(jnp.arccosh, _acosh_cases)
asinh = _with_special_cases(jnp.arcsinh, _asinh_cases, "odd")
atanh = _with_special_cases(jnp.arctanh, _atanh_cases, "odd")
cosh = _with_special_cases(jnp.cosh, _cosh_cases, "even")
sinh = _with_special_cases(jnp.sinh, _sinh_cases, "odd")
tanh = _with_special_cases(jnp.tanh, _tanh_cases, "odd")


def _log1p_cases(a, b):
    # log1p's non-finite cases are log's (adding 1 moves no infinity or NaN), plus -1 + 0j.
    return [((a == -1) & (b == 0), -_INF, b)] + _log_cases(a, b)


log1p = _with_special_cases(jnp.log1p, _log1p_cases)


def _via_hyperbolic(circular, hyperbolic, rotate_back):
    """cos/sin/tan of complex z: the standard defines their special cases through cosh, sinh,
    tanh of z*1j; finite operands keep jax.numpy's kernel."""
    def kernel(z):
        out = circular(z)
        if np.dtype(out.dtype).kind != "c" or np.dtype(z.dtype).kind != "c":
            return out
        finite = jnp.isfinite(jnp.real(z)) & jnp.isfinite(jnp.imag(z))
        return jnp.where(finite, out, rotate_back(hyperbolic(_times_i(z))))
    kernel.__name__ = circular.__name__
    return kernel


cos = _via_hyperbolic(jnp.cos, cosh, lambda w: w)
sin = _via_hyperbolic(jnp.sin, sinh, _over_i)
tan = _via_hyperbolic(jnp.tan, tanh, _over_i)
sign_complex = _sign
