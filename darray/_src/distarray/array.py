"""DistArray: a physical `jax.Array` plus the `Layout` that says what it means.

A DistArray is a JAX pytree whose only leaf is the physical array and whose static metadata is
the Layout, so it passes through `jax.jit`, `grad` and `vmap` like any array. JAX rebuilds
DistArrays from odd leaves during transformations (None, PartitionSpec, ShapedArray, tracers of
another rank), so the pytree path never validates (`DistArray._make`); `DistArray._new` is the
checked path, and ``DistArray(...)`` itself refuses (users make arrays with `darray.asarray`).

An array is a value: reading its metadata (shape, dtype, ndim, size, layout, repr) runs nothing
on a device. What is lazy (a view's re-read of its base, the settling of what JAX rebuilt) is
one slot, `_pending`, settled by `DistArray._sync` where the data is read.

This module is the type alone: data, Layout, pytree, constructors, properties and host
conversion. It imports nothing above `physical`/`placement`. The operators, the numpy-style
methods, indexing, ``.at``, ``halo``, ``__array_namespace__``, ``str`` and ``to_device`` come
from the namespace and are attached once, at import, by `darray._src.methods.table` (which stands
above the namespace), as `jax/_src/numpy/array_methods.py` does for `jax.Array`.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.layout import host
from darray._src.layout import host as host_reads
from darray._src.layout.layout import Layout
from darray._src.placement import physical, rebuilt
from darray._src.placement.placement import (
    default_mesh,
    local_layout,
    local_mesh,
    small_cells,
    user_mesh,
)
from darray._src.placement.rebuilt import reconcile_rank

if TYPE_CHECKING:
    # For type checkers only: the operators and methods darray/_src/methods/table.py attaches at
    # import, declared by a stub generated from its tables (tools/gen_typing_stubs.py).
    from darray._src.distarray_methods import (
        DistArrayMethods as _AttachedMethods,
    )
else:
    _AttachedMethods = object


_LOCK_GUARD = threading.Lock()


def mutation_lock(x: DistArray) -> threading.RLock:
    """x's mutation lock, made on first use (most arrays are never mutated). Re-entrant: a
    view's write-back mutates its base while the view's own lock is held."""
    lock = x._lock
    if lock is None:
        with _LOCK_GUARD:
            if x._lock is None:
                x._lock = threading.RLock()
            lock = x._lock
    assert lock is not None
    return lock


def settle(data):
    """See compat.bound_in_flight: keeps eager dispatch from outrunning jax 0.10's CPU
    collectives."""
    return compat.bound_in_flight(data)


def _uncommitted(data):
    """Data of a small array: uncommitted (see compat.uncommitted), so that jit and jax.numpy
    move it next to distributed operands; tracers and uncommitted arrays pass as they are."""
    if compat.is_tracer(data) or not getattr(data, "_committed", False):
        return data
    return compat.uncommitted(data)


def _localized(data):
    """(data, layout) of an eager 0-d result where small arrays live: a 0-d value carries no
    distribution, so one device serves it (the copy the default device already holds when the
    value is replicated there: no transfer), uncommitted, so it moves to any mesh it meets."""
    device = local_mesh().devices.flat[0]
    shards = data.addressable_shards
    if len(shards) > 1 or shards[0].device != device:
        shard = shards[0] if shards[0].device == device else next(
            (s for s in shards if s.device == device), None)
        data = shard.data if shard is not None else jax.device_put(data, device)
    return _uncommitted(data), local_layout(())


class _Rebuilt:
    """The `_pending` state of an array JAX rebuilt around a leaf its Layout does not
    describe (see `DistArray.tree_unflatten`)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "REBUILT"


REBUILT = _Rebuilt()


def _join_label(components, leaf) -> Layout:
    """The rule's Layout for a nest whose traced leaf lacks axes (a Jacobian passed into
    `jax.vmap`); the mapped axes reconcile where it is read."""
    label = rebuilt.join_label(components, getattr(leaf, "ndim", 0))
    if label is None:
        raise ValueError(f"JAX rebuilt a DistArray from the layouts {list(components)} around "
                         f"data of shape {getattr(leaf, 'shape', None)}, which they do not "
                         f"describe")
    return label


_PICKLE_FORMAT = 2  # 2: no axis order (always the identity); 1 carried it


def _unpickle(version, blocks, shape, split, halo, *rest) -> DistArray:
    """Rebuild a pickled DistArray (see `DistArray.__reduce__`) on this process's devices.
    Format 1 also carried the axis order, which was always the identity."""
    if version not in (1, _PICKLE_FORMAT):
        raise ValueError(f"this pickle holds a DistArray of format {version}; this darray "
                         f"reads formats 1 and {_PICKLE_FORMAT}")
    where = rest[-1]
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
    layout = Layout(tuple(shape), mesh, tuple(split), tuple(halo))
    data = jax.device_put(blocks, physical.sharding_of(layout))
    return DistArray._new(data, layout)


@jax.tree_util.register_pytree_node_class
class DistArray(_AttachedMethods):
    """A distributed n-d array: logical global shape, physical sharded storage.

    Users see the logical shape and natural axis order; padding for uneven splits and ghost
    cells are physical facts recorded in ``layout``.
    """

    # _stored, _layout: the value (the physical jax.Array and what it means). Read the data as
    # `_data`, which first settles the lazy state (`_sync`); metadata reads (shape, dtype,
    # ndim, size, layout, repr) never do device work.
    # _pending: the lazy state, None for a settled array (its data has its Layout's rank):
    # a ViewLink (engine/views.py) for a view, which re-reads its base once the base was written,
    # or REBUILT when JAX rebuilt it around a leaf its Layout does not describe (a Jacobian's
    # nest, stacked extra axes, a vmap view: darray/_src/placement/rebuilt.py).
    # _version: bumped by every mutation (views compare it); _lock: made on first mutation.
    __slots__ = ("_stored", "_layout", "_pending", "_version", "_lock", "__weakref__")
    _stored: Any
    _layout: Layout
    _pending: Any  # None, REBUILT or an engine/views.py ViewLink
    _version: int
    _lock: threading.RLock | None
    __array_priority__ = 100  # numpy defers binary operators to DistArray
    __hash__ = None  # type: ignore[assignment]  # unhashable, as numpy arrays (methods/table.py attaches __eq__)

    def __init__(self, *args, **kwargs):
        raise TypeError("DistArray objects are not constructed directly: use darray.asarray "
                        "(or a creation function) to make one from data")

    @classmethod
    def _make(cls, data, layout: Layout, pending: Any = None) -> DistArray:
        """Unchecked construction, for data known to have `layout` (parts of another
        DistArray, results whose layout was made from their shape) and for JAX's pytree
        rebuilds (see `tree_unflatten`). Everything else goes through `_new`."""
        out = object.__new__(cls)
        out._stored, out._layout, out._pending = data, layout, pending
        out._version = 0
        out._lock = None
        return out

    def _sync(self) -> None:
        """Settle the lazy state before the data is read: the one place it changes.

        * A view whose base was written since it was read reads the base again (through its
          steps: a compiled read). Its shape and dtype never change, and its split only when
          the base was rebound to another Layout (see `views.ViewLink.layout_of`).
        * An array JAX rebuilt (REBUILT) gets one Layout matching its data: a Jacobian's nest
          becomes one array, its data moved where that Layout says when it is not there yet
          (`rebuilt.resolve`). The Layout alone is pure arithmetic (`_settled_layout`).
        """
        pending = self._pending
        if pending is None:
            return
        if pending is REBUILT:
            self._resolve_rebuilt()
        else:
            pending.refresh(self)

    @property
    def _data(self):
        if self._pending is not None:
            self._sync()
        return self._stored

    @classmethod
    def _new(cls, data, layout: Layout) -> DistArray:
        """Checked construction: the physical array must have the layout's physical shape.

        A 0-d result is a 0-d DistArray too (not a bare jax scalar), so array-API code can mix
        reduction results with arrays (`array_namespace(x, darray.sum(x))` is darray). `jax.grad`
        accepts only jax scalars as a loss: use `darray.grad` / `darray.value_and_grad`, or
        `loss.to_jax()`.
        """
        if tuple(data.shape) != layout.physical_shape:
            raise ValueError(f"physical data of shape {tuple(data.shape)} does not match "
                             f"{layout!r}, whose physical shape is {layout.physical_shape}")
        if layout.mesh is local_mesh():
            return cls._make(_uncommitted(data), layout)
        if not layout.shape and not compat.is_tracer(data) and small_cells():
            return cls._make(*_localized(data))
        return cls._make(settle(data), layout)

    @classmethod
    def _wrap_scalar(cls, value, mesh=None) -> DistArray:
        """A 0-d DistArray (internal: lets functions treat a jax scalar like any operand): on
        `mesh` where given, else where small arrays live (see `_localized`), else on the
        scalar's own mesh (e.g. a sum over a (2, 4) mesh) or the default mesh."""
        data = value if isinstance(value, jax.Array) else jnp.asarray(value)
        if mesh is None and small_cells():
            if compat.is_tracer(data):
                return cls._make(data, local_layout(()))
            return cls._make(*_localized(data))
        if mesh is None and not isinstance(data, jax.core.Tracer) and isinstance(
                getattr(data, "sharding", None), jax.sharding.NamedSharding):
            mesh = compat.auto_twin(data.sharding.mesh)  # type: ignore[attr-defined]  # checked NamedSharding
        return cls._make(data, Layout.create((), mesh if mesh is not None else default_mesh(), ()))

    def _rebind(self, result) -> None:
        """Become `result` (jax arrays are immutable). A bare jax array result keeps this
        array's layout. Mutations go through `_mutate`."""
        if isinstance(result, DistArray):
            self._stored = result._data  # first: settles result's lazy state
            self._layout = result.layout
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
            if self._pending is not None and self._pending is not REBUILT:
                self._pending.write_back(self)  # a view writes its base

    def __copy__(self) -> DistArray:
        """An independent array with the same (immutable) data: mutating either rebinds it
        alone. Not a view."""
        data = self._data
        return DistArray._make(data, self.layout)

    def __deepcopy__(self, memo) -> DistArray:
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
            raise host_reads.refusal(self.layout, "pickle.dumps(x)")
        lay = self.layout
        blocks = np.array(data if getattr(data, "is_fully_addressable", True)
                          else data.addressable_shards[0].data)
        mesh = lay.mesh
        where = (tuple(int(d.id) for d in mesh.devices.flat), mesh.devices.flat[0].platform,
                 tuple(mesh.axis_names), tuple(int(n) for n in mesh.devices.shape))
        return _unpickle, (_PICKLE_FORMAT, blocks, lay.shape, lay.split, lay.halo, where)

    # -- pytree ------------------------------------------------------------------------------
    def tree_flatten(self):
        if self._pending is REBUILT:
            # JAX's own rebuilds go back to JAX as they came: a Jacobian's pieces are nested
            # the other way round before jax.tree.transpose, so only darray's reads settle them.
            # A vmap view goes on with its reconciled Layout: what ops inside the vmap return,
            # and what a transformation inside (a Jacobian's own vmap, a scan) must see.
            # (A nest keeps its structure even when concrete: JAX flattens the primal and the
            # tangents of a Jacobian in parallel and compares their metadata. Handed unread to
            # jit, it is settled inside by the rule of darray/_src/placement/rebuilt.py.)
            stored = self._stored
            if type(stored) is not DistArray and getattr(stored, "ndim", 0) < self._layout.ndim:
                return (stored,), reconcile_rank(self._layout, stored)
            return (stored,), self._layout
        return (self._data,), self._layout

    @classmethod
    def tree_unflatten(cls, layout, children):
        """Never validates: JAX rebuilds DistArrays around None, PartitionSpecs, avals and
        leaves of another rank (see darray/_src/placement/rebuilt.py); the last kind are marked
        REBUILT and settled when darray reads them. A plain `jax.vmap` over a split axis is refused
        here, on entry."""
        leaf = children[0]
        if type(leaf) is DistArray:
            return cls._make(leaf, layout, REBUILT)
        shape = getattr(leaf, "shape", None)  # (not .ndim: this runs on every jit dispatch)
        if shape is not None and len(shape) != len(layout.shape):
            if len(shape) < len(layout.shape):
                rebuilt.refuse_split_vmap(layout, leaf)
            return cls._make(leaf, layout, REBUILT)
        return cls._make(leaf, layout)

    def _nest(self):
        """(the Layouts of a rebuilt array, outer first, its leaf): a Jacobian's nest of
        DistArrays has one Layout per level, describing the leaf's axes in turn."""
        components, leaf = [self._layout], self._stored
        while type(leaf) is DistArray:
            components.append(leaf._layout)
            leaf = leaf._stored
        return tuple(components), leaf

    def _settled_layout(self) -> Layout:
        """The Layout a REBUILT array has once settled, without settling it (pure arithmetic
        on shapes and shardings: `rebuilt.settle_plan`), reconciled to the leaf's rank."""
        components, leaf = self._nest()
        nested = len(components) > 1
        planned = rebuilt.settle_plan(components, leaf, pin_traced=nested)
        if planned is not None:
            return planned[0]
        if not nested:  # traced extra axes, or the vmap view
            return reconcile_rank(self._layout, leaf)
        return reconcile_rank(_join_label(components, leaf), leaf)

    def _resolve_rebuilt(self) -> None:
        """Give a REBUILT array one Layout that matches its data (see
        darray/_src/placement/rebuilt.py):
        a Jacobian's nest of DistArrays becomes one DistArray, its axes the output's then the
        input's; a leaf with extra plain axes gets them in its Layout. It stays REBUILT while
        its traced data lacks axes of that Layout (a vmap view: `layout` reconciles them)."""
        components, leaf = self._nest()
        nested = len(components) > 1
        settled = rebuilt.resolve(components, leaf, pin_traced=nested)
        if settled is None:
            if not nested:
                return  # traced extra axes, or the vmap view: `layout` reconciles on reading
            settled = _join_label(components, leaf), leaf
        self._layout, self._stored = settled
        shape = getattr(self._stored, "shape", None)
        if shape is None or len(shape) == self._layout.ndim:
            self._pending = None

    # -- properties: metadata, read from the Layout (no device work) -------------------------
    @property
    def data(self) -> jax.Array:
        """The physical array (padding and ghosts included). Prefer `to_jax()` for values."""
        return self._data

    @property
    def layout(self) -> Layout:
        """The Layout of the data as seen here. Reading it runs nothing on a device: a rebuilt
        array's settled Layout is computed, not applied; under `jax.vmap` the traced data has
        lost the batch axis and the layout is reconciled to its rank (see `reconcile_rank`);
        a view's Layout is its own unless its base was rebound to another Layout since."""
        pending = self._pending
        if pending is None:
            return self._layout
        if pending is REBUILT:
            return self._settled_layout()
        return pending.layout_of(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape

    @property
    def dtype(self):
        return self._leaf().dtype

    def _leaf(self):
        """The stored data, unsynced (a view's dtype is fixed), through a Jacobian's nest."""
        leaf = self._stored
        while type(leaf) is DistArray:
            leaf = leaf._stored
        return leaf

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
        twin of an Explicit mesh (see engine/operands.py)."""
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
        dtype = getattr(self._leaf(), "dtype", "?")
        if lay.ndim == 0 and self._has_values():
            return f"DistArray({self._scalar('biufc', 'repr')!r}, dtype={dtype}, mesh=({mesh}))"
        return f"DistArray({dtype}[{dims}], mesh=({mesh}), split={lay.describe_split()}{extra})"

    def _has_values(self) -> bool:
        leaf = self._stored  # a view's stored data is as concrete as its base's: no sync
        return isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer)

    def _scalar(self, kinds: str, what: str):
        """The single element as a Python scalar (reads one cell, no gather)."""
        if self.size != 1:
            raise ValueError(f"{what}() needs an array of size 1, got shape {self.shape}")
        if self.dtype.kind not in kinds:
            raise TypeError(f"{what}() is not defined for dtype {self.dtype}")
        data = self._data  # first: a view reads its base again
        first = tuple(lo for lo, _ in self._layout.halo)  # cell 0 sits after the ghosts
        if host.spans_other_processes(data):  # this process's copy, or refuse at once
            return host.local_cell(data, self._layout, first, f"{what}(x)")
        if data.ndim == 0:  # a 0-d result: its data is the (replicated) scalar
            return data.item()
        return data[first].item()

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
