"""A reshape that moves data between devices, block by block (issue 49, item 2).

XLA's partitioner lowers a reshape that merges or cuts a split axis of an *uneven* shape
through the logical array: it all-gathers the operand (12 blocks of temporaries per device for
(101, 67, 45) split (x, y) merged into (6767, 45)). Here every device builds its own output
block from the pieces the other devices send it, in rounds of one collective-permute each:

* The plan (host side, static): for each output block, the range of input rows (axis 0) its
  row-major cells come from; for each input block it overlaps, the device holding that block
  (the one agreeing with the receiver on the mesh axes the input does not use) sends a window
  of those rows. Pairs are grouped by the difference of the devices' linear indices, so each
  round is a permutation (every device sends one window and receives one).
* A round: the sender cuts a window of `rows[k]` rows (the largest any pair of the round
  needs) at its offset, `lax.ppermute` moves it, and the receiver reads, for every cell of
  its output block, the cell's input element from the window where that element's owner is
  this round's sender (an index computed from iotas, fused into the gather).
* Rounds are chained by an optimization barrier, so one window is in flight at a time: the
  temporaries are the window sent, the window received and the output being built, about 2
  to 3 blocks, never the whole array (tests/multidevice/engine/test_reshape_blockwise.py).

Where XLA's partitioner moves the blocks itself without gathering (`xla_is_blockwise`: even
shapes merged along leading split axes, an all-to-all or no move), manipulation.reshape keeps
its program: 10-30x faster on CPU than these rounds.
"""
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.layout.layout import Layout
from darray._src.placement import physical

_INT32_MAX = 2**31 - 1
_TILES = 16  # tiles of an output block per round: the index arrays' share of a block


def supported(src: Layout, dst: Layout) -> bool:
    """Whether the block-wise path applies: plain layouts on one mesh of several devices, a
    non-empty array of rank >= 1 on both sides, indices that fit the index dtype."""
    if src.has_halo or dst.has_halo or src.mesh is not dst.mesh or src.mesh.size < 2:
        return False
    size = math.prod(src.shape)
    if not src.shape or not dst.shape or size == 0:
        return False
    return size <= _INT32_MAX or bool(jax.config.read("jax_enable_x64"))


@functools.lru_cache(maxsize=512)
def xla_is_blockwise(src: Layout, dst: Layout) -> bool:
    """Whether XLA's partitioner reshapes src into dst with no all-gather (an all-to-all, or
    nothing at all when merging leading split axes of even shapes); it is then 10-30x faster
    than the rounds here (CPU, 0.3-3 MB blocks). Decided once per pair of layouts from the
    compiled HLO: on uneven shapes, and on some even ones, it gathers the operand. Only the
    answer is cached; the program compiled to find it is dropped (_xla_reshape_hlo)."""
    if src.is_padded or dst.is_padded:
        return False
    return "all-gather" not in _xla_reshape_hlo(src, dst)


def _xla_reshape_hlo(src: Layout, dst: Layout) -> str:
    """The HLO of XLA's own reshape of src's logical array into dst, compiled and let go."""
    def move(data):
        logical = physical.to_logical(data, src).reshape(dst.shape)
        return physical.logical_to_physical(logical, dst)
    arg = jax.ShapeDtypeStruct(src.physical_shape, np.float32,
                               sharding=physical.sharding_of(src))
    compiled = jax.jit(move, out_shardings=physical.sharding_of(dst)).lower(arg).compile()
    return compiled.as_text() or "all-gather"  # no text: assume the worst, take the rounds


def _ravel(index: Sequence[int], shape: Sequence[int]) -> int:
    f = 0
    for i, n in zip(index, shape):
        f = f * n + i
    return f


def _device_coords(mesh) -> list[dict[str, int]]:
    """Mesh coordinates of every device, in linear (row-major over the mesh axes) order."""
    names = mesh.axis_names
    return [dict(zip(names, c)) for c in itertools.product(*(range(mesh.shape[n])
                                                             for n in names))]


def _linear(coords: dict[str, int], mesh) -> int:
    return _ravel([coords[n] for n in mesh.axis_names], [mesh.shape[n] for n in mesh.axis_names])


def _block_coords(layout: Layout, axis: int, block: int) -> dict[str, int]:
    """Mesh coordinates (of the axes splitting `axis`) of the devices holding `block`."""
    out = {}
    for name in reversed(layout.split[axis]):
        size = layout.mesh_shape[name]
        out[name] = block % size
        block //= size
    return out


def plan(src: Layout, dst: Layout) -> tuple[tuple[int, tuple[tuple[int, int], ...], int,
                                                  tuple[int, ...]], ...]:
    """The rounds: (shift k, permutation pairs (sender, receiver), window rows (the same in
    every round), offset of the window in each device's block (by linear index; 0 where the
    device sends nothing))."""
    mesh = src.mesh
    coords = _device_coords(mesh)
    p = len(coords)
    old, new = src.shape, dst.shape
    row = math.prod(old[1:])                      # input cells per row of axis 0
    rows_in_block = src.block_shape[0]
    pairs: dict[int, dict[int, tuple[int, int, int]]] = {}  # k -> receiver -> (sender, lo, hi)
    for d, cd in enumerate(coords):
        lo_box = [dst.block_start(b, dst.block_index(b, cd)) for b in range(dst.ndim)]
        ext = [dst.block_extent(b, dst.block_index(b, cd)) for b in range(dst.ndim)]
        if 0 in ext:
            continue
        first = _ravel(lo_box, new) // row
        last = _ravel([lo + e - 1 for lo, e in zip(lo_box, ext)], new) // row
        per_axis = [range(src.parts(a)) for a in range(src.ndim)]
        for blocks in itertools.product(*per_axis):
            if any(src.block_extent(a, b) == 0 for a, b in enumerate(blocks)):
                continue
            start0 = src.block_start(0, blocks[0])
            lo = max(first, start0)
            hi = min(last, start0 + src.block_extent(0, blocks[0]) - 1)
            if lo > hi:
                continue
            cs = dict(cd)
            for a, b in enumerate(blocks):
                cs.update(_block_coords(src, a, b))
            s = _linear(cs, mesh)
            pairs.setdefault((s - d) % p, {})[d] = (s, lo - start0, hi - start0)
    rounds = []
    # one window size for every round: the rounds run in one loop, one buffer per window
    rows = max(hi - lo + 1 for by_recv in pairs.values() for _, lo, hi in by_recv.values())
    for k in sorted(pairs):
        by_recv = pairs[k]
        offsets = [0] * p
        for s, lo, _ in by_recv.values():
            offsets[s] = min(lo, rows_in_block - rows)
        perm = tuple((s, d) for d, (s, _, _) in sorted(by_recv.items()))
        rounds.append((k, perm, rows, tuple(offsets)))
    return tuple(rounds)


@program_cache(SMALL)
def reshape_fn(src: Layout, dst: Layout):
    """The jitted program: src's physical data -> dst's physical data."""
    mesh = src.mesh
    names = tuple(mesh.axis_names)
    sizes = [mesh.shape[n] for n in names]
    p = math.prod(sizes)
    rounds = plan(src, dst)
    old, new = src.shape, dst.shape
    idx = np.int32 if math.prod(old) <= _INT32_MAX else np.int64
    in_strides = [math.prod(old[a + 1:]) for a in range(len(old))]
    out_strides = [math.prod(new[b + 1:]) for b in range(len(new))]

    def block_no(layout: Layout, axis: int, coords):
        b = jnp.zeros((), idx)
        for n in layout.split[axis]:
            b = b * layout.mesh_shape[n] + coords[n]
        return b

    def indices(me, start, shape):
        """For every cell of this device's output block: whether it is a logical cell, the
        linear index of the device owning its input element, and that element's place in the
        owner's block (per input axis). Computed in the loop body, so XLA fuses it into the
        round's gather instead of keeping int arrays of a block's size alive."""
        flat = jnp.zeros(shape, idx)
        valid = jnp.ones(shape, bool)
        for b in range(len(new)):
            o = jax.lax.broadcasted_iota(idx, shape, b) + block_no(dst, b, me) * dst.chunk(b)
            if b == 0:
                o = o + start
            valid = valid & (o < new[b])
            flat = flat + o * out_strides[b]
        local, digits = [], {}
        for a in range(len(old)):
            i = (flat // in_strides[a]) % old[a]
            if not src.split[a]:
                local.append(i)
                continue
            q = i // src.chunk(a)
            local.append(i - q * src.chunk(a))
            for n in reversed(src.split[a]):
                digits[n] = q % mesh.shape[n]
                q = q // mesh.shape[n]
        owner = jnp.zeros(shape, idx)
        for n, s in zip(names, sizes):
            owner = owner * s + digits.get(n, me[n])
        return valid, owner, local

    rows = max(r for _, _, r, _ in rounds)
    out_rows = dst.block_shape[0]
    tiles = min(out_rows, _TILES)
    tile = -(-out_rows // tiles)
    tile_shape = (tile,) + tuple(dst.block_shape[1:])
    shifts = np.asarray([k for k, _, _, _ in rounds], idx)
    offsets = np.asarray([o for _, _, _, o in rounds], idx).reshape(len(rounds), p)

    def body(block):
        me = {n: jax.lax.axis_index(n).astype(idx) for n in names}
        lin = jnp.zeros((), idx)
        for n, s in zip(names, sizes):
            lin = lin * s + me[n]
        table = jnp.asarray(offsets)

        def exchange(perm):
            def run(window):
                return jax.lax.ppermute(window, names, perm) if perm else window
            return run

        def round_(j, out):
            # a loop, so XLA runs the rounds one after the other and reuses one window's
            # buffers (unrolled, it cut every window first); the switch picks the round's
            # static permutation
            window = jax.lax.dynamic_slice_in_dim(block, table[j, lin], rows, axis=0)
            got = jax.lax.switch(j, [exchange(perm if k else ()) for k, perm, _, _ in rounds],
                                 window).reshape(-1)
            sender = (lin + jnp.asarray(shifts)[j]) % p
            off = table[j, sender]

            def tile_(t, out):
                # the output in tiles of rows: XLA's CPU fusion keeps the integer index
                # arithmetic (divisions feeding several uses) as arrays, a tile's worth each
                start = jnp.minimum(t * tile, out_rows - tile).astype(idx)
                valid, owner, local = indices(me, start, tile_shape)
                pos = jnp.clip(local[0] - off, 0, rows - 1)
                for a in range(1, len(old)):
                    pos = pos * block.shape[a] + local[a]
                vals = jnp.take(got, pos, mode="clip")
                old_tile = jax.lax.dynamic_slice_in_dim(out, start, tile, axis=0)
                new_tile = jnp.where(valid & (owner == sender), vals, old_tile)
                return jax.lax.dynamic_update_slice_in_dim(out, new_tile, start, axis=0)

            return jax.lax.fori_loop(0, tiles, tile_, out)

        return jax.lax.fori_loop(0, len(rounds), round_,
                                 jnp.zeros(dst.block_shape, block.dtype))

    mapped = compat.shard_map(body, mesh=mesh, in_specs=(src.spec,), out_specs=dst.spec,
                              check_vma=False)
    return jax.jit(mapped, out_shardings=physical.sharding_of(dst))
