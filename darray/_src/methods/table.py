"""DistArray's operators and methods, attached once from the namespace that stands below.

`distarray/array.py` defines the type alone. This module sits above the whole namespace (as JAX's
`jax/_src/numpy/array_methods.py` sits above `jax.numpy`) and `register` puts on DistArray, at
import of `darray`:

- the operators (`OPERATORS`, `COMPARISONS`, `UNARY`): each dunder *is* the elementwise function
  of the same table the namespace exports (``x + y`` is ``darray.add(x, y)``), reflected and
  in-place variants included;
- the numpy / `jax.Array` method set (`METHODS`): a method name, the namespace function that
  does the work and an adapter that turns numpy's method signature (``axis=``, ``keepdims=``,
  ``dtype=``, ``ddof=``, ``*shape``) into the Array API call. There is no second
  implementation: `x.sum(axis=0)` *is* ``darray.sum(x, axis=0)``, so results keep the layouts
  the namespace documents;
- the protocol and the rest (`PROTOCOL`): indexing, ``.at``, ``halo``, ``__array_namespace__``,
  ``str``, ``to_device``, ``real``/``imag``, ``mT``/``T``.

Functions are looked up in the namespace once, at registration.
"""
from __future__ import annotations

import operator

import jax
import numpy as np

from darray._src.api import versions
from darray._src.api.creation import asarray, redistribute, zeros_like
from darray._src.api.elementwise import check_inplace
from darray._src.api.elementwise import inplace as elementwise_inplace
from darray._src.api.indexing import getitem, setitem
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import refuse_out
from darray._src.extras import reinterpret
from darray._src.extras.at import AtIndexer
from darray._src.extras.printing import values_text
from darray._src.halo.api import halo, halo_reduce, unhalo
from darray._src.layout.axes import normalize_axis
from darray._src.placement.placement import make_layout, resolve_mesh

_NAMESPACE = None  # the `darray` module, given to `register`


def _ns(name: str):
    """The namespace function `name` (``"linalg.trace"`` for an extension)."""
    obj = _NAMESPACE
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _cast(x, dtype):
    return x if dtype is None else _ns("astype")(x, dtype)


# -- adapters: (namespace function, self, *numpy-style args) -> result -----------------------
def _reduction(fn, x, axis=None, dtype=None, out=None, keepdims=False, *, method):
    refuse_out(out, f"x.{method}")
    return fn(x, axis=_axis(axis), dtype=dtype, keepdims=keepdims)


def _reduction_nodtype(fn, x, axis=None, out=None, keepdims=False, *, method):
    refuse_out(out, f"x.{method}")
    return fn(x, axis=_axis(axis), keepdims=keepdims)


def _mean(fn, x, axis=None, dtype=None, out=None, keepdims=False, *, method):
    refuse_out(out, f"x.{method}")
    return fn(_cast(x, dtype), axis=_axis(axis), keepdims=keepdims)


def _moment(fn, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None,
            method):
    refuse_out(out, f"x.{method}")
    if correction is not None and ddof != 0:
        raise ValueError(f"x.{method}: give ddof= or correction=, not both (got ddof={ddof!r}, "
                         f"correction={correction!r})")
    return fn(_cast(x, dtype), axis=_axis(axis), keepdims=keepdims,
              correction=ddof if correction is None else correction)


def _cumulative(fn, x, axis=None, dtype=None, out=None, *, method):
    refuse_out(out, f"x.{method}")
    return fn(x, axis=axis, dtype=dtype)  # numpy's cumsum/cumprod: flattened for axis=None


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
    refuse_out(out, f"x.{method}")
    return fn(x, min=min, max=max)


def _round(fn, x, decimals=0, out=None, *, method):
    refuse_out(out, f"x.{method}")
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
    refuse_out(out, f"x.{method}")
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
    a = normalize_axis(axis1, x.ndim, "axis1")
    b = normalize_axis(axis2, x.ndim, "axis2")
    if a == b:
        raise ValueError(f"axis1 and axis2 must differ, got {axis1} and {axis2}")
    rest = tuple(i for i in range(x.ndim) if i not in (a, b))
    return _ns("permute_dims")(x, rest + (a, b))


def _diagonal(fn, x, offset=0, axis1=0, axis2=1, *, method):
    return fn(_last_two(x, axis1, axis2), offset=offset)


def _trace(fn, x, offset=0, axis1=0, axis2=1, dtype=None, out=None, *, method):
    refuse_out(out, f"x.{method}")
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


def _view(fn, x, dtype=None, type=None, *, method):  # noqa: A002 - numpy's name
    if type is not None:
        raise TypeError(f"x.{method}(type={type!r}): DistArrays have no subclasses to view as")
    return reinterpret.view(x, dtype)


def _tolist(fn, x, *, method):
    return np.asarray(x).tolist()


def _like(value, x):
    """`value` as a DistArray on x's mesh (Python/numpy values are placed there, unsplit)."""
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
    "cumsum": ("cumsum", _cumulative), "cumprod": ("cumprod", _cumulative),
    "reshape": ("reshape", _reshape), "ravel": ("reshape", _ravel), "flatten": ("reshape", _ravel),
    "transpose": ("permute_dims", _transpose), "swapaxes": ("permute_dims", _swapaxes),
    "squeeze": ("squeeze", _squeeze), "astype": ("astype", _astype), "copy": ("asarray", _copy),
    "clip": ("clip", _clip), "round": ("round", _round), "conj": ("conj", _plain),
    "conjugate": ("conj", _plain), "dot": ("tensordot", _dot), "argsort": ("argsort", _sorting),
    "sort": ("sort", _sorting), "nonzero": ("nonzero", _plain), "take": ("take", _take),
    "repeat": ("repeat", _repeat), "diagonal": ("linalg.diagonal", _diagonal),
    "trace": ("linalg.trace", _trace), "searchsorted": ("searchsorted", _searchsorted),
    "item": (None, _item), "tolist": (None, _tolist), "view": (None, _view),
}


def _method(name, fname, adapter):
    fn = _ns(fname) if fname is not None else None

    def method(self, *args, **kwargs):
        return adapter(fn, self, *args, method=name, **kwargs)
    method.__name__ = method.__qualname__ = name
    # the code's own name too, so that tracebacks and the memory check's message
    # (base/memory_budget.py) say ``DistArray.argmax`` rather than ``method``
    method.__code__ = method.__code__.replace(co_name=name, co_qualname=f"DistArray.{name}")
    method.__doc__ = (f"numpy-style ``x.{name}(...)``: calls ``darray.{fname}`` (same result "
                      "and layout)." if fname else f"numpy-style ``x.{name}(...)``.")
    return method


# -- operators: one table, shared with the elementwise functions ------------------------------
# (dunder, namespace function). Each binary entry also gives the reflected (swapped operands)
# and in-place (computes, then rebinds self: jax arrays are immutable) dunders.
OPERATORS = (
    ("__add__", "add"), ("__sub__", "subtract"), ("__mul__", "multiply"),
    ("__truediv__", "divide"), ("__floordiv__", "floor_divide"), ("__mod__", "remainder"),
    ("__pow__", "pow"), ("__matmul__", "matmul"), ("__and__", "bitwise_and"),
    ("__or__", "bitwise_or"), ("__xor__", "bitwise_xor"), ("__lshift__", "bitwise_left_shift"),
    ("__rshift__", "bitwise_right_shift"),
)
COMPARISONS = (
    ("__eq__", "equal"), ("__ne__", "not_equal"), ("__lt__", "less"),
    ("__le__", "less_equal"), ("__gt__", "greater"), ("__ge__", "greater_equal"),
)
UNARY = (("__neg__", "negative"), ("__pos__", "positive"), ("__abs__", "abs"),
         ("__invert__", "bitwise_invert"))

_OPERAND_TYPES = (DistArray, bool, int, float, complex, np.ndarray, np.generic, jax.Array)


def _binary(name, how):
    fn = _ns(name)

    # Unknown operand types give NotImplemented, so Python asks the other operand (numpy's
    # rule; e.g. pytest.approx, or a library's own array type)
    def forward(self, other):
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented
        return fn(self, other)

    def reflected(self, other):
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented
        return fn(other, self)

    def inplace(self, other):
        def compute(current):
            # elementwise operators may write into current's buffer when nothing else reads it
            # (engine/donation.py); `_mutate` rebinds self to the result right away
            result = elementwise_inplace(name, current, other)
            if result is None:
                result = fn(current, other)
            check_inplace(current, result, name)
            return result
        self._mutate(compute)
        return self
    return {"forward": forward, "reflected": reflected, "inplace": inplace}[how]


def _unary(name):
    fn = _ns(name)

    def method(self):
        return fn(self)
    return method


# -- the protocol and the rest ----------------------------------------------------------------
def _setitem(self, key, value):
    """Rebinds this DistArray to an updated copy (jax arrays are immutable), atomically (see
    DistArray._mutate); through a view, the base is written too (engine/views.py)."""
    self._mutate(lambda current: setitem(current, key, value, donate=True))


def _halo(self, width=1, *, boundary="periodic", axes=None, fill_value=0):
    """Ghost cells filled from neighbouring blocks; see darray.halo."""
    return halo(self, width, boundary=boundary, axes=axes, fill_value=fill_value)


def _halo_reduce(self, *, boundary="periodic"):
    """Sum ghost cells back into their owners (the adjoint of `halo`)."""
    return halo_reduce(self, boundary=boundary)


def _unhalo(self):
    """Drop ghost cells (keep the interior)."""
    return unhalo(self)


def _array_namespace(self, /, *, api_version=None):
    """The `darray` module (Array API 2025.12, also for api_version=None or "2025.12");
    "2023.12" and "2024.12" give darray as those revisions (see api/versions.py)."""
    return versions.namespace(_NAMESPACE, api_version)


def _str(self) -> str:
    """numpy's text for the values (summarised like numpy's for large arrays, reading only
    the printed cells); the repr when there are no concrete values (under tracing)."""
    if not self._has_values():
        return repr(self)
    return values_text(self)


def _to_device(self, device, /, *, stream=None):
    """This array on `device`: a Mesh (what ``x.device`` returns), a single jax Device, or a
    NamedSharding (its mesh and spec). A Mesh keeps the split where the target has the
    mesh axes it uses (same sizes); otherwise the default split for the target is used.

    Layout: as requested, moved block-wise by `darray._src.engine.placing.redistribute` (the
    one way darray moves data: no device ever holds the whole array).
    """
    if stream is not None:
        raise ValueError(f"to_device(stream={stream!r}): darray has no streams; pass None")
    spec = None
    if isinstance(device, jax.sharding.NamedSharding):
        device, spec = device.mesh, tuple(device.spec)
        spec = spec + (None,) * (self.ndim - len(spec))
    mesh = resolve_mesh(device=device)
    if mesh == self.mesh and spec is None:
        return self
    if spec is None:
        keep = all(self.mesh.shape[name] == mesh.shape.get(name)
                   for name in self._layout.used_mesh_axes)
        spec = self.layout.spec if keep else None
    if set(mesh.devices.flat) == set(self.mesh.devices.flat) or isinstance(
            self._data, jax.core.Tracer):
        return asarray(self, mesh=mesh, spec=spec)
    return redistribute(self, make_layout(self.shape, mesh, spec))


def _real(self):
    """Real part; for a non-complex array the array itself, as numpy's ``x.real`` (the
    namespace function darray.real keeps the standard's dtype rule)."""
    if self.dtype.kind != "c":
        return self
    return _ns("real")(self)


def _imag(self):
    """Imaginary part; zeros of x's dtype for a non-complex array, as numpy's ``x.imag``
    (libraries probe ``hasattr(x, "imag")`` on bool arrays)."""
    if self.dtype.kind != "c":
        return zeros_like(self)
    return _ns("imag")(self)


def _matrix_transposed(self):
    """Transpose of the last two axes (see darray.matrix_transpose)."""
    return _ns("matrix_transpose")(self)


def _transposed(self):
    """Reversed axes; the standard defines it for 2-D arrays only."""
    if self.ndim != 2:
        raise ValueError(f"x.T needs a 2-D array, got {self.ndim}-D; use x.mT or "
                         "darray.permute_dims")
    return _ns("permute_dims")(self, (1, 0))


# name: what goes on DistArray (properties wrap their getter)
PROTOCOL = {
    "__getitem__": getitem, "__setitem__": _setitem, "halo": _halo,
    "halo_reduce": _halo_reduce, "unhalo": _unhalo, "__array_namespace__": _array_namespace,
    "__str__": _str, "to_device": _to_device,
    "real": property(_real), "imag": property(_imag), "mT": property(_matrix_transposed),
    "T": property(_transposed),
    "at": property(AtIndexer, doc="Functional updates: ``x.at[idx].set(v)`` etc."),
}


def register(cls, namespace) -> None:
    """Attach every table above to `cls` (DistArray), looking functions up in `namespace`
    (the `darray` module, which calls this once at the end of its import)."""
    global _NAMESPACE
    _NAMESPACE = namespace
    for dunder, name in OPERATORS:
        setattr(cls, dunder, _binary(name, "forward"))
        setattr(cls, "__r" + dunder[2:], _binary(name, "reflected"))
        setattr(cls, "__i" + dunder[2:], _binary(name, "inplace"))
    for dunder, name in COMPARISONS:
        setattr(cls, dunder, _binary(name, "forward"))
    for dunder, name in UNARY:
        setattr(cls, dunder, _unary(name))
    for name, (fname, adapter) in METHODS.items():
        setattr(cls, name, _method(name, fname, adapter))
    for name, value in PROTOCOL.items():
        setattr(cls, name, value)
