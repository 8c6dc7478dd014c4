"""Where a plain jax.Array lives, and the DistArray view of it.

jaxDecomp's operations are XLA custom-partitioned: they learn an array's sharding when XLA
compiles the program. darray plans at trace time, so it reads the sharding then:

- a concrete jax.Array carries its NamedSharding;
- a traced value on Explicit mesh axes carries its spec in its type (the mesh is matched with a
  concrete one: the mesh in context, or one darray has seen);
- a traced value on Auto axes carries nothing: its mesh comes from the context
  (``jax.set_mesh(mesh)`` or ``with mesh:``) and its spec is the one jaxDecomp requires of that
  input (jaxDecomp refuses others), which darray then pins with a sharding constraint.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from darray._src.api.creation import asarray
from darray._src.base import compat
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout
from darray._src.placement import physical

# Concrete meshes seen on concrete inputs: a traced value on Explicit axes names only the
# abstract mesh, and its devices are looked up here.
_SEEN_MESHES: dict = {}


def context_mesh():
    """The concrete mesh of ``jax.set_mesh`` / ``with mesh:``, or None.

    (A jax-version seam: both supported jax lines keep these in jax._src.mesh.)
    """
    from jax._src import mesh as mesh_lib  # jax-version seam: a private module
    getter = getattr(mesh_lib, "get_concrete_mesh", None)
    mesh = getter() if getter is not None else None
    if mesh is not None and not mesh.empty:
        return mesh
    resources = getattr(mesh_lib, "thread_resources", None)
    mesh = resources.env.physical_mesh if resources is not None else None
    if mesh is not None and not mesh.empty:
        return mesh
    return None


def _key(mesh):
    return (tuple(mesh.axis_names), tuple(mesh.shape[n] for n in mesh.axis_names))


def _concrete_for(abstract):
    ctx = context_mesh()
    if ctx is not None and _key(ctx) == _key(abstract):
        return ctx
    found = {id(m): m for m in list(_SEEN_MESHES.values()) + list(compat.AUTO_TWINS)
             if _key(m) == _key(abstract)}
    return next(iter(found.values())) if len(found) == 1 else None


def padded(spec, ndim) -> tuple:
    """`spec` as a tuple of `ndim` entries (None-filled)."""
    spec = tuple(spec)[:ndim]
    return spec + (None,) * (ndim - len(spec))


def _innermost(a):
    """Eager jax.grad / jax.vjp / jax.jvp wrap a concrete array in tracers that keep it as their
    primal: its sharding is still known. (jit and vmap tracers carry no value.)"""
    for _ in range(16):
        if not compat.is_tracer(a):
            return a
        inner = getattr(a, "primal", None)
        if inner is None:
            return a
        a = inner
    return a


DEFERRED = object()  # locate's answer for a traced array planned at partition time


def locate(a, fname: str, contract, backend: str = "jax"):
    """(mesh, spec) of `a`; (None, None) for an array on one device (computed locally); or
    (DEFERRED, None) for a traced array whose sharding is not known yet, which deferred.py
    plans when XLA partitions the program (as jaxDecomp does).

    `contract(mesh)` is the spec jaxDecomp requires of this input: for the cuDecomp backend,
    which runs only on plans made at trace time, it stands in for the spec of a traced value
    on Auto axes inside a mesh context.
    """
    a = _innermost(a)
    if not compat.is_tracer(a):
        sharding = getattr(a, "sharding", None)
        if isinstance(sharding, NamedSharding) and sharding.mesh.size > 1:
            _SEEN_MESHES[_key(sharding.mesh)] = sharding.mesh
            return sharding.mesh, padded(sharding.spec, a.ndim)
        return None, None
    aval_sharding = getattr(jax.typeof(a), "sharding", None)
    spec = tuple(getattr(aval_sharding, "spec", ()) or ())
    if aval_sharding is not None and any(s is not None for s in spec):
        # Explicit axes: the spec is in the type
        mesh = _concrete_for(aval_sharding.mesh)
        if mesh is None:
            raise ValueError(f"{fname}: the traced array is sharded {PartitionSpec(*spec)} on "
                             f"{aval_sharding.mesh}, but darray needs that mesh's devices: run "
                             f"inside `with jax.set_mesh(mesh):`")
        return mesh, padded(spec, a.ndim)
    if jax.device_count() == 1:
        return None, None
    if backend != "cudecomp":
        return DEFERRED, None
    mesh = context_mesh()
    if mesh is not None and mesh.size > 1:
        return mesh, padded(contract(mesh), a.ndim)
    raise ValueError(
        f"{fname}: backend='cudecomp' plans at trace time, and under jax.jit (or another "
        f"transformation) an array on Auto mesh axes does not say how it is sharded. Run the "
        f"traced code inside `with jax.set_mesh(mesh):` (the array is then taken to be sharded "
        f"as jaxDecomp requires, {contract.__doc__ or 'by the mesh axes in order'}), use a "
        f"mesh with Explicit axes, or backend='jax' (planned when XLA partitions the program)")


def effective_entries(mesh, spec) -> tuple:
    """Each entry of `spec` as the tuple of its mesh axes of size > 1."""
    sizes = dict(mesh.shape)
    out = []
    for entry in spec:
        names = () if entry is None else ((entry,) if isinstance(entry, str) else tuple(entry))
        out.append(tuple(n for n in names if sizes[n] > 1))
    return tuple(out)


def full_spec(layout: Layout) -> tuple:
    """`layout`'s PartitionSpec as a tuple with one entry per axis."""
    return padded(layout.spec, layout.ndim)


def as_array(a, fname: str):
    if isinstance(a, DistArray):
        return a.to_jax()
    if isinstance(a, jax.Array) or compat.is_tracer(a):
        return a
    if isinstance(a, (np.ndarray, np.generic, list, tuple, int, float, complex)):
        return jnp.asarray(a)
    raise TypeError(f"{fname}: the input must be a jax.Array (or array-like), got "
                    f"{type(a).__name__}")


def wrap(a, mesh, spec, *, halo=None) -> DistArray:
    """`a` (the physical array) as a DistArray on `mesh` split by `spec`, without moving data
    when it is already placed so. With `halo`, `a`'s blocks already hold ghost cells that
    wide, and the logical shape is what the blocks own."""
    twin = compat.auto_twin(mesh)
    shape = a.shape
    layout = Layout.create(shape, twin, spec)
    if halo is not None:
        owned = tuple(n - layout.parts(i) * (lo + hi) for i, (n, (lo, hi))
                      in enumerate(zip(shape, halo)))
        layout = Layout.create(owned, twin, spec, halo=halo)
    if compat.is_explicit(mesh):
        a = retype(a, (twin, layout.spec), (mesh, layout.spec))
    if layout.physical_shape == tuple(shape):
        return DistArray._new(physical.constrain(a, layout), layout)
    return asarray(a, mesh=twin, spec=spec)  # uneven split: darray pads the blocks


def _effective(layout: Layout) -> tuple:
    sizes = layout.mesh_shape
    return tuple(tuple(n for n in split if sizes[n] > 1) for split in layout.split)


def unwrap(d: DistArray, mesh, spec):
    """`d` as a plain jax.Array sharded NamedSharding(mesh, spec); one redistribution only if
    darray's layout differs from that (size-1 mesh axes aside)."""
    twin = compat.auto_twin(mesh)
    target = Layout.create(d.shape, twin, spec)
    if _effective(d.layout) != _effective(target) or d.layout.mesh != twin:
        d = asarray(d, mesh=twin, spec=spec)
    out = (compat.constrain(d.to_jax(), twin, target.spec) if d.layout.is_padded
           else physical.constrain(d.data, target))
    if compat.is_explicit(mesh):  # back to the caller's Explicit axes: the sharding is its type
        out = retype(out, (mesh, target.spec), (twin, target.spec))
    return out


def retype(a, to, back):
    """`a` pinned to ``NamedSharding(*to)``, its cotangent to ``NamedSharding(*back)``: moving
    between a mesh with Explicit axes and its Auto twin, JAX's own transposes of the
    constraint keep the other type and the gradient is refused ("Expected cotangent type")."""
    @jax.custom_vjp
    def move(v):
        return compat.constrain(v, *to)

    def forward(v):
        return move(v), None

    def backward(_, ct):
        return (compat.constrain(ct, *back),)
    move.defvjp(forward, backward)
    return move(a)


def effective_split(layout: Layout) -> tuple:
    return _effective(layout)
