"""numpy references for halo tests: np.pad on the global array, cut at each block's window, and
jaxDecomp's exchange on the physical (ghost-carrying) array (`halo_reference`)."""
from __future__ import annotations

import itertools

import numpy as np

from darray._src.plans.halo_spec import NUMPY_MODE


def _pad(a, widths, rules, fill_value=0):
    """np.pad axis by axis (np.pad takes one mode per call; axis order matches np.pad's own)."""
    for axis, ((lo, hi), rule) in enumerate(zip(widths, rules)):
        pads = [(0, 0)] * a.ndim
        pads[axis] = (lo, hi)
        kw = {"constant_values": fill_value} if rule == "constant" else {}
        a = np.pad(a, pads, mode=NUMPY_MODE[rule], **kw)
    return a


def block_windows(layout):
    """For every block (tuple of block indices) whose blocks are all non-empty: the slices of
    its owned cells widened by the ghosts, in padded-global coordinates, and the matching slices
    into the physical array."""
    ranges = [range(layout.parts(a)) for a in range(layout.ndim)]
    for blk in itertools.product(*ranges):
        padded, phys = [], []
        for axis, b in enumerate(blk):
            lo, hi = layout.halo[axis]
            start, extent = layout.block_start(axis, b), layout.block_extent(axis, b)
            if extent == 0:
                break
            size = layout.block_shape[axis]
            padded.append(slice(start, start + lo + extent + hi))
            phys.append(slice(b * size, b * size + lo + extent + hi))
        else:
            yield blk, tuple(padded), tuple(phys)


def check_filled(y, host, rules, fill_value=0):
    """Assert every ghost (and owned cell) of every non-empty block equals np.pad's."""
    rules = (rules,) * host.ndim if isinstance(rules, str) else tuple(rules)
    ref = _pad(host, y.layout.halo, rules, fill_value)
    data = np.asarray(y.data)
    count = 0
    for blk, padded, phys in block_windows(y.layout):
        np.testing.assert_array_equal(data[phys], ref[padded], err_msg=f"block {blk}")
        count += 1
    assert count > 0


def _fold(a, axis, n, lo, hi, rule):
    """Adjoint of padding one axis: add each padded cell into the cell np.pad copied it from."""
    index = np.pad(np.arange(n), (lo, hi), mode=NUMPY_MODE[rule],
                   **({"constant_values": -1} if rule == "constant" else {}))
    if rule == "constant":
        index[:lo] = -1
        index[lo + n:] = -1
    out = np.zeros(a.shape[:axis] + (n,) + a.shape[axis + 1:], a.dtype)
    moved = np.moveaxis(a, axis, 0)
    target = np.moveaxis(out, axis, 0)
    keep = index >= 0
    np.add.at(target, index[keep], moved[keep])
    return out


def reduce_reference(y, rules):
    """halo_reduce in numpy: scatter each block's window into a padded global array, then fold
    the padding back axis by axis (last axis first: the reverse of the fill's order)."""
    layout = y.layout
    rules = (rules,) * layout.ndim if isinstance(rules, str) else tuple(rules)
    padded_shape = tuple(n + lo + hi for n, (lo, hi) in zip(layout.shape, layout.halo))
    acc = np.zeros(padded_shape, np.asarray(y.data).dtype)
    data = np.asarray(y.data)
    for _, padded, phys in block_windows(layout):
        acc[padded] += data[phys]
    # Owned cells were counted once per block; windows overlap only in ghosts, which is the
    # point: a ghost belongs to one block's window and to another block's owned range.
    for axis in reversed(range(layout.ndim)):
        lo, hi = layout.halo[axis]
        acc = _fold(acc, axis, layout.shape[axis], lo, hi, rules[axis])
    return acc


def halo_reference(phys, mesh_shape, extents, periods):
    """jaxDecomp's exchange in numpy: every device block is [h ghosts | own | h ghosts] on the
    exchanged axes; ghosts take the neighbouring blocks' own cells (np.pad's wrap), or zeros
    beyond a non-periodic end."""
    p0, p1 = mesh_shape
    axes = [a for a, p in ((0, p0), (1, p1)) if p > 1]
    blocks = [phys.shape[0] // p0, phys.shape[1] // p1]
    own = phys
    for a in axes:  # drop the ghosts: the array the blocks own
        h, n = extents[a], blocks[a]
        keep = np.concatenate([np.arange(b * n + h, (b + 1) * n - h)
                               for b in range(phys.shape[a] // n)])
        own = np.take(own, keep, axis=a)
    pad = [(0, 0)] * 3
    out = phys.copy()
    padded = own
    for a in axes:
        width = [(0, 0)] * 3
        width[a] = (extents[a], extents[a])
        padded = np.pad(padded, width, mode="wrap" if periods[a] else "constant")
    for i in range(p0):
        for j in range(p1):
            src = [slice(None)] * 3
            dst = [slice(i * blocks[0], (i + 1) * blocks[0]), slice(j * blocks[1],
                                                                    (j + 1) * blocks[1]),
                   slice(None)]
            for a, b in ((0, i), (1, j)):
                if a in axes:
                    c = blocks[a] - 2 * extents[a]
                    src[a] = slice(b * c, b * c + blocks[a])
                else:
                    src[a] = dst[a]
            out[tuple(dst)] = padded[tuple(src)]
    del pad
    return out
