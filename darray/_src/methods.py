"""DistArray methods: the `jax.Array` / numpy method set, each one a namespace function.

`METHODS` maps a method name to the namespace function that does the work and an adapter that
turns numpy's method signature (``axis=``, ``keepdims=``, ``dtype=``, ``ddof=``, ``*shape``) into
the Array API call. There is no second implementation: `x.sum(axis=0)` *is*
``darray.sum(x, axis=0)``, so results keep the layouts the namespace documents. `install` puts
every entry on DistArray in one loop, the way array.py installs the operators.

`x.at[idx].set/add/multiply/divide/power/min/max/get` follows JAX's functional semantics: the
result is a new DistArray in x's layout; `x` is unchanged.
"""
from __future__ import annotations

import functools
import operator

import numpy as np


def _ns(name: str):
    """The public namespace function `name` (``"linalg.trace"`` for an extension), looked up
    late because the namespace imports DistArray."""
    import darray
    obj = darray
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _no_out(out, method):
    if out is not None:
        raise TypeError(f"x.{method}(out=...) is not supported: DistArrays are immutable "
                        f"(got out={out!r}); use the returned array")


def _cast(x, dtype):
    return x if dtype is None else _ns("astype")(x, dtype)


# -- adapters: (namespace function, self, *numpy-style args) -> result -----------------------
def _reduction(fn, x, axis=None, dtype=None, out=None, keepdims=False, *, method):
    _no_out(out, method)
    return fn(x, axis=_axis(axis), dtype=dtype, keepdims=keepdims)


def _reduction_nodtype(fn, x, axis=None, out=None, keepdims=False, *, method):
    _no_out(out, method)
    return fn(x, axis=_axis(axis), keepdims=keepdims)


def _mean(fn, x, axis=None, dtype=None, out=None, keepdims=False, *, method):
    _no_out(out, method)
    return fn(_cast(x, dtype), axis=_axis(axis), keepdims=keepdims)


def _moment(fn, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None,
            method):
    _no_out(out, method)
    if correction is not None and ddof != 0:
        raise ValueError(f"x.{method}: give ddof= or correction=, not both (got ddof={ddof!r}, "
                         f"correction={correction!r})")
    return fn(_cast(x, dtype), axis=_axis(axis), keepdims=keepdims,
              correction=ddof if correction is None else correction)


def _cumulative(fn, x, axis=None, dtype=None, out=None, *, method):
    _no_out(out, method)
    if axis is None and x.ndim != 1:  # numpy: over the flattened array
        x = _ns("reshape")(x, (-1,))
    return fn(x, axis=axis, dtype=dtype)


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _shape_args(args, method):
    """numpy accepts ``x.reshape(2, 3)`` and ``x.reshape((2, 3))``."""
    if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
        args = args[0]
    try:
        return tuple(operator.index(n) for n in args)
    except TypeError:
        raise TypeError(f"x.{method}: shape must be ints or one tuple of ints, got "
                        f"{args!r}") from None


def _reshape(fn, x, *shape, order="C", copy=None, method):
    shape = _shape_args(shape, method)
    if order == "C":
        return fn(x, shape, copy=copy)
    if order == "F":  # column-major: reverse the axes, reshape in C order, reverse back
        permute = _ns("permute_dims")
        flipped = permute(x, tuple(reversed(range(x.ndim))))
        out = fn(flipped, tuple(reversed(shape)), copy=copy)
        return permute(out, tuple(reversed(range(out.ndim))))
    raise ValueError(f"x.{method}: order={order!r} is not accepted; use 'C' or 'F'")


def _ravel(fn, x, order="C", *, method):
    return _reshape(fn, x, (-1,), order=order, method=method)


def _transpose(fn, x, *axes, method):
    if not axes or axes == (None,):
        axes = tuple(reversed(range(x.ndim)))
    return fn(x, _shape_args(axes, method))


def _swapaxes(fn, x, axis1, axis2, *, method):
    from darray._src.axes import normalize_axis
    order = list(range(x.ndim))
    a, b = normalize_axis(axis1, x.ndim, "axis1"), normalize_axis(axis2, x.ndim, "axis2")
    order[a], order[b] = order[b], order[a]
    return fn(x, tuple(order))


def _squeeze(fn, x, axis=None, *, method):
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return fn(x, axis=_axis(axis))


def _astype(fn, x, dtype, order=None, casting=None, subok=None, copy=True, device=None, *,
            method):
    if order not in (None, "K", "C", "A") or casting not in (None, "unsafe"):
        raise ValueError(f"x.{method}: order={order!r}, casting={casting!r} are not accepted; "
                         "DistArrays cast like jax.Array.astype (unsafe casting, C order)")
    return fn(x, dtype, copy=copy, device=device)


def _copy(fn, x, order="C", *, method):
    return fn(x, copy=True)


def _clip(fn, x, min=None, max=None, out=None, *, method):  # noqa: A002
    _no_out(out, method)
    return fn(x, min=min, max=max)


def _round(fn, x, decimals=0, out=None, *, method):
    _no_out(out, method)
    decimals = operator.index(decimals)
    if decimals == 0:
        return fn(x)
    scale = 10.0 ** decimals  # numpy's definition: round(x * 10**d) / 10**d
    return fn(x * scale) / scale


def _plain(fn, x, *args, method, **kwargs):
    return fn(x, *args, **kwargs)


def _dot(fn, x, other, *, method):
    """numpy.dot: products for 0-d, matmul for 1-D/2-D, else contract x's last axis with
    other's second-to-last (or only) axis."""
    other = _like(other, x)
    if x.ndim == 0 or other.ndim == 0:
        return x * other
    if x.ndim <= 2 and other.ndim <= 2:
        return _ns("matmul")(x, other)
    return fn(x, other, axes=([x.ndim - 1], [0 if other.ndim == 1 else other.ndim - 2]))


def _sorting(fn, x, axis=-1, kind=None, order=None, *, stable=True, descending=False, method):
    if order is not None:
        raise ValueError(f"x.{method}: order={order!r} (structured dtypes) is not accepted")
    if axis is None:
        x, axis = _ns("reshape")(x, (-1,)), 0
    return fn(x, axis=axis, stable=bool(stable) or kind == "stable", descending=descending)


def _take(fn, x, indices, axis=None, out=None, mode=None, *, method):
    _no_out(out, method)
    if mode not in (None, "raise"):
        raise ValueError(f"x.{method}: mode={mode!r} is not accepted; indices must be in range")
    if axis is None:
        x, axis = _ns("reshape")(x, (-1,)), 0
    if np.ndim(indices) == 0 and not hasattr(indices, "layout"):
        # a single index drops the axis, as in numpy
        taken = fn(x, _like(np.asarray([indices]), x), axis=axis)
        return _ns("squeeze")(taken, axis=axis)
    return fn(x, _like(indices, x), axis=axis)


def _repeat(fn, x, repeats, axis=None, *, method):
    return fn(x, repeats, axis=axis)


def _last_two(x, axis1, axis2):
    from darray._src.axes import normalize_axis
    a = normalize_axis(axis1, x.ndim, "axis1")
    b = normalize_axis(axis2, x.ndim, "axis2")
    if a == b:
        raise ValueError(f"axis1 and axis2 must differ, got {axis1} and {axis2}")
    rest = tuple(i for i in range(x.ndim) if i not in (a, b))
    return _ns("permute_dims")(x, rest + (a, b))


def _diagonal(fn, x, offset=0, axis1=0, axis2=1, *, method):
    return fn(_last_two(x, axis1, axis2), offset=offset)


def _trace(fn, x, offset=0, axis1=0, axis2=1, dtype=None, out=None, *, method):
    _no_out(out, method)
    return fn(_last_two(x, axis1, axis2), offset=offset, dtype=dtype)


def _searchsorted(fn, x, v, side="left", sorter=None, *, method):
    return fn(x, _like(v, x), side=side, sorter=sorter)


def _item(fn, x, *args, method):
    if not args:
        return x._scalar("biufc", "item")
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]
    if len(args) == 1:  # a flat index, as numpy.ndarray.item(i)
        args = np.unravel_index(operator.index(args[0]), x.shape)
    return x[tuple(int(i) for i in args)]._scalar("biufc", "item")


def _tolist(fn, x, *, method):
    return np.asarray(x).tolist()


def _like(value, x):
    """`value` as a DistArray on x's mesh (Python/numpy values are placed there, unsplit)."""
    from darray._src.array import DistArray
    if isinstance(value, DistArray):
        return value
    return _ns("asarray")(value, device=x.mesh)


# name: (namespace function or None, adapter). The adapter receives the namespace function.
METHODS = {
    "sum": ("sum", _reduction), "prod": ("prod", _reduction),
    "mean": ("mean", _mean), "std": ("std", _moment), "var": ("var", _moment),
    "min": ("min", _reduction_nodtype), "max": ("max", _reduction_nodtype),
    "argmin": ("argmin", _reduction_nodtype), "argmax": ("argmax", _reduction_nodtype),
    "any": ("any", _reduction_nodtype), "all": ("all", _reduction_nodtype),
    "cumsum": ("cumulative_sum", _cumulative), "cumprod": ("cumulative_prod", _cumulative),
    "reshape": ("reshape", _reshape), "ravel": ("reshape", _ravel), "flatten": ("reshape", _ravel),
    "transpose": ("permute_dims", _transpose), "swapaxes": ("permute_dims", _swapaxes),
    "squeeze": ("squeeze", _squeeze), "astype": ("astype", _astype), "copy": ("asarray", _copy),
    "clip": ("clip", _clip), "round": ("round", _round), "conj": ("conj", _plain),
    "conjugate": ("conj", _plain), "dot": ("tensordot", _dot), "argsort": ("argsort", _sorting),
    "sort": ("sort", _sorting), "nonzero": ("nonzero", _plain), "take": ("take", _take),
    "repeat": ("repeat", _repeat), "diagonal": ("linalg.diagonal", _diagonal),
    "trace": ("linalg.trace", _trace), "searchsorted": ("searchsorted", _searchsorted),
    "item": (None, _item), "tolist": (None, _tolist),
}


def _method(name, fname, adapter):
    def method(self, *args, **kwargs):
        fn = _ns(fname) if fname is not None else None
        return adapter(fn, self, *args, method=name, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"numpy-style ``x.{name}(...)``: calls ``darray.{fname}`` (same result "
                      "and layout)." if fname else f"numpy-style ``x.{name}(...)``.")
    return method


def install(cls) -> None:
    """Put every METHODS entry on `cls` (DistArray)."""
    for name, (fname, adapter) in METHODS.items():
        setattr(cls, name, _method(name, fname, adapter))
    cls.at = property(_AtIndexer, doc="Functional updates: ``x.at[idx].set(v)`` etc.")


# -- x.at[idx] --------------------------------------------------------------------------------
_COMBINE = {"add": "add", "multiply": "multiply", "divide": "divide", "power": "pow",
            "min": "minimum", "max": "maximum"}


class _AtIndexer:
    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, key):
        return _AtRef(self._x, key)


class _AtRef:
    """``x.at[key]``: each method returns a new DistArray in x's layout; x is unchanged.

    Layout: x's layout (halo dropped). Keys without arrays (ints, slices, ..., None) with a
    scalar value (Python, numpy or 0-d DistArray): one elementwise select on the blocks, no
    communication, compiled once per layout. With an array value: the indexed cells are
    read, combined and written back through `x[key]` and `setitem` (their communication).
    Keys with integer or boolean arrays scatter on the logical path, as ``x[key] = v`` does,
    with JAX's rule that repeated indices accumulate.
    """
    __slots__ = ("_x", "_key")

    def __init__(self, x, key):
        self._x, self._key = x, key

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None):
        _check_mode(mode, fill_value)
        return self._x[self._key]

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._update("set", values, mode)

    def _update(self, how, values, mode):
        _check_mode(mode, None)
        from darray._src.api import indexing
        x, key = self._x, self._key
        keys = key if isinstance(key, tuple) else (key,)
        selection = _basic_selection(x, keys)
        if selection is not None and _is_scalar_value(values):
            return _masked_update(x, selection, values, how)
        if how == "set":
            return indexing.setitem(x, key, values)
        if not any(indexing._is_array_like(k) or isinstance(k, (bool, np.bool_)) for k in keys):
            # basic keys select each cell once: read, combine, write back
            combined = _ns(_COMBINE[how])(x[key], values)
            return indexing.setitem(x, key, _ns("astype")(combined, x.dtype)
                                    if hasattr(combined, "layout") else combined)
        return _scatter(x, keys, values, how)


def _update_method(how):
    def update(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._update(how, values, mode)
    update.__name__ = how
    update.__doc__ = f"x with x[key] combined by {_COMBINE[how]} with `values` (functional)."
    return update


for _how in _COMBINE:
    setattr(_AtRef, _how, _update_method(_how))


def _is_scalar_value(values) -> bool:
    from darray._src.array import DistArray
    if isinstance(values, DistArray):
        return values.ndim == 0
    return isinstance(values, (bool, int, float, complex, np.generic)) or (
        isinstance(values, np.ndarray) and values.ndim == 0)


def _basic_selection(x, keys):
    """For a key of ints, slices, ... and None on a plain layout: one boolean vector per axis
    over the *physical* length, True at the selected logical cells (padding never selected);
    else None. Host work only, sized by the axes, never by the array."""
    from darray._src.api import indexing
    from darray._src.api._helpers import is_plain
    if not is_plain(x.layout) or any(
            indexing._is_array_like(k) or isinstance(k, (bool, np.bool_)) for k in keys):
        return None
    for pos, k in enumerate(keys):
        indexing._check_item(k, pos)
    keys = indexing._expand_ellipsis(tuple(keys), x.ndim)
    keys = tuple(k for k in keys if k is not None)  # new axes only shape the value
    keys = keys + (slice(None),) * (x.ndim - len(keys))
    vectors = []
    for axis, (k, n, physical_n) in enumerate(zip(keys, x.shape, x.layout.physical_shape)):
        chosen = np.zeros(physical_n, bool)
        if isinstance(k, slice):
            chosen[np.arange(n)[k]] = True
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            chosen[i % n] = True
        shape = [1] * x.ndim
        shape[axis] = physical_n
        vectors.append(chosen.reshape(shape))
    return vectors


def _masked_update(x, vectors, value, how):
    """x with the selected cells combined with a scalar value: one elementwise select on the
    physical blocks (the selection vectors are runtime arguments, so new indices reuse the
    compiled program). No communication."""
    from darray._src.api import common
    from darray._src.array import DistArray
    if not isinstance(value, DistArray):
        value = np.asarray(value)
    return common.apply_physical(_select_fn(how), [x, value, *vectors], x.layout)


_JNP_COMBINE = {"set": None, "add": "add", "multiply": "multiply", "divide": "divide",
                "power": "power", "min": "minimum", "max": "maximum"}


@functools.lru_cache(maxsize=None)
def _select_fn(how):
    def select(data, value, *vectors):
        import jax.numpy as jnp
        chosen = functools.reduce(jnp.logical_and, vectors, np.bool_(True))  # 0-d x: no axes
        name = _JNP_COMBINE[how]
        value = jnp.asarray(value).astype(data.dtype)  # as JAX's .at: updates take x's dtype
        new = value if name is None else getattr(jnp, name)(data, value)
        return jnp.where(chosen, new.astype(data.dtype), data)
    return select


def _check_mode(mode, fill_value):
    if mode not in (None, "promise_in_bounds") or fill_value is not None:
        raise NotImplementedError(f"x.at[...]: mode={mode!r}, fill_value={fill_value!r} are "
                                  "not supported; out-of-range indices raise IndexError")


def _scatter(x, keys, values, how):
    """Integer/boolean array keys: one scatter on the logical path (repeats accumulate)."""
    from darray._src.api import common, indexing
    for pos, k in enumerate(keys):
        indexing._check_item(k, pos)
    indexing._check_advanced_bounds(x, keys)
    template, operands = indexing._advanced_parts(x, keys)
    val = indexing._value_operand(values, x.dtype)
    return common.apply_logical(_scatter_kernel, [x, val, *operands], x.layout.without_halo(),
                                static=(tuple(template), how))


def _scatter_kernel(a, value, *rest):
    import jax.numpy as jnp
    from darray._src.api.indexing import _build_key
    *operands, template, how = rest
    ref = a.at[_build_key(template, operands)]
    return getattr(ref, how)(jnp.asarray(value).astype(a.dtype))  # same names as jax's .at
