"""Choosing a mesh and a split when the user does not give one, and checking the ones given."""
from __future__ import annotations

import functools

import jax
import numpy as np
from jax.sharding import Mesh, AbstractMesh, PartitionSpec

from darray._src import compat
from darray._src.errors import LayoutError
from darray._src.layout import Layout

DEFAULT_AXIS = "d"


@functools.lru_cache(maxsize=None)
def default_mesh() -> Mesh:
    """A 1D Auto mesh ('d',) over every device of every process.

    Auto rather than Explicit: eager `jax.grad` on Explicit meshes needs a mesh context that
    users should not have to set.
    """
    return compat.make_auto_mesh((jax.device_count(),), (DEFAULT_AXIS,))


def default_spec(shape, mesh) -> PartitionSpec:
    """Split one axis over the largest mesh axis: a slab, which needs the fewest all-to-alls.

    Picks the first axis at least as long as the device count (so no device is left empty),
    else the longest axis; rank-0 arrays and one-device meshes are not split.
    """
    sizes = dict(mesh.shape)
    if not shape or max(sizes.values(), default=1) == 1 or max(shape) <= 1:
        return PartitionSpec()
    name = max(sizes, key=lambda n: sizes[n])
    if len(sizes) > 1:
        # A multi-axis mesh given without spec: use its axes as a pencil over leading axes.
        names = [n for n in mesh.axis_names if sizes[n] > 1]
        k = len(shape)
        if len(names) > k:  # fewer array axes than mesh axes: the last one takes the rest
            names = names[: k - 1] + [tuple(names[k - 1:])]
        return PartitionSpec(*names)
    total = sizes[name]
    axis = next((a for a, n in enumerate(shape) if n >= total), int(np.argmax(shape)))
    return PartitionSpec(*([None] * axis + [name]))


def resolve_mesh(mesh=None, device=None, *, like=None):
    """The mesh an array is created on, from `mesh=`, an Array API `device=` or a template.

    `device` may be a Mesh (what `DistArray.device` returns) or a single jax Device.
    """
    if mesh is not None and device is not None and compat.auto_twin(mesh) != compat.auto_twin(device):
        raise ValueError(f"mesh={mesh!r} and device={device!r} disagree; give one of them")
    mesh = mesh if mesh is not None else device
    if mesh is None:
        return like.mesh if like is not None else default_mesh()
    if isinstance(mesh, jax.Device):
        return compat.make_auto_mesh((1,), (DEFAULT_AXIS,), devices=[mesh])
    if isinstance(mesh, AbstractMesh):
        raise TypeError("mesh must be a concrete jax.sharding.Mesh (devices are needed to place "
                        f"data), got the AbstractMesh {mesh!r}")
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh (e.g. jax.make_mesh((2, 4), ('x', 'y')))"
                        f" or None for all devices, got {type(mesh).__name__}: {mesh!r}")
    return compat.auto_twin(mesh)


def make_layout(shape, mesh=None, spec=None, device=None, *, like=None) -> Layout:
    """Layout for a new array: explicit mesh/spec, else the template's, else the defaults."""
    mesh = resolve_mesh(mesh, device, like=like)
    if spec is None:
        if like is not None and like.mesh == mesh and like.ndim == len(shape):
            return Layout.create(shape, mesh, like.layout.spec)
        spec = default_spec(tuple(shape), mesh)
    try:
        return Layout.create(shape, mesh, spec)
    except LayoutError as err:
        raise type(err)(str(err)) from None
