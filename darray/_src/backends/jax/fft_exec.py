"""Execute an FFT `Plan` with the pure-JAX backend: one shard_map per call.

Inside the shard_map every device runs the plan's stages on its own block: jnp.fft for local
stages, `all_to_all_move` for transposes. Everything is a jnp/lax op with its own AD and
batching rules, so grad/jvp/vjp/jacfwd/jacrev/vmap work without custom rules (custom_vjp and
friends broke some transform when measured; see docs/design.md, "Facts the code relies on").

Axis order inside the body: XLA's CPU FFT only transforms the minor (last) axes, so an FFT over
another axis is compiled as transpose -> FFT -> transpose. When the block is kept in logical
axis order, every all-to-all then pays a transposing copy on *both* sides (send pieces are cut
from the FFT's transposed buffer and put back in logical order; the receive side transposes
again for the next FFT). The body therefore keeps the block in a working axis order: before
each local FFT its axes are moved to the end, and they stay there, so each exchange pays one
transposing copy, and the logical order is restored once at the end (for a round trip in one
jit XLA cancels that with the inverse's first move). Which side of the exchange does that copy
is chosen per exchange (`_orders_before_exchange`): fused into the send slices for exchanges
over the whole mesh followed by an FFT, fused into the concatenation of the received pieces
(which then also does the move for the next FFT) otherwise.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.backends.jax.transpose import (
    all_to_all_move,
    lax_exchange,
    merge_move,
    scatter_move,
)
from darray._src.base import compat
from darray._src.kernels import (  # foundation: jax and numpy only
    fftw,
    local_fft,  # inverse FFTs right on GPU at any size; FFTW on CPU when asked for
    r2r_local,
    r2r_local_2d,
)
from darray._src.plans.fft_plan import LocalFFT, Merge, Plan, Stage, Transpose


def _working_order(order: list, axes) -> list:
    """`order` with logical `axes` at the end (kept as they are if they already are)."""
    if set(order[len(order) - len(axes):]) == set(axes):
        return order
    return [a for a in order if a not in axes] + list(axes)


def _real_order(order: list, axes) -> list:
    """`order` with logical `axes` at the end and the halved axis `axes[-1]` last of all (what
    rfftn/irfftn transform over): kept as it is if it already is."""
    if order[-1] == axes[-1] and set(order[len(order) - len(axes):]) == set(axes):
        return order
    return ([a for a in order if a not in axes] + [a for a in order if a in axes[:-1]]
            + [axes[-1]])


def _order_for(order: list, stage: LocalFFT) -> list:
    if stage.kind in ("r2c", "c2r"):
        return _real_order(order, stage.axes)
    return _working_order(order, stage.axes)


def _fused(stages) -> list:
    """The plan's stages with each real stage and the complex stage beside it (no exchange
    between) run as one rfftn / irfftn: XLA then runs one multi-axis real FFT, as jnp's rfftn,
    instead of a 1-D real FFT, a transposing copy and a complex FFT (1.28x jnp's time for a
    128^3 round trip on one CPU device). ``axes[-1]`` of a fused stage is the halved axis."""
    out: list[Stage] = []
    for stage in stages:
        prev = out[-1] if out else None
        if getattr(stage, "kernels", ()) or getattr(prev, "kernels", ()):
            out.append(stage)  # a mixed transform's stage runs its own kernels
        elif (isinstance(stage, LocalFFT) and isinstance(prev, LocalFFT) and prev.kind == "r2c"
                and stage.kind == "c2c" and not stage.inverse):
            out[-1] = LocalFFT(stage.axes + prev.axes, "r2c", False, stage.sizes + prev.sizes)
        elif (isinstance(stage, LocalFFT) and isinstance(prev, LocalFFT)
              and prev.kind == "c2c" and prev.inverse and stage.kind == "c2r"):
            out[-1] = LocalFFT(prev.axes + stage.axes, "c2r", True, prev.sizes + stage.sizes)
        else:
            out.append(stage)
    return out


def _start_order(plan: Plan, ndim: int) -> list:
    """The working order to start in: the order the mirror-image plan (the forward path, for
    an inverse plan) ends in, if it suits the first stage. In a round trip inside one jit the
    forward's closing move back to logical order and this opening move then cancel."""
    order = list(range(ndim))
    stages = _fused(plan.stages)
    for stage in reversed(stages):
        if not isinstance(stage, (Transpose, Merge)):
            order = _order_for(order, stage)
    first = stages[0]
    if isinstance(first, (Transpose, Merge)) or _order_for(order, first) != order:
        return list(range(ndim))
    return order


def _deferred_stage(stages, order: list, norm: str):
    """The index of the inverse c2c stage whose normalisation moves to a closing pass, or None.

    Why (XLA's CPU memory plan, issue #21): when the last stage is an FFT that writes the
    output itself and the block is already in logical order, the buffer the FFT reads (the
    concatenation of the received pieces) is live together with the output, so it cannot share
    the output's buffer and the temp heap must hold it beside the receive pieces; XLA's
    size-ordered heap packing then puts it where the stage before the exchange lived, and the
    send and receive pieces both land beyond: 2.875 arrays of temp for a slab ifftn (fftn, whose
    closing transpose writes the output, plans 2.0). Ending with an elementwise pass instead
    (the 1/n of an earlier inverse stage, whose FFT then runs unnormalised; its factor n is
    fused into the send-side copies) frees the output buffer for that concatenation: 1.875.
    The pass cost no time the measurements could see (8 virtual CPU devices, 192^3 c64, 11
    interleaved rounds on a loaded machine, medians: ifftn 0.80-0.94x and fftn+ifftn 0.95-0.98x
    the time without it on the slab, pencil and merged plans). Not for norm="forward" (no
    factor to move), c2r ends (their complex intermediates do not fit the real output's
    buffer) or plans whose closing reorder already writes the output."""
    if norm == "forward" or not stages:
        return None
    last = stages[-1]
    if not (isinstance(last, LocalFFT) and last.kind == "c2c" and last.inverse
            and not last.kernels):
        return None
    for stage in stages:
        if isinstance(stage, LocalFFT):
            order = _order_for(order, stage)
    if order != sorted(order):
        return None
    for i, stage in enumerate(stages):
        if (isinstance(stage, LocalFFT) and stage.kind == "c2c" and stage.inverse
                and not stage.kernels
                and any(isinstance(t, (Transpose, Merge)) for t in stages[i + 1:])):
            return i
    return None


def _reorder(block, order: list, new: list, permute=jnp.transpose):
    if new == order:
        return block
    return permute(block, [order.index(a) for a in new])


def apply_r2r(block, axis: int, kernel):
    """One real-to-real kernel along local `axis`: darray._src.kernels.r2r_local's kernels, or a
    callable ``kernel(block, axis)`` (test stand-ins, user extensions)."""
    if callable(kernel):
        return kernel(block, axis)
    return r2r_local.apply_kernel(block, axis, kernel)


def apply_r2r_stage(block, axes, kernels):
    """Every kernel along its local axis of `block`. A type-2/3 pair on the block's last two
    axes runs as one 2-D transform (r2r_local_2d: one 2-D real FFT instead of two 1-D ones
    and the transposing copy between them), the rest one axis at a time by `apply_r2r`."""
    return r2r_local_2d.apply_kernels(block, axes, list(kernels), apply_one=apply_r2r)


def apply_mixed_stage(block, axes, kernels):
    """A mixed transform's local stage (darray._src.fft.mixed): its real-to-real kernels first
    (on real data they keep it real, half the work of a complex pass), then its complex FFT
    kernels (``kernel.is_fft``), all of one direction and norm as one multi-axis FFT call."""
    real = [(a, k) for a, k in zip(axes, kernels) if not getattr(k, "is_fft", False)]
    if real:
        block = apply_r2r_stage(block, [a for a, _ in real], [k for _, k in real])
    groups: dict = {}
    for a, k in zip(axes, kernels):
        if getattr(k, "is_fft", False):
            groups.setdefault((k.inverse, k.norm), []).append(a)
    for (inverse, norm), group in groups.items():
        group = tuple(sorted(group))
        s = tuple(block.shape[a] for a in group)
        if inverse:
            block = local_fft.ifftn(block, s, group, norm)
        else:
            block = local_fft.fftn(block, s, group, norm)
    return block


def _run_merge(block, stage: Merge, order: list, exchange):
    moves = stage.moves
    groups = [m.mesh_axes for m in moves]
    parts = [m.parts for m in moves]
    if stage.gathers:
        return merge_move(block, groups, [order.index(m.src) for m in moves],
                          order.index(moves[0].dst), [m.src_len for m in moves], parts,
                          exchange)
    return scatter_move(block, groups, order.index(moves[0].src),
                        [order.index(m.dst) for m in moves], moves[0].src_len, parts, exchange)


def _orders_before_exchange(stage, following, devices: int) -> bool:
    """Whether the block is put in the next FFT's working order before this exchange (the
    transposing copy fused into the send slices) rather than after it (fused into the
    concatenation of the received pieces).

    Measured (8 virtual CPU devices, 256^3, round trips interleaved 9-11 rounds, jax 0.12,
    before/after medians): before is faster for exchanges over the whole mesh followed by a
    complex or real FFT: slab fftn 0.97, slab rfftn 0.95, merged (2, 4) fftn 0.95, merged
    rfftn 0.86. It is slower for the pencil rotation's smaller groups (fftn 1.02-1.04) and for
    r2r stages (dctn 1.04-1.06, whose receive side also applies Makhoul's reorder), which keep
    the order change after the exchange."""
    return (isinstance(stage, (Transpose, Merge)) and isinstance(following, LocalFFT)
            and following.kind != "r2r" and stage.parts == devices)


def run_stages(block, plan: Plan, norm: str, exchange=lax_exchange, move=None,
               permute=jnp.transpose, standalone=False):
    """The per-device body: apply every stage of `plan` to one local block. `exchange` does the
    row exchanges of the transposes (XLA's all-to-all; the MPI backend passes its own);
    `move(block, stage, order)`, when given, does a whole Transpose/Merge stage (the nccl
    backend's fused pack-exchange-unpack); `permute(block, perm)` does the reorders between
    stages (``jnp.transpose``; the MPI backend passes its native tiled copy). The opening and
    closing reorders use it only in a `standalone` program (an eager call: the FFT is the
    whole program, nothing around it to fuse with): inside a user's jit they stay
    ``jnp.transpose``, so that XLA can cancel a forward's closing move against the inverse's
    opening one (it cannot cancel custom calls). Measured at 256^3 on 2 MPI ranks: native ends
    made an eager c2c round trip 0.88x as long, a jitted one 1.06x."""
    ndim = block.ndim
    ends = permute if standalone else jnp.transpose
    order = list(range(ndim))  # order[p]: the logical axis held by axis p of `block`
    stages = _fused(plan.stages)
    # FFTW's strided plans transform any axis where it lies: the block then stays in logical
    # order, and no stage pays a transposing copy for XLA's minor-axis FFTs.
    strided = STRIDED_FFTW and fftw.usable_for(block.dtype)
    if plan.stages and not strided:
        start = _start_order(plan, ndim)
        block, order = _reorder(block, order, start, ends), start
    deferred = _deferred_stage(stages, order, norm)
    devices = plan.in_layout.mesh.size
    i = 0
    while i < len(stages):
        stage = stages[i]
        if move is not None and isinstance(stage, (Transpose, Merge)):
            block = move(block, stage, order)
            i += 1
            continue
        if strided and isinstance(stage, LocalFFT) and not stage.kernels:
            block = _strided_fft(block, stage, order, norm,
                                 "forward" if i == deferred else norm)
            i += 1
            continue
        slab_axis = None if strided or move is not None else _slab_axis(block, order, stages,
                                                                       i)
        if slab_axis is not None:
            block, order = _slabbed(block, order, slab_axis, stages, i, deferred, norm,
                                    exchange, permute, devices)
            i += 2
            continue
        block, order = _run_stage(block, order, stages, i, deferred, norm, exchange, permute,
                                  0 if strided else devices)
        i += 1
    if deferred is not None:
        n = math.prod(stages[deferred].sizes)
        scale = 1.0 / n if norm == "backward" else 1.0 / math.sqrt(n)
        block = block * np.asarray(scale, dtype=jnp.finfo(block.dtype).dtype)
    return _reorder(block, order, list(range(ndim)), ends)



def _run_stage(block, order: list, stages, i: int, deferred, norm: str, exchange, permute,
               devices: int):
    """Stage `i` of `stages` (a LocalFFT, Transpose or Merge) on `block` held in `order`:
    (new block, its order). `devices`: the mesh size (0: never reorder before an exchange,
    for FFTW's strided plans)."""
    ndim = block.ndim
    stage = stages[i]
    following = stages[i + 1] if i + 1 < len(stages) else None
    if _orders_before_exchange(stage, following, devices):
        assert isinstance(following, LocalFFT)  # _orders_before_exchange checked it
        new = _order_for(order, following)
        block, order = _reorder(block, order, new, permute), new
    if isinstance(stage, Transpose):
        return all_to_all_move(block, stage.mesh_axes, order.index(stage.src),
                               order.index(stage.dst), stage.src_local_len, stage.parts,
                               exchange), order
    if isinstance(stage, Merge):
        return _run_merge(block, stage, order, exchange), order
    new = _order_for(order, stage)
    block, order = _reorder(block, order, new, permute), new
    k = len(stage.axes)
    size_of = dict(zip(stage.axes, stage.sizes))
    s = tuple(size_of[a] for a in order[ndim - k:])
    if stage.kind == "r2r":
        block = apply_r2r_stage(block, [order.index(a) for a in stage.axes], stage.kernels)
    elif stage.kind in ("r2c", "c2r") and stage.kernels:  # a padded real axis
        block = stage.kernels[0](block, order.index(stage.axes[0]))
    elif stage.kernels:
        block = apply_mixed_stage(block, [order.index(a) for a in stage.axes], stage.kernels)
    elif stage.kind == "r2c":
        block = local_fft.rfftn(block, s, tuple(range(ndim - k, ndim)), norm)
    elif stage.kind == "c2r":
        block = local_fft.irfftn(block, s, tuple(range(ndim - k, ndim)), norm)
    elif i == deferred:  # unnormalised here; scaled in run_stages' closing pass
        block = local_fft.ifftn(block, s=s, axes=tuple(range(ndim - k, ndim)), norm="forward")
    else:
        fn = local_fft.ifftn if stage.inverse else local_fft.fftn
        block = fn(block, s, tuple(range(ndim - k, ndim)), norm)
    return block, order


# How many slabs `_slabbed` cuts the block into.
SLABS = 4


def _slab_axis(block, order: list, stages, i: int):
    """The logical axis along which the c2c FFT `stages[i]` and the padded all-to-all after it
    run slab by slab (`_slabbed`), or None.

    Why (issue 49): on an uneven split the exchange's padded send rows are materialised (the
    barrier in transpose.all_to_all_move), so the FFT's output, the padded copy, the send and
    the receive pieces and their concatenation are all block-sized; XLA's size-ordered heap
    then stacked them past 3 blocks (irfftn of (37, 203, 19) split over 8: 3.08). Slab by
    slab, only the received slabs and one slab's transients are live at a time. Only where
    the exchange pads, the plan ends in a real (c2r) stage and an axis is untouched by both (a
    batch axis of the FFT and the exchange) and as long as the slab count; not for folds.
    Complex ends are left whole (ifftn plans 2.05 blocks either way; the slabs' sequential
    exchanges cost small arrays time: ifftn of (37, 203, 19) over 8 ran 1.3-1.7x as long).
    Measured with 4 slabs (2 slabs: irfftn of (101, 67, 45) on (2, 4) 2.94, too close)."""
    stage = stages[i]
    following = stages[i + 1] if i + 1 < len(stages) else None
    if not any(isinstance(s, LocalFFT) and s.kind == "c2r" for s in stages[i + 2:]):
        return None
    if not (isinstance(stage, LocalFFT) and stage.kind == "c2c" and not stage.kernels
            and isinstance(following, Transpose) and following.src_keep == 1
            and following.dst_keep == 1 and following.parts > 1):
        return None
    dst_local = block.shape[order.index(following.dst)]
    if dst_local % following.parts == 0:
        return None
    batch = [a for a in order if a not in stage.axes and a not in (following.src, following.dst)
             and block.shape[order.index(a)] >= SLABS]
    if not batch:
        return None
    return max(batch, key=lambda a: block.shape[order.index(a)])


def _slabbed(block, order: list, axis: int, stages, i: int, deferred, norm: str, exchange,
             permute, devices: int):
    """Stages `i` (a c2c FFT) and `i + 1` (a padded Transpose) run on `SLABS` slabs of `block`
    along logical `axis`, one after another (each slab's input waits, by an optimization
    barrier, for the slab before it to arrive), the received slabs concatenated. (Merging
    each slab in place into one zeroed buffer instead saves that concatenation's pass but
    planned 2.94 blocks for irfftn of (101, 67, 45) on (2, 4), against 2.36.)"""
    where = order.index(axis)
    n = block.shape[where]
    bounds = [n * j // SLABS for j in range(SLABS + 1)]
    done: list = []
    new_order = order
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        src = block
        if done:
            _, src = lax.optimization_barrier((done[-1], block))
        piece = lax.slice_in_dim(src, lo, hi, axis=where)
        piece, new_order = _run_stage(piece, order, stages, i, deferred, norm, exchange,
                                      permute, devices)
        piece, new_order = _run_stage(piece, new_order, stages, i + 1, deferred, norm,
                                      exchange, permute, devices)
        done.append(piece)
    return jnp.concatenate(done, axis=new_order.index(axis)), new_order

# Whether blocks stay in logical order where FFTW runs the local FFTs (see run_stages): no
# stage then pays a transposing copy, and an eager call needs no closing or opening reorder,
# so eager round trips cost what jitted ones do. FFTW's own plan for a leading-axis FFT of a
# power-of-two stride is slow (every element of a column on the same cache sets: 2.5x the
# minor-axis time with FFTW_MEASURE, 16x with FFTW_ESTIMATE, 256^3 complex128 slab), so such
# columns run in tiles through a cache-sized buffer (csrc/fftw_provider.cc, ExecuteTiled).
# Measured on an idle 2-core machine, median of interleaved rounds: 8 virtual devices, 128^3
# jitted round trips, strided / working order 0.91-0.98 for all four dtypes; 2 MPI ranks,
# 128^3 r2c eager 15.8 against 31.1 ms, jitted 15.4 against 24.4; 256^3 r2c jitted 151
# against 167 ms; c2c as fast or faster (docs/performance.md).
STRIDED_FFTW = True


def _strided_fft(block, stage: LocalFFT, order: list, norm: str, stage_norm: str):
    """`stage` on the block's axes where they lie (FFTW's strided plans; XLA's FFT, where a GPU
    program takes it, transposes internally). `stage_norm` is "forward" for the deferred
    inverse stage (its 1/n is applied in run_stages' closing pass)."""
    del norm
    axes = tuple(order.index(a) for a in stage.axes)  # r2c/c2r: the halved axis last
    if stage.kind == "r2c":
        return local_fft.rfftn(block, stage.sizes, axes, stage_norm)
    if stage.kind == "c2r":
        return local_fft.irfftn(block, stage.sizes, axes, stage_norm)
    fn = local_fft.ifftn if stage.inverse else local_fft.fftn
    return fn(block, stage.sizes, axes, stage_norm)


def execute(plan: Plan, data, norm: str, standalone: bool = False):
    """Physical array of `plan.in_layout` -> physical array of `plan.out_layout`. `standalone`
    (an eager call's program) changes nothing here: this backend's reorders are
    ``jnp.transpose`` either way."""
    del standalone
    if not plan.stages:
        return data
    # check_vma=False: with the check, shard_map under two nested spmd vmaps (darray.vmap of
    # darray.vmap, or of jacfwd) raises _RepError on jax 0.10 and 0.12 (tests/multidevice/
    # test_workflows.py); the specs are the layouts', so the check adds nothing here.
    body = compat.shard_map(lambda b: run_stages(b, plan, norm), mesh=plan.in_layout.mesh,
                            in_specs=(plan.in_layout.spec,), out_specs=plan.out_layout.spec,
                            check_vma=False)
    return body(data)


__all__ = ["apply_mixed_stage", "apply_r2r", "apply_r2r_stage", "execute", "run_stages"]


def with_jax_tangent(native_body, plan: Plan, norm: str):
    """`native_body` (a native backend's executor of `plan`) as a `jax.custom_jvp` whose
    tangent is the same plan run here: a custom call has no transpose rule, the plan is linear
    in the data, and the JAX collectives of this executor transpose for reverse mode."""
    @jax.custom_jvp
    def run(data):
        return native_body(data)

    @run.defjvp
    def run_jvp(primals, tangents):
        (data,), (t,) = primals, tangents
        return native_body(data), execute(plan, t, norm)
    return run
