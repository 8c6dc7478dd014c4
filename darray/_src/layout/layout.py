"""Layout: where the pieces of a distributed array live. Pure arithmetic, never communicates.

A Layout describes a *logical* global array (what the user sees: shape and natural axis order)
and how it is stored *physically* as one sharded `jax.Array`:

* ``split[i]`` names the mesh axes (major to minor, as in a PartitionSpec) that split array
  axis ``i``; ``()`` means the axis is not split.
* An axis of length ``n`` split into ``p`` parts is cut in blocks of ``chunk = ceil(n / p)``;
  block ``b`` owns logical cells ``[b * chunk, min(n, (b + 1) * chunk))``. The physical array
  pads the axis at its end to ``p * chunk`` so that every device holds an equal block (shard_map
  and all-to-all need equal blocks). The padding content is unspecified: ops never read it.
* ``halo[i] = (lo, hi)`` ghost cells are stored on both sides of every block of axis ``i``, so a
  device's physical block along that axis is ``lo + chunk + hi`` long.
* The physical array keeps the logical axis order: a transform whose k-space is stored
  transposed records that as a different split, never as a permutation of the axes.

The mesh may be a `jax.sharding.Mesh`, an `AbstractMesh`, or anything with ``axis_names`` and a
``shape`` mapping (unit tests use `AbstractMesh`, which needs no devices).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from jax.sharding import PartitionSpec

from darray._src.base.errors import LayoutError

Split = tuple[str, ...]


def _describe_mesh(mesh) -> str:
    return "(" + ", ".join(f"{n}:{s}" for n, s in mesh.shape.items()) + ")"


def normalize_spec(spec, ndim: int, mesh, *, argname: str = "spec") -> tuple[Split, ...]:
    """Turn a PartitionSpec / tuple / None into one tuple of mesh-axis names per array axis.

    Raises LayoutError naming `argname` for a spec longer than the rank, an unknown mesh axis,
    a mesh axis used twice, or an entry that is not None, a str or a tuple of str.
    """
    if spec is None:
        entries: Sequence[Any] = ()
    elif isinstance(spec, (PartitionSpec, tuple, list)):
        entries = tuple(spec)
    else:
        raise TypeError(f"{argname} must be a tuple or jax.sharding.PartitionSpec naming a mesh "
                        f"axis (or None) per array axis, got {spec!r} of type "
                        f"{type(spec).__name__}")
    if len(entries) > ndim:
        raise LayoutError(f"{argname}={tuple(entries)!r} has {len(entries)} entries but the array "
                          f"has rank {ndim}; give at most one entry per array axis")
    known = tuple(mesh.axis_names)
    seen: dict[str, int] = {}
    out: list[Split] = []
    for axis, entry in enumerate(tuple(entries) + (None,) * (ndim - len(entries))):
        if entry is None:
            names: Split = ()
        elif isinstance(entry, str):
            names = (entry,)
        elif isinstance(entry, (tuple, list)) and all(isinstance(e, str) for e in entry):
            names = tuple(entry)
        else:
            raise TypeError(f"{argname}[{axis}]={entry!r} is not accepted: use None, a mesh axis "
                            f"name (one of {known}) or a tuple of mesh axis names")
        for name in names:
            if name not in known:
                raise LayoutError(f"{argname}[{axis}] names mesh axis {name!r}, which the mesh "
                                  f"{_describe_mesh(mesh)} does not have; known axes: {known}")
            if name in seen:
                raise LayoutError(f"{argname} uses mesh axis {name!r} twice (array axes "
                                  f"{seen[name]} and {axis}); each mesh axis may split at most "
                                  f"one array axis")
            seen[name] = axis
        out.append(names)
    return tuple(out)


def _normalize_halo(halo, ndim: int) -> tuple[tuple[int, int], ...]:
    if halo is None:
        return ((0, 0),) * ndim
    halo = tuple((int(lo), int(hi)) for lo, hi in halo)
    if len(halo) != ndim or any(lo < 0 or hi < 0 for lo, hi in halo):
        raise LayoutError(f"halo={halo!r} must give (lo, hi) >= 0 for each of {ndim} axes")
    return halo


@dataclasses.dataclass(frozen=True)
class Layout:
    """Immutable, hashable description of a distributed array. Build with `Layout.create`."""

    shape: tuple[int, ...]
    mesh: Any
    split: tuple[Split, ...]
    halo: tuple[tuple[int, int], ...]

    @classmethod
    def create(cls, shape, mesh, spec=None, *, halo=None) -> Layout:
        """Validated construction: the one path that checks every invariant."""
        shape = tuple(int(n) for n in shape)
        if any(n < 0 for n in shape):
            raise LayoutError(f"shape={shape!r} has a negative extent")
        ndim = len(shape)
        split = normalize_spec(spec, ndim, mesh)
        return cls(shape, mesh, split, _normalize_halo(halo, ndim))

    # -- basic facts -------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def mesh_shape(self) -> Mapping[str, int]:
        return dict(self.mesh.shape)

    @property
    def spec(self) -> PartitionSpec:
        """The PartitionSpec of the physical array (logical axis order)."""
        entries = [None if not s else (s[0] if len(s) == 1 else s) for s in self.split]
        while entries and entries[-1] is None:
            entries.pop()
        return PartitionSpec(*entries)

    def parts(self, axis: int) -> int:
        """Number of blocks array axis `axis` is cut into."""
        sizes = self.mesh_shape
        return math.prod(sizes[name] for name in self.split[axis])

    def chunk(self, axis: int) -> int:
        """Logical cells per block (the last blocks may own fewer, even none)."""
        p = self.parts(axis)
        return -(-self.shape[axis] // p)

    # cached: eager dispatch reads these on every op (8 us each when recomputed)
    @functools.cached_property
    def padded_shape(self) -> tuple[int, ...]:
        """Logical shape rounded up so every split axis divides evenly (no halo)."""
        return tuple(self.parts(a) * self.chunk(a) for a in range(self.ndim))

    @property
    def block_shape(self) -> tuple[int, ...]:
        """Shape of one device's physical block, ghosts included (logical axis order)."""
        return tuple(lo + self.chunk(a) + hi for a, (lo, hi) in enumerate(self.halo))

    @functools.cached_property
    def physical_shape(self) -> tuple[int, ...]:
        """Shape of the stored global jax.Array (logical axis order)."""
        return tuple(self.parts(a) * b for a, b in enumerate(self.block_shape))

    @property
    def is_padded(self) -> bool:
        return self.padded_shape != self.shape

    @property
    def has_halo(self) -> bool:
        return any(lo or hi for lo, hi in self.halo)

    @property
    def split_axes(self) -> tuple[int, ...]:
        return tuple(a for a, s in enumerate(self.split) if s)

    @property
    def used_mesh_axes(self) -> tuple[str, ...]:
        return tuple(name for s in self.split for name in s)

    # -- per-block arithmetic ----------------------------------------------------------------
    def block_start(self, axis: int, block: int) -> int:
        """Global logical index of the first cell owned by `block` along `axis`."""
        return min(block * self.chunk(axis), self.shape[axis])

    def block_extent(self, axis: int, block: int) -> int:
        """Number of logical cells `block` owns along `axis` (0 for a trailing empty block)."""
        c = self.chunk(axis)
        return max(0, min(c, self.shape[axis] - block * c))

    def blocks(self, axis: int) -> tuple[tuple[int, int], ...]:
        """(start, stop) of every block along `axis`, in block order."""
        return tuple((self.block_start(axis, b),
                      self.block_start(axis, b) + self.block_extent(axis, b))
                     for b in range(self.parts(axis)))

    def block_index(self, axis: int, mesh_coords: Mapping[str, int]) -> int:
        """Block number along `axis` held by the device at `mesh_coords` (major-to-minor)."""
        index = 0
        for name in self.split[axis]:
            index = index * self.mesh_shape[name] + mesh_coords[name]
        return index

    def device_slices(self, mesh_coords: Mapping[str, int]) -> tuple[slice, ...]:
        """Logical global cells (without ghosts) held by the device at `mesh_coords`."""
        out = []
        for axis in range(self.ndim):
            b = self.block_index(axis, mesh_coords)
            start = self.block_start(axis, b)
            out.append(slice(start, start + self.block_extent(axis, b)))
        return tuple(out)

    # -- derived layouts ---------------------------------------------------------------------
    def with_spec(self, spec) -> Layout:
        return Layout.create(self.shape, self.mesh, spec, halo=None)

    def with_split(self, split: Sequence[Split]) -> Layout:
        return dataclasses.replace(self, split=tuple(tuple(s) for s in split),
                                   halo=((0, 0),) * self.ndim)

    def with_halo(self, halo) -> Layout:
        return dataclasses.replace(self, halo=_normalize_halo(halo, self.ndim))

    def without_halo(self) -> Layout:
        if not self.has_halo:
            return self
        return dataclasses.replace(self, halo=((0, 0),) * self.ndim)

    def with_shape(self, shape) -> Layout:
        """Same mesh and split (truncated/extended with unsplit axes), new logical shape."""
        shape = tuple(int(n) for n in shape)
        split = tuple(self.split[:len(shape)]) + ((),) * max(0, len(shape) - self.ndim)
        return Layout(shape, self.mesh, split, ((0, 0),) * len(shape))

    # -- display -----------------------------------------------------------------------------
    def describe_split(self) -> str:
        parts = []
        for s in self.split:
            parts.append("None" if not s else (s[0] if len(s) == 1 else "(" + ",".join(s) + ")"))
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def __repr__(self) -> str:
        extra = ""
        if self.has_halo:
            extra += f", halo={self.halo}"
        return (f"Layout(shape={self.shape}, mesh={_describe_mesh(self.mesh)}, "
                f"split={self.describe_split()}{extra})")


# -- layouts for results: rules propose a split, these make it a valid Layout ------------------
def make_out_layout(mesh, shape, split) -> Layout:
    """A layout on `mesh` with the given per-axis split; a mesh axis used twice keeps only its
    first use (the later axis goes unsplit), so rules may propose freely."""
    return _out_layout(mesh, tuple(int(d) for d in shape), tuple(tuple(s) for s in split))


@functools.lru_cache(maxsize=4096)
def _out_layout(mesh, shape: tuple[int, ...], split: tuple[Split, ...]) -> Layout:
    """make_out_layout's result, one object per (mesh, shape, split): its cached properties
    (physical_shape, read by every eager call's checked construction) are computed once, not
    once per call (a few microseconds of each small-array call)."""
    seen: set[str] = set()
    clean = []
    for s in split:
        if any(name in seen for name in s):
            s = ()
        seen.update(s)
        clean.append(s)
    return Layout(shape, mesh, tuple(clean), ((0, 0),) * len(shape))


def default_layout(shape, like: Layout) -> Layout:
    """Layout for a result whose shape has no axis-by-axis relation to its input (advanced
    indexing, unique values): a slab, the longest axis split over every mesh axis the input
    used (so the result is spread as widely as the input was)."""
    shape = tuple(int(n) for n in shape)
    names = like.used_mesh_axes
    split: list[Split] = [()] * len(shape)
    if shape and names and max(shape) > 1:
        split[max(range(len(shape)), key=shape.__getitem__)] = names  # the first longest
    return make_out_layout(like.mesh, shape, split)
