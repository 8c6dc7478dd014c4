"""A reshape that moves data between devices, block by block (issue 49, item 2).

XLA's partitioner lowers a reshape that merges or cuts a split axis of an *uneven* shape
through the logical array: it all-gathers the operand (12 blocks of temporaries per device for
(101, 67, 45) split (x, y) merged into (6767, 45)). Here the reshape is a redistribution of
contiguous rows, since a row-major reshape keeps every element's flat index:

* Input side (`rows_of`, `_to_rows`): the mesh axes of every split axis but 0 move onto axis
  0 (an all-to-all in two halves along an axis that stays whole, or, where none does, a loop
  of collective-permutes into one buffer), after which each device holds `sub` consecutive
  rows of axis 0, every other axis whole: one contiguous range of flat indices. The output
  is seen the same way: each device needs one contiguous range (its rows of the output's
  axis 0, before the inverse all-to-all `_from_rows`).
* The exchange (`plan`): every device's output range overlaps the input ranges of a few
  devices. Its own piece is copied; the others' pieces are grouped by the difference of the
  devices' linear indices (each group a permutation) and sent in windows of at most an eighth
  of a device's rows, one window in flight at a time (a loop), placed with
  `dynamic_update_slice`: memcpy-like work. Cells move in runs (`_unit`: the longest run
  dividing both sides' rows that never straddles padding, 45 cells for (101, 67, 45) into
  (-1, 45)); where an axis is padded, `_read` gathers runs past the padding instead of
  copying the rows, with index arithmetic per run, not per cell.
* Temporaries: the input rows, the output rows being built and one window each way, about 2.5
  blocks (tests/multidevice/engine/test_reshape_blockwise.py); speed beside XLA's path:
  benchmarks/bench_reshape.py.

Where XLA's partitioner moves the blocks itself within the rule (`xla_is_blockwise`: no
all-gather and at most 3 blocks planned, e.g. even shapes merged along leading split axes,
or a split axis merged into unsplit ones), manipulation.reshape keeps its program.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.layout.layout import Layout
from darray._src.placement import physical

_INT32_MAX = 2**31 - 1
_TILES = 16  # tiles of an output block per round: the index arrays' share of a block

# Below this many cells, manipulation.reshape keeps XLA's path (it gathers the operand: at most
# 512 KiB per device for 8-byte cells, nothing next to the rounds' fixed costs). Measured with
# benchmarks/bench_speed_guard.py (8 CPU devices, load ~10): (13, 17, 19) -> (-1,) ran 7.5x
# slower block by block than XLA's gather (3.0 against 0.40 ms), and 1.8-2.8x at (37, 203, 19)
# (benchmarks/bench_reshape.py). The memory rule (tests/memory: the survey's smallest reshape
# is 100003 cells) keeps the threshold from rising to that crossover.
MIN_CELLS = 1 << 16


def supported(src: Layout, dst: Layout) -> bool:
    """Whether the block-wise path applies: plain layouts on one mesh of several devices, a
    non-empty array of rank >= 1 on both sides, indices that fit the index dtype."""
    if src.has_halo or dst.has_halo or src.mesh is not dst.mesh or src.mesh.size < 2:
        return False
    size = math.prod(src.shape)
    if not src.shape or not dst.shape or size == 0:
        return False
    return size <= _INT32_MAX or bool(jax.config.read("jax_enable_x64"))


@functools.lru_cache(maxsize=512)
def xla_is_blockwise(src: Layout, dst: Layout) -> bool:
    """Whether XLA's partitioner reshapes src into dst with no all-gather and within 3 blocks
    (an all-to-all, or nothing at all when merging leading split axes of even shapes); its
    program is then kept. Decided once per pair of layouts from the compiled program: on
    uneven shapes, and on some even ones, it gathers the operand. Only the answer is cached;
    the program compiled to find it is dropped (_xla_reshape_plan)."""
    if math.prod(src.shape) > _INT32_MAX:
        # XLA's CPU reshape of a logical array past 2^31 elements returned zeros (1291^3
        # int8 into (-1,), jax 0.10): the rows exchange indexes per device instead
        return False
    return _xla_reshape_plan(src, dst)


def takes_blockwise(src: Layout, dst: Layout) -> bool:
    """Whether manipulation.reshape runs src -> dst through `reshape_fn` (else XLA's path):
    arrays of MIN_CELLS cells or more that XLA's partitioner would gather."""
    return (supported(src, dst) and math.prod(src.shape) >= MIN_CELLS
            and not xla_is_blockwise(src, dst))


def _xla_reshape_plan(src: Layout, dst: Layout) -> bool:
    """Whether XLA's own reshape of src's logical array into dst plans no all-gather and at
    most 3 blocks of temporaries (it does for some uneven shapes too: merging a split axis
    into an unsplit one); compiled and let go."""
    def move(data):
        logical = physical.to_logical(data, src).reshape(dst.shape)
        return physical.logical_to_physical(logical, dst)
    arg = jax.ShapeDtypeStruct(src.physical_shape, np.float32,
                               sharding=physical.sharding_of(src))
    compiled = jax.jit(move, out_shardings=physical.sharding_of(dst)).lower(arg).compile()
    text, stats = compiled.as_text(), compiled.memory_analysis()
    if not text or stats is None:
        return False  # nothing to read: assume the worst, take the block-wise path
    block = max(stats.argument_size_in_bytes, stats.output_size_in_bytes, 1)
    return "all-gather" not in text and stats.temp_size_in_bytes <= 3 * block


def _device_coords(mesh) -> list[dict[str, int]]:
    """Mesh coordinates of every device, in linear (row-major over the mesh axes) order."""
    names = mesh.axis_names
    return [dict(zip(names, c)) for c in itertools.product(*(range(mesh.shape[n])
                                                             for n in names))]


def _linear(coords: dict[str, int], mesh) -> int:
    f = 0
    for n in mesh.axis_names:
        f = f * mesh.shape[n] + coords[n]
    return f


def _group_index(names: Sequence[str], coords: dict[str, int], mesh) -> int:
    """Index of a device in the group over mesh axes `names` (major to minor)."""
    f = 0
    for n in names:
        f = f * mesh.shape[n] + coords[n]
    return f


@dataclasses.dataclass(frozen=True)
class Rows:
    """One side of the reshape as contiguous rows: the mesh axes moved onto axis 0 (in
    all-to-all order, one group per other split axis), the rows of axis 0 each device holds
    once they are there, and the cells per row."""
    groups: tuple[tuple[int, tuple[str, ...]], ...]  # (array axis, its mesh axes), axis > 0
    padded_chunk: int     # axis 0's block rows, padded to a multiple of the groups' size
    sub: int              # rows per device on axis 0 after the all-to-alls
    row_cells: int        # logical cells per row of axis 0
    starts: tuple[int, ...]  # per device (linear): first row it holds (its window of `sub`)
    counts: tuple[int, ...]  # per device: logical rows it holds from `starts` on


def rows_of(layout: Layout) -> Rows:
    """`layout` seen as contiguous rows: every split axis but 0 moves its mesh axes onto
    axis 0 by an all-to-all, after which each device holds `sub` consecutive rows of axis 0
    (its block of axis 0, subdivided) and every other axis whole."""
    mesh = layout.mesh
    groups = tuple((a, tuple(layout.split[a])) for a in range(1, layout.ndim)
                   if layout.split[a])
    q = math.prod(layout.mesh_shape[n] for _, names in groups for n in names)
    c0 = layout.chunk(0)
    padded = -(-c0 // q) * q
    sub = padded // q
    starts, counts = [], []
    for cd in _device_coords(mesh):
        b0 = layout.block_index(0, cd)
        i = _group_index([n for _, names in groups for n in names], cd, mesh)
        lo = b0 * c0 + i * sub
        hi = min(lo + sub, b0 * c0 + c0, layout.shape[0])
        starts.append(lo)
        counts.append(max(0, hi - lo))
    return Rows(groups, padded, sub, math.prod(layout.shape[1:]), tuple(starts), tuple(counts))


@dataclasses.dataclass(frozen=True)
class Exchange:
    """The rounds of the row exchange, as tables indexed by (round, device linear index)."""
    perms: tuple[tuple[tuple[int, int], ...], ...]  # the distinct permutations (by shift)
    perm_of: tuple[int, ...]             # per round: which permutation it runs
    window: int                          # cells sent per round (the same in every round)
    send: tuple[tuple[int, ...], ...]    # per round, device: where its window starts
    put: tuple[tuple[int, ...], ...]     # per round, device: where the window's head goes
    keep_lo: tuple[tuple[int, ...], ...]  # per round, device: the window cells it keeps,
    keep_hi: tuple[tuple[int, ...], ...]  # [keep_lo, keep_hi) (empty: receives nothing)
    # per device: the piece of its own rows it keeps (where it starts in its input rows,
    # where it goes in its output rows, its cells): copied, not sent
    own: tuple[tuple[int, int, int], ...] = ()


def plan(src: Layout, dst: Layout, window: int | None = None) -> Exchange:
    """The row exchange: every device needs a contiguous range of flat indices (its output
    rows) and holds one (its input rows). The pieces are grouped by the difference of the
    devices' linear indices, so each round is a permutation, and cut into windows of at most
    `window` cells (default: an eighth of the larger side's rows), so that what is in flight
    stays a fraction of a block. Of the devices holding the same input rows (replicas over
    mesh axes the input does not use), the one agreeing with the receiver on those axes
    sends."""
    mesh = src.mesh
    coords = _device_coords(mesh)
    p = len(coords)
    ins, outs = rows_of(src), rows_of(dst)
    in_cells = ins.sub * ins.row_cells
    if window is None:
        window = -(-max(in_cells, outs.sub * outs.row_cells) // 8)
    window = max(1, min(window, in_cells))
    unused = [n for n in mesh.axis_names if n not in src.used_mesh_axes]
    pieces: dict[int, list] = {}  # shift -> [(sender, receiver, src off, dst off, cells)]
    for d, cd in enumerate(coords):
        lo = outs.starts[d] * outs.row_cells
        hi = lo + outs.counts[d] * outs.row_cells
        if hi <= lo:
            continue
        for s, cs in enumerate(coords):
            if any(cs[n] != cd[n] for n in unused) or not ins.counts[s]:
                continue
            s_lo = ins.starts[s] * ins.row_cells
            s_hi = s_lo + ins.counts[s] * ins.row_cells
            a, b = max(lo, s_lo), min(hi, s_hi)
            if a < b:
                pieces.setdefault((s - d) % p, []).append((s, d, a - s_lo, a - lo, b - a))
    perms, perm_of, send, put, keep_lo, keep_hi = [], [], [], [], [], []
    own = [(0, 0, 0)] * p
    for s, _, s_off, d_off, c in pieces.pop(0, []):
        own[s] = (s_off, d_off, c)
    for k in sorted(pieces):
        perm = tuple((s, d) for s, d, *_ in sorted(pieces[k], key=lambda t: t[1]))
        perms.append(perm)
        for r in range(max(-(-c // window) for *_, c in pieces[k])):
            snd, pt, lo_, hi_ = [0] * p, [0] * p, [0] * p, [0] * p
            for s, d, s_off, d_off, c in pieces[k]:
                first = r * window
                if first >= c:
                    continue
                # the window starts at the piece's r-th cut, moved back where it would run
                # past the sender's rows; the receiver keeps the cut's cells of it
                start = min(s_off + first, in_cells - window)
                snd[s] = start
                lo_[d] = s_off + first - start
                hi_[d] = lo_[d] + min(window, c - first)
                pt[d] = d_off + first - lo_[d]
            perm_of.append(len(perms) - 1)
            send.append(tuple(snd))
            put.append(tuple(pt))
            keep_lo.append(tuple(lo_))
            keep_hi.append(tuple(hi_))
    return Exchange(tuple(perms), tuple(perm_of), window, tuple(send), tuple(put),
                    tuple(keep_lo), tuple(keep_hi), tuple(own))


def _to_rows(block, layout: Layout, rows: Rows, idx):
    """This device's block -> (its `sub` rows of axis 0 with every other axis whole, though
    still padded where it was split unevenly; the first of them) (inside shard_map).

    An all-to-all over the mesh axes of the other split axes, written as a loop of
    collective-permutes into one buffer: XLA's all-to-all on CPU keeps the pieces sent, the
    pieces received and their concatenation, a block more. Axis 0's block is not padded to
    a multiple of the group either (a copy): the last pieces are cut earlier instead and
    rolled, so that their rows come first."""
    if not rows.groups:
        return block, 0
    group_axes = {a for a, _ in rows.groups}
    free = [a for a in range(1, block.ndim) if a not in group_axes and block.shape[a] >= 2]
    if free:
        return _to_rows_by_all_to_all(block, layout, rows, free[-1], idx), 0
    mesh = layout.mesh
    names = [n for _, group in rows.groups for n in group]
    sizes = [mesh.shape[n] for n in names]
    g = math.prod(sizes)
    sub, chunk = rows.sub, block.shape[0]
    cut = [min(k * sub, chunk - sub) for k in range(g)]   # where piece k starts
    late = [k * sub - c for k, c in enumerate(cut)]       # how much earlier it starts
    coords = _device_coords(mesh)
    perms = []
    for j in range(g):
        pairs = []
        for d, cd in enumerate(coords):
            k = (_group_index(names, cd, mesh) + j) % g
            to = dict(cd)
            for n, s in zip(reversed(names), reversed(sizes)):
                to[n] = k % s
                k //= s
            pairs.append((d, _linear(to, mesh)))
        perms.append(tuple(pairs))
    me = jnp.zeros((), idx)
    for n, s in zip(names, sizes):
        me = me * s + jax.lax.axis_index(n).astype(idx)
    cut_t, late_t = jnp.asarray(np.asarray(cut, idx)), jnp.asarray(np.asarray(late, idx))
    shape = (sub,) + tuple(layout.physical_shape[a] if layout.split[a] else
                                    block.shape[a] for a in range(1, block.ndim))

    def exchange(j):
        return lambda piece: piece if j == 0 else jax.lax.ppermute(piece, mesh.axis_names,
                                                                   perms[j])

    def step(j, have):
        to = (me + j) % g
        piece = jax.lax.dynamic_slice_in_dim(block, cut_t[to], sub, axis=0)
        if max(late):
            piece = jnp.roll(piece, -late_t[to], axis=0)
        got = jax.lax.switch(j, [exchange(i) for i in range(g)], piece)
        k = (me - j) % g  # the peer it came from: its block index along each group's axis
        starts = [jnp.zeros((), idx)] * block.ndim
        for a, group in reversed(rows.groups):
            n = math.prod(mesh.shape[m] for m in group)
            starts[a] = (k % n) * layout.chunk(a)
            k = k // n
        return jax.lax.dynamic_update_slice(have, got, tuple(starts))

    have = jax.lax.fori_loop(0, g, step, jnp.zeros(shape, block.dtype))
    return have, 0


def _to_rows_by_all_to_all(block, layout: Layout, rows: Rows, along: int, idx):
    """`_to_rows` where an axis `along` is neither axis 0 nor moved: one all-to-all per
    group, in two halves along `along` (a loop). XLA's CPU all-to-all keeps the pieces sent
    (here axis 0 padded to the groups' size, a copy), the pieces received and their
    concatenation: on the whole block that is 3.3 blocks, on halves 2.4 at most. Against the
    loop of collective-permutes it is 2.4x faster (one collective per half instead of one
    per device of the group; bench_speed_guard's reshape rows)."""
    extra = rows.padded_chunk - block.shape[0]
    n = block.shape[along]
    width = -(-n // 2)
    shape = (rows.sub,) + tuple(layout.physical_shape[a] if layout.split[a] else
                                block.shape[a] for a in range(1, block.ndim))

    def half(h, have):
        at = jnp.minimum(h * width, n - width).astype(idx)  # the halves overlap if n is odd
        piece = jax.lax.dynamic_slice_in_dim(block, at, width, axis=along)
        if extra:
            piece = jnp.pad(piece, [(0, extra)] + [(0, 0)] * (piece.ndim - 1))
        for a, names in rows.groups:
            piece = jax.lax.all_to_all(piece, names, 0, a, tiled=True)
        starts = [jnp.zeros((), idx)] * block.ndim
        starts[along] = at
        return jax.lax.dynamic_update_slice(have, piece, tuple(starts))

    return jax.lax.fori_loop(0, 2, half, jnp.zeros(shape, block.dtype))


def _read(have, first: int, layout: Layout, f, unit: int):
    """The logical runs of `unit` cells at run indices `f` (an int array, clipped to the rows)
    of `have` (the rows `_to_rows` gave, its logical rows from row `first` on), as an
    (n, unit) array: gathered past the padding of unevenly split axes rather than cutting it
    off first (a copy of the rows). A run never straddles padding (`_unit`), so the index
    arithmetic is per run, and XLA copies whole runs: several times faster than a gather of
    single cells on CPU, with an index array `unit` times smaller."""
    runs = have.reshape(-1, unit)
    logical, stored = tuple(layout.shape[1:]), tuple(have.shape[1:])
    if logical == stored:  # no padding: the runs are the logical ones
        return jnp.take(runs, f + first * (math.prod(logical) // unit), axis=0, mode="clip")
    last = max(a for a in range(len(logical)) if logical[a] != stored[a])
    tail = math.prod(logical[last + 1:]) // unit  # runs per row of the last padded axis
    logical, stored = logical[:last + 1] + (tail,), stored[:last + 1] + (tail,)
    pos = jnp.zeros(f.shape, f.dtype)
    stride = 1
    for a in range(len(logical) - 1, -1, -1):
        pos = pos + (f % logical[a]) * stride
        f = f // logical[a]
        stride *= stored[a]
    pos = pos + (f + first) * stride
    return jnp.take(runs, pos, axis=0, mode="clip")


def _window(have, first: int, layout: Layout, start, runs: int, unit: int):
    """`runs` consecutive logical runs of `have` from run index `start` on, as (runs, unit)."""
    if tuple(have.shape[1:]) == tuple(layout.shape[1:]):
        per_row = math.prod(have.shape[1:]) // unit
        return jax.lax.dynamic_slice(have.reshape(-1, unit), (start + first * per_row,
                                                              jnp.zeros((), start.dtype)),
                                     (runs, unit))
    return _read(have, first, layout, start + jnp.arange(runs, dtype=start.dtype), unit)


def _unit(src: Layout, ins: Rows, outs: Rows) -> int:
    """The longest run of cells the exchange can move as one: it divides every row of both
    sides (so every piece's offsets and lengths) and the cells after the input's last padded
    axis (so that no run straddles padding)."""
    stored = tuple(src.physical_shape[a] if src.split[a] else src.shape[a]
                   for a in range(1, src.ndim))
    logical = tuple(src.shape[1:])
    padded = [a for a in range(len(logical)) if logical[a] != stored[a]]
    tail = math.prod(logical[padded[-1] + 1:]) if padded else ins.row_cells
    return max(1, math.gcd(ins.row_cells, outs.row_cells, tail))


def _from_rows(flat, layout: Layout, rows: Rows):
    """This device's `sub` output rows, flat -> its block of `layout` (inside shard_map)."""
    block = flat.reshape((rows.sub,) + tuple(layout.shape[1:]))
    block = jnp.pad(block, [(0, 0)] + [(0, layout.physical_shape[a] - layout.shape[a])
                                       for a in range(1, layout.ndim)])
    for a, names in reversed(rows.groups):
        block = jax.lax.all_to_all(block, names, a, 0, tiled=True)
    return block[:layout.chunk(0)]


@program_cache(SMALL)
def reshape_fn(src: Layout, dst: Layout):
    """The jitted program: src's physical data -> dst's physical data."""
    mesh = src.mesh
    names = tuple(mesh.axis_names)
    sizes = [mesh.shape[n] for n in names]
    ins, outs = rows_of(src), rows_of(dst)
    in_cells, out_cells = ins.sub * ins.row_cells, outs.sub * outs.row_cells
    unit = _unit(src, ins, outs)
    # windows of whole runs: every offset of the plan is then a multiple of `unit`
    window = -(-max(in_cells, out_cells) // 8)
    ex = plan(src, dst, min(-(-window // unit) * unit, in_cells))
    values = [v for name in ("send", "put", "keep_lo", "keep_hi")
              for per_round in getattr(ex, name) for v in per_round]
    if any(v % unit for v in values + [c for o in ex.own for c in o] + [ex.window]):
        unit = 1  # not expected (every offset is a multiple of both sides' rows): be exact
    w = ex.window
    in_runs, out_runs, w_runs = in_cells // unit, out_cells // unit, w // unit
    idx = np.int32 if max(in_cells, out_cells) + 2 * w <= _INT32_MAX else np.int64
    tables = {name: np.asarray(getattr(ex, name), idx).reshape(len(ex.perm_of), mesh.size)
              // unit for name in ("send", "put", "keep_lo", "keep_hi")}
    own_runs = np.asarray(ex.own, idx).reshape(-1, 3) // unit

    def exchange(perm):
        def run(window):
            if all(s == d for s, d in perm):
                return window  # the device's own rows: nothing moves
            return jax.lax.ppermute(window, names, perm)
        return run

    def body(block):
        lin = jnp.zeros((), idx)
        for n, s in zip(names, sizes):
            lin = lin * s + jax.lax.axis_index(n).astype(idx)
        have, first = _to_rows(block, src, ins, idx)
        t = {name: jnp.asarray(v) for name, v in tables.items()}
        perm_of = jnp.asarray(np.asarray(ex.perm_of, np.int32))
        runs = [exchange(perm) for perm in ex.perms]

        def round_(j, out):
            # a loop, so XLA runs the rounds one after the other and reuses one window's
            # buffers; the switch picks the round's static permutation
            window = _window(have, first, src, t["send"][j, lin], w_runs, unit)
            got = jax.lax.switch(perm_of[j], runs, window)
            at = t["put"][j, lin] + w_runs  # `out` has a window's margin on each side
            run = jnp.arange(w_runs, dtype=idx)[:, None]
            kept = (run >= t["keep_lo"][j, lin]) & (run < t["keep_hi"][j, lin])
            zero = jnp.zeros((), idx)
            old = jax.lax.dynamic_slice(out, (at, zero), (w_runs, unit))
            return jax.lax.dynamic_update_slice(out, jnp.where(kept, got, old), (at, zero))

        # the device's own piece is copied (one gather of runs, fused into the buffer's
        # creation); only the pieces of other devices go through the rounds
        run = jnp.arange(out_runs + 2 * w_runs, dtype=idx) - w_runs
        own = jnp.asarray(own_runs)[lin]
        mine = ((run >= own[1]) & (run < own[1] + own[2]))[:, None]
        start = jnp.where(mine, _read(have, first, src, jnp.clip(run - own[1] + own[0], 0,
                                                                  in_runs - 1), unit),
                          jnp.zeros((), block.dtype))
        out = jax.lax.fori_loop(0, len(ex.perm_of), round_, start) if ex.perm_of else start
        return _from_rows(out[w_runs:w_runs + out_runs].reshape(-1), dst, outs)

    mapped = compat.shard_map(body, mesh=mesh, in_specs=(src.spec,), out_specs=dst.spec,
                              check_vma=False)
    return jax.jit(mapped, out_shardings=physical.sharding_of(dst))
