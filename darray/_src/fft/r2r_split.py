"""Real-to-real transforms along axes that stay split (a 1-D signal spread over the devices).

The planner (`run_r2r`) runs the local kernels of r2r_local after moving splits by all-to-all;
when every array axis is split there is nowhere to move a split, and this module takes over,
one transform axis at a time, in darray's own distributed ops.

Types 2, 3 and 4 of any length, and type 1 of even length, have O(n)-reordering algorithms
(`_by_reorder`, `_type1`, `_type4_odd`): Makhoul's reorder x[0], x[2], ..., x[3], x[1] and one
complex FFT of length n for II (III is its transpose: the FFT first, the inverse reorder after),
the half-length complex FFT of x[2p] + i x[n-1-2p] for IV of even length, one n-point FFT over a
permutation for IV of odd length, one complex FFT of the odd length n -+ 1 for I. The reorders
are data permutations across devices, run by `split_permute.permute` as a few ppermutes of
about half a block (no all-gather, no all-to-all); twiddles and parities are generated per
block from `darray.arange`.

The zero-padded form (`_unnormalised`: one complex or real FFT of length M = 2(N-1) for DCT-I,
2(N+1) for DST-I, 2N otherwise, with phase twiddles) is kept where it is cheaper, chosen per
length by `_reordered`: for types 2 and 3 (and even type 1) where the reorder's FFT length needs
Bluestein and M is a four-step length, and for odd type I. There the radix-2 step in time
onto half-length type I and II transforms (r2r_local's form for even M) recurses while the
half length stays odd: at N = 2^18 + 1 it compiled 142 all-to-alls in 20 s and ran dct+idct
in 104 ms, where the 2n form (M = 2^19, a four-step length) compiles 6 all-to-alls in 0.5 s
and runs in 16 ms (jax 0.12, 8 CPU devices). The forms:

  F_M(k) = sum_{n<N} z[n] exp(-2 pi i k n / M)     (darray.fft.fft / rfft with n=M: the zero
                                                    padding happens inside the split FFT)
  DCT-I   y[k] =  2 Re F(k),         z = x with x[0], x[N-1] halved,           M = 2(N-1)
  DST-I   y[k] = -2 Im(e^{-i pi (k+1)/(N+1)} F(k+1)),   z = x,                  M = 2(N+1)
  DCT-II  y[k] =  2 Re(e^{-i pi k/(2N)} F(k)),          z = x
  DST-II  y[k] = -2 Im(e^{-i pi (k+1)/(2N)} F(k+1)),    z = x
  DCT-III y[k] =  2 Re F(k),         z = x e^{-i pi n/(2N)}, x[0] halved
  DST-III y[k] = -2 Im(e^{-i pi (2k+1)/(2N)} F(k)),     z = x e^{-i pi n/(2N)}, x[N-1] halved
  DCT-IV  y[k] =  2 Re(e^{-i pi (2k+1)/(4N)} F(k)),     z = x e^{-i pi n/(2N)}
  DST-IV  y[k] = -2 Im(e^{-i pi (2k+1)/(4N)} F(k)),     z = x e^{-i pi n/(2N)}

(each is the definition in r2r_local's docstring with the sine or cosine written as the real
or imaginary part of one exponential whose k*n term is the M-point DFT kernel).

Cost: the split FFT of length n (four-step: three all-to-alls; Bluestein for lengths it cannot
factor, see split_axis) on complex data, plus one to three reorders. Measured (1-D, 2^20 float32
over 8 CPU devices, dct+idct in one program): type 2 96 ms and 8.75 arrays of memory beyond the
input (the 2n form: 139 ms, 20.75), type 4 70 ms and 7.0 (155 ms, 24.5); odd type 4 (n = 2^18 + 1,
Bluestein) 179 ms and 18.2 arrays (the 2n form: 228 ms, 28.6; jax 0.12, one run at load 7).
"""
from __future__ import annotations

import functools
import types

import jax
import numpy as np

from darray._src.backends.registry import FFT_EXECUTORS, record, select_exchanges, unrecorded
from darray._src.base.program_cache import FFT, program_cache
from darray._src.kernels.r2r_local import (
    R2RKernel,
    dct4_odd_tables,
    kernel_scale,
    orthogonal_weights,
    working_dtype,
)


@functools.lru_cache(maxsize=1)
def _ops():
    """The namespace functions used here, from their own modules (never the public darray,
    which stands above this module)."""
    from darray._src.api import (
        creation,
        elementwise,
        manipulation,
        searching,
    )
    from darray._src.api import (
        data_type_functions as data_types,
    )
    from darray._src.fft import api as fft_api
    return types.SimpleNamespace(
        arange=creation.arange, expand_dims=manipulation.expand_dims, where=searching.where,
        cos=elementwise.cos, sin=elementwise.sin, floor=elementwise.floor,
        real=elementwise.real, imag=elementwise.imag,
        astype=data_types.astype, fft=types.SimpleNamespace(rfft=fft_api.rfft, fft=fft_api.fft,
                                                            ifft=fft_api.ifft))


def _positions(x, axis: int, length: int, dtype):
    """Positions 0..length-1 along `axis` as a DistArray that broadcasts against `x` (same
    split on that axis, size 1 elsewhere)."""
    da = _ops()
    split = x.layout.split[axis]
    entry = None if not split else (split[0] if len(split) == 1 else tuple(split))
    pos = da.arange(length, dtype=dtype, mesh=x.layout.mesh, spec=(entry,))
    for _ in range(x.ndim - 1 - axis):
        pos = da.expand_dims(pos, axis=-1)
    return pos


def _scale_entries(x, axis: int, entries, length: int, real_dtype):
    """Multiply the entries ``(index, factor)`` of `x` along `axis` by their factors (indices at
    or beyond x's length sit in the zero padding and are skipped)."""
    da = _ops()
    entries = [(i, f) for i, f in entries if i < x.shape[axis] and f != 1.0]
    if not entries:
        return x
    pos = _positions(x, axis, x.shape[axis], real_dtype)
    weight = None
    for index, factor in entries:
        term = da.where(pos == index, np.asarray(factor - 1.0, real_dtype),
                        np.asarray(0.0, real_dtype))
        weight = term if weight is None else weight + term
    return x * (weight + np.asarray(1.0, real_dtype))


def _phase(x, axis: int, length: int, scale: float, shift: float, real_dtype):
    """(cos t, sin t) for t = pi * (scale * k + shift), k < length along `axis`."""
    da = _ops()
    pos = _positions(x, axis, length, real_dtype)
    theta = pos * np.asarray(np.pi * scale, real_dtype) + np.asarray(np.pi * shift, real_dtype)
    return da.cos(theta), da.sin(theta)


def _take(x, axis: int, start: int, stop: int):
    if start == 0 and stop == x.shape[axis]:
        return x
    return x[(slice(None),) * axis + (slice(start, stop),)]


def _unnormalised(x, axis: int, family: str, typ: int, n: int, pre, real_dtype):
    """The unnormalised forward transform (scipy's definition) of real `x` along `axis`, of
    length `n`; `x` has at most `n` entries there (fewer: zero padding) and `pre` lists the
    boundary scalings of the input (orthogonalisation, before the DCT-I/DST-III halvings)."""
    da = _ops()
    pre = list(pre)
    reorder = _reordered(family, typ, n, x.layout.parts(axis))
    if family == "dct" and typ == 1 and not reorder:
        pre += [(0, 0.5), (n - 1, 0.5)]
    elif family == "dct" and typ == 3:
        pre += [(0, 0.5)]
    elif family == "dst" and typ == 3:
        pre += [(n - 1, 0.5)]
    # factors for one index multiply
    merged: dict[int, float] = {}
    for index, factor in pre:
        merged[index] = merged.get(index, 1.0) * factor
    x = _scale_entries(x, axis, sorted(merged.items()), n, real_dtype)
    if reorder:
        return _by_reorder(x, axis, family, typ, n, real_dtype)

    two = np.asarray(2.0, real_dtype)
    if typ in (1, 2):
        m = 2 * (n - 1) if (family, typ) == ("dct", 1) else 2 * (n + 1) if typ == 1 else 2 * n
        spectrum = da.fft.rfft(x, n=m, axis=axis)  # m // 2 + 1 bins
        if family == "dct" and typ == 1:
            return two * da.real(spectrum)  # n bins exactly
        if family == "dct":  # type 2
            f = _take(spectrum, axis, 0, n)
            c, s = _phase(f, axis, n, 0.5 / n, 0.0, real_dtype)
        else:  # DST-I (m = 2(n+1)) or DST-II (m = 2n): bins 1..n
            f = _take(spectrum, axis, 1, n + 1)
            scale = 2.0 / m if typ == 1 else 1.0 / m  # pi (k+1)/(n+1) or pi (k+1)/(2n)
            c, s = _phase(f, axis, n, scale, scale, real_dtype)
    else:
        # z = x exp(-i pi j / (2n)), then an m = 2n complex FFT
        c_in, s_in = _phase(x, axis, x.shape[axis], 0.5 / n, 0.0, real_dtype)
        z = x * c_in - 1j * (x * s_in)
        f = _take(da.fft.fft(z, n=2 * n, axis=axis), axis, 0, n)
        if family == "dct" and typ == 3:
            return two * da.real(f)
        if typ == 3:  # DST-III
            c, s = _phase(f, axis, n, 1.0 / n, 0.5 / n, real_dtype)
        else:  # type 4
            c, s = _phase(f, axis, n, 0.5 / n, 0.25 / n, real_dtype)
    fr, fi = da.real(f), da.imag(f)
    if family == "dct":  # Re(e^{-it} F) = c Re F + s Im F
        return two * (c * fr + s * fi)
    return two * (s * fr - c * fi)  # -Im(e^{-it} F) = s Re F - c Im F


# -- Makhoul's reorders: one complex FFT of length n, never 2n -------------------------------
@functools.lru_cache(maxsize=64)
def _makhoul_source(n: int, have: int) -> tuple:
    """v[j] = x[2j] (j < ceil(n/2)), v[n-1-j] = x[2j+1]: the source of each v entry, -1 where
    it lies in the zero padding (x has `have` entries)."""
    src = np.empty(n, np.int64)
    half = (n + 1) // 2
    src[:half] = 2 * np.arange(half)
    src[half:] = (2 * np.arange(n // 2) + 1)[::-1]
    return tuple(np.where(src < have, src, -1))


@functools.lru_cache(maxsize=64)
def _unmakhoul_source(n: int) -> tuple:
    """y[2j] = w[j], y[2j+1] = w[n-1-j] (the inverse reorder)."""
    src = np.empty(n, np.int64)
    src[0::2] = np.arange((n + 1) // 2)
    src[1::2] = n - 1 - np.arange(n // 2)
    return tuple(src)


def _parity(x, axis: int, length: int, real_dtype):
    """k mod 2 (0.0 or 1.0) for positions k < length along `axis`, split like x."""
    pos = _positions(x, axis, length, real_dtype)
    return pos - 2 * _ops().floor(pos * np.asarray(0.5, real_dtype))


def _reordered(family: str, typ: int, n: int, parts: int) -> bool:
    """Whether `_by_reorder` computes this kernel (else the zero-padded 2n form).

    The reorder algorithms run a split FFT of length L = n (n -+ 1 for type I of even n; odd
    type I has none), the 2n form one of length M = 2n (2(n -+ 1) for type I). The split FFT is
    a four-step transform when the device count squared divides its length (split_axis.factor)
    and Bluestein's (about three FFTs of twice the length) otherwise, so for types I-III the 2n
    form is kept where M factors and L does not. Type IV always reorders: its FFT is of length
    n/2 (even n), so even against a four-step 2n form it costs about the same time and a third
    of the memory. Measured (jax 0.12, 8 CPU devices, dct+idct, n = 32 * 8193: L Bluestein, M
    four-step): type 2 reorder 44 ms / 13.3 arrays vs 2n 23 ms / 21.2; type 4 reorder 27 ms /
    8.7 arrays vs 2n 25 ms / 27.3. At n = 2^20 (both four-step) type 2 reorder 29 ms vs 60."""
    from darray._src.fft.split_axis import factor
    if typ == 4:
        return True
    if typ == 1:
        if n % 2:
            return False
        length = n - 1 if family == "dct" else n + 1
    else:
        length = n
    return factor(length, parts) is not None or factor(2 * length, parts) is None


def _by_reorder(x, axis: int, family: str, typ: int, n: int, real_dtype):
    """The unnormalised transform of real x (at most n entries along `axis`, the rest zero
    padding, boundary weights applied) by one complex FFT of length n (n/2 for type 4) and
    Makhoul's reorders, run as `split_permute.permute` (point-to-point sends of what moves).

      DCT-II   y = 2 Re(e^{-i pi k/2n} F(P x))                       P: x[0], x[2], .., x[3], x[1]
      DST-II   y = 2 Re(e^{-i pi (n-1-k)/2n} conj(F(W P S x)))       S = (-1)^j, W = e^{-2 pi i j/n}
      DCT-III  y = P^T 2 Re F(e^{-i pi k/2n} x)                      (the transpose of DCT-II)
      DST-III  y = S P^T 2 Re(conj(W) F^H(e^{-i pi (n-1-k)/2n} x))  (the transpose of DST-II)
      DCT-IV   t[p] = x[2p] + i x[n-1-2p] (p < n/2), u = e^{-i pi k/n} F(e^{-i pi (p + 1/4)/n} t),
               y[2p] = 2 Re u[p], y[2p+1] = -2 Im u[n/2-1-p]
      DST-IV   (-1)^k DCT-IV of the reversed x (the reversal folds into the reorder)
      type I   (even n) one complex FFT of odd length n -+ 1, see `_type1`

    (F the DFT of length n; DST-II uses F(P S x)[n-1-k] = conj(F(W P S x)[k]) for real input,
    so its output needs no reversal.)"""
    from darray._src.fft.split_permute import permute
    da = _ops()
    have = x.shape[axis]
    two = np.asarray(2.0, real_dtype)
    if typ == 2:
        if family == "dst":
            x = x * (1 - 2 * _parity(x, axis, have, real_dtype))
        v = permute(x, axis, np.asarray(_makhoul_source(n, have)), n)
        if family == "dct":
            f = da.fft.fft(v, axis=axis)
            c, s = _phase(f, axis, n, 0.5 / n, 0.0, real_dtype)
            return two * (c * da.real(f) + s * da.imag(f))
        c, s = _phase(v, axis, n, 2.0 / n, 0.0, real_dtype)
        f = da.fft.fft(v * c - 1j * (v * s), axis=axis)
        c, s = _phase(f, axis, n, -0.5 / n, (n - 1) / (2 * n), real_dtype)
        return two * (c * da.real(f) - s * da.imag(f))
    if typ == 3:
        shift = 0.0 if family == "dct" else (n - 1) / (2 * n)
        c, s = _phase(x, axis, have, (0.5 if family == "dct" else -0.5) / n, shift, real_dtype)
        z = x * c - 1j * (x * s)
        if family == "dct":
            w = two * da.real(da.fft.fft(z, n=n, axis=axis))
        else:
            f = da.fft.ifft(z, n=n, axis=axis, norm="forward")  # sum_k z[k] e^{+2 pi i jk/n}
            c, s = _phase(f, axis, n, 2.0 / n, 0.0, real_dtype)
            w = two * (c * da.real(f) - s * da.imag(f))
        y = permute(w, axis, np.asarray(_unmakhoul_source(n)), n)
        if family == "dst":
            y = y * (1 - 2 * _parity(y, axis, n, real_dtype))
        return y
    if typ == 1:
        return _type1(x, axis, family, n, real_dtype)
    if n % 2:
        return _type4_odd(x, axis, family, n, real_dtype)
    # type 4, even n
    m = n // 2
    evens, odds_back = 2 * np.arange(m), n - 1 - 2 * np.arange(m)
    if family == "dst":
        evens, odds_back = odds_back, evens
    re = permute(x, axis, np.where(evens < have, evens, -1), m)
    im = permute(x, axis, np.where(odds_back < have, odds_back, -1), m)
    c, s = _phase(re, axis, m, 1.0 / n, 0.25 / n, real_dtype)
    f = da.fft.fft((re * c + im * s) + 1j * (im * c - re * s), axis=axis)
    c, s = _phase(f, axis, m, 1.0 / n, 0.0, real_dtype)
    # w = 2 conj(u): Re w = 2 Re u, Im w = -2 Im u
    w = two * (c * da.real(f) + s * da.imag(f)) - 1j * (two * (c * da.imag(f) - s * da.real(f)))
    y = _interleaved(w, axis, np.arange(m), m - 1 - np.arange(m), n, real_dtype)
    if family == "dst":
        y = y * (1 - 2 * _parity(y, axis, n, real_dtype))
    return y


def _interleaved(z, axis: int, even_source, odd_source, n: int, real_dtype):
    """y[2k] = Re z[even_source[k]], y[2k+1] = Im z[odd_source[k]]: one reorder of the complex
    z and a choice by parity (the real and imaginary parts travel together)."""
    from darray._src.fft.split_permute import permute
    da = _ops()
    src = np.empty(n, np.int64)
    src[0::2], src[1::2] = even_source, odd_source
    p = permute(z, axis, src, n)
    odd = _parity(p, axis, n, real_dtype)
    return da.real(p) * (1 - odd) + da.imag(p) * odd


def _mod4_select(pos, values, real_dtype):
    """values[pos mod 4] for float positions `pos` (exact below 2^24 in float32)."""
    da = _ops()
    r = pos - 4 * da.floor(pos * np.asarray(0.25, real_dtype))
    out = None
    for t, v in enumerate(values):
        term = da.where(r == t, np.asarray(v, real_dtype), np.asarray(0.0, real_dtype))
        out = term if out is None else out + term
    return out


def _type4_odd(x, axis: int, family: str, n: int, real_dtype):
    """DCT-IV / DST-IV of odd length n by one complex FFT of length n (r2r_local's
    `dct4_odd_tables`: the kernel's angle splits, as gcd(8, n) = 1, into an eighth-turn sign
    pattern and an n-point DFT over a permutation of the input), never the 2n form.

    The input weights chi(2q+1), psi(2q+1) (signs set by q mod 4, q the index the DCT-IV sees:
    q = i, or n-1-i for the DST's reversal) apply before the permutation, the output weights
    (set by k mod 4) after the two reorders of the DFT's real part; both reorders and the input
    permutation are `split_permute.permute` calls (ppermutes of what moves, no all-gather)."""
    from darray._src.fft.split_permute import permute
    da = _ops()
    have = x.shape[axis]
    source, _, _, bins, mirror, _, _ = dct4_odd_tables(n)
    a = pow(n, -1, 8)
    chi = lambda v: 1.0 if v % 8 in (1, 7) else -1.0  # noqa: E731
    psi = lambda v: 1.0 if v % 8 in (1, 3) else -1.0  # noqa: E731
    pos = _positions(x, axis, have, real_dtype)
    q = np.asarray(n - 1, real_dtype) - pos if family == "dst" else pos
    z = (x * _mod4_select(q, [chi(2 * r + 1) for r in range(4)], real_dtype)
         + 1j * (x * _mod4_select(q, [psi(2 * r + 1) for r in range(4)], real_dtype)))
    src = np.asarray(source, np.int64)
    if family == "dst":
        src = n - 1 - src
    f = da.real(da.fft.fft(permute(z, axis, np.where(src < have, src, -1), n), axis=axis))
    half = np.sqrt(0.5)
    c = [half * chi(a * (2 * r + 1)) for r in range(4)]
    s = [half * psi(a * (2 * r + 1)) for r in range(4)]
    k = _positions(f, axis, n, real_dtype)
    y = (permute(f, axis, np.asarray(bins, np.int64), n)
         * _mod4_select(k, [ci - si for ci, si in zip(c, s)], real_dtype)
         + permute(f, axis, np.asarray(mirror, np.int64), n)
         * _mod4_select(k, [ci + si for ci, si in zip(c, s)], real_dtype))
    if family == "dst":
        y = y * (1 - 2 * _parity(y, axis, n, real_dtype))
    return y


def _type1(x, axis: int, family: str, n: int, real_dtype):
    """DCT-I / DST-I of even length n by one complex FFT of the odd length m = n -+ 1 (the
    frequency split of r2r_local's _dct1/_dst1): with e the sequence of period 2m whose DFT is
    the transform (DCT-I: e[j] = x[j]; DST-I: e[0] = 0, e[j] = x[j-1]), s = e[j] +- e[m-j] and
    v = (-1)^j (e[j] -+ e[m-j]) are even (odd) sequences, so one FFT of s + i v gives the even
    bins in its real part and the odd bins in its imaginary part."""
    from darray._src.fft.split_permute import permute
    da = _ops()
    have = x.shape[axis]
    m = n - 1 if family == "dct" else n + 1
    j = np.arange(m)
    if family == "dct":
        head, tail = j, m - j
    else:
        head, tail = j - 1, np.where(j == 0, -1, m - j - 1)
    head = permute(x, axis, np.where(head < have, head, -1), m)
    tail = permute(x, axis, np.where(tail < have, tail, -1), m)
    sign = 1 - 2 * _parity(head, axis, m, real_dtype)
    if family == "dct":
        z = da.fft.fft((head + tail) + 1j * (sign * (head - tail)), axis=axis)
    else:
        z = da.fft.fft((head - tail) + 1j * (sign * (head + tail)), axis=axis)
    k = np.arange(n // 2)
    if family == "dct":  # y[2k] = Re z[k], y[2k+1] = Im z[n/2 - 1 - k]
        return _interleaved(z, axis, k, n // 2 - 1 - k, n, real_dtype)
    # y[2k] = -Re z[n/2 - k], y[2k+1] = -Im z[1 + k]
    return -_interleaved(z, axis, n // 2 - k, 1 + k, n, real_dtype)


def _real_transform(x, axis: int, kernel: R2RKernel, n: int, real_dtype):
    typ = kernel.executed_type
    pre, post = (orthogonal_weights(kernel.family, typ, n) if kernel.orthogonal
                 else ((), ()))
    y = _unnormalised(x, axis, kernel.family, typ, n, pre, real_dtype)
    y = _scale_entries(y, axis, post, n, real_dtype)
    scale = kernel_scale(kernel, n)
    return y if scale == 1.0 else y * np.asarray(scale, real_dtype)


def _one_axis(x, axis: int, kernel: R2RKernel):
    da = _ops()
    n = kernel.out_length(x.shape[axis])
    kernel.check_length(n, axis)
    dt = working_dtype(x.dtype)
    if np.dtype(x.dtype) != dt:
        x = da.astype(x, dt)
    if x.shape[axis] > n:  # scipy's truncation; zero padding is left to the FFT's n
        x = _take(x, axis, 0, n)
    real_dtype = np.finfo(dt).dtype
    if dt.kind == "c":
        re = _real_transform(da.real(x), axis, kernel, n, real_dtype)
        im = _real_transform(da.imag(x), axis, kernel, n, real_dtype)
        return re + 1j * im
    return _real_transform(x, axis, kernel, n, real_dtype)


@program_cache(FFT)
def _compiled(axes: tuple[int, ...], kernels: tuple[R2RKernel, ...], layout, exchanges: str):
    # layout: in the key, one program per input layout, so the budget bounds programs;
    # exchanges: the backend the traced FFTs and reorders select (the options in force)
    del layout, exchanges

    def run(x):
        for axis, kernel in zip(axes, kernels):
            x = _one_axis(x, axis, kernel)
        return x
    return jax.jit(run)


def transform(x, axes, kernels):
    """Apply ``kernels[k]`` (r2r_local.R2RKernel) along ``axes[k]`` of DistArray `x`, each axis
    transformed where it lies (its split kept), through darray's distributed FFT.

    Returns:
      DistArray with the kernels' output lengths along `axes`; every axis keeps x's split.

    Layout:
      No all-gather: the split FFT's all-to-alls (three per four-step transform, five for a
      Bluestein length inside a jit) and a few ppermutes of about half a block per reorder
      (one to three reorders; the odd-length type I/IV form slices instead).

    Backend: the FFT backend in force runs the all-to-alls and the reorders' sends when it
    offers them (JAX, MPI), else JAX does; one Selection per call is recorded
    (`darray.record_backends`), not those of the FFTs inside, which only a first call traces.
    """
    chosen = record(select_exchanges("FFT split-axis", FFT_EXECUTORS))
    with unrecorded():
        return _compiled(tuple(int(a) for a in axes), tuple(kernels), x.layout,
                         chosen.backend)(x)


__all__ = ["transform"]
