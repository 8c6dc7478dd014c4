"""Data type functions: astype, can_cast, finfo, iinfo, isdtype, result_type.

Promotion follows the Array API table, which JAX's "standard" promotion implements for the
standard dtypes (Python scalars are weak: they adopt the array's dtype).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from darray._src.base import dtypes as _dt
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import apply_physical
from darray._src.engine.arguments import ensure_array


def isdtype(dtype, kind) -> bool:
    """Whether `dtype` is of `kind`: a dtype, one of the spec's kind names, or a tuple of them.

    Raises:
      TypeError: `dtype` is not a darray dtype, or `kind` is neither a dtype nor a known name.
    """
    dtype = _dt.as_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _dt.CATEGORIES or kind in ("real numeric", "floating-point",
                                                  "integer or boolean", "any"):
            known = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
                     "complex floating", "numeric")
            raise TypeError(f"kind={kind!r} is not a dtype kind; use a dtype, one of {known} "
                            "or a tuple of those")
        return dtype in _dt.CATEGORIES[kind]
    return dtype == _dt.as_dtype(kind, "kind")


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion rules give for the arguments.

    Args:
      arrays_and_dtypes: DistArrays, dtypes, numpy/jax arrays and scalars (strongly typed:
        ``np.float64(1.0)`` is float64, as in jax.numpy), or Python scalars (bool, int, float,
        complex), which are weak and adopt the dtype of the other arguments.
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    args = []
    for i, a in enumerate(arrays_and_dtypes):
        if isinstance(a, DistArray):
            args.append(a.dtype)
        elif _dt.is_weak_scalar(a):
            args.append(a)
        elif hasattr(a, "dtype") and not isinstance(a, type):
            args.append(_dt.as_dtype(a.dtype, f"arrays_and_dtypes[{i}].dtype"))
        else:
            args.append(_dt.as_dtype(a, f"arrays_and_dtypes[{i}]"))
    if all(_dt.is_weak_scalar(a) for a in args):
        raise ValueError("result_type needs at least one array or dtype besides Python scalars")
    return np.dtype(jnp.result_type(*args))


def can_cast(from_, to, /) -> bool:
    """Whether `from_` (a dtype or DistArray) casts to `to` under the promotion rules.

    Safe casts only, as numpy's and jax.numpy's ``can_cast``: bool to anything, integers to
    wider integers and to floats that hold every value (uint64 to float32 is refused although
    JAX's promotion lattice joins them at float32), floats to wider floats and complex; never a
    downcast.
    """
    src = from_.dtype if isinstance(from_, DistArray) else _dt.as_dtype(from_, "from_")
    dst = _dt.as_dtype(to, "to")
    return bool(np.can_cast(src, dst, casting="safe"))


class finfo_object(NamedTuple):
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


class iinfo_object(NamedTuple):
    bits: int
    max: int
    min: int
    dtype: np.dtype


def _type_of(type, name):
    return type.dtype if isinstance(type, DistArray) else _dt.as_dtype(type, name)


def finfo(type, /) -> finfo_object:
    """Machine limits of a floating dtype (complex: of its real component)."""
    dt = _type_of(type, "type")
    if dt not in _dt.CATEGORIES["floating-point"]:
        raise TypeError(f"finfo needs a floating dtype, got {dt}; use iinfo for integers")
    info = np.finfo(dt)
    real = np.dtype(info.dtype)
    return finfo_object(int(info.bits), float(info.eps), float(info.max), float(info.min),
                        float(info.smallest_normal), real)


def iinfo(type, /) -> iinfo_object:
    """Machine limits of an integer dtype."""
    dt = _type_of(type, "type")
    if dt not in _dt.CATEGORIES["integral"]:
        raise TypeError(f"iinfo needs an integer dtype, got {dt}; use finfo for floats")
    info = np.iinfo(dt)
    return iinfo_object(int(info.bits), int(info.max), int(info.min), dt)


@functools.cache
def _caster(dtype):
    return lambda data: data.astype(dtype)


def astype(x, dtype, /, *, copy=True, device=None) -> DistArray:
    """`x` converted to `dtype`.

    Args:
      x: DistArray.
      dtype: target dtype. Complex to real is refused (TypeError): take `real` first.
      copy: when False and `x` already has `dtype`, `x` itself is returned.
      device: if given, the result is moved there (see `DistArray.to_device`).

    Layout:
      Same as `x`; no communication (casts the physical array in place, padding included).
    """
    x = ensure_array("astype", x)
    dt = _dt.as_dtype(dtype)
    if x.dtype in _dt.COMPLEX_FLOATING and dt not in _dt.COMPLEX_FLOATING:
        raise TypeError(f"astype from {x.dtype} to {dt} would drop the imaginary part; "
                        "use darray.real(x) first")
    if x.dtype == dt and not copy:
        out = x
    elif x.dtype == dt:
        out = DistArray._new(jnp.copy(x.data), x.layout)
    else:
        out = apply_physical(_caster(dt), (x,), x.layout)
    return out if device is None else out.to_device(device)
