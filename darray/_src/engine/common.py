"""The shared mechanism behind namespace functions: operands, the apply paths, output layouts.

* physical path (`apply_physical`): every array operand is a DistArray of one layout without
  halo; the function runs on the physical arrays directly (padding computes garbage that nobody
  reads). No communication. `run_physical` is the same path where the output layouts differ
  from the inputs' (the shape-changing families: manipulation, indexing, sorting, sets,
  linalg).
* logical path (`apply_logical`): operands are converted to their logical arrays inside one jit,
  the function runs with JAX's SPMD partitioner, and the result is padded into the output
  layout. Inputs and outputs are pinned, so XLA sees the shardings at both ends.

Both compile once per (function, layouts, dtypes) thanks to the caches below. Beside them:
axis normalisation with clear errors (`normalize_axes`) and output-layout construction
(`make_out_layout`, `default_layout`).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import array_operand
from darray._src.layout.axes import (  # noqa: F401 (re-exported here)
    AxisError,
    normalize_axis,
)
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.placement.placement import local_layout, local_mesh


def is_dist(x) -> bool:
    return isinstance(x, DistArray)


def first_dist(args) -> DistArray | None:
    return next((a for a in args if isinstance(a, DistArray)), None)


# -- the argument policy: one rule for every namespace function, method and extension -------
# (array_operand, what is accepted, lives in engine/arguments.py, below api/creation.py, which
# uses it too; ensure_array adds the placement: darray.asarray's)
def ensure_array(fname: str, x, argname: str = "x", *, spec=None) -> DistArray:
    """`x` as a DistArray, for the public function `fname` where it needs an array: a
    DistArray passes; a numpy or jax array or a Python scalar is placed as `darray.asarray(x)`
    places it (the default mesh, or the one device of small arrays; uncommitted, so it joins
    the mesh of any committed operand: engine/operands.py), as jax.numpy places host data; the
    rest is refused by `array_operand`.

    spec: the one exception, for a function whose docs place host data otherwise (fft's
    dct/dst family puts a 1-D signal whole on every device: ``asarray(x, spec=(None,))``)."""
    if isinstance(x, DistArray):
        return x
    x = array_operand(fname, x, argname)
    from darray._src.engine.placing import asarray
    return asarray(x) if spec is None else asarray(x, spec=spec)


def _static_key(a):
    """Cache key part for a non-DistArray operand: Python scalars by type (weakly typed)."""
    if isinstance(a, (bool, int, float, complex)):
        return ("scalar", type(a))
    return ("array", tuple(np.shape(a)), str(np.asarray(a).dtype) if not hasattr(a, "dtype")
            else str(a.dtype))


# -- small arrays (placement.local_mesh): one-device programs, no layout arithmetic ----------
_HOST_OPERANDS = (bool, int, float, complex, np.ndarray, np.generic)


def all_local(args) -> bool:
    """Whether every DistArray in `args` is a small array on the one device of small arrays
    and every other operand a Python scalar or a numpy value (which jit places beside them),
    with at least one DistArray."""
    mesh = local_mesh()
    seen = False
    for a in args:
        if isinstance(a, DistArray):
            if a._layout.mesh is not mesh:
                return False
            seen = True
        elif not isinstance(a, _HOST_OPERANDS):
            return False
    return seen


def apply_local(fn: Callable, args: Sequence) -> DistArray:
    """fn(*args) for `all_local` args: one jit of `fn` on one device, as jax.numpy runs it; the
    result is a small array too (arrays computed from uncommitted arrays stay uncommitted)."""
    datas = [a._data if isinstance(a, DistArray) else a for a in args]
    signature = tuple((d.shape, d.dtype) if isinstance(a, DistArray) else _static_key(a)
                      for a, d in zip(args, datas))
    out = _local_fn(_token(fn), signature)(*datas)
    return DistArray._make(out, local_layout(tuple(out.shape)))  # layout made from its shape


# fn -> a small int for program-cache keys: jax.numpy's ufuncs hash in Python (microseconds
# per op, twice per lookup); a dict keyed by id() and holding fn (so the id stays its) is not
_TOKENS: dict = {}


def _token(fn) -> int:
    entry = _TOKENS.get(id(fn))
    if entry is None:
        with _TOKEN_LOCK:  # two threads must not hand out one number twice
            entry = _TOKENS.setdefault(id(fn), (len(_TOKENS), fn))
    return entry[0]


_TOKEN_LOCK = threading.Lock()


@program_cache(SMALL)
def _local_fn(token, signature):
    del signature  # one entry (one compiled program) per operand signature, in the budget
    return jax.jit(next(fn for t, fn in _TOKENS.values() if t == token))


def local_scalar_data(args) -> list:
    """`args` with 0-d small DistArrays replaced by their (uncommitted) data: combined with
    distributed arrays they are operands that jit moves to the arrays' mesh, like a 0-d
    jax.Array, so the call keeps the physical path of the distributed operands."""
    mesh = local_mesh()
    return [a._data if isinstance(a, DistArray) and a._layout.mesh is mesh and not a._layout.shape
            else a for a in args]


def apply_physical(fn: Callable, args: Sequence, layout: Layout) -> DistArray:
    """fn(*args) on physical data; every DistArray in args has `layout` (no halo)."""
    kinds = tuple("dist" if is_dist(a) else _static_key(a) for a in args)
    leaves = [a.data if is_dist(a) else a for a in args]
    out = _physical_fn(fn, kinds, layout)(*leaves)
    return DistArray._new(out, layout)


@program_cache(SMALL)
def _physical_fn(fn, kinds, layout):
    del kinds  # part of the cache key only
    return jax.jit(lambda *xs: physical.constrain(
        fn(*[physical.constrain(x, layout) if getattr(x, "ndim", 0) == layout.ndim
             and tuple(x.shape) == layout.physical_shape else x for x in xs]), layout))


def apply_logical(fn: Callable, args: Sequence, out_layouts, *, static=()) -> Any:
    """fn(*logical_args, *static) with outputs placed in `out_layouts` (a Layout, a tuple of
    Layouts, or None entries for outputs to return as plain jax arrays).
    """
    kinds = tuple(a.layout if is_dist(a) else _static_key(a) for a in args)
    leaves = [a.data if is_dist(a) else a for a in args]
    compiled = _logical_fn(fn, kinds, out_layouts, static)
    outs = compiled(*leaves)
    if isinstance(out_layouts, Layout):
        return DistArray._new(outs, out_layouts)
    return tuple(o if lay is None else DistArray._new(o, lay) for o, lay in zip(outs, out_layouts))


@program_cache(SMALL)
def _logical_fn(fn, kinds, out_layouts, static):
    def run(*leaves):
        logical = [physical.to_logical(x, k) if isinstance(k, Layout) else x
                   for x, k in zip(leaves, kinds)]
        result = fn(*logical, *static)
        if isinstance(out_layouts, Layout):
            return physical.logical_to_physical(result, out_layouts)
        return tuple(r if lay is None else physical.logical_to_physical(r, lay)
                     for r, lay in zip(result, out_layouts))
    return jax.jit(run)


def valid_mask(layout: Layout):
    """Boolean physical-shaped mask (inside jit): True on logical cells, False on padding and
    ghosts. Built from iotas, so it costs no communication and no memory until fused."""
    shape = layout.physical_shape
    mask = None
    for axis in range(layout.ndim):
        lo, hi = layout.halo[axis]
        if not (lo or hi or layout.padded_shape[axis] != layout.shape[axis]):
            continue
        block = lo + layout.chunk(axis) + hi
        i = jax.lax.broadcasted_iota(np.int32, shape, axis)
        local, blk = i % block, i // block
        logical_index = blk * layout.chunk(axis) + (local - lo)
        ok = ((local >= lo) & (local < lo + layout.chunk(axis))
              & (logical_index < layout.shape[axis]))
        mask = ok if mask is None else (mask & ok)
    return mask


def masked_physical(data, layout: Layout, fill):
    """Physical data with padding and ghosts replaced by `fill` (e.g. the identity of a
    reduction), so a reduction over the physical array is exact and needs only an all-reduce."""
    mask = valid_mask(layout)
    if mask is None:
        return data
    return jnp.where(mask, data, jnp.asarray(fill, data.dtype))


# -- the shape-changing families: axes, output layouts, a physical path of their own -------
def normalize_axes(axes, ndim: int, argname: str = "axis") -> tuple[int, ...]:
    """Non-negative, distinct axes from an int or a sequence of ints."""
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = tuple(normalize_axis(a, ndim, argname) for a in axes)
    if len(set(out)) != len(out):
        raise AxisError(f"{argname}={tuple(axes)!r} repeats an axis; give each axis once")
    return out


def is_plain(layout: Layout) -> bool:
    """No ghosts: physical index i along any axis is logical index i (padding sits at the end
    of each split axis), so physical kernels may index directly."""
    return not layout.has_halo


def make_out_layout(mesh, shape, split) -> Layout:
    """A layout on `mesh` with the given per-axis split; a mesh axis used twice keeps only its
    first use (the later axis goes unsplit), so rules may propose freely."""
    seen: set[str] = set()
    clean = []
    for s in split:
        s = tuple(s)
        if any(name in seen for name in s):
            s = ()
        seen.update(s)
        clean.append(s)
    n = len(shape)
    return Layout(tuple(int(d) for d in shape), mesh, tuple(clean), ((0, 0),) * n)


def default_layout(shape, like: Layout) -> Layout:
    """Layout for a result whose shape has no axis-by-axis relation to its input (advanced
    indexing, unique values): a slab, the longest axis split over every mesh axis the input
    used (so the result is spread as widely as the input was)."""
    shape = tuple(int(n) for n in shape)
    names = like.used_mesh_axes
    split: list[tuple[str, ...]] = [()] * len(shape)
    if shape and names and max(shape) > 1:
        split[int(np.argmax(shape))] = names
    return make_out_layout(like.mesh, shape, split)


def check_same_mesh(fname: str, arrays: Sequence[DistArray], argname: str = "arrays") -> list:
    """The mesh rule (operands.check_operand_meshes) for the arrays of the public function
    `fname` (a sequence argument, or several named by a comma-separated `argname`): the
    arrays, placed on one mesh."""
    from darray._src.engine.operands import check_operand_meshes
    names = [n.strip() for n in argname.split(",")]
    if len(names) == len(arrays):
        named = list(zip(arrays, names))
    else:
        named = [(a, f"{argname}[{i}]") for i, a in enumerate(arrays)]
    return list(check_operand_meshes(fname, *named))


def run_physical(fn: Callable, arrays: Sequence[DistArray], out_layouts, static=()):
    """fn(*physical_datas, *static) compiled once; inputs pinned to their layouts, outputs to
    `out_layouts` (a Layout or a tuple of Layouts). `fn` must not read padding into logical
    cells. No communication beyond what `fn` itself asks for."""
    in_layouts = tuple(a.layout for a in arrays)
    compiled = _run_physical_fn(fn, in_layouts, out_layouts, static)
    outs = compiled(*[a.data for a in arrays])
    if isinstance(out_layouts, Layout):
        return DistArray._new(outs, out_layouts)
    return tuple(DistArray._new(o, lay) for o, lay in zip(outs, out_layouts))


@program_cache(MEDIUM)
def _run_physical_fn(fn, in_layouts, out_layouts, static):
    def run(*datas):
        datas = [physical.constrain(d, lay) for d, lay in zip(datas, in_layouts)]
        out = fn(*datas, *static)
        if isinstance(out_layouts, Layout):
            return physical.constrain(out, out_layouts)
        return tuple(physical.constrain(o, lay) for o, lay in zip(out, out_layouts))
    return jax.jit(run)


def settle(data):
    """Bound eager in-flight collective programs (jax 0.10 CPU deadlock; see
    compat.bound_in_flight). DistArray._new applies it to every result already."""
    return compat.bound_in_flight(data)


def is_tracing(*arrays) -> bool:
    return any(isinstance(a, DistArray) and isinstance(a.data, jax.core.Tracer) for a in arrays)
