"""DistArray: a physical `jax.Array` plus the `Layout` that says what it means.

A DistArray is a JAX pytree whose only leaf is the physical array and whose static metadata is
the Layout, so it passes through `jax.jit`, `grad` and `vmap` like any array. JAX rebuilds
DistArrays from odd leaves during transformations (None, PartitionSpec, ShapedArray, tracers of
another rank), so the pytree path never validates; `DistArray._new` is the checked path.
"""
from __future__ import annotations

import numpy as np
import jax

from darray._src import physical
from darray._src.layout import Layout


def settle(data):
    """See compat.bound_in_flight: keeps eager dispatch from outrunning jax 0.10's CPU
    collectives."""
    from darray._src import compat
    return compat.bound_in_flight(data)


def reconcile_rank(layout: Layout, data) -> Layout:
    """The layout matching `data`'s rank.

    JAX transformations rebuild DistArrays around leaves of another rank: under `jax.vmap` the
    traced data lacks the mapped axis; Jacobians add axes. The pytree path must not validate, so
    ops reconcile here: drop the layout axes whose removal leaves exactly the data's physical
    shape (leading axes preferred), or prepend unsplit axes for extra leading data axes.
    """
    shape = getattr(data, "shape", None)
    if shape is None or len(shape) == layout.ndim:
        return layout
    shape = tuple(shape)
    physical_shape = layout.physical_shape
    if len(shape) > layout.ndim:
        extra = shape[: len(shape) - layout.ndim]
        if shape[len(extra):] == physical_shape and not layout.has_halo:
            return Layout(extra + layout.shape, layout.mesh,
                          _leading_split(data, layout, len(extra)) + layout.split,
                          ((0, 0),) * len(shape), tuple(range(len(shape))))
        raise ValueError(f"data of shape {shape} does not extend {layout!r}")
    import itertools
    for dropped in itertools.combinations(range(layout.ndim), layout.ndim - len(shape)):
        keep = [a for a in range(layout.ndim) if a not in dropped]
        if tuple(physical_shape[a] for a in keep) == shape:
            return Layout(tuple(layout.shape[a] for a in keep), layout.mesh,
                          tuple(layout.split[a] for a in keep), tuple(layout.halo[a] for a in keep),
                          tuple(range(len(keep))))
    raise ValueError(f"data of shape {shape} is not {layout!r} with axes removed")


def _leading_split(data, layout: Layout, count: int):
    """Split of `count` leading axes JAX added (vmap outputs): read from the data's concrete
    sharding when it is on the layout's mesh (e.g. vmap with spmd_axis_name), else unsplit."""
    from darray._src import compat
    sharding = getattr(data, "sharding", None) if not compat.is_tracer(data) else None
    unsplit = ((),) * count
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or compat.auto_twin(mesh) != layout.mesh:
        return unsplit
    spec = tuple(sharding.spec) + (None,) * count
    used = set(layout.used_mesh_axes)
    out = []
    for entry, n in zip(spec[:count], tuple(data.shape)[:count]):
        names = () if entry is None else ((entry,) if isinstance(entry, str) else tuple(entry))
        parts = 1
        for name in names:
            parts *= layout.mesh_shape[name]
        if used.intersection(names) or (names and n % parts):
            return unsplit
        out.append(names)
    return tuple(out)


@jax.tree_util.register_pytree_node_class
class DistArray:
    """A distributed n-d array: logical global shape, physical sharded storage.

    Users see the logical shape and natural axis order; padding for uneven splits and ghost
    cells are physical facts recorded in ``layout``.
    """

    __slots__ = ("_data", "_layout")
    __array_priority__ = 100  # numpy defers binary operators to DistArray

    def __init__(self, data, layout: Layout):
        self._data = data
        self._layout = layout

    @classmethod
    def _new(cls, data, layout: Layout) -> "DistArray":
        """Checked construction: the physical array must have the layout's physical shape.

        A 0-d result is a 0-d DistArray too (not a bare jax scalar), so array-API code can mix
        reduction results with arrays (`array_namespace(x, darray.sum(x))` is darray). `jax.grad`
        accepts only jax scalars as a loss: use `darray.grad` / `darray.value_and_grad`, or
        `loss.to_jax()`.
        """
        if tuple(data.shape) != layout.physical_shape:
            raise ValueError(f"physical data of shape {tuple(data.shape)} does not match "
                             f"{layout!r}, whose physical shape is {layout.physical_shape}")
        return cls(settle(data), layout)

    @classmethod
    def _wrap_scalar(cls, value, mesh=None) -> "DistArray":
        """A 0-d DistArray (internal: lets functions treat a jax scalar like any operand)."""
        import jax.numpy as jnp
        from darray._src.placement import default_mesh
        data = value if isinstance(value, jax.Array) else jnp.asarray(value)
        if mesh is None and not isinstance(data, jax.core.Tracer) and isinstance(
                getattr(data, "sharding", None), jax.sharding.NamedSharding):
            # keep the scalar on its own mesh (e.g. a sum over a (2, 4) mesh), not the default
            from darray._src import compat
            mesh = compat.auto_twin(data.sharding.mesh)
        return cls(data, Layout.create((), mesh if mesh is not None else default_mesh(), ()))

    def _rebind(self, result) -> None:
        """Become `result` (in-place operators and setitem; jax arrays are immutable). A bare
        jax array result keeps this array's layout."""
        if isinstance(result, DistArray):
            self._data, self._layout = result._data, result._layout
        else:
            self._data = result

    # -- pytree ------------------------------------------------------------------------------
    def tree_flatten(self):
        return (self._data,), self._layout

    @classmethod
    def tree_unflatten(cls, layout, children):
        return cls(children[0], layout)

    # -- properties --------------------------------------------------------------------------
    @property
    def data(self) -> jax.Array:
        """The physical array (padding and ghosts included). Prefer `to_jax()` for values."""
        return self._data

    @property
    def layout(self) -> Layout:
        """The Layout of the data as seen here; under `jax.vmap` the traced data has lost the
        batch axis, and the layout is reconciled to the data's rank (see `reconcile_rank`)."""
        return reconcile_rank(self._layout, self._data)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def mesh(self):
        return self._layout.mesh

    @property
    def sharding(self):
        """NamedSharding of the physical array."""
        return physical.sharding_of(self.layout)

    @property
    def device(self):
        """The Array API device of a DistArray is its mesh: pass it as `device=` to co-locate.
        It is the mesh the user gave (``x.device == mesh``), also where darray stores the Auto
        twin of an Explicit mesh (see api/operands.py)."""
        from darray._src.api.operands import user_mesh
        return user_mesh(self._layout.mesh)

    def to_device(self, device, /, *, stream=None) -> "DistArray":
        """This array on `device`: a Mesh (what ``x.device`` returns), a single jax Device, or a
        NamedSharding (its mesh and spec). A Mesh keeps the split where the target has the
        mesh axes it uses (same sizes); otherwise the default split for the target is used.

        Layout: as requested. On the same devices, one compiled resharding; onto other devices,
        the blocks are padded for the target layout and moved by `jax.device_put` (each target
        device receives its block only).
        """
        if stream is not None:
            raise ValueError(f"to_device(stream={stream!r}): darray has no streams; pass None")
        from darray._src.api.creation import asarray
        import jax.numpy  # noqa: F401 (jax.numpy.pad below)
        from darray._src.placement import make_layout, resolve_mesh
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
        layout = make_layout(self.shape, mesh, spec)
        # padding sits at the end of each split axis: pad here, then every block moves as is
        logical = self.to_jax()
        padded = jax.numpy.pad(logical, [(0, p - n) for p, n in
                                         zip(layout.physical_shape, self.shape)])
        return DistArray._new(jax.device_put(padded, physical.sharding_of(layout)), layout)

    def to_jax(self) -> jax.Array:
        """The logical global array as a plain jax.Array (padding and ghosts removed)."""
        return physical.to_logical(self._data, self.layout)

    # -- host conversion ---------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        host = physical.physical_to_host(self._data, self.layout)
        return host if dtype is None else host.astype(dtype, copy=False)

    def __repr__(self) -> str:
        """The layout, not the values: a repr must be cheap and safe for any size (print(x)
        or str(x) shows the values, numpy-style)."""
        lay = self.layout
        dims = ",".join(str(n) for n in lay.shape)
        mesh = ", ".join(f"{n}:{s}" for n, s in lay.mesh.shape.items())
        extra = f", halo={lay.halo}" if lay.has_halo else ""
        dtype = getattr(self._data, "dtype", "?")
        if lay.ndim == 0 and self._has_values():
            return f"DistArray({self._scalar('biufc', 'repr')!r}, dtype={dtype}, mesh=({mesh}))"
        return f"DistArray({dtype}[{dims}], mesh=({mesh}), split={lay.describe_split()}{extra})"

    def __str__(self) -> str:
        """numpy's text for the values (summarised like numpy's for large arrays, reading only
        the printed cells); the repr when there are no concrete values (under tracing)."""
        if not self._has_values():
            return repr(self)
        from darray._src.printing import values_text
        return values_text(self)

    def _has_values(self) -> bool:
        return isinstance(self._data, jax.Array) and not isinstance(self._data, jax.core.Tracer)

    # -- numpy conveniences (not in the Array API, expected by numpy users) ---------------------
    @property
    def real(self):
        """Real part; for a non-complex array the array itself, as numpy's ``x.real`` (the
        namespace function darray.real keeps the standard's dtype rule)."""
        if self.dtype.kind != "c":
            return self
        return _lookup("real")(self)

    @property
    def imag(self):
        """Imaginary part; zeros of x's dtype for a non-complex array, as numpy's ``x.imag``
        (libraries probe ``hasattr(x, "imag")`` on bool arrays)."""
        if self.dtype.kind != "c":
            from darray._src.api.creation import zeros_like
            return zeros_like(self)
        return _lookup("imag")(self)

    # -- indexing (darray._src.api.indexing) -------------------------------------------------
    def __getitem__(self, key):
        from darray._src.api.indexing import getitem
        return getitem(self, key)

    def __setitem__(self, key, value):
        """Rebinds this DistArray to an updated copy (jax arrays are immutable)."""
        from darray._src.api.indexing import setitem
        updated = setitem(self, key, value)
        self._rebind(updated)

    # -- halo (darray._src.halo) -------------------------------------------------------------
    def halo(self, width=1, *, boundary="periodic", axes=None, fill_value=0):
        """Ghost cells filled from neighbouring blocks; see darray._src.halo.halo."""
        from darray._src.halo import halo
        return halo(self, width, boundary=boundary, axes=axes, fill_value=fill_value)

    def halo_reduce(self, *, boundary="periodic"):
        """Sum ghost cells back into their owners (the adjoint of `halo`)."""
        from darray._src.halo import halo_reduce
        return halo_reduce(self, boundary=boundary)

    def unhalo(self):
        """Drop ghost cells (keep the interior)."""
        from darray._src.halo import unhalo
        return unhalo(self)

    # -- Array API protocol (darray._src.api: elementwise, manipulation) ---------------------
    def __array_namespace__(self, /, *, api_version=None):
        """The `darray` module (Array API 2025.12, also for api_version=None or "2025.12");
        "2023.12" and "2024.12" give darray as those revisions (see api/versions.py)."""
        from darray._src.api.versions import namespace
        return namespace(api_version)

    def _scalar(self, kinds: str, what: str):
        """The single element as a Python scalar (reads one cell, no gather)."""
        if self.size != 1:
            raise ValueError(f"{what}() needs an array of size 1, got shape {self.shape}")
        if self.dtype.kind not in kinds:
            raise TypeError(f"{what}() is not defined for dtype {self.dtype}")
        first = tuple(lo for lo, _ in self._layout.halo)  # cell 0 sits after the ghosts
        from darray._src import host
        if host.spans_other_processes(self._data):  # this process's copy, or refuse at once
            return host.local_cell(self._data, self._layout, first, f"{what}(x)")
        if self._data.ndim == 0:  # a 0-d result: its data is the (replicated) scalar
            return self._data.item()
        return self._data[first].item()

    def __bool__(self):
        return bool(self._scalar("biufc", "bool"))

    def __int__(self):
        return int(self._scalar("biuf", "int"))

    def __float__(self):
        return float(self._scalar("biuf", "float"))

    def __complex__(self):
        return complex(self._scalar("biufc", "complex"))

    def __index__(self):
        return int(self._scalar("iu", "index"))

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of a 0-d DistArray")
        return self.shape[0]

    def __iter__(self):
        """Iterate over axis 0: ``x[0], x[1], ...`` (DistArrays; 0-d ones for a 1-D x). Each
        item is one compiled read (the index is a runtime argument, so it compiles once)."""
        if not self.ndim:
            raise TypeError("iteration over a 0-d DistArray")
        return (self[i] for i in range(self.shape[0]))

    def __format__(self, format_spec: str) -> str:
        """A 0-d array formats as its Python scalar (``f"{loss:.3f}"``); others as repr with
        an empty spec, as numpy does."""
        if self.ndim == 0 and (self._has_values() or format_spec):
            return format(self._scalar("biufc", "format"), format_spec)
        if format_spec:
            raise TypeError(f"unsupported format string {format_spec!r} passed to a "
                            f"{self.ndim}-d DistArray; format its elements or x.tolist()")
        return repr(self)

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of the logical array, gathered on the host (one array, one device)."""
        host = np.asarray(self)
        kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        return host.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0: __dlpack__ exports the host copy

    @property
    def mT(self) -> "DistArray":
        """Transpose of the last two axes (see darray.matrix_transpose)."""
        from darray._src.api.manipulation import matrix_transpose
        return matrix_transpose(self)

    @property
    def T(self) -> "DistArray":
        """Reversed axes; the standard defines it for 2-D arrays only."""
        if self.ndim != 2:
            raise ValueError(f"x.T needs a 2-D array, got {self.ndim}-D; use x.mT or "
                             "darray.permute_dims")
        from darray._src.api.manipulation import permute_dims
        return permute_dims(self, (1, 0))


# -- operators: one table, shared with the elementwise functions ------------------------------
# (dunder, elementwise function name, operand order). "reflected" swaps operands; "inplace"
# computes the op and rebinds self, since jax arrays are immutable.
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


def _lookup(name):
    # Late import: the elementwise module depends on this one.
    from darray._src.api import elementwise
    return getattr(elementwise, name)


_OPERAND_TYPES = (bool, int, float, complex, np.ndarray, np.generic, jax.Array)


def _binary(name, how):
    # Unknown operand types give NotImplemented, so Python asks the other operand (numpy's
    # rule; e.g. pytest.approx, or a library's own array type)
    def forward(self, other):
        if not isinstance(other, (DistArray,) + _OPERAND_TYPES):
            return NotImplemented
        return _lookup(name)(self, other)

    def reflected(self, other):
        if not isinstance(other, (DistArray,) + _OPERAND_TYPES):
            return NotImplemented
        return _lookup(name)(other, self)

    def inplace(self, other):
        result = _lookup(name)(self, other)
        _lookup("check_inplace")(self, result, name)
        self._rebind(result)
        return self
    return {"forward": forward, "reflected": reflected, "inplace": inplace}[how]


def _unary(name):
    def method(self):
        return _lookup(name)(self)
    return method


for _dunder, _name in OPERATORS:
    setattr(DistArray, _dunder, _binary(_name, "forward"))
    setattr(DistArray, "__r" + _dunder[2:], _binary(_name, "reflected"))
    setattr(DistArray, "__i" + _dunder[2:], _binary(_name, "inplace"))
for _dunder, _name in COMPARISONS:
    setattr(DistArray, _dunder, _binary(_name, "forward"))
for _dunder, _name in UNARY:
    setattr(DistArray, _dunder, _unary(_name))
DistArray.__hash__ = None  # arrays are unhashable, as in numpy (we define __eq__)

# numpy/jax.Array methods (x.sum(), x.reshape(...), x.at[...]): one table, each entry a
# namespace function (darray._src.methods.METHODS)
from darray._src import methods as _methods  # noqa: E402
_methods.install(DistArray)
