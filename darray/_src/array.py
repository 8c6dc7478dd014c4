"""DistArray: a physical `jax.Array` plus the `Layout` that says what it means.

A DistArray is a JAX pytree whose only leaf is the physical array and whose static metadata is
the Layout, so it passes through `jax.jit`, `grad` and `vmap` like any array. JAX rebuilds
DistArrays from odd leaves during transformations (None, PartitionSpec, ShapedArray, tracers of
another rank), so the pytree path never validates; `DistArray._new` is the checked path.

This module is the type alone: data, Layout, pytree, constructors, properties and host
conversion. It imports nothing above `physical`/`placement`. The operators, the numpy-style
methods, indexing, ``.at``, ``halo``, ``__array_namespace__``, ``str`` and ``to_device`` come
from the namespace and are attached once, at import, by `darray._src.methods` (which stands
above the namespace), as `jax/_src/numpy/array_methods.py` does for `jax.Array`.
"""
from __future__ import annotations

import itertools
import threading

import numpy as np
import jax
import jax.numpy as jnp

from darray._src import compat, physical
from darray._src.layout import Layout
from darray._src.placement import default_mesh, user_mesh


_LOCK_GUARD = threading.Lock()


def mutation_lock(x: "DistArray") -> threading.RLock:
    """x's mutation lock, made on first use (most arrays are never mutated). Re-entrant: a
    view's write-back mutates its base while the view's own lock is held."""
    lock = x._lock
    if lock is None:
        with _LOCK_GUARD:
            if x._lock is None:
                x._lock = threading.RLock()
            lock = x._lock
    return lock


def settle(data):
    """See compat.bound_in_flight: keeps eager dispatch from outrunning jax 0.10's CPU
    collectives."""
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


_PICKLE_FORMAT = 1


def _unpickle(version, blocks, shape, split, halo, order, where) -> "DistArray":
    """Rebuild a pickled DistArray (see `DistArray.__reduce__`) on this process's devices."""
    if version != _PICKLE_FORMAT:
        raise ValueError(f"this pickle holds a DistArray of format {version}; this darray "
                         f"reads format {_PICKLE_FORMAT}")
    ids, platform, names, sizes = where
    have = {d.id: d for d in jax.devices() if d.platform == platform}
    missing = [i for i in ids if i not in have]
    if missing:
        raise ValueError(
            f"cannot unpickle a DistArray: it lived on {platform} devices {list(ids)} (mesh "
            f"{dict(zip(names, sizes))}), and this process has no {platform} device with id "
            f"{missing}; its {platform} devices are {sorted(have)}. Unpickle it where those "
            "devices exist, or pickle np.array(x) and place it with darray.asarray")
    mesh = compat.auto_twin(jax.sharding.Mesh(
        np.array([have[i] for i in ids], dtype=object).reshape(sizes), names))
    layout = Layout(tuple(shape), mesh, tuple(split), tuple(halo), tuple(order))
    data = jax.device_put(blocks, physical.sharding_of(layout))
    return DistArray._new(data, layout)


@jax.tree_util.register_pytree_node_class
class DistArray:
    """A distributed n-d array: logical global shape, physical sharded storage.

    Users see the logical shape and natural axis order; padding for uneven splits and ghost
    cells are physical facts recorded in ``layout``.
    """

    # _stored: the physical jax.Array (read it as `_data`, which brings a view up to date);
    # _version: bumped by every mutation; _view: None, or the link of a view to its base
    # (api/views.py); _lock: made on first mutation (see `_mutate`).
    __slots__ = ("_stored", "_layout", "_version", "_view", "_lock", "__weakref__")
    __array_priority__ = 100  # numpy defers binary operators to DistArray
    __hash__ = None  # arrays are unhashable, as in numpy (methods.py attaches __eq__)

    def __init__(self, data, layout: Layout):
        self._stored = data
        self._layout = layout
        self._version = 0
        self._view = None
        self._lock = None

    @property
    def _data(self):
        view = self._view
        if view is not None:
            view.refresh(self)  # a view whose base was written since reads the base again
        return self._stored

    @_data.setter
    def _data(self, data):
        self._stored = data

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
        data = value if isinstance(value, jax.Array) else jnp.asarray(value)
        if mesh is None and not isinstance(data, jax.core.Tracer) and isinstance(
                getattr(data, "sharding", None), jax.sharding.NamedSharding):
            # keep the scalar on its own mesh (e.g. a sum over a (2, 4) mesh), not the default
            mesh = compat.auto_twin(data.sharding.mesh)
        return cls(data, Layout.create((), mesh if mesh is not None else default_mesh(), ()))

    def _rebind(self, result) -> None:
        """Become `result` (jax arrays are immutable). A bare jax array result keeps this
        array's layout. Mutations go through `_mutate`."""
        if isinstance(result, DistArray):
            self._stored, self._layout = result._data, result._layout
        else:
            self._stored = result
        self._version += 1

    def _mutate(self, compute) -> None:
        """Replace this array by ``compute(self)`` (``x[k] = v``, ``x += y``), atomically with
        respect to every other mutation of it: read, compute and rebind run under this array's
        lock, so threads writing slices of one array never lose each other's writes. A view
        then writes its new value through to its base (under the base's lock)."""
        with mutation_lock(self):
            self._rebind(compute(self))
            if self._view is not None:
                self._view.write_back(self)

    def __copy__(self) -> "DistArray":
        """An independent array with the same (immutable) data: mutating either rebinds it
        alone. Not a view."""
        return DistArray(self._data, self._layout)

    def __deepcopy__(self, memo) -> "DistArray":
        return self.__copy__()

    def __reduce__(self):
        """pickle: the physical blocks as one host array (padding and ghost cells included, so
        halos survive) and the Layout with its mesh as device ids, axis names and sizes.
        Unpickling places the blocks on the devices of those ids in this process (an equal
        mesh), and raises if they are not all there. One process must hold every block (as
        for np.asarray(x))."""
        data = self._data
        if compat.is_tracer(data):
            raise TypeError("cannot pickle a DistArray while it is traced (under jit, grad or "
                            "vmap); pickle the concrete result")
        if not getattr(data, "is_fully_addressable", True) and not data.is_fully_replicated:
            from darray._src import host as host_reads
            raise host_reads.refusal(self.layout, "pickle.dumps(x)")
        lay = self.layout
        blocks = np.array(data if getattr(data, "is_fully_addressable", True)
                          else data.addressable_shards[0].data)
        mesh = lay.mesh
        where = (tuple(int(d.id) for d in mesh.devices.flat), mesh.devices.flat[0].platform,
                 tuple(mesh.axis_names), tuple(int(n) for n in mesh.devices.shape))
        return _unpickle, (_PICKLE_FORMAT, blocks, lay.shape, lay.split, lay.halo, lay.order,
                           where)

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
        return user_mesh(self._layout.mesh)

    def to_jax(self) -> jax.Array:
        """The logical global array as a plain jax.Array (padding and ghosts removed)."""
        return physical.to_logical(self._data, self.layout)

    # -- host conversion ---------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        """The logical array on the host (numpy's protocol, as `jax.Array.__array__`).

        The host array is always a snapshot, never the DistArray's storage, so a write into it
        could not reach the DistArray: unless ``copy=True`` asks for a copy of one's own (what
        ``np.array(x)`` asks), it is read-only, and code that writes into ``np.asarray(x)``
        (scipy.ndimage's ``output=``) raises instead of losing its results. ``copy=False``
        (never copy) is refused with ValueError, as numpy's protocol asks of an object that
        has no host memory to share.
        """
        if copy is False:
            raise ValueError(
                "np.asarray(x, copy=False): a DistArray lives on its devices and has no host "
                "memory to share, so a host array is always a copy; use np.asarray(x) "
                "(read-only snapshot) or np.array(x) (writeable copy)")
        host = physical.physical_to_host(self._data, self.layout)
        if dtype is not None and np.dtype(dtype) != host.dtype:
            host = host.astype(dtype)
        if copy:
            # read-only means shared with jax's buffer: copy it; else it is ours alone
            return host if host.flags.writeable else np.array(host, copy=True)
        if host.flags.writeable:
            host.flags.writeable = False
        return host

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

    def _has_values(self) -> bool:
        return isinstance(self._data, jax.Array) and not isinstance(self._data, jax.core.Tracer)

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
        """DLPack export of the logical array, gathered on the host (one array, one device).

        Like `__array__`, the export is a snapshot: read-only (DLPack >= 1.0 carries the flag),
        or writeable only when the consumer asks ``copy=True``. A consumer of DLPack 0.x cannot
        be told "read-only", so it is refused (BufferError) rather than handed memory whose
        writes would vanish: ask it for ``copy=True``, or pass ``np.array(x)``.
        """
        if copy is False:
            raise BufferError("x.__dlpack__(copy=False): a DistArray has no host memory to "
                              "share; the export is always a copy (copy=None or True)")
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        if not copy and not versioned:
            raise BufferError(
                "x.__dlpack__: this consumer speaks DLPack 0.x, which cannot mark the "
                "exported host snapshot read-only, and writes into it would never reach the "
                "DistArray; ask for copy=True (e.g. np.from_dlpack(x, copy=True)), or convert with "
                "np.array(x) (numpy) or x.to_jax() (jax)")
        host = self.__array__(copy=True) if copy else self.__array__()
        kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        return host.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0: __dlpack__ exports the host copy
