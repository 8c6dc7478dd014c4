"""Block-level particle code: what every device runs inside `shard_map` for paint and readout.

Each device holds the particles that started in its own block of the grid (the displacement
array is split like the grid). A particle whose stencil lies within `ghosts` cells of the block
deposits into (or reads from) the block's ghosted copy directly; `halo_reduce` / `halo` connect
the ghosts with the neighbours. Every other particle -- one that moved farther than the ghosts
reach -- is a *stray*: it is sent to the device that owns its stencil's base cell in one bounded
`all_to_all` (at most `capacity` strays per destination device), deposited or read there, and
(for readout) its value sent back. Overflow is counted, never dropped silently: the caller
raises or poisons the result with NaN.

Ghosted block along a split axis (see darray/_src/plans/halo_plan.py):
``[W ghosts | e owned | W ghosts | padding]``; the cell at offset ``o`` from the block's first
owned cell, ``-W <= o < e + W``, sits at ``W + o``. Unsplit axes have no ghosts; cells there
wrap locally.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.particles.schemes import Scheme, stencil

NO_NAN = np.iinfo(np.int32).max     # "no NaN particle" in the first-NaN-index reduction


@dataclasses.dataclass(frozen=True)
class Geometry:
    """Static facts of one grid layout, for the block functions (hashable: a cache key)."""
    shape: tuple[int, ...]          # the grid G
    chunk: tuple[int, ...]          # cells per block, per axis
    parts: tuple[int, ...]          # blocks per axis
    ghosts: tuple[int, ...]         # ghost width W per axis (0 on unsplit axes)
    names: tuple[str, ...]          # the mesh axes of the split, major to minor
    capacity: int                   # strays per (sender, receiver) pair

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def ndev(self) -> int:
        return math.prod(self.parts)

    @property
    def block_shape(self) -> tuple[int, ...]:
        return tuple(c + 2 * w for c, w in zip(self.chunk, self.ghosts))

    def split(self, axis: int) -> bool:
        return self.parts[axis] > 1


@dataclasses.dataclass
class Stencils:
    """Per particle (flattened): base cell, per-axis weights, and where the base sits locally."""
    base: list            # per axis, int32 global base cell in [0, n)
    weights: list         # per axis, `support` float arrays
    local_base: list      # per axis, int32 block index of the base cell (split axes)
    in_reach: jax.Array   # the whole stencil lies in this device's ghosted block
    dest: jax.Array       # linear index (over `names`) of the device owning the base cell


def positions(geom: Geometry, disp, starts, ok):
    """Periodic positions ``q + disp`` in [0, n) per axis, flattened; padding/NaN -> q."""
    disp = jnp.where(ok[..., None], disp, 0)     # double-where: no NaN reaches the gradient
    out = []
    for axis, n in enumerate(geom.shape):
        q = jax.lax.broadcasted_iota(jnp.int32, geom.chunk, axis) + starts[axis]
        p = q.astype(disp.dtype) + disp[..., axis]
        out.append((p - n * jnp.floor(p / n)).ravel())
    return out


def classify(geom: Geometry, scheme: Scheme, pos, starts, extents) -> Stencils:
    bases, weights, local, dest = [], [], [], jnp.zeros(pos[0].shape, jnp.int32)
    in_reach = jnp.ones(pos[0].shape, bool)
    for axis, (n, p) in enumerate(zip(geom.shape, pos)):
        base, w = stencil(scheme, p)
        base = base % n                # p may round up to exactly n
        bases.append(base)
        weights.append(w)
        if not geom.split(axis):
            local.append(base)
            continue
        width, extent = geom.ghosts[axis], extents[axis]
        offset = (base - starts[axis]) % n
        offset = jnp.where(offset >= extent + width, offset - n, offset)   # lo side (wrapped)
        in_reach &= (offset >= -width) & (offset + scheme.support - 1 < extent + width)
        local.append(width + offset)
        dest = dest * geom.parts[axis] + base // geom.chunk[axis]
    return Stencils(bases, weights, local, in_reach, dest)


def _corners(geom: Geometry, scheme: Scheme, st: Stencils, valid):
    """(flat block index, weight) of every stencil cell, per corner; invalid -> (0, 0)."""
    block = geom.block_shape
    for offsets in itertools.product(range(scheme.support), repeat=geom.ndim):
        flat, weight = 0, None
        for axis, j in enumerate(offsets):
            cell = st.local_base[axis] + j
            if not geom.split(axis):
                cell = cell % geom.shape[axis]
            flat = flat * block[axis] + cell
            w = st.weights[axis][j]
            weight = w if weight is None else weight * w
        assert weight is not None  # geom.ndim >= 1: _check_disp requires d >= 1
        yield jnp.where(valid, flat, 0), jnp.where(valid, weight, 0)


def scatter(geom: Geometry, scheme: Scheme, st: Stencils, mass, valid, dtype):
    """The ghosted block (flat) holding the mass of the valid particles."""
    index, value = zip(*[(i, w * mass) for i, w in _corners(geom, scheme, st, valid)])
    size = math.prod(geom.block_shape)
    return jnp.zeros(size, dtype).at[jnp.concatenate(index)].add(
        jnp.concatenate(value).astype(dtype))


def gather(geom: Geometry, scheme: Scheme, st: Stencils, field_flat, valid):
    """Interpolated values (n, k) of `field_flat` (block cells, k) at the valid particles."""
    out = None
    for index, weight in _corners(geom, scheme, st, valid):
        term = weight[:, None].astype(field_flat.dtype) * field_flat[index]
        out = term if out is None else out + term
    return out


class Routing(Protocol):
    """What the bounded exchange needs of a geometry (`Geometry` here, the catalogue's `Route`
    in catalogue_blocks.py): the devices it spans, the slots per pair, the mesh axes."""
    @property
    def ndev(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def names(self) -> tuple[str, ...]: ...


@dataclasses.dataclass
class Buckets:
    """Where each stray goes: send row (destination device) and slot, and who fit."""
    row: jax.Array        # destination, or ndev (dropped by the scatter) for non-sent
    slot: jax.Array
    sent: jax.Array
    most: jax.Array       # the most strays this device has for one destination


def bucket(geom: Routing, dest, stray) -> Buckets:
    # Rank of each stray among the strays for its destination: a cumulative count per
    # destination column (ndev columns; a sort would do for very many devices).
    onehot = (dest[:, None] == jnp.arange(geom.ndev, dtype=jnp.int32)) & stray[:, None]
    rank = jnp.cumsum(onehot, axis=0, dtype=jnp.int32) - 1
    slot = jnp.take_along_axis(rank, dest[:, None], axis=1)[:, 0]
    sent = stray & (slot < geom.capacity)
    return Buckets(jnp.where(sent, dest, geom.ndev), jnp.where(sent, slot, 0), sent,
                   jnp.max(onehot.sum(axis=0, dtype=jnp.int32)))


def pack(geom: Routing, b: Buckets, values, fill=0):
    """(ndev, capacity, ...) send buffer: value of each sent stray at (its row, its slot);
    `fill` in the empty slots."""
    buf = jnp.full((geom.ndev, geom.capacity) + values.shape[1:], fill, values.dtype)
    return buf.at[b.row, b.slot].set(values, mode="drop")


def exchange(geom: Routing, buf):
    """Row i of the result is what device i (linear over `names`) put in row `me` for us."""
    return jax.lax.all_to_all(buf, geom.names, 0, 0, tiled=False)


def received_stencils(geom: Geometry, scheme: Scheme, buf_pos, starts, extents):
    pos = [buf_pos[..., a].reshape(-1) for a in range(geom.ndim)]
    return classify(geom, scheme, pos, starts, extents)


def global_flat_index(geom: Geometry, starts):
    """Each particle's index in the flattened G (its Lagrangian cell), int32."""
    flat = jnp.zeros(geom.chunk, jnp.int32)
    for axis, n in enumerate(geom.shape):
        q = jax.lax.broadcasted_iota(jnp.int32, geom.chunk, axis) + starts[axis]
        flat = flat * n + q
    return flat.ravel()


@jax.custom_jvp
def poison(flag, poisoned, x, *deps):
    """`x` with NaN where `flag` (broadcast against x); the derivative NaN when `poisoned`.

    A plain ``jnp.where(flag, nan, x)`` has a zero derivative where it put the NaN, so an
    overflowing paint's gradient came back all zeros (and readout's finite garbage): a silent
    wrong answer. Here the tangent is ``x_dot * (NaN where flag, else 1)`` plus, when the
    scalar `poisoned` holds, ``NaN * sum(dep_dots)``: every cotangent of `x` and of each of
    `deps` (the block's displacements, weights, field) becomes NaN, even where it would be 0.
    When `poisoned` is False the extra term is ``0 * sum(...)``: the exact derivative."""
    return jnp.where(flag, jnp.nan, x).astype(x.dtype)


@poison.defjvp
def _poison_jvp(primals, tangents):
    flag, poisoned, x, *deps = primals
    x_dot = tangents[2]
    out = jnp.where(flag, jnp.nan, x).astype(x.dtype)
    scale = jnp.where(flag, jnp.nan, 1).astype(x.dtype)
    t = x_dot * scale
    if deps:
        bad = jnp.where(poisoned, jnp.nan, 0).astype(x.dtype)
        total = sum(jnp.sum(d).astype(x.dtype) for d in tangents[3:])
        t = t + bad * total
    return out, t
