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

The exchange itself is injectable (`exchange=`): by default `lax_exchange` (XLA's all-to-all);
the MPI backend passes its own, which does the same row exchange with MPI_Alltoall.
"""
from __future__ import annotations

import itertools

import jax.numpy as jnp
from jax import lax


def lax_exchange(x, names):
    """Row i of the leading axis goes to device i of the mesh axes `names`; row i of the result
    came from device i (``lax.all_to_all(split_axis=0, concat_axis=0, tiled=True)``)."""
    return lax.all_to_all(x, names, split_axis=0, concat_axis=0, tiled=True)


def pad_axis(x, axis: int, length: int):
    """Zero-pad local axis `axis` at its end up to `length`."""
    extra = length - x.shape[axis]
    if extra <= 0:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return jnp.pad(x, widths)


def all_to_all_move(x, mesh_axes: tuple[str, ...], src: int, dst: int, src_len: int,
                    parts: int, exchange=lax_exchange):
    """Block of an array split on `src` -> block of the array split on `dst`.

    Args:
      x: the local block; `dst` holds its full true length, `src` one chunk (padded).
      mesh_axes: the mesh axes splitting `src` (major to minor, as in the PartitionSpec).
      src, dst: array axes; after the call `src` is local, `dst` split in `parts` chunks.
      src_len: true logical length of `src`.
      parts: product of the sizes of `mesh_axes`.
      exchange: ``exchange(rows, names)``, the row exchange over the mesh axes `names`.

    Returns:
      The new block: `src` of length `src_len`, `dst` of length ceil(n_dst / parts).
    """
    if parts == 1:  # a size-1 mesh axis: only the layout changes, no data moves
        return x
    chunk = -(-x.shape[dst] // parts)
    padded = chunk * parts != x.shape[dst]
    x = pad_axis(x, dst, chunk * parts)
    shape = x.shape
    # piece p (for the device of linear index p along mesh_axes) is chunk p of `dst`
    x = x.reshape(shape[:dst] + (parts, chunk) + shape[dst + 1:])
    x = jnp.moveaxis(x, dst, 0)
    name = mesh_axes[0] if len(mesh_axes) == 1 else tuple(mesh_axes)
    if padded:
        # The barrier materialises the operand first. Without it XLA (jax 0.10 and 0.12) fused
        # the padding slices of an all-split 3-D fold, e.g. (7, 13, 17) on a (2, 2, 2) mesh,
        # into an all-to-all its own HLO verifier then rejected ("operands with different
        # shapes"). Only padded operands need it: elsewhere it costs a whole extra copy of the
        # block (XLA then cannot fuse the move into the all-to-all's send slices).
        x = lax.optimization_barrier(x)
    x = exchange(x, name)
    # axis 0 now indexes the sending device, i.e. which chunk of `src` the piece holds
    x = jnp.moveaxis(x, 0, src)
    merged = x.shape[src] * x.shape[src + 1]
    x = x.reshape(x.shape[:src] + (merged,) + x.shape[src + 2:])
    if x.shape[src] != src_len:
        x = lax.slice_in_dim(x, 0, src_len, axis=src)
    return x


def merge_move(x, groups, srcs, dst: int, src_lens, parts_each, exchange=lax_exchange):
    """Several splits move onto one axis in ONE all-to-all (plan.Merge with a shared dst).

    Args:
      x: the local block; `dst` local (true length), each ``srcs[i]`` split by ``groups[i]``.
      groups: the mesh-axis tuples, in the order they make up `dst`'s new split (major first).
      srcs: the array axes they leave (each becomes local). src_lens: their true lengths.
      parts_each: the device count of each group.

    Returns:
      The new block: every src local (true length), `dst` split over all groups together.
    """
    total = 1
    for p in parts_each:
        total *= p
    chunk = -(-x.shape[dst] // total)
    x = pad_axis(x, dst, chunk * total)
    shape = x.shape
    x = x.reshape(shape[:dst] + (total, chunk) + shape[dst + 1:])
    x = jnp.moveaxis(x, dst, 0)
    names = tuple(name for g in groups for name in g)
    x = exchange(x, names)
    # axis 0 is the sender's linear index over `names`: one digit per group, major first
    x = x.reshape(tuple(parts_each) + x.shape[1:])
    k = len(groups)
    for i, (src, n) in enumerate(zip(srcs, src_lens)):
        lead = k - i - 1                 # group digits still in front after this one
        x = jnp.moveaxis(x, 0, lead + src)
        pos = lead + src
        x = x.reshape(x.shape[:pos] + (x.shape[pos] * x.shape[pos + 1],) + x.shape[pos + 2:])
        if x.shape[pos] != n:
            x = lax.slice_in_dim(x, 0, n, axis=pos)
    return x


def scatter_move(x, groups, src: int, dsts, src_len: int, parts_each, exchange=lax_exchange):
    """The reverse of `merge_move`: a merged split on `src` is dealt out, ``groups[i]`` to
    ``dsts[i]`` (each local before), in ONE all-to-all; `src` becomes local."""
    chunks = []
    for d, p in zip(dsts, parts_each):
        chunk = -(-x.shape[d] // p)
        x = pad_axis(x, d, chunk * p)
        chunks.append(chunk)
    # The send rows as a stack of boxes cut from the block (row = the receiver's linear index
    # over the groups, major first). Written as reshapes and one transpose, XLA (jax 0.10 and
    # 0.12) first copied 7/8 of the block into a concatenated buffer of the block's size and
    # cut the rows from that: an extra pass before every merged inverse's all-to-all. Cut as
    # boxes, the all-to-all's row slices of the stack fold back onto the boxes: one fused copy
    # per row, as in `all_to_all_move`.
    rows = []
    for digits in itertools.product(*(range(p) for p in parts_each)):
        start, limit = [0] * x.ndim, list(x.shape)
        for d, c, j in zip(dsts, chunks, digits):
            start[d], limit[d] = j * c, (j + 1) * c
        rows.append(lax.slice(x, start, limit))
    x = jnp.stack(rows)
    names = tuple(name for g in groups for name in g)
    x = exchange(x, names)
    x = jnp.moveaxis(x, 0, src)
    x = x.reshape(x.shape[:src] + (x.shape[src] * x.shape[src + 1],) + x.shape[src + 2:])
    if x.shape[src] != src_len:
        x = lax.slice_in_dim(x, 0, src_len, axis=src)
    return x
