"""Block-level code for catalogues: what every device runs inside `shard_map` to paint an
``(M, d)`` catalogue onto a grid of any shape, or to read a grid at its positions.

A catalogue is split by rows over *all* the mesh axes (`Route.names`), so every device holds
``rows`` particles, the last ones padding when M does not divide. The grid is split over some
of those axes. Each particle is *routed*: sent, in one bounded ``all_to_all`` over
`Route.names` (at most `capacity` particles per sender and receiver), to the device that owns
its stencil's base cell -- on the mesh axes the grid is not split over, the device keeps its
own coordinate, so grid replicas each get a share of the particles. The owner deposits the
particle into its block extended by ``support - 1`` ghost cells on the high side of each split
axis (the stencil starts at the base cell, so never reaches below it), and `halo_reduce` adds
the ghosts into the neighbours; replicas' partial sums are added by one ``psum``. Readout is
the same route, a read from the haloed field block, and the reverse ``all_to_all`` back to
each particle's own row.

Ghosted block along a split axis (see darray/_src/plans/halo_plan.py, halo (0, W)):
``[e owned | W ghosts | padding]``: the cell at offset ``o`` from the block's first owned
cell sits at ``o`` for ``0 <= o < e + W``. Unsplit axes have no ghosts; cells there wrap.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp

from darray._src.particles import deposit as dep
from darray._src.particles.schemes import Scheme, stencil


@dataclasses.dataclass(frozen=True)
class Route:
    """Static facts of one (catalogue, grid) pair, for the block functions (a cache key)."""
    shape: tuple[int, ...]              # the grid G
    chunk: tuple[int, ...]              # grid cells per block, per axis
    split: tuple[tuple[str, ...], ...]  # the mesh axes splitting each grid axis
    ghosts: tuple[int, ...]             # high-side ghost width per axis (0 on unsplit axes)
    names: tuple[str, ...]              # the mesh axes splitting the catalogue rows: the
    sizes: tuple[int, ...]              #   exchange's axes (all of the mesh's) and sizes
    rows: int                           # catalogue rows per device
    count: int                          # M, the catalogue's length
    capacity: int                       # particles per (sender, receiver) pair
    scale: tuple[float, ...] | None     # grid cells per box unit per axis; None: grid units

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def ndev(self) -> int:
        return math.prod(self.sizes)

    @property
    def block_shape(self) -> tuple[int, ...]:
        return tuple(c + w for c, w in zip(self.chunk, self.ghosts))

    @property
    def unused(self) -> tuple[str, ...]:
        """Mesh axes the grid is replicated over (its blocks' partial sums are added)."""
        used = {name for names in self.split for name in names}
        return tuple(name for name in self.names if name not in used)

    def is_split(self, axis: int) -> bool:
        return bool(self.split[axis]) and math.prod(
            self.sizes[self.names.index(n)] for n in self.split[axis]) > 1


def my_rows(route: Route):
    """(valid, global row index) of this device's catalogue rows; padding rows invalid."""
    first = jax.lax.axis_index(route.names) * route.rows
    row = first + jax.lax.iota(jnp.int32, route.rows)
    return row < route.count, row


def wrapped(route: Route, pos, ok):
    """Positions in grid cells wrapped into [0, n) per axis, (rows, d); rows not ok -> 0.

    The double ``where`` keeps a NaN position out of the gradient; the wrap's ``floor`` has a
    zero derivative, so d(wrapped)/d(pos) is the scale."""
    pos = jnp.where(ok[:, None], pos, 0)
    if route.scale is not None:
        pos = pos * jnp.asarray(route.scale, pos.dtype)
    n = jnp.asarray(route.shape, pos.dtype)
    return pos - n * jnp.floor(pos / n)


def destination(route: Route, scheme: Scheme, pos):
    """Linear device index (over `route.names`) owning each particle's base cell."""
    coord = {}
    for axis, names in enumerate(route.split):
        if not names:
            continue
        base, _ = stencil(scheme, pos[:, axis])
        block = (base % route.shape[axis]) // route.chunk[axis]
        for name in reversed(names):            # the split's names run major to minor
            size = route.sizes[route.names.index(name)]
            coord[name] = block % size
            block = block // size
    dest = jnp.zeros(pos.shape[:1], jnp.int32)
    for name, size in zip(route.names, route.sizes):
        c = coord[name] if name in coord else jax.lax.axis_index(name)
        dest = dest * size + c
    return dest


def _grid_starts(route: Route):
    starts = []
    for axis, names in enumerate(route.split):
        if route.is_split(axis):
            b = jax.lax.axis_index(names)
            starts.append(jnp.minimum(b * route.chunk[axis], route.shape[axis]))
        else:
            starts.append(jnp.int32(0))
    return starts


def corners(route: Route, scheme: Scheme, pos, valid):
    """(flat index into this device's ghosted block, weight) for every stencil corner of the
    received particles `pos` (n, d) that this device owns; invalid particles -> (0, 0)."""
    starts = _grid_starts(route)
    local, weights = [], []
    for axis, n in enumerate(route.shape):
        base, w = stencil(scheme, pos[:, axis])
        base = base % n                          # a position may round up to exactly n
        local.append(base - starts[axis] if route.is_split(axis) else base)
        weights.append(w)
    block = route.block_shape
    for offsets in itertools.product(range(scheme.support), repeat=route.ndim):
        flat, weight = jnp.int32(0), None
        for axis, j in enumerate(offsets):
            cell = local[axis] + j
            if not route.is_split(axis):
                cell = cell % route.shape[axis]
            flat = flat * block[axis] + cell
            w = weights[axis][j]
            weight = w if weight is None else weight * w
        assert weight is not None  # route.ndim >= 1: pos has at least one coordinate
        yield jnp.where(valid, flat, 0), jnp.where(valid, weight, 0)


def route_out(route: Route, scheme: Scheme, pos, ok, *payload):
    """Send every ok particle to its owner: (buckets, most, received positions (n, d),
    received ok (n,), received payloads (n, ...)).

    An empty slot holds the position -1 (wrapped positions are >= 0), so the receiver tells
    the particles from the empty slots without a separate flag exchange."""
    b = dep.bucket(route, destination(route, scheme, pos), ok)
    most = jax.lax.pmax(b.most, route.names)
    got = [dep.exchange(route, dep.pack(route, b, v, fill)) for v, fill in
           [(pos, -1)] + [(v, 0) for v in payload]]
    flat = [g.reshape((route.ndev * route.capacity,) + g.shape[2:]) for g in got]
    return b, most, flat[0], flat[0][:, 0] >= 0, flat[1:]


def first_nan(route: Route, valid, row, finite):
    bad = jnp.min(jnp.where(valid & ~finite, row, dep.NO_NAN), initial=dep.NO_NAN)  # M = 0
    return jax.lax.pmin(bad, route.names)


def paint_block(route: Route, scheme: Scheme, dtype, pos_b, w_b):
    """This device's ghosted grid block (flat) with its share of the catalogue's mass, the
    most particles one device sent to one other, and the first non-finite row (or NO_NAN)."""
    valid, row = my_rows(route)
    finite = jnp.all(jnp.isfinite(pos_b), axis=-1)
    ok = valid & finite
    pos = wrapped(route, pos_b, ok)
    if w_b is None:                   # unit masses: nothing to send but the positions
        _, most, got_pos, got_ok, _ = route_out(route, scheme, pos, ok)
        got_mass = jnp.ones(got_ok.shape, dtype)
    else:
        mass = jnp.where(ok, w_b, 0).astype(dtype)
        _, most, got_pos, got_ok, (got_mass,) = route_out(route, scheme, pos, ok, mass)
    index, value = zip(*[(i, w * got_mass) for i, w in corners(route, scheme, got_pos, got_ok)])
    block = jnp.zeros(math.prod(route.block_shape), dtype).at[jnp.concatenate(index)].add(
        jnp.concatenate(value).astype(dtype))
    if route.unused:
        block = jax.lax.psum(block, route.unused)
    bad = first_nan(route, valid, row, finite)
    poisoned = (most > route.capacity) | (bad != dep.NO_NAN)
    # NaN, and a NaN derivative w.r.t. the positions and weights (never a silent zero)
    deps = (pos_b,) if w_b is None else (pos_b, w_b)
    block = dep.poison(poisoned, poisoned, block, *deps)
    return block.reshape(route.block_shape), most, bad


def readout_block(route: Route, scheme: Scheme, dtype, field_b, pos_b):
    """The field (ghosted block `field_b`, maybe with a trailing component axis) at this
    device's particles, (rows, k); the overflow count and first non-finite row as above."""
    valid, row = my_rows(route)
    finite = jnp.all(jnp.isfinite(pos_b), axis=-1)
    ok = valid & finite
    pos = wrapped(route, pos_b, ok)
    b, most, got_pos, got_ok, _ = route_out(route, scheme, pos, ok)
    flat = field_b.reshape(math.prod(route.block_shape), -1).astype(dtype)
    found = None
    for index, weight in corners(route, scheme, got_pos, got_ok):
        term = weight[:, None].astype(dtype) * flat[index]
        found = term if found is None else found + term
    assert found is not None
    back = dep.exchange(route, found.reshape(route.ndev, route.capacity, -1))
    values = back[b.row.clip(0, route.ndev - 1), b.slot]
    values = jnp.where(b.sent[:, None], values, 0)
    bad = first_nan(route, valid, row, finite)
    poisoned = (most > route.capacity) | (bad != dep.NO_NAN)
    # the particles that did not fit (or are not finite) read NaN; then the derivative with
    # respect to the field and the positions is NaN everywhere (never finite garbage)
    lost = (ok & ~b.sent) | (valid & ~finite)
    values = dep.poison(lost[:, None], poisoned, values, field_b, pos_b)
    return values, most, bad
