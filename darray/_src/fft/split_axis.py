"""FFTs along axes that stay split: the distributed four-step (six-step) Cooley-Tukey FFT.

The plan machinery (plan.py) transforms a split axis by moving its split to an unsplit axis.
When every array axis is split (a 1D array on its default placement, a 2D array split (x, y)
on a 2D mesh) there is nowhere to move it, and this module takes over, one axis at a time.

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

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.backends.jax.transpose import lax_exchange
from darray._src.backends.registry import EXCHANGES, FFT_EXECUTORS, record, select_exchanges
from darray._src.base import compat
from darray._src.base.program_cache import FFT, program_cache
from darray._src.fft import bluestein
from darray._src.fft.bluestein import bluestein_length
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.plans.fft_plan import SplitAxisPlan, SplitStage


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
def _to_columns(b, *, name, parts, cs, valid, n1, n2, weight, exchange=lax_exchange):
    """Step 1. Local block b[..., t] = x[r*cs + t] -> A[..., n1, n2 block of this device].

    Entries at positions >= `valid` are read as zero (numpy's zero-padding to `n`); `weight`
    ("irfft" or None) scales them by the irfft Hermitian weights."""
    w = n2 // parts
    n = n1 * n2
    if cs * parts == n and valid == n and weight is None:  # aligned: a local reshape
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
    if weight == "irfft":
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


def _to_natural(c, *, name, parts, n1, n2, out_len, cd, exchange=lax_exchange):
    """Step 4. C[..., k1 block of this device, k2] -> X[d*cd + t] (t < cd) with
    k = k1 + N1*k2; entries k >= out_len are zeroed (rfft's truncation, layout padding)."""
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


def _four_step(b, *, name, parts, cs, valid, n, n1, n2, inverse, norm, out_len, cd, weight,
               exchange=lax_exchange):
    """One split axis (the last of block b): a length-n c2c transform, three all-to-alls."""
    fft = jnp.fft.ifft if inverse else jnp.fft.fft
    a = _to_columns(b, name=name, parts=parts, cs=cs, valid=valid, n1=n1, n2=n2,
                    weight=weight, exchange=exchange)        # (..., n1, n2/P)
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
    if weight == "irfft":
        a = a.real  # c2r: halve what the last all-to-all moves
    return _to_natural(a, name=name, parts=parts, n1=n1, n2=n2, out_len=out_len, cd=cd,
                       exchange=exchange)


# -- stages and the compiled program ----------------------------------------------------------
def _stage(layout: Layout, axis: int, kind: str, inverse: bool, size: int, fname: str):
    """(static parameters, output layout) of one axis transform."""
    n_in = layout.shape[axis]
    out_len = size // 2 + 1 if kind == "r2c" else size
    shape = list(layout.shape)
    shape[axis] = out_len
    out = Layout.create(tuple(shape), layout.mesh, layout.spec)
    parts = layout.parts(axis)
    group = tuple(layout.split[axis])
    if parts == 1:
        return dict(kind=kind, axis=axis, inverse=inverse, size=size, parts=1), out
    nn = factor(size, parts)
    name = group[0] if len(group) == 1 else group
    params = dict(kind=kind, axis=axis, inverse=inverse, size=size, parts=parts, name=name,
                  cs=layout.chunk(axis), valid=min(n_in, size if kind != "c2r" else
                                                   size // 2 + 1),
                  out_len=out_len, cd=out.chunk(axis))
    if nn is None:  # Bluestein on a padded length the four-step takes (bluestein.py)
        m = bluestein_length(size, parts)
        m1, m2 = bluestein.split_length(m, parts, layout.chunk(axis), out.chunk(axis))
        params.update(m1=m1, m2=m2)
    else:
        params.update(n1=nn[0], n2=nn[1])
    return params, out


def _run_stage(block, p, norm, consts, exchange=lax_exchange):
    axis, kind = p["axis"], p["kind"]
    if p["parts"] == 1:  # a size-1 mesh axis: the whole axis is local
        if kind == "r2c":
            return jnp.fft.rfft(block, n=p["size"], axis=axis, norm=norm)
        if kind == "c2r":
            return jnp.fft.irfft(block, n=p["size"], axis=axis, norm=norm)
        fn = jnp.fft.ifft if p["inverse"] else jnp.fft.fft
        return fn(block, n=p["size"], axis=axis, norm=norm)
    b = jnp.moveaxis(block, axis, -1)
    if kind == "r2c":
        b = b.astype(jnp.result_type(b.dtype, jnp.complex64))
    common = dict(name=p["name"], parts=p["parts"], cs=p["cs"], valid=p["valid"],
                  n=p["size"], inverse=p["inverse"], norm=norm, out_len=p["out_len"],
                  cd=p["cd"], weight="irfft" if kind == "c2r" else None)
    if "m1" in p:
        del common["inverse"], common["norm"]  # carried by the tables
        out = bluestein.transform(b, consts, m1=p["m1"], m2=p["m2"], exchange=exchange,
                                  **common)
    else:
        out = _four_step(b, n1=p["n1"], n2=p["n2"], exchange=exchange, **common)
    return jnp.moveaxis(out, -1, axis)


@program_cache(FFT)
def _compiled(in_layout, out_layout, stages, norm, cast, conj_in, conj_out, dtype,
              inline_tables, exchanges: str):
    params = [dict(p) for p in stages]
    # Bluestein stages take their tables as arguments (bluestein.host_tables) unless the
    # transform is traced inside a caller's jit (then the program builds them)
    const_specs = tuple(bluestein.table_specs(_entry(p["name"]))
                        if "m1" in p and not inline_tables else () for p in params)

    def body(block, consts):
        exchange = EXCHANGES[exchanges](in_layout.mesh).all_to_all  # one chain per program
        for p, c in zip(params, consts):
            if inline_tables and "m1" in p:
                moved = jnp.moveaxis(block, p["axis"], -1)
                moved, c = bluestein.tables_in_program(moved, **_bluestein_args(p, norm),
                                                       dtype=dtype, exchange=exchange)
                block = jnp.moveaxis(moved, -1, p["axis"])
            block = _run_stage(block, p, norm, c, exchange)
        return block

    mapped = compat.shard_map(body, mesh=in_layout.mesh, in_specs=(in_layout.spec, const_specs),
                              out_specs=out_layout.spec)

    def run(data, consts):
        data = physical.constrain(data, in_layout)
        if cast is not None:
            data = data.astype(cast)
        if conj_in:
            data = jnp.conj(data)
        out = mapped(data, consts)
        if conj_out:
            out = jnp.conj(out)
        return physical.constrain(out, out_layout)
    return jax.jit(run)


def plan_split_axes(layout: Layout, axes, kind, inverse, sizes, fname="fft"):
    """The per-axis stages and the output layout of a transform of `layout` over `axes`,
    every one of which is transformed in place (its split kept)."""
    axes, sizes = tuple(axes), tuple(sizes)
    order = list(zip(axes, sizes))
    # r2c first on the last axis (real input), c2r last on it (real output), c2c in between.
    if kind == "r2c":
        order = [order[-1]] + order[:-1]
    stages, lay = [], layout
    for i, (a, s) in enumerate(order):
        k = kind if (kind == "r2c" and i == 0) or (kind == "c2r" and i == len(order) - 1) \
            else "c2c"
        p, lay = _stage(lay, a, k, inverse, s, fname)
        stages.append(tuple(sorted(p.items())))
    return tuple(stages), lay


def split_plan(layout: Layout, axes, kind, inverse, sizes, fname="fft") -> SplitAxisPlan:
    """The record of `plan_split_axes` (what `fft_plan` shows): one SplitStage per axis."""
    stages, out = plan_split_axes(layout, axes, kind, inverse, sizes, fname)
    records = []
    for items in stages:
        p = dict(items)
        blue = "m1" in p
        factors = ((p["m1"], p["m2"]) if blue else (p["n1"], p["n2"])) if p["parts"] > 1 \
            else ()
        records.append(SplitStage(p["axis"], p["kind"], p["inverse"], p["size"], p["parts"],
                                  factors, blue))
    return SplitAxisPlan(layout, out, tuple(records))


def transform(x, axes, sizes, kind, inverse, norm, cast=None, *, conj_in=False,
              conj_out=False, fname="fft", backend=None):
    """FFT of DistArray `x` over `axes` when no unsplit axis is available (see module doc).

    Args:
      x: DistArray (no halo). axes/sizes: transform axes and lengths (numpy's ``s``; for c2r
        the real output length). kind: "c2c", "r2c" or "c2r". inverse: c2c direction.
      norm: "backward", "ortho" or "forward". cast: dtype to cast the input to first.
      conj_in/conj_out: conjugate input/output (hfft/ihfft).

    Returns:
      DistArray of numpy's shape.

    Layout:
      Every array axis keeps its split (transform axes are re-chunked for their new length).
      Three all-to-alls per split transform axis, no all-gather. rfft/ihfft/irfft/hfft run a
      complex transform of the full length N (about 2x the flops of a local real transform).

    Lengths the four-step cannot factor run Bluestein (bluestein.py): four all-to-alls with
    the cached host tables of an eager call, five inside a caller's jit.
    """
    from darray._src.distarray.array import DistArray
    if cast is not None and np.dtype(cast) == np.dtype(x.dtype):
        cast = None
    stages, out_layout = plan_split_axes(x.layout, axes, kind, inverse, sizes, fname)
    complex_dtype = np.dtype(jax.dtypes.canonicalize_dtype(
        np.result_type(x.dtype if cast is None else cast, np.complex64)))
    # Host tables (built once, cached) are arguments of an eager call; inside a caller's trace
    # they would become constants embedded whole in every device's program: computed in it.
    inline = isinstance(x.data, jax.core.Tracer)
    # the all-to-alls run on the FFT backend in force when it offers row exchanges (MPI)
    chosen = record(select_exchanges("FFT split-axis", FFT_EXECUTORS, backend))
    fn = _compiled(x.layout, out_layout, stages, norm,
                   None if cast is None else np.dtype(cast), conj_in, conj_out, complex_dtype,
                   inline, chosen.backend)
    consts = tuple(() if inline else _stage_tables(x.layout.mesh, dict(p), norm, complex_dtype)
                   for p in stages)
    return DistArray._new(fn(x.data, consts), out_layout)


def _entry(name):
    return name if isinstance(name, str) else tuple(name)


def _bluestein_args(p, norm):
    return dict(name=p["name"], parts=p["parts"], cs=p["cs"], valid=p["valid"], n=p["size"],
                m1=p["m1"], m2=p["m2"], inverse=p["inverse"], norm=norm,
                out_len=p["out_len"], cd=p["cd"],
                weight="irfft" if p["kind"] == "c2r" else None)


def _stage_tables(mesh, p, norm, dtype):
    if "m1" not in p:
        return ()
    return bluestein.host_tables(mesh, _entry(p["name"]), p["size"], p["m1"], p["m2"],
                                 p["parts"], p["cs"], p["valid"], p["out_len"], p["cd"],
                                 p["inverse"], norm, p["kind"] == "c2r", dtype)


__all__ = ["bluestein_length", "factor", "plan_split_axes", "split_plan", "transform"]
