"""The Array API dtypes and their categories.

The dtype objects are numpy dtypes (what `jax.Array.dtype` returns), so ``x.dtype ==
darray.float32`` holds and dtypes hash and compare as users expect. Categories are keyed by
the standard's own words, as `isdtype` receives them.
"""
from __future__ import annotations

import builtins

import jax
import numpy as np

bool = np.dtype("bool")  # noqa: A001 - the standard's name
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
float16 = np.dtype("float16")  # beyond the standard, as in jax.numpy (a real floating dtype)
float32 = np.dtype("float32")
float64 = np.dtype("float64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

SIGNED = (int8, int16, int32, int64)
UNSIGNED = (uint8, uint16, uint32, uint64)
REAL_FLOATING = (float16, float32, float64)
COMPLEX_FLOATING = (complex64, complex128)
ALL = (bool,) + SIGNED + UNSIGNED + REAL_FLOATING + COMPLEX_FLOATING

# The spec's kind names (used by isdtype, and in error messages of the namespace functions).
CATEGORIES: dict[str, tuple[np.dtype, ...]] = {
    "bool": (bool,),
    "signed integer": SIGNED,
    "unsigned integer": UNSIGNED,
    "integral": SIGNED + UNSIGNED,
    "real floating": REAL_FLOATING,
    "complex floating": COMPLEX_FLOATING,
    "numeric": SIGNED + UNSIGNED + REAL_FLOATING + COMPLEX_FLOATING,
}
# Categories the spec uses for function inputs that isdtype has no single word for.
CATEGORIES["real numeric"] = SIGNED + UNSIGNED + REAL_FLOATING
CATEGORIES["floating-point"] = REAL_FLOATING + COMPLEX_FLOATING
CATEGORIES["integer or boolean"] = (bool,) + SIGNED + UNSIGNED
CATEGORIES["any"] = ALL
# add and multiply of booleans are logical or / and, as in numpy and jax.numpy
CATEGORIES["numeric or boolean"] = (bool,) + CATEGORIES["numeric"]


STANDARD = tuple(d for d in ALL if d != float16)  # what __array_namespace_info__ lists


def available() -> tuple[np.dtype, ...]:
    """Dtypes JAX can hold right now (64-bit ones only with jax_enable_x64)."""
    if jax.config.read("jax_enable_x64"):
        return ALL
    return tuple(d for d in ALL if d.itemsize < 8 or d == complex64)


def default_float() -> np.dtype:
    return float64 if jax.config.read("jax_enable_x64") else float32


def default_int() -> np.dtype:
    return int64 if jax.config.read("jax_enable_x64") else int32


# The largest count, size or index the default integer holds with x64 off (int32). A module
# constant, read at each call, so that a test can lower it (to 1000, say) and reach the check
# with small arrays instead of 2^31 elements.
INT32_LIMIT = 2**31 - 1


def check_fits_default_int(fname: str, largest: int, what: str) -> None:
    """OverflowError when `largest`, a count or index decided from shapes alone, may not fit
    the default integer: with x64 off that is int32, which would wrap it silently (a 1291^3
    bool array of True counted -2143282125). With x64 on (int64) every count fits; small
    arrays pay a comparison of Python ints, nothing on the device."""
    if largest <= INT32_LIMIT or jax.config.read("jax_enable_x64"):
        return
    raise OverflowError(
        f"{fname}: {what} can reach {largest}, past {INT32_LIMIT}, the largest int32 (the "
        f"default integer while jax_enable_x64 is off); int32 would wrap it. Turn on 64-bit "
        f"integers with jax.config.update('jax_enable_x64', True) (or JAX_ENABLE_X64=1)")


def default_complex() -> np.dtype:
    return complex128 if jax.config.read("jax_enable_x64") else complex64


def default_uint() -> np.dtype:
    return uint64 if jax.config.read("jax_enable_x64") else uint32


def is_weak_scalar(value) -> builtins.bool:
    """A Python bool/int/float/complex, which adopts the dtype of the arrays it meets. numpy
    scalars are strongly typed although np.float64 and np.complex128 subclass Python's float
    and complex (numpy's and jax.numpy's rule)."""
    return isinstance(value, (builtins.bool, int, float, complex)) and not isinstance(
        value, np.generic)


def as_dtype(dtype, argname: str = "dtype") -> np.dtype:
    """Check that `dtype` is one of darray's dtypes (TypeError naming `argname` otherwise)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in ALL:
        names = ", ".join(str(d) for d in ALL)
        raise TypeError(f"{argname}={dtype!r} is not a darray dtype; use one of darray.{{{names}}}")
    return dt
