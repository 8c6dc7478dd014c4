"""Choosing a mesh and a split when the user does not give one, and checking the ones given."""
from __future__ import annotations

import functools
import math

import jax
import numpy as np
from jax.sharding import AbstractMesh, Mesh, PartitionSpec

from darray._src.base import compat
from darray._src.base.config import get_config
from darray._src.base.errors import LayoutError
from darray._src.layout import memory
from darray._src.layout.layout import Layout

DEFAULT_AXIS = "d"


@functools.cache
def default_mesh() -> Mesh:
    """A 1D Auto mesh ('d',) over every device of every process.

    Auto rather than Explicit: eager `jax.grad` on Explicit meshes needs a mesh context that
    users should not have to set.
    """
    return compat.make_auto_mesh((jax.device_count(),), (DEFAULT_AXIS,))


@functools.cache
def local_mesh() -> Mesh:
    """The one-device mesh of small arrays and eager 0-d results: JAX's default device (where
    an uncommitted jax.Array lives), as a ('d',) mesh of size 1. With one device in all it is
    the default mesh itself."""
    if jax.device_count() == 1:
        return default_mesh()
    return compat.make_auto_mesh((1,), (DEFAULT_AXIS,), devices=jax.devices()[:1])


def small_cells() -> int:
    """Arrays with fewer cells than this, placed by darray's defaults, live on `local_mesh`
    (config option small_array_cells); 0 where small placement is off: a run of several
    processes keeps every array on a mesh all its processes share."""
    if jax.process_count() > 1:
        return 0
    return get_config("small_array_cells")


def is_local(layout: Layout) -> bool:
    """Whether `layout` lives on the one-device mesh of small arrays (uncommitted)."""
    return layout.mesh is local_mesh()


@functools.lru_cache(maxsize=256)
def local_layout(shape: tuple) -> Layout:
    """The Layout of a small array of `shape` on `local_mesh` (nothing split)."""
    return Layout.create(shape, local_mesh(), ())


def user_mesh(mesh):
    """The mesh the user passed whose Auto twin is `mesh` (so ``x.device == mesh`` holds for
    it), else `mesh` itself. darray's default mesh stays itself: jax interns meshes, so the
    twin of an Explicit ('d',) mesh made anywhere in the process IS the default mesh, and
    arrays created without a mesh must report ``default_device()``, whoever made that mesh."""
    if mesh is default_mesh():
        return mesh
    for given, twin in list(compat.AUTO_TWINS.items()):
        if twin is mesh:
            return given
    return mesh


SMALL_ARRAY = 1 << 16  # cells; below this, an array too short to split evenly is replicated


def default_spec(shape, mesh) -> PartitionSpec:
    """Split one axis over the largest mesh axis: a slab, which needs the fewest all-to-alls.

    Picks the first axis at least as long as the device count (so no device is left empty).
    If no axis is that long, a small array (fewer than SMALL_ARRAY cells) is replicated: split,
    most devices would hold only padding, and every op on it would communicate for nothing;
    a larger one is split along its longest axis. Rank-0 arrays and one-device meshes are not
    split.
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
    axis = next((a for a, n in enumerate(shape) if n >= total), None)
    if axis is None:
        if int(np.prod(shape)) < SMALL_ARRAY:
            return PartitionSpec()
        axis = int(np.argmax(shape))
    return PartitionSpec(*([None] * axis + [name]))


def resolve_mesh(mesh=None, device=None, *, like=None):
    """The (Auto-typed) mesh an array is created on, from `mesh=`, an Array API `device=` or a
    template array. `mesh` may be a Mesh or axis sizes such as (2, 4); `device` may be a Mesh
    (what `DistArray.device` returns) or a single jax Device.
    """
    if mesh is None and device is None:
        return like.mesh if like is not None else default_mesh()
    mesh = _one_mesh(mesh, "mesh") if mesh is not None else None
    device = _one_mesh(device, "device") if device is not None else None
    if mesh is not None and device is not None and mesh != device:
        raise ValueError(f"mesh={mesh!r} and device={device!r} disagree; give only one of them")
    return mesh if mesh is not None else device


def _one_mesh(mesh, argname):
    if isinstance(mesh, dict) or (isinstance(mesh, (tuple, list)) and mesh
                                  and all(isinstance(n, int) for n in mesh)):
        return mesh_from_sizes(mesh)
    if isinstance(mesh, jax.Device):
        return compat.make_auto_mesh((1,), (DEFAULT_AXIS,), devices=[mesh])
    if isinstance(mesh, AbstractMesh):
        raise TypeError(f"{argname} must be a concrete jax.sharding.Mesh (devices are needed to "
                        f"place data), got the AbstractMesh {mesh!r}")
    if not isinstance(mesh, Mesh):
        raise TypeError(f"{argname} must be a jax.sharding.Mesh (e.g. jax.make_mesh((2, 4), "
                        f"('x', 'y'))), a tuple of axis sizes such as (2, 4), or None for all "
                        f"devices, got {type(mesh).__name__}: {mesh!r}")
    return compat.auto_twin(mesh)


MESH_AXIS_NAMES = ("x", "y", "z", "w")


@functools.cache
def _mesh_from_items(items):
    names, sizes = zip(*items)
    need, have = int(np.prod(sizes)), jax.device_count()
    if need != have:
        raise ValueError(f"mesh={dict(items)!r} needs {need} devices but {have} are available; "
                         f"give sizes whose product is {have}")
    return compat.make_auto_mesh(sizes, names)


def mesh_from_sizes(sizes):
    """A Mesh from shorthand: (2, 4) names its axes 'x', 'y'; {'c': 2, 'x': 4} names them."""
    if isinstance(sizes, dict):
        items = tuple((str(k), int(v)) for k, v in sizes.items())
    else:
        if len(sizes) > len(MESH_AXIS_NAMES):
            raise ValueError(f"mesh={tuple(sizes)!r} has more than {len(MESH_AXIS_NAMES)} axes; "
                             "pass a jax.sharding.Mesh for more")
        items = tuple(zip(MESH_AXIS_NAMES, (int(n) for n in sizes)))
    if any(v < 1 for _, v in items):
        raise ValueError(f"mesh={dict(items)!r} has an axis of size < 1")
    return _mesh_from_items(items)


def make_layout(shape, mesh=None, spec=None, device=None, *, like=None, dtype=None,
                what: str = "darray") -> Layout:
    """Layout for a new array: explicit mesh/spec, else the template's, else the defaults.

    With `dtype` (every creation function passes it) an array that cannot fit in its devices'
    memory is refused here, before anything is allocated (`memory.check_fits`; `what` names
    the creating call in the message).
    """
    layout = _new_layout(shape, mesh, spec, device, like)
    if dtype is not None:
        memory.check_fits(layout, dtype, what=what)
    return layout


def _new_layout(shape, mesh, spec, device, like) -> Layout:
    if mesh is None and device is None and spec is None and (
            like is None or is_local(like.layout)) and math.prod(shape) < small_cells():
        return local_layout(tuple(int(n) for n in shape))
    mesh = resolve_mesh(mesh, device, like=like)
    if spec is None:
        if like is not None and like.mesh == mesh and like.ndim == len(shape):
            return Layout.create(shape, mesh, like.layout.spec)
        spec = default_spec(tuple(shape), mesh)
    try:
        return Layout.create(shape, mesh, spec)
    except LayoutError as err:
        raise type(err)(str(err)) from None
