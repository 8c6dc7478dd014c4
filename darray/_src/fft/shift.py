"""fftshift / ifftshift of an array with split shifted axes: one shard_map of neighbour exchanges.

Why not XLA's partitioner (jnp.fft.fftshift on the logical array, engine.apply_logical): on an
uneven split the wrap-around joins cell n-1 to cell 0, not the padded end to 0, so XLA rolls the
padded axis twice (by k and by k + padding), each as two collective-permutes and a
concatenation, and selects between the two: four received pieces and two block-sized
concatenations, 3.0017 blocks of temporaries for ifftshift of (37, 203, 19) split over 8
(issue 49).

Here the second roll is the first one rolled again by the padding: cells i >= k of the result
are the padded roll R_k of the block (they read cells 0..n-k-1), cells i < k the padded roll
R_{k+pad} = R_pad(R_k) (they read cells n-k..n-1). R_pad moves only `pad` cells (fewer than the
parts) from the previous block, so the second roll is a thin collective-permute: one received
block, one concatenation, 2.1 blocks. Unsplit shifted axes are rolled locally in the same body,
after the split one (XLA fuses them into the final select). Used where exactly one shifted axis
is split (`splits_a_shifted_axis`). Padding cells of the result hold whatever lands there
(they are not part of the array).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.layout.layout import Layout


def _block_number(names, mesh):
    """This device's block number along an axis split over mesh axes `names` (major first)."""
    sizes = dict(mesh.shape)
    number = jnp.int32(0)
    for name in names:
        number = number * sizes[name] + lax.axis_index(name).astype(jnp.int32)
    return number


def _ring_roll(block, axis: int, shift: int, names, parts: int, chunk: int, mesh):
    """The padded axis (parts * chunk cells, `chunk` per block) rolled by `shift` cells.

    With shift = q * chunk + r, output block b is the last r cells of input block b-q-1
    followed by the first chunk-r cells of block b-q: two slabs, each sent by ppermute
    (none where it stays on its device)."""
    q, r = divmod(shift % (parts * chunk), chunk)

    def send(slab, hops):
        if hops % parts == 0:
            return slab
        pairs = [(j, (j + hops) % parts) for j in range(parts)]
        return compat.ppermute_blocks(slab, names, pairs, mesh)
    head = lax.slice_in_dim(block, 0, chunk - r, axis=axis)
    if r == 0:
        return send(head, q)
    tail = lax.slice_in_dim(block, chunk - r, chunk, axis=axis)
    return jnp.concatenate([send(tail, q + 1), send(head, q)], axis=axis)


def _roll_split(block, axis: int, shift: int, n: int, names, parts: int, chunk: int, mesh):
    """Roll a split axis of logical length `n` by `shift` (0 < shift < n), per block."""
    rolled = _ring_roll(block, axis, shift, names, parts, chunk, mesh)
    pad = parts * chunk - n
    if pad == 0:
        return rolled
    wrapped = _ring_roll(rolled, axis, pad, names, parts, chunk, mesh)
    start = _block_number(names, mesh) * chunk
    index = lax.broadcasted_iota(jnp.int32, block.shape, axis) + start
    return jnp.where(index < shift, wrapped, rolled)


@program_cache(SMALL)
def _shift_fn(layout: Layout, shifts: tuple[tuple[int, int], ...]):
    """The jitted program rolling the physical array of `layout` by `shifts` ((axis, k) with
    0 < k < n, k the roll of the logical axis)."""
    def body(block):
        for axis, k in shifts:
            if layout.parts(axis) > 1:
                block = _roll_split(block, axis, k, layout.shape[axis], layout.split[axis],
                                    layout.parts(axis), layout.chunk(axis), layout.mesh)
        for axis, k in shifts:  # local rolls last: XLA fuses them into the final select
            if layout.parts(axis) == 1:
                block = jnp.roll(block, k, axis=axis)
        return block
    fn = compat.shard_map(body, mesh=layout.mesh, in_specs=(layout.spec,),
                          out_specs=layout.spec)
    return jax.jit(fn)


def splits_a_shifted_axis(layout: Layout, axes) -> bool:
    """Whether this module rolls `axes` of `layout`: no halo and exactly one shifted axis split.
    Two split axes rolled one after the other hold the first roll's result beside the second
    roll's pieces: fftshift of (101, 67, 45) on a (4, 2) mesh planned 3.97 blocks, against
    2.97 by XLA's partitioner, which rolls both at once."""
    return not layout.has_halo and sum(layout.parts(a) > 1 for a in set(axes)) == 1


def shifted(data, layout: Layout, axes, inverse: bool):
    """The physical array of `layout` (no halo) with numpy's fftshift (ifftshift if `inverse`)
    of logical `axes` applied; same layout."""
    total: dict[int, int] = {}
    for a in axes:  # a repeated axis is shifted again, as numpy's roll does
        n = layout.shape[a]
        total[a] = total.get(a, 0) + (-(n // 2) if inverse else n // 2)
    shifts = [(a, k % layout.shape[a]) for a, k in sorted(total.items())
              if layout.shape[a] and k % layout.shape[a]]
    if not shifts:
        return data
    return _shift_fn(layout, tuple(shifts))(data)


__all__ = ["shifted", "splits_a_shifted_axis"]
