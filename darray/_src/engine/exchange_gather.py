"""Integer-array reads and scatters along a split axis, without gathering the operand.

Left to the SPMD partitioner, ``take(x, i, axis=k)``, ``x[..., i]``, ``take_along_axis`` and
``x.at[i].add(v)`` all-gather the indexed split axis of x (5-12 blocks of temporaries per
device, issue 49). Here the blocks travel round a ring instead, inside one shard_map over the
mesh axes S that split axis k (P blocks of c cells each; padding sits at the end of the axis,
so block b holds logical cells [b*c, (b+1)*c)):

* **reads** (`gather`): every device holds its block of the output and the matching block of
  the indices (brought to the output's layout beforehand, an index-sized move). Either x's
  blocks rotate (P - 1 ppermutes of one x block) and at each step a device fills the positions
  whose owner is the visiting block, or - when an x block is larger than an output block plus
  its indices - the requests rotate instead (the index block and the partly filled output block
  make a full turn, P ppermutes, and each device fills what it owns). Either way a device holds
  its own block, one visiting block and its output block: no buffer grows with P.
* **take_along_axis over many devices** (`reorient_axis`, `_reoriented_fn`): the picks along
  axis k are independent across x's other axes, so where one of them cuts into P pieces with
  little overlap and P >= MIN_REORIENT_PARTS, an all-to-all of x and one of the (narrowed)
  indices move the split onto that axis, each device picks from whole columns of axis k in
  one gather, and an all-to-all brings the result back: three exchanges and one gather, where
  the ring does P gathers of a whole output block (issue 49's speed guard).
* **scatters** (`scatter`): the (index, update) blocks make a turn of the ring (P - 1
  ppermutes); each device applies the updates it owns to its own block, with JAX's rule that
  repeated indices accumulate.

Indices are read as darray's logical path reads them: a negative index counts once from the
end, then the index is clamped into [0, n - 1] (a read) or, for a scatter, checked on the host
beforehand by the caller. Only the owner ever reads a cell, so x's padded cells (garbage) are
never read into a result. Deterministic: the same steps in the same order on every call.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine import reshaping
from darray._src.engine.placing import redistribute
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.placement import physical

# Below this many cells of x, the caller keeps XLA's path: the ring's P steps cost more than
# gathering a small operand (benchmarks/bench_take.py, bench_speed_guard.py). Measured on 8
# CPU devices at load ~15: the ring ran 3.8-4.2x XLA's path at 2^16 float32 cells (256 KiB:
# take 2.8 against 0.7 ms, take_along_axis 2.4 against 0.6 ms); at 2^20, since the indices are
# normalized once (no division per step), 1.0-1.45x at load ~6 (take_along_axis on 8 devices
# the slowest: each of the P steps gathers a whole output block, XLA's path gathers it once
# after its all-gather). Counted in cells, not bytes, because the ring's cost is
# mostly its P rounds: the memory rule's survey (tests/memory: 100003-cell and larger cases of
# every dtype, one-byte ones included) must see the ring, and XLA's gather below the threshold
# holds at most 96 Ki cells of x.
MIN_RING_CELLS = 3 << 15


def applies(x: DistArray, axis: int) -> bool:
    """Whether the ring handles `x` indexed along `axis`: a split axis of a plain (halo-free)
    distributed layout, large enough that the ring beats a gather."""
    lay = x.layout
    return (bool(lay.split[axis]) and not lay.has_halo and lay.mesh.size > 1
            and x.size > 0 and x.size >= MIN_RING_CELLS)


def _index_dtype():
    return jnp.int64 if jax.config.read("jax_enable_x64") else jnp.int32


def _block_number(mesh, names) -> jax.Array:
    """This device's block number over the mesh axes `names` (major first, as Layout counts)."""
    sizes = dict(mesh.shape)
    me = jnp.asarray(0, jnp.int32)
    for name in names:
        me = me * sizes[name] + jax.lax.axis_index(name)
    return me


def _ring(buf, names, parts, mesh, shift):
    """Every block sends `buf` to block (b + shift) mod parts."""
    return compat.ppermute_blocks(buf, names, [(b, (b + shift) % parts) for b in range(parts)],
                                  mesh)


def _normalized(idx, n, parts, c):
    """Logical indices read as darray reads them (a negative one counts once from the end,
    then clamped into [0, n - 1]), in int32 unless the padded axis needs more (half the index
    temporaries of int64)."""
    wide = jnp.int32 if parts * c < 2**31 else _index_dtype()
    i = idx.astype(_index_dtype()) if idx.dtype.itemsize > 4 or idx.dtype.kind == "u" \
        else idx.astype(wide)
    return jnp.clip(jnp.where(i < 0, i + n, i), 0, max(n - 1, 0)).astype(wide)


def _cell_in(i, block_number, c):
    """(cell of block `block_number` that normalized indices `i` read, whether that block
    holds it). One subtraction and one unsigned compare: no division by c at each step of
    the ring, which cost more than the ring's moves (issue 49's speed guard)."""
    cell = i - block_number.astype(i.dtype) * c
    unsigned = {4: jnp.uint32, 8: jnp.uint64}[i.dtype.itemsize]
    return cell, jax.lax.bitcast_convert_type(cell, unsigned) < c


def _mask_shape(mask, ndim, axis, along):
    """A mask over index positions, shaped to broadcast against an output block."""
    if along:
        return mask
    return mask.reshape((1,) * axis + mask.shape + (1,) * (ndim - axis - 1))


def _pick(block, cell, axis, along):
    if not along:
        return jnp.take(block, cell, axis=axis, mode="clip")
    # take_along_axis as a 1-D gather from the flattened block: jnp.take_along_axis builds
    # one coordinate per axis for every element (an index array of ndim int32 per cell)
    if block.size >= 2**31:
        cell = cell.astype(_index_dtype())
    flat = cell * math.prod(block.shape[axis + 1:])
    for a in range(block.ndim):
        if a != axis:
            flat = flat + jax.lax.broadcasted_iota(cell.dtype, cell.shape, a) \
                * math.prod(block.shape[a + 1:])
    return jnp.take(block.reshape(-1), flat, mode="clip")


@program_cache(SMALL)
def _gather_fn(x_lay: Layout, idx_lay: Layout, out_lay: Layout, axis: int, along: bool,
               mode: str):
    names = x_lay.split[axis]
    parts, c, n = x_lay.parts(axis), x_lay.chunk(axis), x_lay.shape[axis]
    mesh, ndim = x_lay.mesh, x_lay.ndim

    def local(block, idx):
        me = _block_number(mesh, names)
        out_shape = jax.eval_shape(lambda b, i: _pick(b, i, axis, along), block, idx).shape

        def fill(out, source, source_block, i):
            cell, hit = _cell_in(i, source_block, c)
            hit = _mask_shape(hit, ndim, axis, along)
            return jnp.where(hit, _pick(source, cell, axis, along), out)

        # the indices are normalized once; the requests mode moves them normalized (int32
        # where the axis allows, so no larger than int64 indices)
        idx = _normalized(idx, n, parts, c)
        if mode == "broadcast" and parts > 1:
            # every device of the ring answers all the ring's requests it owns (zeros
            # elsewhere), one sum brings each answer to all and each keeps its own block
            every = _share_blocks(idx, names, parts, me, 0)
            answers = fill(jnp.zeros(out_shape[:axis] + every.shape + out_shape[axis + idx.ndim:],
                                     block.dtype), block, me, every)
            return jax.lax.dynamic_slice_in_dim(_sum_bits(answers, names), me * idx.shape[0],
                                                idx.shape[0], axis)
        if parts == 2 and mode == "data":
            # two blocks: the other one visits once and the pair, own block first, is read by
            # one gather (cell i - me * c modulo 2c), where the ring's two masked gathers
            # each fill a whole output block; x's two blocks are all a device holds, as in
            # XLA's path over a 2-device axis, without its all-gather
            pair = jnp.concatenate([block, _ring(block, names, parts, mesh, -1)], axis)
            cell = idx - me.astype(idx.dtype) * c
            cell = jnp.where(cell < 0, cell + 2 * c, cell)
            return _pick(pair, cell, axis, along)
        out = fill(jnp.zeros(out_shape, block.dtype), block, me, idx)
        if parts == 1:
            return out
        if mode == "data":
            # step s: the block of (me + s) mod P visits; each device keeps its own requests
            def step(s, carry):
                visiting, out = carry
                visiting = _ring(visiting, names, parts, mesh, -1)
                return visiting, fill(out, visiting, (me + s) % parts, idx)
            return jax.lax.fori_loop(1, parts, step, (block, out))[1]

        # step s: the requests of block (me - s) mod P visit and are filled from my block;
        # the last move brings every request home
        def turn(s, carry):
            idx, out = carry
            idx, out = _ring(idx, names, parts, mesh, 1), _ring(out, names, parts, mesh, 1)
            return idx, fill(out, block, me, idx)
        out = jax.lax.fori_loop(1, parts, turn, (idx, out))[1]
        return _ring(out, names, parts, mesh, 1)

    def run(data, idx):
        data = physical.constrain(data, x_lay)
        idx = physical.constrain(idx, idx_lay)
        out = compat.shard_map(local, mesh=mesh, in_specs=(x_lay.spec, idx_lay.spec),
                               out_specs=out_lay.spec,
                               check_vma=False)(data, idx)
        return physical.constrain(out, out_lay)
    return jax.jit(run)


# Fewest devices on the indexed axis for which take_along_axis reorients (`reorient_axis`)
# rather than rings: the ring does P gathers of an output block and P - 1 block moves, the
# reorientation three all-to-alls (XLA's CPU all-to-all copies a block about as slowly as
# two ring steps) and one gather. Measured on benchmarks/bench_speed_guard.py's (1021, 1031)
# float32 case, 8 CPU devices on 2 shared cores, each path interleaved with XLA's alone: split
# over 8 the reorientation ran 0.9-1.6x XLA's path, the ring 1.5-2.8x in the same runs; over
# the 2x4 mesh's "x" (2 devices) 2.3-2.5x against the ring's 1.0-1.2x; over the 4x2 mesh's
# "x" (4) 1.4-2.1x against 1.3-1.8x (no clear winner: the ring stays).
MIN_REORIENT_PARTS = 8


def reorient_axis(x_lay: Layout, axis: int) -> int | None:
    """For ``take_along_axis`` along split `axis`: another axis of x to move the split onto
    (`_reoriented_fn`), or None where none fits and the ring reads instead: `axis` split over
    MIN_REORIENT_PARTS devices or more, in the mesh's order (all_to_all numbers a tuple of
    mesh axes in the mesh's order, as ppermute does, and the rows must arrive in the
    layout's block order), and an axis whose block, cut into P pieces, needs little padding
    (the longest such block is taken)."""
    names = x_lay.split[axis]
    parts = x_lay.parts(axis)
    if parts < MIN_REORIENT_PARTS or \
            tuple(n for n in x_lay.mesh.axis_names if n in names) != tuple(names):
        return None
    # the other axis's block is cut into P pieces of ceil(block / P) cells, overlapping where
    # they do not divide it: at most a quarter more cells (13 -> 16 on 8 devices: 1.70 blocks
    # of temporaries, 2.47 with a single index row; 9 -> 16, padded, held 3.01)
    fits = [a for a in range(x_lay.ndim) if a != axis
            and 4 * -(-x_lay.chunk(a) // parts) * parts <= 5 * x_lay.chunk(a)]
    return max(fits, key=x_lay.chunk) if fits else None


def _column_starts(cols: int, parts: int) -> list[int]:
    """Where each of the `parts` pieces of an axis of `cols` cells starts: pieces of
    ceil(cols / parts) cells, the last ones moved back so as not to run past the end (they
    overlap their neighbours instead of padding the block: no copy of it)."""
    width = -(-cols // parts)
    return [min(d * width, cols - width) for d in range(parts)]


def _to_columns(a, names, parts, axis, other):
    """All-to-all over `names`: the block's axis `other` is cut into pieces
    (`_column_starts`), piece d goes to device d, and the pieces a device receives are joined
    along `axis` in the senders' order (the rows of `axis` in block order). The pieces travel
    as one (parts, ...) array: XLA's CPU all-to-all of a strided cut copies more slowly."""
    starts = _column_starts(a.shape[other], parts)
    width = a.shape[other] - starts[-1]
    a = jnp.stack([jax.lax.slice_in_dim(a, s, s + width, axis=other) for s in starts])
    a = jnp.moveaxis(jax.lax.all_to_all(a, names, 0, 0, tiled=False), 0, axis)
    return a.reshape(a.shape[:axis] + (parts * a.shape[axis + 1],) + a.shape[axis + 2:])


def _from_columns(a, names, parts, axis, other, cols):
    """`_to_columns`'s inverse for a block of `cols` cells along `other`: the rows of `axis`
    go back to their devices, the column pieces are joined (overlaps kept once)."""
    shape = a.shape
    a = a.reshape(shape[:axis] + (parts, shape[axis] // parts) + shape[axis + 1:])
    a = jax.lax.all_to_all(jnp.moveaxis(a, axis, 0), names, 0, 0, tiled=False)
    kept, end = [], 0
    for d, s in enumerate(_column_starts(cols, parts)):
        kept.append(jax.lax.slice_in_dim(a[d], end - s, a.shape[other + 1], axis=other))
        end = s + a.shape[other + 1]
    return jnp.concatenate(kept, axis=other)


def _narrow(i, n):
    """Normalized indices (in [0, n)) in the narrowest unsigned type that holds them: the
    all-to-all of the indices moves half the bytes of int32 or less."""
    for kind in (jnp.uint8, jnp.uint16):
        if n <= jnp.iinfo(kind).max + 1:
            return i.astype(kind)
    return i


@program_cache(SMALL)
def _reoriented_fn(x_lay: Layout, idx_lay: Layout, axis: int, other: int):
    """``take_along_axis`` along split `axis` with the split moved onto axis `other`: the
    picks along `axis` are independent across `other`, so an all-to-all of x and one of the
    indices give every device whole columns of `axis` (the logical cells first, padding at
    the end; normalized indices never reach it), one local gather picks, and an all-to-all
    brings the result back to x's split. Three memcpy-like exchanges and one gather, against
    the ring's P gathers of a whole output block (issue 49's speed guard). `idx_lay` splits
    every axis as x does."""
    names = x_lay.split[axis]
    parts, c, n = x_lay.parts(axis), x_lay.chunk(axis), x_lay.shape[axis]
    mesh = x_lay.mesh
    cols = x_lay.chunk(other)

    def local(block, idx):
        i = _normalized(idx, n, parts, c)
        whole = _to_columns(block, names, parts, axis, other)
        picks = _to_columns(_narrow(i, n), names, parts, axis, other)
        # XLA's CPU all-to-all hands its pieces over one by one; left to itself XLA fuses their
        # joining into the gather, which then finds each cell's piece through a P-way select
        # (optimization_barrier does not stop that on CPU). A collective-permute of each
        # device to itself is a copy XLA cannot fuse: the gather reads two joined arrays.
        # Interleaved with XLA's path on 8 CPU devices: 0.9-1.15x its time, against 1.1-1.4x
        # without this copy (which costs a block of x and one of the narrowed indices)
        whole, picks = jax.lax.ppermute((whole, picks), names, [(d, d) for d in range(parts)])
        # jnp's take_along_axis (the ring's flat `_pick` is its equal here, side by side on 8
        # CPU devices; on one device from unjoined pieces it ran in 0.6x the flat one's time)
        picked = jnp.take_along_axis(whole, picks.astype(i.dtype), axis=axis, mode="clip")
        return _from_columns(picked, names, parts, axis, other, cols)

    def run(data, idx):
        data = physical.constrain(data, x_lay)
        idx = physical.constrain(idx, idx_lay)
        out = compat.shard_map(local, mesh=mesh, in_specs=(x_lay.spec, idx_lay.spec),
                               out_specs=idx_lay.spec, check_vma=False)(data, idx)
        return physical.constrain(out, idx_lay)
    return jax.jit(run)


def _sum_bits(a, names):
    """psum of arrays of which at most one device holds a nonzero cell: summed as unsigned
    bit patterns, so each cell arrives exactly (a float sum would turn -0.0 into 0.0)."""
    if a.dtype == jnp.bool_:
        return jax.lax.psum(a.astype(jnp.uint8), names).astype(jnp.bool_)
    if jnp.issubdtype(a.dtype, jnp.complexfloating):
        return jax.lax.complex(_sum_bits(jnp.real(a), names), _sum_bits(jnp.imag(a), names))
    bits = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint64}[a.dtype.itemsize]
    summed = jax.lax.psum(jax.lax.bitcast_convert_type(a, bits), names)
    return jax.lax.bitcast_convert_type(summed, a.dtype)


def _share_blocks(a, names, parts, me, axis):
    """Every block of the ring (along `axis`, block order) on every device of the ring: each
    device's block placed at its offset in zeros, one bit-pattern sum (an all-reduce)."""
    size = a.shape[axis]
    shape = a.shape[:axis] + (parts * size,) + a.shape[axis + 1:]
    placed = jax.lax.dynamic_update_slice_in_dim(jnp.zeros(shape, a.dtype), a, me * size, axis)
    return _sum_bits(placed, names)


def _free_split(split, taken: set) -> tuple[str, ...]:
    return tuple(name for name in split if name not in taken)


def kernel_layouts(x_lay: Layout, idx_shape, axis: int, along: bool, want: Layout):
    """(layout of the indices, layout of the output) the ring computes in: x's split on x's
    other axes, and on the index axes the split `want` has there, less the mesh axes x's other
    axes use (a device's output block must draw on its own x block along those axes)."""
    other = {name for a, s in enumerate(x_lay.split) if a != axis for name in s}
    if along:
        idx_split = list(x_lay.split)
        idx_split[axis] = _free_split(want.split[axis], other)
        out_split = idx_split
    else:
        k = len(idx_shape)
        idx_split = [_free_split(s, other) for s in want.split[axis:axis + k]]
        out_split = list(x_lay.split[:axis]) + idx_split + list(x_lay.split[axis + 1:])
    out_shape = want.shape
    idx_lay = make_out_layout(x_lay.mesh, idx_shape, idx_split)
    return idx_lay, make_out_layout(x_lay.mesh, out_shape, out_split)


def move(a: DistArray, layout: Layout) -> DistArray:
    """`a` in `layout` (same shape): XLA's resharding where it moves blocks, else the
    block-wise rounds of engine/reshaping.py (XLA's partitioner gathers some of these moves)."""
    if a.layout == layout:
        return a
    if reshaping.supported(a.layout, layout) and not reshaping.xla_is_blockwise(a.layout, layout):
        return DistArray._new(reshaping.reshape_fn(a.layout, layout)(a.data), layout)
    return redistribute(a, layout)


def _operand_layout(x: Layout, axis: int, k: int, want: Layout) -> Layout:
    """x's layout with its other axes split as `want` splits them in the output (so that the
    ring computes straight into `want`), and the indexed axis over the mesh axes x used that
    remain (the ring's)."""
    split = [want.split[a] if a < axis else want.split[a + k - 1] for a in range(x.ndim)]
    used = {name for a, s in enumerate(split) if a != axis for name in s}
    split[axis] = tuple(name for name in x.split[axis] + x.used_mesh_axes if name not in used)
    split[axis] = tuple(dict.fromkeys(split[axis]))
    return make_out_layout(x.mesh, x.shape, split)


def gather(x: DistArray, indices: DistArray, axis: int, out_layout: Layout, *,
           along: bool = False) -> DistArray:
    """``take(x, indices, axis)`` (any index shape, its axes in place of `axis`) or, with
    `along`, ``take_along_axis(x, indices, axis)`` (indices of x's shape but along `axis`),
    for x split along `axis` (`applies`), in `out_layout`, by a ring (module doc).

    The indices move to the kernel's layout first (an index-sized move). When `out_layout`
    splits the output differently from x's other axes, x moves first (block-wise, never a
    gather) so that the ring computes straight into `out_layout`.
    """
    other = reorient_axis(x.layout, axis) if along else None
    if other is not None:
        lay = make_out_layout(x.mesh, indices.shape, x.layout.split)
        idx = move(indices, lay)
        out = DistArray._new(_reoriented_fn(x.layout, lay, axis, other)(x.data, idx.data), lay)
        return move(out, out_layout)
    if not along:
        # x's other axes split as the output's: the ring then computes each device's block of
        # `out_layout` itself. Moving x costs about one x block; computing in x's layout and
        # moving the result could hold a result block P times too large (an axis the output
        # splits further than x does)
        x = move(x, _operand_layout(x.layout, axis, indices.ndim, out_layout))
    idx_lay, kern = kernel_layouts(x.layout, indices.shape, axis, along, out_layout)
    idx = move(indices, idx_lay)
    x_block = math.prod(x.layout.block_shape) * x.dtype.itemsize
    out_block = math.prod(kern.block_shape) * x.dtype.itemsize
    idx_block = math.prod(idx_lay.block_shape) * 8
    parts = x.layout.parts(axis)
    if x_block <= out_block + idx_block:
        mode = "data"
    elif not along and idx_lay.split[1:] == ((),) * (indices.ndim - 1) \
            and idx_lay.split[0] == x.layout.split[axis] \
            and parts * (2 * out_block + idx_block) <= 2 * x_block:
        mode = "broadcast"  # small requests: two all-reduces of them instead of P ppermutes
    else:
        mode = "requests"
    fn = _gather_fn(x.layout, idx_lay, kern, axis, along, mode)
    out = DistArray._new(fn(x.data, idx.data), kern)
    return move(out, out_layout)


# -- scatter ------------------------------------------------------------------------------------
_SCATTER = ("set", "add", "multiply", "divide", "power", "min", "max")


def _valid_positions(lay: Layout):
    """Inside shard_map: which cells of this device's block of `lay` are logical cells (a
    padded index cell holds garbage, which a scatter must not apply)."""
    valid = jnp.ones(lay.block_shape, bool)
    for a, names in enumerate(lay.split):
        if names:
            pos = _block_number(lay.mesh, names) * lay.chunk(a) + jnp.arange(lay.chunk(a))
            shape = [1] * lay.ndim
            shape[a] = lay.chunk(a)
            valid = valid & (pos < lay.shape[a]).reshape(shape)
    return valid


def _apply_counts(block, counts, value, axis, how):
    """`block` after `counts[j]` updates by the scalar `value` at cell j of `axis` (JAX's
    rules for repeats: they accumulate; a power or a product of the same value repeats)."""
    counts = counts.reshape((1,) * axis + (-1,) + (1,) * (block.ndim - axis - 1))
    value = value.astype(block.dtype)
    hit = counts > 0
    if how == "set":
        new = jnp.broadcast_to(value, block.shape)
    elif how == "add":
        new = block + counts.astype(block.dtype) * value
    elif how == "min":
        new = jnp.minimum(block, value)
    elif how == "max":
        new = jnp.maximum(block, value)
    else:
        product = value ** counts.astype(block.dtype)  # multiply, divide, power: v ** count
        new = {"multiply": jnp.multiply, "divide": jnp.divide,
               "power": jnp.power}[how](block, product)
    return jnp.where(hit, new, block).astype(block.dtype)


@program_cache(SMALL)
def _scatter_fn(x_lay: Layout, idx_lay: Layout, upd_lay: Layout | None, axis: int, how: str,
                broadcast: bool):
    names = x_lay.split[axis]
    parts, c, n = x_lay.parts(axis), x_lay.chunk(axis), x_lay.shape[axis]
    mesh = x_lay.mesh
    # divide and power combine x with the product of the updates, as JAX's .at does
    # (x / scatter_mul(ones, v)): the ring builds that product, the last step combines
    combine = {"divide": jnp.divide, "power": jnp.power}.get(how)
    kind = "multiply" if combine else how

    def local(block, idx, updates):
        me = _block_number(mesh, names)
        # a negative index counts once from the end; one still out of range is dropped, as
        # JAX's scatter drops it; so are padded index cells (garbage)
        i = idx.astype(_index_dtype())
        i = jnp.where(i < 0, i + n, i)
        i = jnp.where(_valid_positions(idx_lay) & (i >= 0) & (i < n), i, (parts + 1) * c)
        scalar = upd_lay is None
        # a scalar update needs only how many times each cell of the block is hit: the ring
        # counts (a vector of the block's length), one elementwise step applies; broadcasting
        # the scalar to the indexed shape would cost a block of that shape per device
        if scalar:
            target = jnp.zeros((c,), jnp.int32)
        else:
            target = jnp.ones_like(block) if combine else block

        def apply(target, i, updates):
            # cells owned elsewhere point past the block and are dropped (a subtraction and
            # two compares per step, no division: the ring runs P steps)
            local = i - me * c
            mine = jnp.where((local >= 0) & (local < c), local, c + 1)
            if scalar:
                return target.at[mine.reshape(-1)].add(1, mode="drop")
            ref = target.at[(slice(None),) * axis + (mine,)]
            return getattr(ref, kind)(updates.astype(block.dtype), mode="drop")

        if broadcast and parts > 1:
            # small requests: all of the ring's on every device (one all-reduce each), each
            # device applies those it owns, no ring
            i = _share_blocks(i, names, parts, me, 0)
            if not scalar:
                updates = _share_blocks(updates, names, parts, me, axis)
            target = apply(target, i, updates)
        elif parts > 1:
            target = apply(target, i, updates)

            def turn(s, carry):
                target, i, updates = carry
                i = _ring(i, names, parts, mesh, 1)
                if not scalar:
                    updates = _ring(updates, names, parts, mesh, 1)
                return apply(target, i, updates), i, updates
            target = jax.lax.fori_loop(1, parts, turn, (target, i, updates))[0]
        else:
            target = apply(target, i, updates)
        if scalar:
            return _apply_counts(block, target, updates, axis, how)
        return combine(block, target).astype(block.dtype) if combine else target

    def run(data, idx, updates):
        data = physical.constrain(data, x_lay)
        idx = physical.constrain(idx, idx_lay)
        if upd_lay is not None:
            updates = physical.constrain(updates, upd_lay)
        upd_spec = upd_lay.spec if upd_lay is not None else jax.sharding.PartitionSpec()
        out = compat.shard_map(local, mesh=mesh, in_specs=(x_lay.spec, idx_lay.spec, upd_spec),
                               out_specs=x_lay.spec, check_vma=False)(data, idx, updates)
        return physical.constrain(out, x_lay)
    return jax.jit(run)


def scatter(x: DistArray, indices: DistArray, updates, axis: int, how: str) -> DistArray:
    """``x.at[(:,) * axis + (indices,)].<how>(updates)`` for x split along `axis` (`applies`):
    `updates` a 0-d value or a DistArray of the indexed shape (x.shape[:axis] + indices.shape
    + x.shape[axis + 1:]). JAX's rules: repeated indices accumulate (which of them a `set`
    keeps is unspecified), out-of-range ones are dropped. The result is in x's layout."""
    if how not in _SCATTER:
        raise ValueError(f"scatter: how={how!r} is not one of {_SCATTER}")
    # the requests are cut over S on their first axis and nowhere else: every device of an
    # S-group then holds different requests (a replicated one would be applied P times), and
    # devices outside the group hold the same ones (x's replicas stay equal)
    names = x.layout.split[axis]
    idx_lay = make_out_layout(x.mesh, indices.shape, [names] + [()] * (indices.ndim - 1))
    idx = move(indices, idx_lay)
    upd_lay = None
    if isinstance(updates, DistArray):
        upd_lay = make_out_layout(x.mesh, updates.shape, list(x.layout.split[:axis])
                                  + list(idx_lay.split) + list(x.layout.split[axis + 1:]))
        updates = move(updates, upd_lay).data
    else:
        updates = jnp.asarray(updates, x.dtype)
    x_block = math.prod(x.layout.block_shape) * x.dtype.itemsize
    requests = math.prod(idx_lay.block_shape) * 8 + (
        math.prod(upd_lay.block_shape) * x.dtype.itemsize if upd_lay is not None else 0)
    broadcast = x.layout.parts(axis) * requests <= x_block
    fn = _scatter_fn(x.layout, idx_lay, upd_lay, axis, how, broadcast)
    return DistArray._new(fn(x.data, idx.data, updates), x.layout)
