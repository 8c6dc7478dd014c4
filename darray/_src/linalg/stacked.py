"""Stacks of square matrices with split matrix axes (issue 50, item 3): every batch element
runs the distributed 2-D path, one after the other, without gathering the matrices.

When it applies
  An array of rank >= 3 (no ghosts) whose last two axes are square and split over at least
  2 devices; its batch axes may be split too, over other mesh axes. The 2-D plans
  (blocked_cholesky / blocked_lu's column panels, jacobi's Plan) are made for the matrix
  axes alone: their collectives name only the mesh axes that split the matrix, so the device
  groups that hold different batch elements work independently. A column-panel Side leaves
  the batch's mesh axes out of its "free" axes (they hold other matrices, not copies).
  Every device must join each collective, so jacobi's sweep count is agreed over the batch's
  mesh axes too (the group converging last sets it; extra sweeps leave the others as they
  are).

How it runs
  One shard_map over the whole mesh; inside, the local batch elements (the device's share
  of the split batch axes, padding included) are flattened and `lax.map` runs the 2-D
  kernel on one matrix at a time, so the temporaries are those of one element (plus the
  stacked results). Results keep the batch split; vectors and factors come back in the
  input's layout, values and scalars split like the batch and replicated over the matrix's
  mesh axes.

Gradients
  The factorizations (cholesky, solve, inv, det, slogdet) are lax.linalg on local blocks and
  collectives: JAX differentiates them through lax.map. eigh / eigvalsh / svd / svdvals
  iterate in a while loop, which JAX cannot transpose: under a transformation their stack
  program carries a custom_jvp, so that jax.jit alone runs it distributed (no all-gather)
  and a derivative takes jax.numpy's rules on the gathered stack (values and tangents).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax

from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.linalg import blocked_cholesky, blocked_lu, jacobi, panels
from darray._src.placement import physical


def matrix_layout(lay: Layout) -> Layout:
    """The layout of one matrix of the stack `lay` (its last two axes, their split)."""
    return make_out_layout(lay.mesh, lay.shape[-2:], lay.split[-2:])


def _batch_names(lay: Layout) -> tuple[str, ...]:
    return tuple(a for s in lay.split[:-2] for a in s)


def _applies(x: DistArray) -> bool:
    lay = x.layout
    return (lay.ndim >= 3 and not lay.has_halo and lay.shape[-1] == lay.shape[-2]
            and bool(lay.split[-1] or lay.split[-2]) and math.prod(lay.shape) > 0)


def _side(x: DistArray) -> panels.Side | None:
    """The column-panel Side of one matrix, the batch's mesh axes left out of `free`."""
    lay = matrix_layout(x.layout)
    side = panels.side_of(lay)
    if side is None or lay.shape[0] == 0:
        return None
    batch = _batch_names(x.layout)
    free = tuple(a for a in side.free if a not in batch)
    side = dataclasses.replace(side, free=free,
                               pu=math.prod(x.layout.mesh_shape[a] for a in free))
    return side if side.parts >= 2 else None


def _values_layout(x: DistArray, tail: tuple[int, ...]) -> Layout:
    """Batch axes split as x's, then unsplit axes `tail` (values: (n,), scalars: ())."""
    lay = x.layout
    return make_out_layout(lay.mesh, lay.shape[:-2] + tail,
                           tuple(lay.split[:-2]) + ((),) * len(tail))


# -- the compiled program ----------------------------------------------------------------------
@program_cache(MEDIUM)
def _program(kernel, in_layouts, out_layouts, static):
    nbatch = in_layouts[0].ndim - 2
    one = functools.partial(kernel, **dict(static))

    def body(*blocks):
        batch = blocks[0].shape[:nbatch]
        flat = [b.reshape((-1,) + b.shape[nbatch:]) for b in blocks]
        outs = lax.map(lambda xs: one(*xs), flat)
        return tuple(o.reshape(batch + o.shape[1:]) for o in outs)

    return panels.jitted_shard_map(body, in_layouts, out_layouts)


def _run(kernel, arrays, out_layouts, **static) -> tuple[DistArray, ...]:
    compiled = _program(kernel, tuple(a.layout for a in arrays), tuple(out_layouts),
                        tuple(sorted(static.items())))
    outs = compiled(*[a.data for a in arrays])
    return tuple(DistArray._new(o, lay) for o, lay in zip(outs, out_layouts))


# -- entry points (None: the layout does not fit; keep the gathering path) -----------------------
def cholesky(x: DistArray, upper: bool):
    side = _side(x) if _applies(x) else None
    if side is None:
        return None
    return _run(blocked_cholesky.kernel, [x], (x.layout,), side=side, upper=bool(upper))[0]


def inv(x: DistArray):
    side = _side(x) if _applies(x) else None
    if side is None:
        return None
    return _run(blocked_lu.inv_kernel, [x], (x.layout,), side=side)[0]


def det(x: DistArray):
    side = _side(x) if _applies(x) else None
    if side is None:
        return None
    return _run(blocked_lu.det_kernel, [x], (_values_layout(x, ()),), side=side)[0]


def slogdet(x: DistArray):
    side = _side(x) if _applies(x) else None
    if side is None:
        return None
    scalars = _values_layout(x, ())
    return _run(blocked_lu.slogdet_kernel, [x], (scalars, scalars), side=side)


def solve(x1: DistArray, x2: DistArray):
    """x2: a stack of matrices with x1's batch shape and batch split, on x1's mesh."""
    side = _side(x1) if _applies(x1) else None
    if (side is None or x2.mesh is not x1.mesh or x2.ndim != x1.ndim or x2.layout.has_halo
            or x2.shape[:-1] != x1.shape[:-1] or x2.shape[-1] == 0
            or tuple(x2.layout.split[:-2]) != tuple(x1.layout.split[:-2])):
        return None
    rhs_side = panels.side_of(matrix_layout(x2.layout))
    if rhs_side is None:
        return None
    batch = _batch_names(x1.layout)
    free = tuple(a for a in rhs_side.free if a not in batch)
    rhs_side = dataclasses.replace(rhs_side, free=free,
                                   pu=math.prod(x2.layout.mesh_shape[a] for a in free))
    dtype = panels.inexact(jnp.result_type(x1.dtype, x2.dtype))
    return _run(blocked_lu.solve_kernel, [x1, x2], (x2.layout,), side=side, rhs_side=rhs_side,
                dtype=dtype)[0]


def _spectral(x: DistArray, hermitian: bool, vectors: bool):
    if not _applies(x):
        return None
    plan = jacobi.plan_for_layout(matrix_layout(x.layout), x.dtype)
    if plan is None:
        return None
    plan = dataclasses.replace(plan, sync=_batch_names(x.layout))
    values = _values_layout(x, (x.shape[-1],))
    outs = ((values,) if not vectors else (values, x.layout) if hermitian
            else (x.layout, values, x.layout))
    static = (("hermitian", hermitian), ("plan", plan), ("vectors", vectors))
    compiled = _program(jacobi.kernel, (x.layout,), outs, static)
    if compat.is_tracer(x.data):  # under a transformation: a derivative rule (below)
        compiled = _differentiable(compiled, x.layout, outs, hermitian, vectors)
    datas = compiled(x.data)
    return tuple(DistArray._new(o, lay) for o, lay in zip(datas, outs))


def _gathering(data, layout: Layout, outs, hermitian: bool, vectors: bool):
    """What the gathering path computes, physical data in and out (its derivative is JAX's)."""
    # pinned: the transpose of this constraint lays the gradient out like the input
    a = physical.physical_to_logical(physical.constrain(data, layout), layout)
    if hermitian:
        res = jnp.linalg.eigh(a) if vectors else (jnp.linalg.eigvalsh(a),)
    else:
        res = jnp.linalg.svd(a, full_matrices=False) if vectors else (jnp.linalg.svdvals(a),)
    return tuple(physical.logical_to_physical(r, lay) for r, lay in zip(res, outs))


def _differentiable(compiled, layout: Layout, outs, hermitian: bool, vectors: bool):
    """The stacked program (its sweeps' while loop cannot be transposed) with a derivative
    rule: jit alone runs the distributed program; where a derivative is taken, values and
    tangents come from jax.numpy's rules on the gathered stack (as spectral_grads.py, the
    derivative is not held to the no-gather rule)."""

    @jax.custom_jvp
    def run(data):
        return compiled(data)

    @run.defjvp
    def run_jvp(primals, tangents):
        fn = functools.partial(_gathering, layout=layout, outs=outs, hermitian=hermitian,
                               vectors=vectors)
        return jax.jvp(fn, primals, tangents)

    return run


def eigh(x: DistArray):
    return _spectral(x, True, True)


def eigvalsh(x: DistArray):
    out = _spectral(x, True, False)
    return None if out is None else out[0]


def svd(x: DistArray):
    return _spectral(x, False, True)


def svdvals(x: DistArray):
    out = _spectral(x, False, False)
    return None if out is None else out[0]
