"""tile and repeat along split axes, block by block.

Left to XLA's partitioner, tiling or repeating along a split axis all-gathers the axis and
builds the result on every device (8 blocks of temporaries per device measured for tile on 8
CPU devices; 45 for repeat over a flattened array). Here, in one shard_map over the mesh:

* ``tile``: along a split axis with r repetitions the output is the concatenation of r copies
  of x, so each output block is assembled from the input blocks it overlaps by
  engine/joining.py's ppermute rounds (`joining.join_blocks` on r copies of my block); the
  unsplit axes are then tiled locally.
* ``repeat`` by one count r along a split axis: each device repeats its own block (r*c cells,
  the input's padding repeated at the end), then the cells move to the output's blocks
  (chunk ceil(n*r / p)) by the same rounds, the repeated block being an input of chunk r*c.

What a device holds: its output block, the source of the rounds (about one output block) and
the windows in flight; never the whole axis.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.engine import joining
from darray._src.layout.layout import Layout

# Below this many output cells manipulation.tile keeps XLA's path (it gathers the tiled axis:
# at most 256 KiB per device for 8-byte cells). Measured with benchmarks/bench_speed_guard.py
# on 8 CPU devices (load 15-30): tile (61, 67) -> (183, 67) split 8 ran 2.6-2.7x slower block
# by block (0.98 against 0.36 ms), (257, 259) x3 1.13x, (1021, 1031) x3 0.12-0.8x. The memory
# survey's smallest tile (100003 cells, tests/memory) stays above it.
TILE_MIN_CELLS = 1 << 15


def _tile_local(layout: Layout, out: Layout, reps: tuple[int, ...]):
    lead = out.ndim - layout.ndim
    in_shape = (1,) * lead + layout.shape

    def local(block):
        block = block.reshape((1,) * lead + block.shape)  # prepended axes are unsplit
        shape = list(in_shape)
        for a, r in enumerate(reps):
            if not out.split[a] or r == 1:
                continue
            n = shape[a]
            shape[a] = n * r
            grown = Layout(tuple(shape), out.mesh, out.split, ((0, 0),) * out.ndim)
            block = joining.join_blocks([block] * r, (n,) * r, None, grown, a, block.dtype)
        local_reps = tuple(1 if out.split[a] else r for a, r in enumerate(reps))
        return jnp.tile(block, local_reps) if any(r != 1 for r in local_reps) else block
    return local


@program_cache(MEDIUM)
def tile_fn(layout: Layout, out: Layout, reps: tuple[int, ...]):
    """jit(physical data in `layout`) -> the tiled physical data in `out`; `reps` has one
    count per output axis (x's axes aligned to the trailing ones), none of them 0."""
    local = _tile_local(layout, out, reps)

    def run(data):
        return compat.shard_map(local, mesh=out.mesh, in_specs=(layout.spec,),
                                out_specs=out.spec)(data)
    return jax.jit(run)


def _repeat_local(layout: Layout, out: Layout, count: int, axis: int):
    def local(block):
        repeated = jnp.repeat(block, count, axis=axis)
        if not out.split[axis]:
            return repeated
        n, c = layout.shape[axis], layout.chunk(axis)
        return joining.join_blocks([repeated], (n * count,), (c * count,), out, axis,
                                   block.dtype)
    return local


@program_cache(MEDIUM)
def repeat_fn(layout: Layout, out: Layout, count: int, axis: int):
    """jit(physical data in `layout`) -> every element repeated `count` (> 0) times along
    `axis`, the physical data in `out` (x's split, the axis count times longer)."""
    local = _repeat_local(layout, out, count, axis)

    def run(data):
        return compat.shard_map(local, mesh=out.mesh, in_specs=(layout.spec,),
                                out_specs=out.spec)(data)
    return jax.jit(run)
