"""A sum whose result is split again: a reduce-scatter, not an all-reduce plus a slice.

`darray.sum(x, axis=..., spec=...)` asks for the result in the layout `spec`. When `spec`
splits output axes over mesh axes that the reduction frees (the mesh axes of the reduced
axes), each device sums its block and one `lax.psum_scatter` per output axis both adds the
partial sums across those mesh axes and leaves each device only its block of the result (the
shard_map tutorial's `psum_scatter`): the compiled program has a reduce-scatter and no
all-reduce, and every device receives 1/p of the result instead of all of it. Freed mesh axes
that `spec` does not use are summed with `psum`.

Any other `spec` (a mesh axis that splits nothing in the input, an output axis whose blocks
would not subdivide its current ones) is honoured by summing as usual and moving the result
(one resharding).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.placing import redistribute
from darray._src.layout.layout import Layout
from darray._src.placement import physical


def _scatter_plan(layout: Layout, axes, default: Layout, target: Layout):
    """Per output axis the mesh axes to scatter over, and the freed axes left to psum; None
    when `target` is not the default split plus freed mesh axes appended to axes whose current
    blocks the new ones subdivide."""
    freed = {name for a in axes for name in layout.split[a]}
    scatter, used = [], set()
    for j, (have, want) in enumerate(zip(default.split, target.split)):
        if tuple(want[:len(have)]) != tuple(have):
            return None
        extra = tuple(want[len(have):])
        if not set(extra) <= freed:
            return None
        if extra:
            size = math.prod(layout.mesh.shape[name] for name in extra)
            if have and default.chunk(j) != size * target.chunk(j):
                return None  # an uneven axis whose new blocks straddle the old ones
        scatter.append(extra)
        used |= set(extra)
    rest = tuple(name for name in layout.used_mesh_axes if name in freed - used)
    return tuple(scatter), rest


@program_cache(SMALL)
def _sum_scatter_fn(layout: Layout, axes, keepdims: bool, dtype, default: Layout,
                    target: Layout, plan):
    scatter, rest = plan

    def local(block):
        part = jnp.sum(block, axis=axes, keepdims=keepdims, dtype=dtype)
        for j, names in enumerate(scatter):
            if not names:
                continue
            size = math.prod(layout.mesh.shape[name] for name in names)
            want = size * target.chunk(j)  # the axis as the scatter cuts it, padding included
            if part.shape[j] != want:
                widths = [(0, 0)] * part.ndim
                widths[j] = (0, want - part.shape[j])
                part = jnp.pad(part, widths)
            part = jax.lax.psum_scatter(part, names, scatter_dimension=j, tiled=True)
        return jax.lax.psum(part, rest) if rest else part

    def run(data):
        data = physical.masked_physical(physical.constrain(data, layout), layout, 0)
        out = compat.shard_map(local, mesh=layout.mesh, in_specs=(layout.spec,),
                               out_specs=target.spec)(data)
        return physical.constrain(out, target)
    return jax.jit(run)


def sum_to(x: DistArray, axes, keepdims: bool, dtype, default: Layout, spec,
           plain_sum) -> DistArray:
    """The sum of the plain DistArray `x` over `axes` in the layout `spec` asks for.

    `default` is the layout the reduction gives without `spec`; `plain_sum()` computes the sum
    in it (the fallback, followed by one resharding)."""
    target = Layout.create(default.shape, x.mesh, spec)
    if target == default:
        return plain_sum()
    plan = _scatter_plan(x.layout, axes, default, target)
    if plan is None:
        return redistribute(plain_sum(), target, None)
    fn = _sum_scatter_fn(x.layout, axes, keepdims, jnp.dtype(dtype), default, target, plan)
    return DistArray._new(fn(x.data), target)
