"""The one rule for operands of multi-operand functions that live on different meshes.

The Array API says computation happens where all array arguments live. darray reads that as:

* DistArrays of rank >= 1 given to one call must share a mesh. If they do not, the call raises
  LayoutError (a ValueError) naming the function, both arguments, both meshes and the call that
  moves an array. darray never moves a whole array silently: a redistribution between meshes
  can be the most expensive thing a program does, and doing it implicitly would also make the
  result's location depend on argument order.
* Python scalars, numpy arrays, jax arrays that are not DistArrays, and 0-d arrays (0-d
  DistArrays and the jax scalars darray returns for 0-d results) carry no distribution: they
  are placed where the arrays are.

Meshes compare by devices, axis names and axis sizes, not by axis types: darray keeps an Auto
twin of an Explicit mesh a user passes (see compat.auto_twin), and both mean the same place.
"""
from __future__ import annotations

import sys

import numpy as np

from darray._src import compat
from darray._src.array import DistArray
from darray._src.errors import LayoutError


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


def check_operand_meshes(fname: str, *named) -> None:
    """LayoutError unless every DistArray of rank >= 1 among `named` ((operand, argname)
    pairs) lives on one mesh."""
    first = None
    for a, name in named:
        if not _is_placed_anywhere(a):
            continue
        if first is None:
            first = (a, name)
            continue
        if not same_mesh(a.mesh, first[0].mesh):
            raise mesh_error(fname, first[1], first[0].mesh, name, a.mesh)


def mesh_error(fname, name1, mesh1, name2, mesh2) -> LayoutError:
    return LayoutError(
        f"{fname}: {name1} lives on {describe_mesh(mesh1)} but {name2} on "
        f"{describe_mesh(mesh2)}; darray computes where all arrays live and does not move "
        f"arrays between meshes implicitly. Move one first, e.g. "
        f"{name2} = {name2}.to_device({name1}.device) (or darray.asarray({name2}, "
        f"device={name1}.device))")


def caller_name(depth: int = 2) -> str:
    """Name of the nearest public function up the stack (for messages from shared checks whose
    call sites do not pass one)."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code.co_name.startswith("_"):
        frame = frame.f_back
    return frame.f_code.co_name if frame is not None else "darray"


def placed(a, mesh):
    """`a` ready to combine with arrays on `mesh`: a 0-d DistArray on another mesh is moved
    there (it carries no distribution); everything else is returned as it is."""
    if isinstance(a, DistArray) and a.ndim == 0 and not same_mesh(a.mesh, mesh):
        from darray._src.api.creation import asarray
        return asarray(a, mesh=mesh)
    return a
