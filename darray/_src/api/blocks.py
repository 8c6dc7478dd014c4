"""map_blocks: run a local function on every device's block and assemble a DistArray.

The escape hatch for stencils, particle deposits and anything else that is local once the
ghosts are in place: ``darray.map_blocks(laplacian, x.halo(1))``.
"""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.base import compat
from darray._src.base.errors import LayoutError
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array
from darray._src.layout.layout import Layout
from darray._src.placement import physical


@dataclasses.dataclass(frozen=True)
class BlockInfo:
    """Where this device's block sits, for the reference (first DistArray) argument.

    Attributes:
      start: per axis, the global logical index of the first owned cell (traced int32).
      extent: per axis, the number of owned cells (traced int32; less than `chunk` in the short
        block of an uneven split, 0 in a trailing empty block).
      chunk: per axis, the cells a block can hold (static).
      halo: per axis (lo, hi) ghost widths (static). Owned cells are at ``[lo, lo + extent)``,
        hi ghosts right after them.

    The short block of an uneven split holds padding cells (``chunk - extent`` of them, after the
    hi ghosts). A block function that treats every cell as data (a particle deposit: every
    cell of a displacement array is a particle) must ignore them: `owned_mask` says which
    cells are real. `map_blocks` hands them to `f` as NaN in floating blocks, so a function that
    reads them gives NaN rather than a plausible wrong answer.
    """
    start: tuple
    extent: tuple
    chunk: tuple[int, ...]
    halo: tuple[tuple[int, int], ...]

    def owned_mask(self, *, ghosts: bool = True):
        """Boolean array, True on the cells this block owns (traced, inside `f`).

        Args:
          ghosts: True (default): the mask has the reference block's shape, ghosts included
            (``lo + chunk + hi`` per axis), True on ``[lo, lo + extent)``. False: the shape of a
            halo-free block of the same split (``chunk`` per axis), True on ``[0, extent)`` --
            what a particle array split like a haloed grid needs.

        Ghosts and padding are False, so ``jnp.where(info.owned_mask(ghosts=False), w, 0)``
        drops the padding particles of an uneven split from a deposit.
        """
        mask = None
        ndim = len(self.chunk)
        for axis, (chunk, (lo, hi), extent) in enumerate(zip(self.chunk, self.halo, self.extent)):
            size, first = (lo + chunk + hi, lo) if ghosts else (chunk, 0)
            shape = tuple(size if a == axis else 1 for a in range(ndim))
            index = jax.lax.broadcasted_iota(np.int32, shape, axis)
            along = (index >= first) & (index < first + extent)
            mask = along if mask is None else mask & along
        block = tuple((lo + c + hi) if ghosts else c for c, (lo, hi) in zip(self.chunk, self.halo))
        return jnp.broadcast_to(mask if mask is not None else jnp.bool_(True), block)


def block_info_of(layout: Layout) -> BlockInfo:
    starts, extents = [], []
    for axis in range(layout.ndim):
        if layout.parts(axis) > 1:
            b = jax.lax.axis_index(layout.split[axis])
            table = np.array([layout.block_extent(axis, k) for k in range(layout.parts(axis))],
                             np.int32)
            starts.append(jnp.minimum(b * layout.chunk(axis), layout.shape[axis]).astype(np.int32))
            extents.append(jnp.asarray(table)[b])
        else:
            starts.append(jnp.int32(0))
            extents.append(jnp.int32(layout.shape[axis]))
    return BlockInfo(tuple(starts), tuple(extents),
                     tuple(layout.chunk(a) for a in range(layout.ndim)), layout.halo)


def _infer_layout(ref: Layout, block_shape, index: int) -> Layout:
    """Output layout from the block shape f returned: per axis, the reference block with its
    ghosts (halo kept) or without them (halo dropped)."""
    if len(block_shape) != ref.ndim:
        raise LayoutError(f"map_blocks: output {index} has blocks of rank {len(block_shape)} but "
                          f"the first DistArray argument has rank {ref.ndim}; pass out_layout=")
    halo = []
    for axis, (got, (lo, hi)) in enumerate(zip(block_shape, ref.halo)):
        chunk = ref.chunk(axis)
        if got == lo + chunk + hi:
            halo.append((lo, hi))
        elif got == chunk:
            halo.append((0, 0))
        else:
            raise LayoutError(
                f"map_blocks: output {index} has blocks of shape {tuple(block_shape)}; along axis "
                f"{axis} a block must have {chunk} cells (the owned chunk) or {lo + chunk + hi} "
                f"(chunk plus ghosts {lo, hi}) to infer its layout; pass out_layout=")
    return ref.without_halo().with_halo(halo)


def _has_padding(layout: Layout) -> bool:
    return any(layout.parts(a) * layout.chunk(a) > layout.shape[a] for a in range(layout.ndim))


def _poison_padding(block, layout: Layout):
    """A floating block with NaN in the padding cells of an uneven split (after the hi ghosts
    of the short block): their content is unspecified, and a block function that took them for
    data (a deposit without `owned_mask`: 30^3 particles on a (2, 4) mesh painted 28800, not
    27000) now gives NaN, not a plausible wrong answer. No-op for even splits and for integer
    or bool blocks; one select per block otherwise."""
    if not _has_padding(layout) or not jnp.issubdtype(block.dtype, jnp.inexact):
        return block
    info = block_info_of(layout)
    keep = None
    for axis, (lo, hi) in enumerate(layout.halo):
        if layout.parts(axis) * layout.chunk(axis) == layout.shape[axis]:
            continue
        shape = tuple(block.shape[axis] if a == axis else 1 for a in range(block.ndim))
        index = jax.lax.broadcasted_iota(np.int32, shape, axis)
        along = index < lo + info.extent[axis] + hi
        keep = along if keep is None else keep & along
    return block if keep is None else _nan_outside(keep, block)


@jax.custom_jvp
def _nan_outside(keep, block):
    return jnp.where(keep, block, jnp.nan).astype(block.dtype)


@_nan_outside.defjvp
def _nan_outside_jvp(primals, tangents):
    # Differentiated, f sees the padding as it was: a NaN there would reach the real cells'
    # derivatives of a correct nonlinear stencil (``0 * NaN`` in its transpose), which ignores
    # padding in the value but not in the chain rule. The tangent is zero on the padding.
    keep, block = primals
    return block, jnp.where(keep, tangents[1], 0).astype(tangents[1].dtype)


@program_cache(MEDIUM)
def _mapped(f, kinds, out_layouts, block_info: bool, ref: Layout, nan_padding: bool = True,
            poisoned: bool = False):
    layouts = [k for k in kinds if isinstance(k, Layout)]
    mesh = layouts[0].mesh
    in_specs = tuple(k.spec if isinstance(k, Layout) else PartitionSpec() for k in kinds)
    out_specs = jax.tree.map(lambda lay: lay.spec, out_layouts,
                             is_leaf=lambda v: isinstance(v, Layout))

    # Padding-born NaN is reported where it is born: f sees NaN padding only when asked
    # (padding="nan") and an input is floating with padding; then each device flags owned
    # output cells that are NaN while its inputs' owned cells are not, and the program prints
    # why (the user otherwise meets only NaN, e.g. in the last P(k) bin of an uneven grid).
    flag_spec = PartitionSpec(tuple(mesh.axis_names))

    def body(*blocks):
        given = blocks
        blocks = tuple(_poison_padding(b, k) if nan_padding and isinstance(k, Layout) else b
                       for b, k in zip(blocks, kinds))
        if block_info:
            outs = f(*blocks, block_info=block_info_of(ref))
        else:
            outs = f(*blocks)
        if not poisoned:
            return outs
        return outs, _nan_born(given, kinds, outs, out_layouts)

    mapped = compat.shard_map(body, mesh=mesh, in_specs=in_specs,
                              out_specs=(out_specs, flag_spec) if poisoned else out_specs,
                              check_vma=False)

    def run(*leaves):
        leaves = [physical.constrain(x, k) if isinstance(k, Layout) else x
                  for x, k in zip(leaves, kinds)]
        outs = mapped(*leaves)
        if poisoned:
            outs, born = outs
            jax.debug.callback(_warn_nan_born, jnp.any(born))
        return jax.tree.map(lambda o, lay: physical.constrain(o, lay), outs, out_layouts,
                            is_leaf=lambda v: isinstance(v, Layout))
    return jax.jit(run)


NAN_BORN_MESSAGE = (
    "map_blocks: f returned NaN in owned cells although its inputs hold none there: the padding "
    "cells of an uneven split reach f as NaN (padding=\"nan\", the default), and f read them "
    "(unmasked, or masked by multiplying: 0 * NaN = NaN). Mask with jnp.where(block_info."
    "owned_mask(...), w, 0), or pass padding=\"keep\" to get the padding as it is")


def _warn_nan_born(born) -> None:
    # printed by the running program, eager or under jit (no host sync is added; an exception
    # raised inside a host callback leaves XLA:CPU's runtime unusable)
    if bool(born):
        print(f"MapBlocksWarning: {NAN_BORN_MESSAGE}", file=sys.stderr, flush=True)


def _nan_born(given, kinds, outs, out_layouts):
    """This device's flag, shape (1,): NaN in an owned cell of a floating output while no owned
    cell of a floating input holds NaN."""
    def owned_nan(block, layout):
        if not isinstance(layout, Layout) or not jnp.issubdtype(block.dtype, jnp.inexact):
            return jnp.bool_(False)
        if block.shape != tuple(lo + layout.chunk(a) + hi
                                for a, (lo, hi) in enumerate(layout.halo)):
            return jnp.bool_(False)
        return jnp.any(jnp.isnan(block) & block_info_of(layout).owned_mask())
    flat_out = jax.tree.leaves(outs)
    flat_lay = jax.tree.leaves(out_layouts, is_leaf=lambda v: isinstance(v, Layout))
    out_nan = jnp.bool_(False)
    for o, lay in zip(flat_out, flat_lay):
        out_nan = out_nan | owned_nan(o, lay)
    in_nan = jnp.bool_(False)
    for b, k in zip(given, kinds):
        in_nan = in_nan | owned_nan(b, k)
    return (out_nan & ~in_nan).reshape(1)


def map_blocks(f: Callable, *arrays, out_layout=None, block_info: bool = False,
               padding: str = "nan") -> Any:
    """Apply `f` to every device's physical block (ghosts included) of the arrays.

    Args:
      f: a function of blocks (jax arrays), one per argument, returning a block or a pytree of
        blocks. It runs inside `shard_map`, so it may also use `jax.lax` collectives over the
        mesh axes. Arguments that are not DistArrays (jax/numpy arrays, scalars) reach every
        device whole.
      *arrays: DistArrays (all on one mesh) and other arguments. The first DistArray is the
        reference for `out_layout` inference and `block_info`.
      out_layout: a Layout or a pytree of Layouts matching f's output. Default: the reference
        array's layout, with the halo kept on axes where f's block keeps the ghosts and dropped
        where it returns just the chunk (a stencil slicing the interior gives a halo-free
        result).
      block_info: if True, f is called with the keyword ``block_info=`` a `BlockInfo` (global
        start and owned extent per axis, traced) of the reference array's block.
      padding: ``"nan"`` (default): the padding cells of an uneven split reach `f` as NaN in
        floating blocks (see below); ``"keep"``: as they are (unspecified content), for a
        function that masks them some other way than ``jnp.where`` (``0 * NaN`` is NaN).

    Returns:
      A DistArray (or a pytree of them) assembled from the blocks f returned.

    Layout:
      As described by `out_layout`. No communication beyond what f itself does.

    Example:
      >>> def laplacian(b):   # 1D, one ghost each side
      ...     return b[:-2] - 2 * b[1:-1] + b[2:]
      >>> lap = darray.map_blocks(laplacian, x.halo(1))   # doctest: +SKIP

    For an uneven split the short block's hi ghosts follow its owned cells directly, so such a
    stencil is right on every owned cell; what it computes in padding is never read. The
    padding cells of floating arguments reach `f` as NaN (integer ones as they are): a
    function that takes them for data (a deposit that forgot ``block_info.owned_mask``) gives
    NaN, not a wrong number. Mask them with ``jnp.where(block_info.owned_mask(...), b, 0)``,
    not by multiplying with the mask (or pass ``padding="keep"``). When NaN appears in owned
    output cells while the inputs' owned cells hold none, the program prints a
    ``MapBlocksWarning`` saying so (eager or under jit). Under differentiation `f`
    sees the padding unchanged, so a NaN there cannot reach the derivatives of a correct
    function.
    """
    if not callable(f):
        raise TypeError(f"f={f!r} must be callable (a function of blocks)")
    if padding not in ("nan", "keep"):
        raise ValueError(f"map_blocks: padding={padding!r} is not accepted; use \"nan\" (the "
                         f"padding cells of floating blocks reach f as NaN) or \"keep\"")
    nan_padding = padding == "nan"
    dists = [a for a in arrays if isinstance(a, DistArray)]
    if not dists and not all(isinstance(a, (bool, int, float, complex)) for a in arrays):
        # no DistArray: the arrays are placed as darray.asarray places them (the argument
        # policy, engine/arguments.py); beside a DistArray they reach every device whole
        arrays = tuple(a if isinstance(a, (bool, int, float, complex))
                       else ensure_array("map_blocks", a, f"arrays[{i}]")
                       for i, a in enumerate(arrays))
        dists = [a for a in arrays if isinstance(a, DistArray)]
    if not dists:
        raise TypeError("map_blocks needs at least one array argument, got "
                        f"{[type(a).__name__ for a in arrays]}")
    ref = dists[0].layout
    for i, a in enumerate(arrays):
        if isinstance(a, DistArray) and a.layout.mesh != ref.mesh:
            raise LayoutError(f"map_blocks: argument {i} lives on mesh {a.layout.mesh} but the "
                              f"first DistArray on {ref.mesh}; move it with darray.asarray("
                              f"..., device=...)")
    kinds = tuple(a.layout if isinstance(a, DistArray) else ("other", np.shape(a)) for a in arrays)
    leaves = [a.data if isinstance(a, DistArray) else a for a in arrays]
    if out_layout is None:
        out_layout = _infer(f, kinds, leaves, ref, block_info)
    flat_layouts, treedef = jax.tree.flatten(out_layout, is_leaf=lambda v: isinstance(v, Layout))
    for lay in flat_layouts:
        if not isinstance(lay, Layout):
            raise TypeError(f"out_layout entries must be Layouts (e.g. x.layout), got {lay!r}")
    hashable = jax.tree.unflatten(treedef, flat_layouts)
    # f sees NaN padding: a floating argument of an uneven split (see _mapped)
    poisoned = nan_padding and any(
        isinstance(a, DistArray) and _has_padding(a.layout)
        and jnp.issubdtype(a.dtype, jnp.inexact) for a in arrays)
    try:
        fn = _mapped(f, kinds, hashable, block_info, ref, nan_padding, poisoned)
    except TypeError:  # an unhashable pytree of layouts: build without the cache
        fn = _mapped.__wrapped__(f, kinds, hashable, block_info, ref, nan_padding, poisoned)
    outs = fn(*leaves)
    return jax.tree.map(lambda o, lay: DistArray._new(o, lay), outs, hashable,
                        is_leaf=lambda v: isinstance(v, Layout))


def _infer(f, kinds, leaves, ref: Layout, block_info: bool):
    """Trace f once on one device's block shapes to learn the output block shapes."""
    def probe(*args):
        # block_info needs the mesh axes bound: run under a one-device-per-block shard_map.
        mapped = compat.shard_map(
            lambda *bs: (f(*bs, block_info=block_info_of(ref)) if block_info else f(*bs)),
            mesh=ref.mesh, in_specs=tuple(k.spec if isinstance(k, Layout) else PartitionSpec()
                                          for k in kinds),
            out_specs=PartitionSpec(), check_vma=False)
        return mapped(*args)

    shapes = jax.eval_shape(probe, *[jax.ShapeDtypeStruct(k.physical_shape, x.dtype)
                                     if isinstance(k, Layout) else x
                                     for x, k in zip(leaves, kinds)])
    flat, treedef = jax.tree.flatten(shapes)
    layouts = [_infer_layout(ref, s.shape, i) for i, s in enumerate(flat)]
    return jax.tree.unflatten(treedef, layouts)
