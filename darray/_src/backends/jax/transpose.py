"""All-to-all transposes of local blocks, called inside a shard_map.

A transpose moves the split of a group of mesh axes from array axis `src` to array axis `dst`.
Uneven sizes: `dst` (local, true length) is zero-padded to a multiple of the parts so every
device sends equal pieces; after the exchange `src` is local again and is sliced back to its
true length, which drops the padding the old layout carried at the end of `src`. No extra
collectives, and the gradient of the padding is zero (pad and slice are each other's adjoint).

Why the exchange runs along a new leading axis: XLA's CPU backend turns every all-to-all into
per-destination slice copies, the exchange, and a concatenation (three passes over the block).
Written as ``all_to_all(split_axis=dst, concat_axis=src)``, a `dst` that is the minor axis (the
first pencil transpose) compiled to a separate concatenate *plus* a transposing copy: four
passes. Splitting `dst` into (parts, chunk), moving `parts` to the front, exchanging along axis
0 and merging the received axis into `src` leaves XLA one fused (transposing) copy on each side
of the exchange for every transpose: the 3-pass minimum. (At 256^3 on 8 virtual CPU devices
the wall/CPU-time difference is within the shared machine's noise; docs/fft.md.)
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax


def pad_axis(x, axis: int, length: int):
    """Zero-pad local axis `axis` at its end up to `length`."""
    extra = length - x.shape[axis]
    if extra <= 0:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return jnp.pad(x, widths)


def all_to_all_move(x, mesh_axes: tuple[str, ...], src: int, dst: int, src_len: int,
                    parts: int):
    """Block of an array split on `src` -> block of the array split on `dst`.

    Args:
      x: the local block; `dst` holds its full true length, `src` one chunk (padded).
      mesh_axes: the mesh axes splitting `src` (major to minor, as in the PartitionSpec).
      src, dst: array axes; after the call `src` is local, `dst` split in `parts` chunks.
      src_len: true logical length of `src`.
      parts: product of the sizes of `mesh_axes`.

    Returns:
      The new block: `src` of length `src_len`, `dst` of length ceil(n_dst / parts).
    """
    if parts == 1:  # a size-1 mesh axis: only the layout changes, no data moves
        return x
    chunk = -(-x.shape[dst] // parts)
    x = pad_axis(x, dst, chunk * parts)
    shape = x.shape
    # piece p (for the device of linear index p along mesh_axes) is chunk p of `dst`
    x = x.reshape(shape[:dst] + (parts, chunk) + shape[dst + 1:])
    x = jnp.moveaxis(x, dst, 0)
    name = mesh_axes[0] if len(mesh_axes) == 1 else tuple(mesh_axes)
    x = lax.all_to_all(x, name, split_axis=0, concat_axis=0, tiled=True)
    # axis 0 now indexes the sending device, i.e. which chunk of `src` the piece holds
    x = jnp.moveaxis(x, 0, src)
    merged = x.shape[src] * x.shape[src + 1]
    x = x.reshape(x.shape[:src] + (merged,) + x.shape[src + 2:])
    if x.shape[src] != src_len:
        x = lax.slice_in_dim(x, 0, src_len, axis=src)
    return x
