"""Local real-to-real transforms (DCT/DST types 1-4) on one block, along one unsplit axis.

The distributed driver (darray._src.fft.api.run_r2r) moves splits so that the transform axis is
local, then calls `apply_kernel` on each block. Everything here is plain jax.numpy built on
jnp.fft (O(n log n)), so jit, vmap and every AD transform follow without custom rules: the
transpose of a DCT-II is then automatically a scaled DCT-III, and so on.

Numbers and normalisations are scipy.fft's (unnormalised definitions as in scipy's docs):

  DCT-I   y[k] = x[0] + (-1)^k x[N-1] + 2 sum_{n=1}^{N-2} x[n] cos(pi k n / (N-1))
  DCT-II  y[k] = 2 sum_n x[n] cos(pi k (2n+1) / (2N))
  DCT-III y[k] = x[0] + 2 sum_{n>=1} x[n] cos(pi (2k+1) n / (2N))
  DCT-IV  y[k] = 2 sum_n x[n] cos(pi (2k+1)(2n+1) / (4N))
  DST-I   y[k] = 2 sum_n x[n] sin(pi (k+1)(n+1) / (N+1))
  DST-II  y[k] = 2 sum_n x[n] sin(pi (k+1)(2n+1) / (2N))
  DST-III y[k] = (-1)^k x[N-1] + 2 sum_{n<=N-2} x[n] sin(pi (2k+1)(n+1) / (2N))
  DST-IV  y[k] = 2 sum_n x[n] sin(pi (2k+1)(2n+1) / (4N))

`norm` scales by the logical length F (2(N-1) for DCT-I, 2(N+1) for DST-I, 2N otherwise):
"backward" 1 forward / 1/F inverse, "ortho" 1/sqrt(F) both ways, "forward" the reverse of
backward. `orthogonalize` rescales the boundary entries that make types 1-3 orthogonal.
The inverse of type t is the transform of the "inverse type" (II <-> III, I and IV are their own)
with the same orthogonalisation and the norm direction swapped.
"""
from __future__ import annotations

import dataclasses
import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

FAMILIES = ("dct", "dst")
TYPES = (1, 2, 3, 4)
NORMS = (None, "backward", "ortho", "forward")
_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}
_SQRT2 = np.sqrt(2.0)


@dataclasses.dataclass(frozen=True)
class R2RKernel:
    """One real-to-real transform along one axis (hashable: it keys compilation caches).

    Attributes:
      family: "dct" or "dst".
      type: 1, 2, 3 or 4 (scipy's numbering).
      n: output length along the axis (the input is truncated or zero-padded to it first);
        None keeps the input length.
      norm: None (= "backward"), "backward", "ortho" or "forward".
      orthogonalize: scipy's flag; None means ``norm == "ortho"``.
      inverse: True for idct/idst (scipy's inverse of `type` with this norm).
    """

    family: str
    type: int
    n: int | None = None
    norm: str | None = None
    orthogonalize: bool | None = None
    inverse: bool = False

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"R2RKernel: family={self.family!r} is not accepted; use one of "
                             f"{FAMILIES}")
        if isinstance(self.type, bool) or self.type not in TYPES:
            raise ValueError(f"R2RKernel: type={self.type!r} is not accepted; use one of {TYPES}")
        if self.n is not None:
            if isinstance(self.n, bool) or operator.index(self.n) < 1:
                raise ValueError(f"R2RKernel: n={self.n!r} must be None or a positive int")
        if self.norm not in NORMS:
            raise ValueError(f"R2RKernel: norm={self.norm!r} is not accepted; use one of {NORMS}")
        if self.orthogonalize not in (None, True, False):
            raise ValueError(f"R2RKernel: orthogonalize={self.orthogonalize!r} must be None, "
                             f"True or False")

    @property
    def name(self) -> str:
        return ("i" if self.inverse else "") + self.family

    @property
    def executed_type(self) -> int:
        """The forward type actually computed (the inverse of DCT-II is a DCT-III, ...)."""
        return _INVERSE_TYPE[self.type] if self.inverse else self.type

    @property
    def orthogonal(self) -> bool:
        return (self.norm == "ortho") if self.orthogonalize is None else bool(self.orthogonalize)

    def out_length(self, in_length: int) -> int:
        return in_length if self.n is None else int(self.n)

    def check_length(self, length: int, axis=None) -> None:
        """Raise ValueError if the transform is undefined at this length (scipy refuses too)."""
        where = "" if axis is None else f" along axis {axis}"
        if length < 1:
            raise ValueError(f"{self.name}: invalid number of data points ({length}){where}; "
                             f"the transform length must be >= 1")
        if self.family == "dct" and self.type == 1 and length < 2:
            raise ValueError(f"{self.name}: type=1 is undefined for a transform length of "
                             f"{length}{where} (DCT-I divides by N-1); use a length >= 2 or "
                             f"another type")


# -- constants (built once per length in float64, cast to the data's precision) ---------------
@functools.lru_cache(maxsize=256)
def twiddle(num: int, scale: float, shift: float = 0.0) -> np.ndarray:
    """exp(-i pi (scale k + shift)) for k < num, in complex128."""
    k = np.arange(num, dtype=np.float64)
    return np.exp(-1j * np.pi * (scale * k + shift))


@functools.lru_cache(maxsize=256)
def alternating(num: int) -> np.ndarray:
    return np.where(np.arange(num) % 2 == 0, 1.0, -1.0)


def constant_like(values: np.ndarray, like) -> jax.Array:
    """A numpy constant in the precision of `like` (real or complex to match `values`)."""
    real = jnp.finfo(like.dtype).dtype
    dtype = real if np.isrealobj(values) else jnp.result_type(real, jnp.complex64)
    return jnp.asarray(values.astype(np.dtype(dtype)))


def _scale_entry(x, index: int, factor: float):
    """Multiply one entry of the last axis by `factor` (a constant weight vector: AD-clean)."""
    w = np.ones(x.shape[-1])
    w[index] = factor
    return x * constant_like(w, x)


# -- unnormalised forward transforms along the last axis of a real array ----------------------
def take_last(x, index: np.ndarray):
    """x[..., index] for a constant index: a gather that XLA fuses with the elementwise work
    around it (a concatenate of slices is one extra pass over memory on CPU)."""
    return jnp.take(x, jnp.asarray(index, dtype=np.int32), axis=-1)


# Type I's complex M-point FFT and its complex input are two arrays of the block each: run over
# the whole block at once they made dctn/dstn type 1 plan 5.0-6.0 arrays beyond the input, the
# most of all FFT programs (issue #21). A loop over a few slices of the rows, each result written
# in place over the rows it was computed from, holds one slice's pair at a time. Measured (8
# virtual CPU devices, 64^3 plans; 128^3-192^3 times interleaved, medians, loaded machine): dctn
# type 1 4.94 -> 3.88 arrays on a slab and 3.00 on a pencil, dstn type 1 5.0-6.0 -> 2.9-3.0; time
# 0.52-1.1x (192^3 slab 0.52x: the smaller FFT batches fit the caches), errors unchanged.
# The whole type-1 kernel runs in the slices, not only its odd-M step: for even M the radix-2
# recursion's joins (`_join`) were each materialised over the whole block, 3.5-4.0 blocks of
# temporaries for dctn/dstn/idctn/idstn type 1 on uneven splits (issue 49; 2.96 now), and a row
# count that four does not divide is sliced too (its few left-over rows in one more call).
_ROW_SLICES = 4


def _in_row_slices(kernel, x):
    """``kernel(x)`` for a kernel that keeps the length of the last axis, run over the rows
    of `x` in `_ROW_SLICES` slices of equal size (a loop writing each in place); rows left
    over by an uneven division (fewer than `_ROW_SLICES`) run in one more call, written in
    place after the loop. In one call when there are fewer rows than slices."""
    rows = 1
    for n in x.shape[:-1]:
        rows *= n
    if rows < _ROW_SLICES:
        return kernel(x)
    each, left = divmod(rows, _ROW_SLICES)
    flat = x.reshape((rows, x.shape[-1]))
    head = flat if not left else flat[:rows - left]
    sliced = head.reshape((_ROW_SLICES, each, x.shape[-1]))
    out = jax.lax.fori_loop(0, _ROW_SLICES, lambda i, buf: buf.at[i].set(kernel(buf[i])),
                            sliced).reshape((rows - left, x.shape[-1]))
    if left:
        out = jnp.concatenate([out, kernel(flat[rows - left:])], axis=0)
    return out.reshape(x.shape)


def _dct1(x):
    """DCT-I of length N = M + 1 at the cost of an M-point FFT (never the 2M extension).

    E, the 2M-point DFT of the even extension e, is the DCT-I. For even M a radix-2 step in time
    splits it: e[2m] = x[2m] is an even sequence of period M (a DCT-I of length M/2 + 1) and
    e[2m+1] = x[2m+1] a half-sample-even one (a DCT-II of length M/2), so E[k] = A[k] + C[k] and
    E[M-k] = A[k] - C[k] (C[M/2] = 0); the half-length DCT-I recurses. For odd M a step in
    frequency gives even bins E[2k] = DFT_M(s)[k], s[j] = x[j] + x[M-j], and odd bins
    E[2k+1] = DFT_M(v)[k + (M+1)/2], v[j] = (-1)^j (x[j] - x[M-j]) (M odd makes 2k+1+M even);
    s and v are both even, so their DFTs are real and one complex M-point FFT of s + i v gives
    both. Every step is exact algebra (no recurrence across bins), so errors stay those of the
    FFT."""
    n = x.shape[-1]
    m = n - 1
    if m % 2 == 0:
        half = m // 2
        a = _dct1(x[..., ::2])
        c = _dct2(x[..., 1::2])
        low = a[..., :half]
        return _join(low + c, a[..., half:], jnp.flip(low - c, axis=-1))
    return _dct1_odd(x)


def _dct1_odd(x):
    """`_dct1` for odd M = N - 1 (the step in frequency above)."""
    m = x.shape[-1] - 1
    head, tail = x[..., :m], jnp.flip(x[..., 1:], axis=-1)  # x[j], x[M-j] for j < M
    # one complex FFT of s + i v, not two real FFTs of s and v: measured (jax 0.12, CPU) 2-3x
    # faster when M is prime (N = 128), as fast otherwise; it plans one more array of memory
    z = jnp.fft.fft(jax.lax.complex(head + tail, (head - tail) * constant_like(alternating(m), x)),
                    axis=-1)[..., :(m + 1) // 2]
    return _interleave(z.real, jnp.flip(z.imag, axis=-1)).astype(x.dtype)


def _dst1(x):
    """DST-I of length N = M - 1 at the cost of an M-point FFT (never the 2M extension).

    With e the odd extension of period 2M (e[0] = e[M] = 0, e[j] = x[j-1]), y[K-1] = -Im E[K].
    For even M a radix-2 step in time splits e into x[1::2] (a DST-I of length M/2 - 1, which
    recurses) and x[0::2] (a DST-II of length M/2): y[K-1] = S_a + S_b, y[M-K-1] = S_b - S_a.
    For odd M a step in frequency gives even K from DFT_M(a), a[j] = e[j] - e[M-j], and odd K
    from DFT_M(c) at K' = (K+M)/2, c[j] = (-1)^j (e[j] + e[M-j]); both sequences are odd, their
    DFTs imaginary, and one complex M-point FFT of a + i c gives both."""
    n = x.shape[-1]
    if n == 1:
        return 2 * x
    m = n + 1
    if m % 2 == 0:
        s_a = _dst1(x[..., 1::2])
        s_b = _dst2(x[..., ::2])
        low = s_b[..., :-1]
        return _join(low + s_a, s_b[..., -1:], jnp.flip(low - s_a, axis=-1))
    return _dst1_odd(x)


def _dst1_odd(x):
    """`_dst1` for odd M = N + 1 (the step in frequency above)."""
    m = x.shape[-1] + 1
    # e[j] -+ e[M-j] is 0 at j = 0 and x[j-1] -+ x[N-j] above; one complex FFT (see _dct1)
    flipped = jnp.flip(x, axis=-1)
    z = jnp.fft.fft(jax.lax.complex(pad_front(x - flipped),
                                    pad_front(x + flipped) * constant_like(alternating(m), x)),
                    axis=-1)[..., 1:(m + 1) // 2]
    return _interleave(-jnp.flip(z.real, axis=-1), -z.imag).astype(x.dtype)


@functools.lru_cache(maxsize=256)
def dct2_order(n: int) -> np.ndarray:
    """Makhoul's input order: even entries forward, odd entries backward."""
    return np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2)[::-1]]).astype(np.int32)


def _dct2(x):
    n = x.shape[-1]
    half = n // 2
    z = jnp.fft.rfft(take_last(x, dct2_order(n)), axis=-1)
    # y[k] = 2 Re(e^{-i pi k/2N} Z[k]) for k <= N/2; above, Hermitian symmetry of the FFT of a
    # real sequence gives y[N-k] = -2 Im(e^{-i pi k/2N} Z[k]). Taking the real and imaginary
    # parts before reordering keeps every array after the FFT real: a gather of the complex
    # spectrum to length N is two arrays of the input's size, which XLA keeps alive when the
    # result feeds an all-to-all.
    w = z * constant_like(twiddle(half + 1, 0.5 / n), x)
    if n % 2 == 0:
        # the upper half, y[N/2 + m], is -2 Im(w[N/2 - m]) except y[N/2] = 2 Re(w[N/2]): one
        # select over the reversed w[1:N/2+1], so both halves have N/2 entries and join by
        # `join_halves` (the zero-padded sum of `_join` made XLA write two padded full-size
        # arrays when the result feeds an all-to-all's send slices: dctn 1.66 -> 1.42x
        # rfftn's time, 8 virtual CPU devices, 256^3 float32, issue #21)
        upper = jnp.flip(w[..., 1:half + 1], axis=-1)
        at_half = np.zeros(half, bool)
        at_half[0] = True
        upper = jnp.where(jnp.asarray(at_half), 2 * upper.real, -2 * upper.imag)
        return join_halves(2 * w[..., :half].real, upper).astype(x.dtype)
    return _join(2 * w.real, jnp.flip(-2 * w.imag[..., 1:n - half], axis=-1)).astype(x.dtype)


def join_halves(first, second):
    """concatenate([first, second], axis=-1) for parts of equal length, written as a stack on
    a new axis before the last and a reshape: XLA fuses that into the consumers' loops, where
    a concatenate (or `_join`'s padded sum) of computed parts is materialised first."""
    both = jnp.stack([first, second], axis=-2)
    return both.reshape(first.shape[:-1] + (2 * first.shape[-1],))


def _join(*parts):
    """concatenate(parts, axis=-1) as a sum of zero-padded arrays: XLA fuses pads and the sum
    (and the elementwise producers of every part) into one loop, where CPU XLA leaves a
    concatenate of computed parts unfused (every part then lives as a temporary)."""
    zeros = [(0, 0)] * (parts[0].ndim - 1)
    total = sum(p.shape[-1] for p in parts)
    out, start = None, 0
    for part in parts:
        width = part.shape[-1]
        if width:
            padded = jnp.pad(part, zeros + [(start, total - start - width)])
            out = padded if out is None else out + padded
        start += width
    return out


def _interleave(even, odd):
    """[e0, o0, e1, o1, ...]; `even` may be one longer than `odd`."""
    e, o = even.shape[-1], odd.shape[-1]
    if o == 0:
        return even
    if e == o:
        # a stack on a new last axis and a reshape: fused into the consumers' loops (the
        # padded sum below is materialised when its result feeds an all-to-all)
        return jnp.stack([even, odd], axis=-1).reshape(even.shape[:-1] + (2 * e,))
    # interior padding spreads each part to every other entry; the sum fuses into one loop
    zero = jnp.zeros((), even.dtype)
    keep = [(0, 0, 0)] * (even.ndim - 1)
    return (jax.lax.pad(even, zero, keep + [(0, o - e + 1, 1)])
            + jax.lax.pad(odd, zero, keep + [(1, e - o, 1)]))


def _dct3(x):
    n = x.shape[-1]
    half = n // 2
    # inverse of Makhoul's DCT-II: V[k] = N e^{i pi k/2N} (X[k] - i X[N-k]), X[N] = 0
    mirrored = pad_front(jnp.flip(x[..., n - half:], axis=-1))
    spec = jax.lax.complex(x[..., :half + 1], -mirrored)
    spec = spec * constant_like(n * np.conj(twiddle(half + 1, 0.5 / n)), x)
    v = jnp.fft.irfft(spec, n=n, axis=-1).astype(x.dtype)
    # y[2j] = v[j], y[2j+1] = v[N-1-j]. For even N an interleave of two halves (`_interleave`'s
    # stack form), which XLA fuses into any consumer; a gather feeding an all-to-all's send
    # slices ran unfused, index-major and strided (idctn 1.83 -> 1.57x irfftn's time, 8
    # virtual CPU devices, 256^3 float32). For odd N the halves differ in length and the
    # padded form materialises both: one gather there.
    if n % 2 == 0:
        return _interleave(v[..., :half], jnp.flip(v[..., half:], axis=-1))
    return take_last(v, _dct3_order(n))


@functools.lru_cache(maxsize=256)
def _dct3_order(n: int) -> np.ndarray:
    order = np.empty(n, np.int32)
    order[0::2] = np.arange((n + 1) // 2)
    order[1::2] = n - 1 - np.arange(n // 2)
    return order


def pad_front(x):
    """One zero before the last axis (a pad fuses with its producer; a concatenate with a
    zeros array materialises the zeros)."""
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(1, 0)])


@functools.lru_cache(maxsize=256)
def dct4_odd_tables(n: int):
    """DCT-IV of odd length N by one N-point DFT (no 2N transform).

    With u = 2k+1, v = 2j+1 the kernel is cos(2 pi uv / 8N). As gcd(8, N) = 1, 1/(8N) = a/8 + b/N
    (mod 1) with a = N^-1 mod 8 and b = 8^-1 mod N, so the angle splits into pi a uv/4 plus
    2 pi (b u mod N)(v mod N)/N. For odd uv, cos and sin of pi uv/4 are +-1/sqrt2 with signs
    chi(uv) (+ for uv = +-1 mod 8) and psi(uv) (+ for 1, 3 mod 8), both multiplicative, so
      y[k] = sqrt2 (chi(a u) C[b u] - psi(a u) S[b u]),
    C the cosine DFT of chi(v) x and S the sine DFT of psi(v) x, both indexed by v mod N (a
    permutation of the input). With F = DFT(chi(v) x + i psi(v) x) over that index,
    C[j] = (Re F[j] + Re F[-j]) / 2 and S[j] = (Re F[j] - Re F[-j]) / 2."""
    a, b = pow(n, -1, 8), pow(8, -1, n)

    def chi(j):
        return np.where((j % 8 == 1) | (j % 8 == 7), 1.0, -1.0)

    def psi(j):
        return np.where((j % 8 == 1) | (j % 8 == 3), 1.0, -1.0)

    odd = 2 * np.arange(n) + 1
    source = np.empty(n, np.int32)
    source[odd % n] = np.arange(n)  # position v mod N holds x[(v - 1) / 2]
    bins = (b * odd) % n
    half = np.sqrt(0.5)
    c, s = half * chi(a * odd), half * psi(a * odd)
    return (source, chi(odd[source]), psi(odd[source]), bins.astype(np.int32),
            ((-bins) % n).astype(np.int32), c - s, c + s)


def _dct4(x):
    n = x.shape[-1]
    if n % 2 == 0:
        # N/2-point complex FFT of (x[2p] + i x[N-1-2p]) with pre- and post-twiddles
        m = n // 2
        t = jax.lax.complex(x[..., ::2], jnp.flip(x[..., 1::2], axis=-1))
        t = t * constant_like(twiddle(m, 1.0 / n, 0.25 / n), x)
        u = jnp.fft.fft(t, axis=-1) * constant_like(twiddle(m, 1.0 / n), x)
        return (2 * _interleave(u.real, -jnp.flip(u.imag, axis=-1))).astype(x.dtype)
    # odd N: one N-point complex FFT of a permuted, sign-weighted input (dct4_odd_tables)
    source, w_cos, w_sin, bins, mirror, post_bin, post_mirror = dct4_odd_tables(n)
    gathered = take_last(x, source)
    f = jnp.fft.fft(jax.lax.complex(gathered * constant_like(w_cos, x),
                                    gathered * constant_like(w_sin, x)),
                    axis=-1).real
    return (take_last(f, bins) * constant_like(post_bin, x)
            + take_last(f, mirror) * constant_like(post_mirror, x)).astype(x.dtype)


def _dst2(x):
    # DST-II(x)[k] = DCT-II((-1)^n x)[N-1-k]
    return jnp.flip(_dct2(x * constant_like(alternating(x.shape[-1]), x)), axis=-1)


def _dst3(x):
    # DST-III(x)[k] = (-1)^k DCT-III(reversed x)[k]
    return _dct3(jnp.flip(x, axis=-1)) * constant_like(alternating(x.shape[-1]), x)


def _dst4(x):
    return _dct4(jnp.flip(x, axis=-1)) * constant_like(alternating(x.shape[-1]), x)


_FORWARD = {("dct", 1): _dct1, ("dct", 2): _dct2, ("dct", 3): _dct3, ("dct", 4): _dct4,
            ("dst", 1): _dst1, ("dst", 2): _dst2, ("dst", 3): _dst3, ("dst", 4): _dst4}


def orthogonal_weights(family: str, typ: int, n: int):
    """(input entry scalings, output entry scalings) that make types 1-3 orthogonal."""
    if family == "dct" and typ == 1:
        return ((0, _SQRT2), (n - 1, _SQRT2)), ((0, 1 / _SQRT2), (n - 1, 1 / _SQRT2))
    if typ == 2:
        return (), (((0 if family == "dct" else n - 1), 1 / _SQRT2),)
    if typ == 3:
        return (((0 if family == "dct" else n - 1), _SQRT2),), ()
    return (), ()


def _logical_length(family: str, typ: int, n: int) -> int:
    if typ == 1:
        return 2 * (n - 1) if family == "dct" else 2 * (n + 1)
    return 2 * n


def kernel_scale(kernel: R2RKernel, n: int) -> float:
    norm = "backward" if kernel.norm is None else kernel.norm
    f = float(_logical_length(kernel.family, kernel.type, n))
    if norm == "ortho":
        return 1.0 / np.sqrt(f)
    # "backward" scales the inverse transform by 1/F, "forward" the forward one
    scaled = kernel.inverse if norm == "backward" else not kernel.inverse
    return 1.0 / f if scaled else 1.0


# The types whose kernels hold several arrays of the block beside it (the complex FFT of the
# whole length and the even-length recursion's joins of type 1): run over slices of the rows
# (_in_row_slices). Type 4 in slices measured 1.2-1.8x its time (bench_fft_paths.py, 64^3 and
# 128^3 on 8 virtual CPU devices) and planned more on the slab (2.0 -> 2.88 blocks): not sliced.
_SLICED_TYPES = (1,)


def _real_transform(x, kernel: R2RKernel):
    n = x.shape[-1]
    typ = kernel.executed_type
    pre, post = orthogonal_weights(kernel.family, typ, n) if kernel.orthogonal else ((), ())
    for index, factor in pre:
        x = _scale_entry(x, index, factor)
    forward = _FORWARD[(kernel.family, typ)]
    y = _in_row_slices(forward, x) if typ in _SLICED_TYPES else forward(x)
    for index, factor in post:
        y = _scale_entry(y, index, factor)
    scale = kernel_scale(kernel, n)
    return y if scale == 1.0 else y * jnp.asarray(scale, y.dtype)


def resize_axis(x, axis: int, length: int):
    """Truncate or zero-pad `axis` to `length` (scipy's `n`), without moving the axis."""
    have, axis = x.shape[axis], axis % x.ndim
    if length < have:
        return jax.lax.slice_in_dim(x, 0, length, axis=axis)
    if length > have:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (0, length - have)
        return jnp.pad(x, pad)
    return x


def working_dtype(dtype) -> np.dtype:
    """scipy's dtype rule: float32/float64 (and complex) kept, smaller floats to float32,
    integers and bools to float64 (float32 when JAX runs without x64)."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return np.dtype(jax.dtypes.canonicalize_dtype(np.complex128 if dt.itemsize > 8
                                                      else np.complex64))
    if dt.kind == "f" and dt.itemsize >= 4:
        return np.dtype(jax.dtypes.canonicalize_dtype(dt))
    if dt.kind == "f" or dt.name == "bfloat16":
        return np.dtype(np.float32)
    if dt.kind in "biu":
        return np.dtype(jax.dtypes.canonicalize_dtype(np.float64))
    raise TypeError(f"real-to-real transform: dtype {dt} is not accepted; use a real or complex "
                    f"floating-point (or integer/bool) array")


def apply_kernel(block, axis: int, kernel: R2RKernel):
    """Apply `kernel` along `axis` of `block` (that axis must hold the whole logical length).

    Real input keeps its precision; complex input has its real and imaginary parts transformed
    (scipy's rule); integers become float. The output has `kernel.out_length` entries on `axis`.
    """
    block = jnp.asarray(block)
    axis = operator.index(axis)
    if not -block.ndim <= axis < block.ndim:
        raise ValueError(f"apply_kernel: axis={axis} is out of range for a block of rank "
                         f"{block.ndim}")
    axis %= block.ndim
    length = kernel.out_length(block.shape[axis])
    kernel.check_length(length, axis)
    dt = working_dtype(block.dtype)
    block = block.astype(dt)
    moved = jnp.moveaxis(block, axis, -1)
    moved = resize_axis(moved, -1, length)
    if dt.kind == "c":
        out = jax.lax.complex(_real_transform(moved.real, kernel),
                              _real_transform(moved.imag, kernel))
    else:
        out = _real_transform(moved, kernel)
    return jnp.moveaxis(out, -1, axis)


__all__ = ["R2RKernel", "apply_kernel", "dct4_odd_tables", "working_dtype", "FAMILIES", "TYPES",
           "NORMS"]
