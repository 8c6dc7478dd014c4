"""halo / halo_reduce / unhalo: ghost cells on DistArrays.

The exchange itself runs on a backend, looked up by name: the pure-JAX one (shard_map +
lax.ppermute) is built in; a native one (cuDecomp's halo update) plugs in with
`register_halo_backend` and receives the same arguments.
"""
from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.backends.jax import halo_exchange
from darray._src.backends.registry import HALO_BACKEND_ENV, HALO_FILLS, record
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.plans import halo_plan, halo_spec

# the halo registry lives with the others (the stencils below this floor use it too)
BACKEND_ENV = HALO_BACKEND_ENV
_HALO_BACKENDS = HALO_FILLS


def register_halo_backend(name: str, fill: Callable) -> None:
    """Make `fill(data, fill_value, *, in_layout, out_layout, rules)` the halo backend `name`.

    It maps the physical data of `in_layout` to that of `out_layout` (same split, ghosts given by
    ``out_layout.halo``) inside jit, and must be linear in `data` when ``fill_value is None``
    (halo_reduce transposes it).
    """
    _HALO_BACKENDS.register(name, fill)


def _check_fill_value(fill_value, dtype):
    if isinstance(fill_value, DistArray) or np.ndim(fill_value) != 0:
        raise TypeError(f"fill_value={fill_value!r} must be a scalar (Python number or 0-d "
                        f"array)")
    if isinstance(fill_value, complex) and not jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(f"fill_value={fill_value!r} is complex but the array is {dtype}")
    return fill_value


def _rules_key(widths, rules):
    # Rules of axes without ghosts do not matter: keep them out of the compile-cache key.
    return tuple(r if (lo or hi) else None for (lo, hi), r in zip(widths, rules))


@program_cache(MEDIUM)
def _fill_fn(in_layout: Layout, out_layout: Layout, rules, backend: str):
    fill = _HALO_BACKENDS.select(backend, (in_layout, out_layout, rules)).impl

    def run(data, value):
        data = physical.constrain(data, in_layout)
        out = fill(data, value, in_layout=in_layout, out_layout=out_layout, rules=rules)
        return physical.constrain(out, out_layout)
    return jax.jit(run)


def halo(x, width=1, *, boundary="periodic", axes=None, fill_value=0, backend=None) -> DistArray:
    """The array with ghost cells around every block, filled from the logically adjacent cells.

    Args:
      x: a DistArray (an existing halo is replaced).
      width: ghost cells per side: an int for every axis in `axes`; a sequence with one entry per
        axis in `axes` (per array axis when `axes` is None), each an int or a ``(lo, hi)`` pair;
        or a dict ``{axis: int | (lo, hi)}``. Widths may exceed a neighbour's block (the cells
        then come from further blocks, one more ppermute per hop).
      boundary: what lies beyond the array's ends: ``"periodic"`` (numpy's ``"wrap"``),
        ``"constant"`` (`fill_value`), ``"edge"``, ``"reflect"`` or ``"symmetric"``, as in
        ``np.pad``; or a Dirichlet wall: ``"antisymmetric"`` (``-np.pad(mode="symmetric")``,
        the odd mirror about the face: cell-centred walls, DST-II) or ``"antireflect"``
        (``-np.pad(mode="reflect")``, the odd mirror about the edge node: DST-I). One string
        or one per array axis. The odd mirrors take widths up to the axis length
        (antisymmetric) or the axis length - 1 (antireflect).
      axes: the axes that get ghosts; default every axis, split or not (a stencil needs its
        neighbours along all axes; on an unsplit axis the ghosts are a local copy).
      fill_value: the scalar for ``boundary="constant"``.
      backend: halo backend name (default ``$DARRAY_HALO_BACKEND`` or ``"jax"``).

    Returns:
      A DistArray with the same logical shape and values; its Layout has ``halo[i] = (lo, hi)``.
      Each device block along axis i is ``[lo ghosts | owned | hi ghosts | padding]`` (padding
      only in the short block of an uneven split), so ``np.pad(x, width, mode)`` cut at each
      block's owned range widened by the ghosts equals the block's first ``lo + owned + hi``
      cells.

    Layout:
      Same split, ``halo`` set to the widths. Communication: per haloed split axis and side,
      one ``ppermute`` of a face-sized slab (more rounds only for multi-hop widths or uneven
      splits); unsplit axes are filled locally. No all-gather.
    """
    x = ensure_array("halo", x)
    widths = halo_spec.normalize_width(width, axes, x.ndim)
    rules = halo_spec.normalize_boundary(boundary, x.ndim)
    halo_spec.check_widths(widths, rules, x.shape)
    _check_fill_value(fill_value, x.dtype)
    odd = [r for (lo, hi), r in zip(widths, rules) if (lo or hi) and r in halo_plan.NEGATED]
    if odd and x.dtype == jnp.bool_:
        raise TypeError(f"boundary={odd[0]!r} negates ghosts, which a bool array cannot hold; "
                        f"use a numeric dtype or another boundary rule")
    out_layout = x.layout.without_halo().with_halo(widths)
    key = _rules_key(widths, rules)
    chosen = record(_HALO_BACKENDS.select(backend, (x.layout, out_layout, key)))
    fn = _fill_fn(x.layout, out_layout, key, chosen.requested)
    data = fn(x.data, jnp.asarray(fill_value, x.dtype))
    return DistArray._new(data, out_layout)


@program_cache(MEDIUM)
def _reduce_fn(layout: Layout, rules, backend: str):
    in_layout = layout.without_halo()
    fill = _HALO_BACKENDS.select(backend, (in_layout, layout, rules)).impl

    def run(data):
        data = physical.constrain(data, layout)

        def linear_fill(x):
            return fill(x, None, in_layout=in_layout, out_layout=layout, rules=rules)
        example = jax.ShapeDtypeStruct(in_layout.physical_shape, data.dtype)
        (out,) = jax.linear_transpose(linear_fill, example)(data)
        return physical.constrain(out, in_layout)
    return jax.jit(run)


def halo_reduce(y, *, boundary="periodic", backend=None) -> DistArray:
    """Add every ghost cell into the cell it mirrors, then drop the ghosts: the adjoint of `halo`.

    Particle-mesh painting is ``deposit into y = x.halo(w)``'s blocks (ghosts included), then
    ``y.halo_reduce()``: deposits that spilled over a block edge land in the neighbour's cells.

    Args:
      y: a DistArray with ghosts (without ghosts it is returned unchanged).
      boundary: the rule the ghosts were filled with (the Layout records widths, not the rule):
        ``"periodic"`` adds across the wrap; ``"constant"`` drops ghosts beyond the array ends;
        ``"edge"`` adds them into the edge cell; ``"reflect"`` / ``"symmetric"`` into the
        mirrored cells; ``"antireflect"`` / ``"antisymmetric"`` subtract them from the
        mirrored cells. One string or one per axis.
      backend: halo backend name (default ``$DARRAY_HALO_BACKEND`` or ``"jax"``).

    Returns:
      A DistArray of ``y``'s logical shape without ghosts, such that for every x
      ``<x.halo(w, boundary=b), y> == <x, y.halo_reduce(boundary=b)>`` over owned and ghost
      cells (for constant boundaries with fill_value 0).

    Layout:
      Same split, no halo. Communication: the reverse ppermutes of `halo` (face-sized).
    """
    y = ensure_array("halo_reduce", y, "y")
    if not y.layout.has_halo:
        return y
    rules = halo_spec.normalize_boundary(boundary, y.ndim)
    key = _rules_key(y.layout.halo, rules)
    chosen = record(_HALO_BACKENDS.select(backend, (y.layout.without_halo(), y.layout, key)))
    fn = _reduce_fn(y.layout, key, chosen.requested)
    return DistArray._new(fn(y.data), y.layout.without_halo())


@program_cache(MEDIUM)
def _unhalo_fn(layout: Layout):
    out_layout = layout.without_halo()

    def run(data):
        data = physical.constrain(data, layout)
        return physical.constrain(halo_exchange.unhalo(data, in_layout=layout), out_layout)
    return jax.jit(run)


def unhalo(y) -> DistArray:
    """Drop the ghost cells, keeping each block's interior.

    Layout:
      Same split, no halo. No communication (a local slice per block).
    """
    y = ensure_array("unhalo", y, "y")
    if not y.layout.has_halo:
        return y
    return DistArray._new(_unhalo_fn(y.layout)(y.data), y.layout.without_halo())
