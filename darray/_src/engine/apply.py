"""The apply paths: how a namespace function runs a JAX function on DistArray operands.

Each path compiles once per (function, operand layouts or shapes, dtypes) in its own program
cache, so an eager call after the first costs a dict lookup and one dispatch.

==================  ===========================================  ==============================
call                when                                         what runs
==================  ===========================================  ==============================
`apply_local`       `all_local(args)`: every DistArray is a      fn(*args) in one jit on the one
                    small array on the device of small arrays,   device, as jax.numpy runs it;
                    the rest Python scalars or numpy values      the result is a small array
`apply_physical`    every DistArray operand has one layout,      fn on the physical arrays
                    without halo, and the result keeps it        (padding computes garbage
                    (elementwise functions, casts)               nobody reads); no communication
`run_physical`      the result's layouts differ from the         fn(*physical, *static) with
                    inputs' but `fn` can work block by block     inputs and outputs pinned;
                    (manipulation, sorting, quantiles along an   only the communication `fn`
                    unsplit axis)                                asks for
`apply_logical`     anything else: `fn` needs the logical        operands converted to logical
                    arrays (linalg, indexing, shape changes      arrays inside one jit, JAX's
                    across split axes)                           SPMD partitioner, the result
                                                                 padded into `out_layouts`
==================  ===========================================  ==============================

`local_scalar_data` lets a 0-d small array join distributed operands on the physical path.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from darray._src.base.program_cache import MEDIUM, SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.placement.placement import local_layout, local_mesh


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
_TOKEN_LOCK = threading.Lock()


def _token(fn) -> int:
    entry = _TOKENS.get(id(fn))
    if entry is None:
        with _TOKEN_LOCK:  # two threads must not hand out one number twice
            entry = _TOKENS.setdefault(id(fn), (len(_TOKENS), fn))
    return entry[0]


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


# -- distributed arrays ----------------------------------------------------------------------
def apply_physical(fn: Callable, args: Sequence, layout: Layout,
                   donate: int | None = None) -> DistArray:
    """fn(*args) on physical data; every DistArray in args has `layout` (no halo).

    Args:
      fn, args, layout: as above.
      donate: the index of an argument whose buffer the program takes over (its result is
        written there and the argument's jax.Array is deleted), for in-place operators that
        engine/donation.py found safe; the result must have that argument's dtype. None: none.
    """
    kinds = tuple("dist" if isinstance(a, DistArray) else _static_key(a) for a in args)
    leaves = [a.data if isinstance(a, DistArray) else a for a in args]
    out = _physical_fn(fn, kinds, layout, donate)(*leaves)
    return DistArray._new(out, layout)


@program_cache(SMALL)
def _physical_fn(fn, kinds, layout, donate=None):
    del kinds  # part of the cache key only
    return jax.jit(lambda *xs: physical.constrain(
        fn(*[physical.constrain(x, layout) if getattr(x, "ndim", 0) == layout.ndim
             and tuple(x.shape) == layout.physical_shape else x for x in xs]), layout),
        donate_argnums=() if donate is None else (donate,))


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


def apply_logical(fn: Callable, args: Sequence, out_layouts, *, static=(),
                  donate: int | None = None) -> Any:
    """fn(*logical_args, *static) with outputs placed in `out_layouts` (a Layout, a tuple of
    Layouts, or None entries for outputs to return as plain jax arrays). `donate`: as for
    `apply_physical` (the argument has the one Layout of `out_layouts`)."""
    kinds = tuple(a.layout if isinstance(a, DistArray) else _static_key(a) for a in args)
    leaves = [a.data if isinstance(a, DistArray) else a for a in args]
    compiled = _logical_fn(fn, kinds, out_layouts, static, donate)
    outs = compiled(*leaves)
    if isinstance(out_layouts, Layout):
        return DistArray._new(outs, out_layouts)
    return tuple(o if lay is None else DistArray._new(o, lay) for o, lay in zip(outs, out_layouts))


@program_cache(SMALL)
def _logical_fn(fn, kinds, out_layouts, static, donate=None):
    def run(*leaves):
        logical = [physical.to_logical(x, k) if isinstance(k, Layout) else x
                   for x, k in zip(leaves, kinds)]
        result = fn(*logical, *static)
        if isinstance(out_layouts, Layout):
            return physical.logical_to_physical(result, out_layouts)
        return tuple(r if lay is None else physical.logical_to_physical(r, lay)
                     for r, lay in zip(result, out_layouts))
    return jax.jit(run, donate_argnums=() if donate is None else (donate,))
