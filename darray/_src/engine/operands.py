"""The one rule for operands of multi-operand functions that live on different meshes.

JAX's placement rule, committed versus uncommitted, read for meshes:

* An array created without an explicit placement (a creation function or `asarray` of host
  data without ``mesh=``/``device=``) lands on darray's default mesh, or, when small, on the
  one device of small arrays (placement.local_mesh), and is *uncommitted*: darray's default
  mesh plays the part of JAX's default device. Arrays computed from uncommitted arrays only
  stay there, and stay uncommitted, as in JAX.
* An array on any other mesh is *committed* to it.
* When the DistArrays of rank >= 1 given to one call live on different meshes, the call runs on
  the mesh of the first committed one, else of the first one that is not a small array (the
  *target*; in indexing, the indexed or written array's if it is committed, or if nothing is
  committed and it is not small: an uncommitted array indexed or written with committed
  arrays moves to them, block-wise, as an uncommitted jax.Array would).
  Uncommitted arrays move there. Committed arrays on the same set of devices are resharded
  onto it, as `jit` reshards operands with other shardings. Committed arrays on another set of
  devices raise LayoutError (a ValueError) naming the function, both arguments, both meshes
  and the call that moves an array: JAX refuses those too, and darray never guesses which set
  of devices a computation should run on.
* Python scalars, numpy arrays, jax arrays that are not DistArrays, and 0-d arrays (0-d
  DistArrays and the jax scalars darray returns for 0-d results) carry no distribution: they
  are placed where the arrays are.

The default mesh is told apart by where an array lives, not by how it was made: an array the
user placed explicitly on a mesh equal to darray's default mesh (a ('d',) mesh over every
device) is treated as uncommitted too. It can only ever move onto a mesh over a subset of the
devices (every other mesh spans the same devices and would reshard it anyway).

Meshes compare by devices, axis names and axis sizes, not by axis types: darray keeps an Auto
twin of an Explicit mesh a user passes (see compat.auto_twin), and both mean the same place.
"""
from __future__ import annotations

import numpy as np

from darray._src.base.errors import LayoutError
from darray._src.distarray.array import DistArray
from darray._src.engine.placing import asarray
from darray._src.placement.placement import default_mesh, local_mesh


def mesh_key(mesh) -> tuple:
    """What makes two meshes the same place: devices (in mesh order), axis names and sizes."""
    devices = getattr(mesh, "devices", None)
    ids = tuple(int(d.id) for d in np.asarray(devices).reshape(-1)) if devices is not None else ()
    return ids, tuple(mesh.axis_names), tuple(dict(mesh.shape).items())


def same_mesh(m1, m2) -> bool:
    return m1 is m2 or m1 == m2 or mesh_key(m1) == mesh_key(m2)


def describe_mesh(mesh) -> str:
    axes = ", ".join(f"{n}:{s}" for n, s in dict(mesh.shape).items())
    ids = mesh_key(mesh)[0]
    if ids and ids == tuple(range(ids[0], ids[0] + len(ids))):
        where = f"devices {ids[0]}..{ids[-1]}" if len(ids) > 1 else f"device {ids[0]}"
    else:
        where = f"devices {list(ids)}"
    return f"Mesh({axes}; {where})"


def _is_placed_anywhere(a) -> bool:
    """0-d arrays and non-DistArrays adopt the arrays' mesh; only DistArrays of rank >= 1
    decide where a call runs."""
    return isinstance(a, DistArray) and a.ndim >= 1


def is_committed(a: DistArray) -> bool:
    """Whether `a` is committed to its mesh (see the module doc): it is neither on the default
    mesh nor on the one device of small arrays."""
    mesh = a.mesh
    return mesh is not local_mesh() and not same_mesh(mesh, default_mesh())


def device_set(mesh) -> frozenset:
    return frozenset(mesh_key(mesh)[0])


def check_operand_meshes(fname: str, *named, anchor: int | None = None) -> tuple:
    """The operands of `named` ((operand, argname) pairs) placed by the rule of the module doc:
    returned in order, with every DistArray of rank >= 1 on one mesh. LayoutError where two
    committed arrays live on different sets of devices.

    anchor: index into `named` of an operand that must not move (the array written by
    ``x[key] = value``, or indexed by ``x[key]``): the call runs on its mesh.
    """
    local = local_mesh()
    dists = [(a, name) for a, name in named if _is_placed_anywhere(a)]
    if all(same_mesh(a.mesh, dists[0][0].mesh) for a, _ in dists[1:]):
        if not dists or dists[0][0].mesh is local or not any(
                _is_small_scalar(a, local) for a, _ in named):
            return tuple(a for a, _ in named)  # the common case: one mesh
        mesh = dists[0][0].mesh  # 0-d small arrays come to it (below)
    else:
        committed = [(a, name) for a, name in dists if is_committed(a)]
        if anchor is not None and _anchor_binds(named, anchor, committed, local):
            target = named[anchor]
        else:
            # a committed array decides; else a distributed one (small arrays, on one device,
            # come to it, as an uncommitted jax.Array comes to a sharded one)
            spread = [d for d in dists if d[0].mesh is not local]
            target = committed[0] if committed else (spread or dists)[0]
        mesh = target[0].mesh
        for a, name in committed:
            if device_set(a.mesh) != device_set(mesh):
                raise mesh_error(fname, target[1], mesh, name, a.mesh)
    return tuple(move_to(a, mesh) if _is_placed_anywhere(a) or _is_small_scalar(a, local)
                 else a for a, _ in named)


def check_same_mesh(fname: str, arrays, argname: str = "arrays") -> list:
    """`check_operand_meshes` for the arrays of the public function `fname` (a sequence
    argument, or several named by a comma-separated `argname`): the arrays, placed on one
    mesh."""
    names = [n.strip() for n in argname.split(",")]
    if len(names) == len(arrays):
        named = list(zip(arrays, names))
    else:
        named = [(a, f"{argname}[{i}]") for i, a in enumerate(arrays)]
    return list(check_operand_meshes(fname, *named))


def _anchor_binds(named, anchor, committed, local) -> bool:
    """Whether the anchor (the written or indexed array) decides the mesh. A committed anchor
    always does. An uncommitted one (made without mesh=/device=, e.g. scipy's
    ``out = xp.empty(shape)`` before ``out[k] = value``) follows a committed operand, as an
    uncommitted jax.Array follows its first committed use; a small one on one device follows
    distributed operands too. Otherwise the others come to the anchor."""
    if anchor is None or not _is_placed_anywhere(named[anchor][0]):
        return False
    a = named[anchor][0]
    return is_committed(a) or (not committed and a.mesh is not local)


def _is_small_scalar(a, local) -> bool:
    """A 0-d DistArray on the one device of small arrays (an eager 0-d result): it carries no
    distribution, and comes to the mesh of the arrays it meets (a replicated copy there)."""
    return isinstance(a, DistArray) and a._layout.mesh is local and not a._layout.shape


def move_to(a: DistArray, mesh) -> DistArray:
    """`a` on `mesh` (itself if already there), split by the mesh's default for its shape."""
    if same_mesh(a.mesh, mesh):
        return a
    return asarray(a, mesh=mesh)


def mesh_error(fname, name1, mesh1, name2, mesh2) -> LayoutError:
    return LayoutError(
        f"{fname}: {name1} lives on {describe_mesh(mesh1)} but {name2} on "
        f"{describe_mesh(mesh2)}, another set of devices; darray, like JAX, moves an array "
        f"placed explicitly (committed) to other devices only when asked. Move one first, e.g. "
        f"{name2} = {name2}.to_device({name1}.device) (or darray.asarray({name2}, "
        f"device={name1}.device))")


def placed(a, mesh):
    """`a` ready to combine with arrays on `mesh`: a DistArray on another mesh is moved there
    (a 0-d one carries no distribution; one of rank >= 1 only after check_operand_meshes has
    admitted it); everything else is returned as it is."""
    if isinstance(a, DistArray) and not same_mesh(a.mesh, mesh):
        return move_to(a, mesh)
    return a
