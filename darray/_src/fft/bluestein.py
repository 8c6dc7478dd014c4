"""Bluestein's chirp-z FFT of one split axis of any length (a prime, 7 over 4 devices, 9 over 2).

The four-step FFT (split_axis.py) needs N = N1 * N2 with the device count P dividing both. Any
other length N runs here, as a circular convolution of a padded length M >= 2N - 1 that the
four-step handles (a multiple of P*P with a 2/3/5/7-smooth cofactor):

  X[k] = c[k] * sum_n (x[n] c[n]) h[k - n],   c[n] = exp(-+ i pi n^2 / N),  h = conj(c),

the convolution computed as IDFT_M(DFT_M(x c) * H) with H = DFT_M(h) the filter spectrum.

Data layouts, per device r (w = M2 / P, h1 = M1 / P, the axis viewed as A[n1, n2] = a[M2 n1 + n2]):

  natural   (..., cs)      the input block a[r cs + t]; the output block likewise (cd)
  columns   (..., w, M1)   col[j, n1] = A[n1, r w + j]: this device's n2 block, n1 last
  spectrum  (..., h1, M2)  S[i, k2] = DFT_M(a)[k1 + M1 k2] for k1 = r h1 + i

natural -> columns (one all-to-all; only the rows that hold data travel), FFT over n1 (the last
axis), twiddles, all-to-all -> spectrum order, FFT over n2, times H, and the same way back: four
all-to-alls per transform, two each way, and no all-gather. The convolution never visits natural
order, so H is needed only in spectrum order. Every FFT runs over the last axis, so the only
transposes are the ones fused into the twiddle multiplications and the chirps.

Tables: an eager call passes the chirps and H as arguments, built once per (length, layout,
dtype) in float64 on the host (`host_tables`, a bounded cache). Inside a caller's jit those
would be embedded whole in every device's program as constants, so the program builds them
itself (`tables_in_program`): the chirps elementwise from exact integer angles, H by the
forward half above applied to h generated in columns order (one more all-to-all, five in all).
An optimization barrier ties that work to the stage's input, so that XLA cannot hoist it into
an earlier stage where it would be live next to that stage's largest buffers.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from darray._src.backends.jax.transpose import lax_exchange
from darray._src.plans.split_plan import BluesteinStage

# (norm, inverse) -> power of 1/N applied after the unnormalised DFT
NORM_SCALE = {
    ("backward", False): 0.0, ("ortho", False): 0.5, ("forward", False): 1.0,
    ("backward", True): 1.0, ("ortho", True): 0.5, ("forward", True): 0.0}


def bluestein_length(n: int, parts: int) -> int:
    """The padded convolution length: the smallest M >= 2n - 1 that is a multiple of
    parts*parts with a 2/3/5/7-smooth cofactor (fast local FFTs)."""
    base = parts * parts
    k = max(1, -(-(2 * n - 1) // base))
    while True:
        r = k
        for f in (2, 3, 5, 7):
            while r % f == 0:
                r //= f
        if r == 1:
            return base * k
        k += 1


def split_length(m: int, parts: int, cs: int, cd: int) -> tuple[int, int]:
    """M = M1 * M2 with `parts` dividing both. Prefer an M2 that divides the input and output
    block lengths (the layout changes are then reshapes, no gathers), then M1 close to M2."""
    best, best_key = None, None
    for m1 in range(parts, m + 1, parts):
        if m % m1 or (m // m1) % parts:
            continue
        m2 = m // m1
        aligned = (cs % m2 == 0 and parts * (cs // m2) <= m1) + \
            (cd % m2 == 0 and parts * (cd // m2) <= m1)
        key = (-aligned, abs(m1 - m2), -m1)
        if best_key is None or key < best_key:
            best, best_key = (m1, m2), key
    assert best is not None, f"no split of {m} into two multiples of {parts}"
    return best


# -- exact chirps --------------------------------------------------------------------------------
# E(x) = exp(sign i pi x / n) for integers x, which only matter mod 2n: the chirp is c[p] = E(p^2).
def _phases(x, n: int, sign: int) -> np.ndarray:
    """E(x) in complex128 for integer arrays x (reduced exactly mod 2n in int64 first)."""
    return np.exp(sign * 1j * np.pi * (np.asarray(x, np.int64) % (2 * n)) / n)


def _split(count: int) -> tuple[int, int]:
    """count <= outer * inner with inner ~ sqrt(count)."""
    inner = max(1, int(np.ceil(np.sqrt(count))))
    return -(-count // inner), inner


@dataclasses.dataclass(frozen=True)
class Grid:
    """The positions p = r step + s1 u + s2 v (u < rows, v < cols) of device r < parts."""
    step: int
    parts: int
    s1: int
    rows: int
    s2: int
    cols: int


@functools.lru_cache(maxsize=16)
def _grid_factors(grid: Grid, n: int, sign: int, mirror):
    """Small exact tables (complex128) whose broadcast product is the chirp on `grid` (see
    `chirp_grid`)."""
    step, parts, s1, rows, s2, cols = (grid.step, grid.parts, grid.s1, grid.rows, grid.s2,
                                       grid.cols)
    mod = 2 * n
    r = np.arange(parts, dtype=np.int64)[:, None] * step % mod
    u = np.arange(rows, dtype=np.int64)[None, :]
    v = np.arange(cols, dtype=np.int64)[None, :]
    pu = (r + s1 * u) % mod
    pv = (r + s2 * v) % mod
    row = _phases(pu * pu, n, sign)                     # (parts, rows): E((r step + s1 u)^2)
    col = _phases(pv * pv - r * r, n, sign)             # (parts, cols): E((.. + s2 v)^2 - ..^2)
    (r1, k1), (c1, k2) = _split(rows), _split(cols)
    c = 2 * s1 * s2 % mod                                # E(c u v), u = u1 k1 + u2, v = v1 k2 + v2
    cross = [_phases(c * (a[:, None] % mod) * (b[None, :] % mod) % mod, n, sign) for a, b in (
        (np.arange(r1) * k1, np.arange(c1) * k2), (np.arange(r1) * k1, np.arange(k2)),
        (np.arange(k1), np.arange(c1) * k2), (np.arange(k1), np.arange(k2)))]
    if mirror is None:
        return row, col, cross, None
    # c[M - p] = c[p] E(M^2 - 2 M p): linear in p, so one row and one column table
    lin_row = _phases(mirror * mirror - 2 * mirror * ((r + s1 * u) % mod), n, sign)
    lin_col = _phases(-2 * mirror * s2 * v % mod, n, sign)[0]
    return row, col, cross, (lin_row, lin_col)


def chirp_grid(r, grid: Grid, n: int, sign: int, dtype, mirror=None):
    """The chirp c[p] = exp(sign i pi p^2 / n) on `grid`, p = r step + s1 u + s2 v (u < rows,
    v < cols) for device r (an int32 scalar), as a (rows, cols) array of `dtype`.

    p^2 = (r step + s1 u)^2 + [(r step + s2 v)^2 - (r step)^2] + 2 s1 s2 u v: a row and a column
    table per device and the cross term split in four (u and v each in two digits) make a
    product of six exact tables of about sqrt(rows * cols) entries each (angles reduced mod 2n
    in int64 on the host, embedded as small constants). It fuses into its consumer: no
    full-size table, no per-element integer arithmetic, within a few ulps of the exact chirp.
    (In-program integer tables cost more than the transform: an op per bit per device.)

    mirror=M also returns the factor that turns c[p] into c[M - p] (Bluestein's even filter):
    (grid, far) with far (rows, cols) to be used where p > M/2."""
    row, col, cross, lin = _grid_factors(grid, n, sign, mirror)
    rows, cols = grid.rows, grid.cols
    (r1, k1), (c1, k2) = _split(rows), _split(cols)

    def pick(table):
        return lax.dynamic_index_in_dim(jnp.asarray(table.astype(dtype)), r, 0, keepdims=False)
    t = [jnp.asarray(x.astype(dtype)) for x in cross]
    chirp = (t[0][:, None, :, None] * t[1][:, None, None, :] *
             t[2][None, :, :, None] * t[3][None, :, None, :]).reshape(r1 * k1, c1 * k2)
    chirp = chirp[:rows, :cols] * pick(row)[:, None] * pick(col)[None, :]
    if lin is None:
        return chirp
    return chirp, pick(lin[0])[:, None] * jnp.asarray(lin[1].astype(dtype))[None, :]


def _twiddled(c, r, w: int, m1: int, m: int, sign: int):
    """c[..., j, k1] * exp(sign 2 pi i n2 k1 / m) on the columns grid (n2 = r w + j, k1 < m1).

    k1 = a K + b splits the factor into W^(n2 a K) W^(n2 b): two tables of w*m1/K and w*K
    entries (exact integer angles, n2 k1 < m < 2^31) whose broadcast product fuses into the
    multiplication. A full (w, m1) table of cos/sin is shared by every stage after XLA's CSE
    and kept alive as a buffer of its own (measured: two extra arrays at the peak)."""
    real = c.real.dtype
    k = next(d for d in range(int(np.sqrt(m1)), 0, -1) if m1 % d == 0)
    n2 = (r * w + jnp.arange(w, dtype=jnp.int32))[:, None]

    def table(steps, stride):
        angle = (2 * np.pi / m) * (n2 * (stride * jnp.arange(steps, dtype=jnp.int32))[None, :]
                                   ).astype(real)
        return lax.complex(jnp.cos(angle), sign * jnp.sin(angle))
    coarse, fine = table(m1 // k, k), table(k, 1)           # (w, m1/K), (w, K)
    shaped = c.reshape(c.shape[:-1] + (m1 // k, k)) * coarse[:, :, None] * fine[:, None, :]
    return shaped.reshape(c.shape)


# -- layout changes ------------------------------------------------------------------------------
def natural_to_columns(a, *, name, parts, cs, valid, m1, m2, exchange=lax_exchange):
    """a[..., t] = x[r cs + t] (read as zero at positions >= valid) -> columns (..., w, m1)."""
    w = m2 // parts
    if cs % m2 == 0 and parts * (cs // m2) <= m1:  # every block is whole rows: a reshape
        rows = cs // m2
        piece = a.reshape(a.shape[:-1] + (rows, parts, w))
        piece = jnp.swapaxes(jnp.moveaxis(piece, -2, 0), -1, -2)       # (P_d, ..., w, rows)
        recv = exchange(piece, name)           # (P_s, ..., w, rows)
        cols = jnp.moveaxis(recv, 0, -2)
        cols = cols.reshape(cols.shape[:-2] + (parts * rows,))
        return jnp.pad(cols, [(0, 0)] * (cols.ndim - 1) + [(0, m1 - parts * rows)])
    lo = [(s * cs) // m2 for s in range(parts)]
    live = [s for s in range(parts) if s * cs < valid and lo[s] < m1]
    rows = max([min(m1, -(-min(s * cs + cs, valid) // m2)) - lo[s] for s in live] + [1])
    r = lax.axis_index(name)
    lo_r = jnp.asarray(lo, jnp.int32)[r]
    q = jnp.arange(rows, dtype=jnp.int32)[None, None, :]
    d = jnp.arange(parts, dtype=jnp.int32)[:, None, None]
    j = jnp.arange(w, dtype=jnp.int32)[None, :, None]
    g = m2 * (lo_r + q) + d * w + j                                    # (P, w, rows) positions
    idx = g - r * cs
    mask = (idx >= 0) & (idx < cs) & (g < valid) & (lo_r + q < m1)
    piece = jnp.take(a, jnp.clip(idx, 0, cs - 1).reshape(-1), axis=-1)
    piece = piece.reshape(a.shape[:-1] + (parts, w, rows))
    piece = jnp.where(mask, piece, jnp.zeros((), piece.dtype))
    recv = exchange(jnp.moveaxis(piece, -3, 0), name)
    out = None
    for s in live:  # sender s's rows start at lo[s]; a row two senders share arrives in halves
        top = min(rows, m1 - lo[s])
        part = jnp.pad(recv[s, ..., :top], [(0, 0)] * (recv.ndim - 2) + [(lo[s], m1 - lo[s] - top)])
        out = part if out is None else out + part
    if out is None:
        out = jnp.zeros(recv.shape[1:-1] + (m1,), recv.dtype)
    return out


def columns_to_natural(c, *, name, parts, m1, m2, out_len, cd, exchange=lax_exchange):
    """Columns (..., w, m1) -> y[..., t] = Y[r cd + t] for t < cd; positions >= out_len are
    left for the caller to zero (its output chirp is zero there)."""
    if cd % m2 == 0 and parts * (cd // m2) <= m1:
        rows = cd // m2
        piece = c[..., :parts * rows].reshape(c.shape[:-1] + (parts, rows))
        offsets = None
    else:
        lo = [min((d * cd) // m2, m1 - 1) for d in range(parts)]
        live = [d for d in range(parts) if d * cd < out_len]
        rows = max([min(m1 - 1, (min(d * cd + cd, out_len) - 1) // m2) - lo[d] + 1
                    for d in live] + [1])
        table = np.minimum(np.array(lo)[:, None] + np.arange(rows)[None, :], m1 - 1)
        piece = jnp.take(c, jnp.asarray(table.reshape(-1), jnp.int32), axis=-1)
        piece = piece.reshape(c.shape[:-1] + (parts, rows))
        offsets = np.array([d * cd - m2 * lo[d] for d in range(parts)])
    recv = exchange(jnp.moveaxis(piece, -2, 0), name)  # (P_s,...,w,rows)
    nat = jnp.moveaxis(jnp.moveaxis(recv, 0, -1), -3, -1)                      # (..., rows, P_s, w)
    flat = nat.reshape(nat.shape[:-3] + (rows * m2,))  # position - lo[this device] * m2
    if offsets is None:
        return flat
    pad = max(0, int(offsets.max()) + cd - rows * m2)
    if pad:
        flat = jnp.pad(flat, [(0, 0)] * (flat.ndim - 1) + [(0, pad)])
    start = jnp.asarray(offsets, jnp.int32)[lax.axis_index(name)]
    return lax.dynamic_slice_in_dim(flat, start, cd, axis=-1)


def columns_to_spectrum(c, *, name, parts, m1, m2, r, exchange=lax_exchange):
    """Columns (..., w, m1) -> the spectrum order (..., h1, m2) (the forward half)."""
    w, h1 = m2 // parts, m1 // parts
    c = _twiddled(jnp.fft.fft(c, axis=-1), r, w, m1, m1 * m2, -1)
    piece = c.reshape(c.shape[:-1] + (parts, h1))
    piece = jnp.swapaxes(jnp.moveaxis(piece, -2, 0), -1, -2)        # (P_d, ..., h1, w)
    recv = exchange(piece, name)            # (P_s, ..., h1, w)
    s = jnp.moveaxis(recv, 0, -2)
    return jnp.fft.fft(s.reshape(s.shape[:-2] + (m2,)), axis=-1)


def spectrum_to_columns(s, *, name, parts, m1, m2, r, exchange=lax_exchange):
    """The inverse of `columns_to_spectrum` (the inverse DFT, normalised by 1/M)."""
    w = m2 // parts
    s = jnp.fft.ifft(s, axis=-1)
    piece = jnp.moveaxis(s.reshape(s.shape[:-1] + (parts, w)), -2, 0)   # (P_d, ..., h1, w)
    recv = exchange(piece, name)               # (P_s, ..., h1, w)
    c = jnp.moveaxis(jnp.moveaxis(recv, 0, -1), -3, -1)                # (..., w, P_s, h1)
    c = _twiddled(c.reshape(c.shape[:-2] + (m1,)), r, w, m1, m1 * m2, 1)
    return jnp.fft.ifft(c, axis=-1)


# -- the transform -------------------------------------------------------------------------------
def transform(b, tables, stage: BluesteinStage, exchange=lax_exchange):
    """The chirp-z transform of the last axis of block b (length n, split over `parts`).

    tables: (chirp_in (cs,), filter spectrum (h1, m2), chirp_out (cd,)) for this device, from
    `host_tables` or `tables_in_program` (whose chirp_out is a function of an array it must
    wait for); they carry the direction, the norm and irfft's Hermitian weights. A c2r stage
    returns the real part."""
    cut, n, m1, m2 = stage.cut, stage.size, stage.m1, stage.m2
    name, parts, cs, valid = cut.axis_name, cut.parts, cut.in_chunk, cut.valid
    chirp_in, spectrum, chirp_out = tables
    r = lax.axis_index(name)
    a = b * chirp_in
    if parts * cs > min(valid, n):  # layout padding may hold anything: zero it, not 0 * it
        g = r * cs + jnp.arange(cs, dtype=jnp.int32)
        a = jnp.where(g < min(valid, n), a, jnp.zeros((), a.dtype))
    cols = natural_to_columns(a, name=name, parts=parts, cs=cs, valid=min(valid, n), m1=m1,
                              m2=m2, exchange=exchange)
    s = columns_to_spectrum(cols, name=name, parts=parts, m1=m1, m2=m2, r=r,
                            exchange=exchange) * spectrum
    cols = spectrum_to_columns(s, name=name, parts=parts, m1=m1, m2=m2, r=r, exchange=exchange)
    if callable(chirp_out):
        chirp_out = chirp_out(cols)
    out = columns_to_natural(cols, name=name, parts=parts, m1=m1, m2=m2, out_len=cut.out_len,
                             cd=cut.out_chunk, exchange=exchange) * chirp_out
    return out.real if stage.kind == "c2r" else out


def _block_chirp(r, length: int, parts: int, n: int, sign: int, dtype):
    """The chirp at positions r * length + t, t < length (device r's natural block)."""
    rows, cols = _split(length)
    chirp = chirp_grid(r, Grid(length, parts, cols, rows, 1, cols), n, sign, dtype)
    return chirp.reshape(-1)[:length]


def tables_in_program(b, stage: BluesteinStage, norm: str, dtype, exchange=lax_exchange):
    """This device's tables (see `transform`), computed in the program from exact small
    tables (`chirp_grid`). Returns (b, tables); each table is made to wait, through
    `_zero_after`, for the array it is used with (module doc)."""
    cut, n, m1, m2, inverse = stage.cut, stage.size, stage.m1, stage.m2, stage.inverse
    name, parts, cs, valid = cut.axis_name, cut.parts, cut.in_chunk, cut.valid
    out_len, cd = cut.out_len, cut.out_chunk
    sign = 1 if inverse else -1
    real = np.dtype(jnp.finfo(dtype).dtype)
    r = lax.axis_index(name) + _zero_after(b)
    m, w = m1 * m2, m2 // parts
    # h = conj of the chirp at distance min(k, m - k) < n, generated in columns order:
    # k = r w + j + m2 n1 on the grid (j < w, n1 < m1)
    grid, far_factor = chirp_grid(r, Grid(w, parts, 1, w, m2, m1), n, -sign, dtype, mirror=m)
    k = m2 * jnp.arange(m1, dtype=jnp.int32)[None, :] + \
        (r * w + jnp.arange(w, dtype=jnp.int32))[:, None]
    h = grid * jnp.where(k > m - k, far_factor, jnp.ones((), grid.dtype))
    h = jnp.where(jnp.minimum(k, m - k) < n, h, jnp.zeros((), h.dtype)).astype(dtype)
    spectrum = columns_to_spectrum(h, name=name, parts=parts, m1=m1, m2=m2, r=r,
                                   exchange=exchange)
    # the input chirp waits for the spectrum, so the data path does not run beside its FFTs
    r_in = lax.axis_index(name) + _zero_after(spectrum)
    g = r_in * cs + jnp.arange(cs, dtype=jnp.int32)
    c_in = jnp.where(g < min(valid, n), _block_chirp(r_in, cs, parts, n, sign, dtype), 0)
    if stage.kind == "c2r":  # the Hermitian extension of the n//2+1 given entries
        ends = (g == 0) | (g == n // 2) if n % 2 == 0 else (g == 0)
        c_in = c_in * jnp.where(ends, 1, 2).astype(real)

    def c_out(after):  # generated once the convolution is done (`after`), not held through it
        r_out = lax.axis_index(name) + _zero_after(after)
        kout = r_out * cd + jnp.arange(cd, dtype=jnp.int32)
        scale = jnp.asarray(float(n) ** -NORM_SCALE[(norm, inverse)], real)
        out = jnp.where(kout < out_len, _block_chirp(r_out, cd, parts, n, sign, dtype) * scale,
                        0)
        return out.astype(dtype)
    return b, (c_in.astype(dtype), spectrum, c_out)


def _zero_after(b):
    """An int32 zero that XLA cannot prove zero, computed from b: the tables built from it
    wait for the stage's input. (An optimization barrier did not hold: XLA turns barriers
    into control dependencies that its later passes drop, and then scheduled both stages'
    tables first, holding them through the first stage.)"""
    if b.size == 0:
        return jnp.int32(0)
    first = b.reshape(-1)[0]
    first = first.real if jnp.iscomplexobj(first) else first
    unsigned = jnp.uint64 if first.dtype.itemsize == 8 else jnp.uint32
    bits = lax.bitcast_convert_type(first, unsigned)
    half = jnp.asarray(8 * first.dtype.itemsize // 2, unsigned)
    return lax.shift_right_logical(lax.shift_right_logical(bits, half), half).astype(jnp.int32)


def _chirp_host(pos: np.ndarray, n: int, sign: int) -> np.ndarray:
    """exp(sign i pi pos^2 / n) in complex128, the angle reduced exactly (pos^2 mod 2n)."""
    sq = (pos.astype(np.int64) % (2 * n)) ** 2 % (2 * n)
    return np.exp(sign * 1j * np.pi * sq / n)


@functools.lru_cache(maxsize=4)
def _host_spectrum(n: int, m1: int, m2: int) -> np.ndarray:
    """The forward filter spectrum (m1, m2) in spectrum order [k1, k2] = H[k1 + m1 k2], in
    complex128; the inverse direction's is its conjugate (h is even, so H is too)."""
    m = m1 * m2
    k = np.arange(m)
    dist = np.minimum(k, m - k)
    h = np.where(dist < n, _chirp_host(np.where(dist < n, dist, 0), n, 1), 0)
    return np.ascontiguousarray(np.fft.fft(h).reshape(m2, m1).T)


@functools.lru_cache(maxsize=8)
def host_tables(mesh, stage: BluesteinStage, norm: str, dtype):
    """The tables of `transform` for every device, built once in float64 on the host and
    placed on the devices split like the axis (bounded cache: each entry holds about three
    arrays of the signal's size). Returns (chirp_in (P cs,), spectrum (m1, m2), chirp_out
    (P cd,)), all of `dtype`."""
    cut, n, m1, m2, inverse = stage.cut, stage.size, stage.m1, stage.m2, stage.inverse
    parts, cs, cd, entry = cut.parts, cut.in_chunk, cut.out_chunk, cut.axis_name
    valid, out_len = cut.valid, cut.out_len
    from jax.sharding import NamedSharding
    sign = 1 if inverse else -1
    g = np.arange(parts * cs)
    c_in = np.where(g < min(valid, n), _chirp_host(g, n, sign), 0)
    if stage.kind == "c2r":  # the Hermitian extension of the n//2+1 given entries
        ends = (g == 0) | ((g == n // 2) if n % 2 == 0 else False)
        c_in = c_in * np.where(ends, 1.0, 2.0)
    spectrum = _host_spectrum(n, m1, m2)
    if inverse:
        spectrum = np.conj(spectrum)
    kout = np.arange(parts * cd)
    c_out = np.where(kout < out_len, _chirp_host(np.where(kout < out_len, kout, 0), n, sign), 0)
    c_out = c_out * float(n) ** -NORM_SCALE[(norm, inverse)]
    put = [(c_in, P(entry)), (spectrum, P(entry, None)), (c_out, P(entry))]
    with jax.ensure_compile_time_eval():  # concrete arrays even when called under a jit
        return tuple(jax.device_put(v.astype(dtype), NamedSharding(mesh, sp)) for v, sp in put)


def table_specs(entry):
    """The in_specs of `host_tables`' arrays."""
    return (P(entry), P(entry, None), P(entry))


__all__ = ["NORM_SCALE", "Grid", "bluestein_length", "chirp_grid", "host_tables", "split_length",
           "table_specs", "tables_in_program", "transform"]
