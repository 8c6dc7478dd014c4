"""FFTs along axes that stay split: the distributed four-step (six-step) Cooley-Tukey FFT.

The plan machinery (plans/fft_planner.py) transforms a split axis by moving its split to an
unsplit axis. When every array axis is split (a 1D array on its default placement, a 2D array
split (x, y) on a 2D mesh) there is nowhere to move it, and this module takes over, one axis at
a time: `split_plan` makes one typed stage per axis (plans/split_plan.py: a local, four-step or
Bluestein stage), and `run` runs exactly that plan.

For an axis of length N split over P devices, write N = N1 * N2 with P | N1 and P | N2 and view
the axis as A[n1, n2] = x[N2*n1 + n2]:

1. all-to-all: n1 becomes local, n2 split (device d holds the n2 block d);
2. FFT over n1 (length N1) -> k1, multiply by the twiddles exp(-+2 pi i n2 k1 / N), generated
   locally from iotas and the device's block offset;
3. all-to-all: k1 split, n2 local; FFT over n2 -> k2, giving C[k1, k2] = X[k1 + N1*k2];
4. all-to-all into natural order (k = k1 + N1*k2 split in contiguous chunks).

Three all-to-alls, no all-gather; the sub-transform norms multiply to the norm of length N.
Steps 1 and 4 are written for any input/output chunking, so zero-padding/truncation to `n` and
the real transforms fold into them: rfft keeps only the k < N//2+1 entries in step 4 (each
device receives about N/(2P) values, so the output is a valid layout of length N//2+1), and
irfft zero-extends its N//2+1 inputs in step 1, weighting them by 2 (1 for k = 0 and N/2) and
keeping the real part: y = Re(ifft(w * X)). Both pay for a complex transform of length N
(about twice the work of a local real transform) but move no more data than the c2c transform.

Any other length N (a prime, 7 over 4 devices, 9 over 2) runs Bluestein's chirp-z form on a
padded length M >= 2N - 1 that the four-step handles (bluestein.py): four all-to-alls, two each
way (the convolution never visits natural order), plus one when its filter spectrum is built
inside a caller's jit; still no all-gather.
"""
from __future__ import annotations

import typing

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.backends.jax.transpose import lax_exchange
from darray._src.backends.registry import EXCHANGES, Selection
from darray._src.base import compat
from darray._src.base.program_cache import FFT, program_cache
from darray._src.fft import bluestein
from darray._src.fft.bluestein import bluestein_length
from darray._src.fft.request import Request
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.plans.split_plan import (
    AxisCut,
    BluesteinStage,
    FourStepStage,
    LocalAxisStage,
    SplitAxisPlan,
    SplitStage,
)


def factor(n: int, parts: int) -> tuple[int, int] | None:
    """N = N1 * N2 with `parts` dividing both, N1 as close to N2 as possible; None if none."""
    best = None
    for n1 in range(parts, n + 1, parts):
        if n % n1 or (n // n1) % parts:
            continue
        if best is None or abs(n1 - n // n1) < abs(best[0] - best[1]):
            best = (n1, n // n1)
    return best


# -- the per-device body ----------------------------------------------------------------------
def _to_columns(b, stage: FourStepStage, exchange=lax_exchange):
    """Step 1. Local block b[..., t] = x[r*cs + t] -> A[..., n1, n2 block of this device].

    Entries at positions >= `valid` are read as zero (numpy's zero-padding to `n`); a c2r
    stage scales them by the irfft Hermitian weights."""
    cut, n1, n2 = stage.cut, stage.n1, stage.n2
    name, parts, cs, valid = cut.axis_name, cut.parts, cut.in_chunk, cut.valid
    irfft = stage.kind == "c2r"
    w = n2 // parts
    n = n1 * n2
    if cs * parts == n and valid == n and not irfft:  # aligned: a local reshape
        piece = b.reshape(b.shape[:-1] + (n1 // parts, parts, w))
        piece = jnp.moveaxis(piece, -2, 0)
        recv = exchange(piece, name)
        recv = jnp.moveaxis(recv, 0, -3)
        return recv.reshape(recv.shape[:-3] + (n1, w))
    # Rows n1lo[r] .. n1lo[r]+rows-1 of A hold the cells of device r's block.
    n1lo = np.array([(r * cs) // n2 for r in range(parts)])
    rows = max(min(n1, -(-min(r * cs + cs, valid) // n2)) - n1lo[r] for r in range(parts)
               if r * cs < valid) if valid > 0 else 1
    rows = max(int(rows), 1)
    r = lax.axis_index(name)
    lo = jnp.asarray(n1lo, jnp.int32)[r]
    q = jnp.arange(rows, dtype=jnp.int32)[None, :, None]
    d = jnp.arange(parts, dtype=jnp.int32)[:, None, None]
    j = jnp.arange(w, dtype=jnp.int32)[None, None, :]
    g = n2 * (lo + q) + d * w + j                       # (parts, rows, w) global positions
    idx = g - r * cs
    mask = (idx >= 0) & (idx < cs) & (g < valid) & (lo + q < n1)
    piece = jnp.take(b, jnp.clip(idx, 0, cs - 1), axis=-1)  # (..., parts, rows, w)
    if irfft:
        both_ends = (g == 0) | (g == n // 2) if n % 2 == 0 else (g == 0)
        piece = piece * jnp.where(both_ends, 1, 2).astype(piece.real.dtype)
    piece = jnp.where(mask, piece, jnp.zeros((), piece.dtype))
    piece = jnp.moveaxis(piece, -3, 0)
    recv = exchange(piece, name)    # (parts_r, ..., rows, w)
    recv = jnp.moveaxis(recv, 0, -3)
    recv = recv.reshape(recv.shape[:-3] + (parts * rows, w))
    targets = np.minimum(n1lo[:, None] + np.arange(rows)[None, :], n1 - 1).reshape(-1)
    out = jnp.zeros(recv.shape[:-2] + (n1, w), recv.dtype)
    # Rows shared by two senders arrive as two masked halves: summing assembles them.
    return out.at[..., targets, :].add(recv)


def _to_natural(c, stage: FourStepStage, exchange=lax_exchange):
    """Step 4. C[..., k1 block of this device, k2] -> X[d*cd + t] (t < cd) with
    k = k1 + N1*k2; entries k >= out_len are zeroed (rfft's truncation, layout padding)."""
    cut, n1, n2 = stage.cut, stage.n1, stage.n2
    name, parts, out_len, cd = cut.axis_name, cut.parts, cut.out_len, cut.out_chunk
    n = n1 * n2
    if cd * parts == n and out_len == n:  # aligned: device d takes the k2 block d
        w = n2 // parts
        piece = c.reshape(c.shape[:-1] + (parts, w))        # (..., h, parts, w)
        piece = jnp.moveaxis(piece, -2, 0)                  # (parts_d, ..., h, w)
        recv = exchange(piece, name)  # (parts_r, ..., h, w)
        recv = jnp.moveaxis(recv, 0, -3)                    # (..., parts_r, h, w)
        recv = recv.reshape(recv.shape[:-3] + (n1, w))      # (..., k1, k2 - d*w)
        return jnp.swapaxes(recv, -1, -2).reshape(recv.shape[:-2] + (cd,))
    lo = [min((d * cd) // n1, n2 - 1) for d in range(parts)]
    hi = [min(n2 - 1, (min(d * cd + cd, out_len) - 1) // n1) for d in range(parts)]
    cols = max(1, max(hi[d] - lo[d] + 1 for d in range(parts) if d * cd < out_len))
    table = np.minimum(np.array(lo)[:, None] + np.arange(cols)[None, :], n2 - 1)
    piece = jnp.take(c, jnp.asarray(table.reshape(-1)), axis=-1)   # (..., h, parts*cols)
    piece = piece.reshape(c.shape[:-1] + (parts, cols))
    piece = jnp.moveaxis(piece, -2, 0)                              # (parts_d, ..., h, cols)
    recv = exchange(piece, name)            # (parts_r, ..., h, cols)
    recv = jnp.moveaxis(recv, 0, -3)                                # (..., parts_r, h, cols)
    recv = recv.reshape(recv.shape[:-3] + (n1, cols))               # (..., k1, q)
    flat = jnp.swapaxes(recv, -1, -2).reshape(recv.shape[:-2] + (cols * n1,))
    offsets = np.array([d * cd - n1 * lo[d] for d in range(parts)])
    pad = max(0, int(offsets.max()) + cd - cols * n1)
    if pad:
        flat = jnp.pad(flat, [(0, 0)] * (flat.ndim - 1) + [(0, pad)])
    d = lax.axis_index(name)
    out = lax.dynamic_slice_in_dim(flat, jnp.asarray(offsets, jnp.int32)[d], cd, axis=-1)
    k = d * cd + jnp.arange(cd, dtype=jnp.int32)
    return jnp.where(k < out_len, out, jnp.zeros((), out.dtype))


def _rows_exchange(a, name, parts, n1, w, exchange):
    """(..., n1, w) -> (..., n1 / parts, parts * w): row block d of axis -2 goes to device d,
    and the blocks received are concatenated along the last axis in sender order."""
    a = a.reshape(a.shape[:-2] + (parts, n1 // parts, w))
    a = exchange(jnp.moveaxis(a, -3, 0), name)               # (parts_s, ..., k1 block, w)
    a = jnp.moveaxis(a, 0, -2)
    return a.reshape(a.shape[:-3] + (n1 // parts, parts * w))


def _four_step(b, stage: FourStepStage, norm: str, exchange=lax_exchange):
    """One split axis (the last of block b): a length-n c2c transform, three all-to-alls."""
    name, parts, n1, n2 = stage.cut.axis_name, stage.cut.parts, stage.n1, stage.n2
    n, inverse = stage.size, stage.inverse
    fft = jnp.fft.ifft if inverse else jnp.fft.fft
    a = _to_columns(b, stage, exchange)                      # (..., n1, n2/P)
    a = fft(a, axis=-2, norm=norm)                           # (..., k1, n2/P)
    # Twiddles W_N^(n2*k1): n2*k1 < N fits int32 for any N < 2^31; the remainder keeps the
    # angle accurate in single precision.
    w = n2 // parts
    n2_idx = lax.axis_index(name) * w + jnp.arange(w, dtype=jnp.int32)
    k1_idx = jnp.arange(n1, dtype=jnp.int32)
    prod = (k1_idx[:, None] * n2_idx[None, :]) % n
    real = a.real.dtype
    angle = (2 * np.pi / n) * prod.astype(real)
    a = a * lax.complex(jnp.cos(angle), (1 if inverse else -1) * jnp.sin(angle))
    if exchange is lax_exchange:  # XLA's all-to-all takes the axes as they are
        a = lax.all_to_all(a, name, a.ndim - 2, a.ndim - 1, tiled=True)  # (..., k1 block, n2)
    else:  # the same exchange as leading-axis rows (the MPI backend's form)
        a = _rows_exchange(a, name, parts, n1, w, exchange)
    a = fft(a, axis=-1, norm=norm)                           # (..., k1 block, k2)
    if stage.kind == "c2r":
        a = a.real  # c2r: halve what the last all-to-all moves
    return _to_natural(a, stage, exchange)


# -- stages and the compiled program ----------------------------------------------------------
def _stage(layout: Layout, axis: int, kind: str, inverse: bool, size: int):
    """The stage of one axis transform, and the layout after it."""
    out_len = size // 2 + 1 if kind == "r2c" else size
    shape = list(layout.shape)
    shape[axis] = out_len
    out = Layout.create(tuple(shape), layout.mesh, layout.spec)
    parts = layout.parts(axis)
    if parts == 1:
        return LocalAxisStage(axis, kind, inverse, size), out
    # c2r reads the n // 2 + 1 entries of a half spectrum; the other kinds read `size` entries
    read = size // 2 + 1 if kind == "c2r" else size
    cut = AxisCut(tuple(layout.split[axis]), parts, layout.chunk(axis),
                  min(layout.shape[axis], read), out_len, out.chunk(axis))
    factors = factor(size, parts)
    if factors is None:  # Bluestein on a padded length the four-step takes (bluestein.py)
        m1, m2 = bluestein.split_length(bluestein_length(size, parts), parts, cut.in_chunk,
                                        cut.out_chunk)
        return BluesteinStage(axis, kind, inverse, size, cut, m1, m2), out
    return FourStepStage(axis, kind, inverse, size, cut, *factors), out


def split_plan(layout: Layout, request: Request) -> SplitAxisPlan:
    """The plan of `request` on `layout` with every transform axis done in place (its split
    kept): one typed stage per axis. `fft_plan` shows it and `run` runs it."""
    order = list(zip(request.axes, request.sizes))
    kind = request.kind
    # r2c first on the last axis (real input), c2r last on it (real output), c2c in between.
    if kind == "r2c":
        order = [order[-1]] + order[:-1]
    stages, lay = [], layout
    for i, (a, s) in enumerate(order):
        real = (kind == "r2c" and i == 0) or (kind == "c2r" and i == len(order) - 1)
        stage, lay = _stage(lay, a, kind if real else "c2c", request.inverse, s)
        stages.append(stage)
    return SplitAxisPlan(layout, lay, tuple(stages))


def _run_stage(block, stage: SplitStage, norm: str, tables, exchange=lax_exchange):
    axis, kind = stage.axis, stage.kind
    if isinstance(stage, LocalAxisStage):  # a size-1 mesh axis: the whole axis is local
        if kind == "r2c":
            return jnp.fft.rfft(block, n=stage.size, axis=axis, norm=norm)
        if kind == "c2r":
            return jnp.fft.irfft(block, n=stage.size, axis=axis, norm=norm)
        fn = jnp.fft.ifft if stage.inverse else jnp.fft.fft
        return fn(block, n=stage.size, axis=axis, norm=norm)
    b = jnp.moveaxis(block, axis, -1)
    if kind == "r2c":
        b = b.astype(jnp.result_type(b.dtype, jnp.complex64))
    if isinstance(stage, BluesteinStage):  # the direction and norm are in its tables
        out = bluestein.transform(b, tables, stage, exchange)
    else:
        out = _four_step(b, stage, norm, exchange)
    return jnp.moveaxis(out, -1, axis)


@program_cache(FFT)
def _compiled(plan: SplitAxisPlan, request: Request, dtype, inline_tables: bool,
              exchanges: str):
    in_layout, out_layout, norm = plan.in_layout, plan.out_layout, request.norm
    # Bluestein stages take their tables as arguments (bluestein.host_tables) unless the
    # transform is traced inside a caller's jit (then the program builds them)
    table_specs = tuple(bluestein.table_specs(stage.cut.axis_name)
                        if isinstance(stage, BluesteinStage) and not inline_tables else ()
                        for stage in plan.stages)

    def body(block, tables):
        exchange = EXCHANGES[exchanges](in_layout.mesh).all_to_all  # one chain per program
        for stage, stage_tables in zip(plan.stages, tables):
            if inline_tables and isinstance(stage, BluesteinStage):
                moved = jnp.moveaxis(block, stage.axis, -1)
                moved, stage_tables = bluestein.tables_in_program(moved, stage, norm, dtype,
                                                                  exchange)
                block = jnp.moveaxis(moved, -1, stage.axis)
            block = _run_stage(block, stage, norm, stage_tables, exchange)
        return block

    mapped = compat.shard_map(body, mesh=in_layout.mesh, in_specs=(in_layout.spec, table_specs),
                              out_specs=out_layout.spec)

    def run(data, tables):
        data = physical.constrain(data, in_layout)
        if request.cast is not None:
            data = data.astype(request.cast)
        if request.conj_in:
            data = jnp.conj(data)
        out = mapped(data, tables)
        if request.conj_out:
            out = jnp.conj(out)
        return physical.constrain(out, out_layout)
    return jax.jit(run)


def run(x, plan: SplitAxisPlan, request: Request):
    """Run `plan` (from `split_plan`, its `selection` set) on DistArray `x` (see module doc).

    Returns:
      DistArray of numpy's shape, in ``plan.out_layout``.

    Layout:
      Every array axis keeps its split (transform axes are re-chunked for their new length).
      Three all-to-alls per split transform axis, no all-gather. rfft/ihfft/irfft/hfft run a
      complex transform of the full length N (about 2x the flops of a local real transform).

    Lengths the four-step cannot factor run Bluestein (bluestein.py): four all-to-alls with
    the cached host tables of an eager call, five inside a caller's jit. The all-to-alls run on
    the selection's backend (its row exchanges: JAX's or MPI's).
    """
    from darray._src.distarray.array import DistArray
    complex_dtype = np.dtype(jax.dtypes.canonicalize_dtype(
        np.result_type(x.dtype if request.cast is None else request.cast, np.complex64)))
    # Host tables (built once, cached) are arguments of an eager call; inside a caller's trace
    # they would become constants embedded whole in every device's program: computed in it.
    inline = isinstance(x.data, jax.core.Tracer)
    exchanges = typing.cast(Selection, plan.selection).backend
    fn = _compiled(plan, request, complex_dtype, inline, exchanges)
    tables = tuple(bluestein.host_tables(x.layout.mesh, stage, request.norm, complex_dtype)
                   if isinstance(stage, BluesteinStage) and not inline else ()
                   for stage in plan.stages)
    return DistArray._new(fn(x.data, tables), plan.out_layout)


__all__ = ["factor", "run", "split_plan"]
