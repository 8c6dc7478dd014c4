"""``x.at[idx]``: JAX's functional updates on DistArrays.

`x.at[idx].set/add/multiply/divide/power/min/max/get` follows JAX's functional semantics: the
result is a new DistArray in x's layout; `x` is unchanged. `darray._src.methods.table` attaches
`AtIndexer` to DistArray as the ``at`` property.
"""
from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING

import jax.numpy as jnp
import numpy as np

from darray._src.api import elementwise, indexing
from darray._src.api.data_type_functions import astype
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import apply_logical, apply_physical
from darray._src.engine.operands import placed

_COMBINE = {"add": "add", "multiply": "multiply", "divide": "divide", "power": "pow",
            "min": "minimum", "max": "maximum"}


class AtIndexer:
    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, key) -> _AtRef:
        return _AtRef(self._x, key)


class _AtRef:
    """``x.at[key]``: each method returns a new DistArray in x's layout; x is unchanged.

    Layout: x's layout (halo dropped). Keys without arrays (ints, slices, ..., None) with a
    scalar value (Python, numpy or 0-d DistArray): one elementwise select on the blocks, no
    communication, compiled once per layout. With an array value: the indexed cells are
    read, combined and written back through `x[key]` and `setitem` (their communication).
    Keys with integer or boolean arrays scatter with JAX's rule that repeated indices
    accumulate: one integer array along a split axis (x of 96 Ki cells or more) by a ring of
    ppermutes that brings the (index, update) blocks to their owners (engine/exchange_gather.py,
    x never gathered); other keys on the logical path, as ``x[key] = v`` does.
    """
    __slots__ = ("_x", "_key")

    def __init__(self, x, key):
        self._x, self._key = x, key

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None) -> DistArray:
        _check_mode(mode, fill_value)
        return self._x[self._key]

    def set(self, values, *, indices_are_sorted=False, unique_indices=False,
            mode=None) -> DistArray:
        return self._update("set", values, mode)

    if TYPE_CHECKING:  # attached below from _COMBINE, one per combining function
        def add(self, values, *, indices_are_sorted=False, unique_indices=False,
                mode=None) -> DistArray: ...
        multiply = divide = power = min = max = add

    def _update(self, how, values, mode):
        _check_mode(mode, None)
        x, key = self._x, self._key
        keys = key if isinstance(key, tuple) else (key,)
        selection = _basic_selection(x, keys)
        if selection is not None and _is_scalar_value(values):
            return _masked_update(x, selection, values, how)
        if how == "set":
            return indexing.setitem(x, key, values)
        if not any(indexing.is_array_like(k) or isinstance(k, (bool, np.bool_)) for k in keys):
            # basic keys select each cell once: read, combine, write back
            combined = getattr(elementwise, _COMBINE[how])(x[key], values)
            return indexing.setitem(x, key, astype(combined, x.dtype)
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
    if isinstance(values, DistArray):
        return values.ndim == 0
    return isinstance(values, (bool, int, float, complex, np.generic)) or (
        isinstance(values, np.ndarray) and values.ndim == 0)


def _basic_selection(x, keys):
    """For a key of ints, slices, ... and None on a plain layout: one boolean vector per axis
    over the *physical* length, True at the selected logical cells (padding never selected);
    else None. Host work only, sized by the axes, never by the array."""
    if x.layout.has_halo or any(
            indexing.is_array_like(k) or isinstance(k, (bool, np.bool_)) for k in keys):
        return None
    for pos, k in enumerate(keys):
        indexing.check_item(k, pos)
    keys = indexing.expand_ellipsis(tuple(keys), x.ndim)
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
    if not isinstance(value, DistArray):
        value = np.asarray(value)
    return apply_physical(_select_fn(how), [x, value, *vectors], x.layout)


_JNP_COMBINE = {"set": None, "add": "add", "multiply": "multiply", "divide": "divide",
                "power": "power", "min": "minimum", "max": "maximum"}


@functools.cache
def _select_fn(how):
    def select(data, value, *vectors):
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
    for pos, k in enumerate(keys):
        indexing.check_item(k, pos)
    indexing.check_advanced_bounds(x, keys)
    val = placed(indexing.value_operand(values, x.dtype), x.mesh)
    ring = indexing.ring_update(x, tuple(keys), val, how)
    if ring is not None:
        return ring
    template, operands = indexing.advanced_parts(x, keys)
    return apply_logical(_scatter_kernel, [x, val, *operands], x.layout.without_halo(),
                                static=(tuple(template), how))


def _scatter_kernel(a, value, *rest):
    *operands, template, how = rest
    ref = a.at[indexing.build_key(template, operands)]
    return getattr(ref, how)(jnp.asarray(value).astype(a.dtype))  # same names as jax's .at
