"""Local real-to-real transforms of types 2 and 3 along two axes at once (Makhoul's 2-D form).

A DCT-II along two axes, done one axis at a time (r2r_local), is two real FFTs, two reorders,
two post-twiddle passes and a transposing copy for the axis that is not last. Makhoul's 2-D
algorithm (IEEE TASSP 28(1), 1980) does it with one reorder of both axes, one 2-D real FFT and
one post-twiddle pass; the distributed driver reaches a two-axis local stage in every slab and
merged plan of a 3-D `dctn`.

With v the input reordered along both axes (even entries forward, odd entries backward: r2r_local's
`dct2_order`), V its 2-D DFT, W_j^k = exp(-i pi k / 2N_j) and A = W_2^k2 V[k1, k2],
B = W_2^-k2 conj(V[-k1, k2]) for the k2 <= N_2/2 that a real FFT returns:

  DCT-II  y[k1, k2]      =  2 Re(W_1^k1 (A + B))
          y[k1, N_2 - k2] = -2 Im(W_1^k1 (A - B))

(one axis at a time: the second axis' DFT of the first axis' real output 2 Re(W_2 V_2) is
W_2 V + W_2^-1 conj(V[-k1]); for real input conj(V[-k1, k2]) = V[k1, -k2]). The inverse
relations, with y[N_1, .] = y[., N_2] = 0, give the DCT-III = 4 N_1 N_2 x the inverse of the DCT-II:

  P = (y[k1, k2] - i y[N_1 - k1, k2]) / 2,   Q = -(y[N_1 - k1, N_2 - k2] + i y[k1, N_2 - k2]) / 2
  V[k1, k2] = W_2^-k2 W_1^-k1 (P + Q) / 2

(P = W_1^k1 (A + B) and Q = W_1^k1 (A - B), completed by their symmetries under k1 -> N_1 - k1),
then a 2-D inverse real FFT and the inverse reorder. DST-II/III are DCT-II/III with the
alternating signs and flips of r2r_local applied per axis; orthogonal weights and norms are
per-axis entry scalings, so every type-2/3 pair of kernels takes this path.

Only even lengths pair (`pair_fits`): every reorder after the FFTs is then a flip, a roll or a
stack of equal halves, data movement that XLA fuses into the loops around it. An earlier
version of this module wrote the row mirror and the inverse reorders as gathers; fed to an
all-to-all's send slices those ran unfused and strided, and the pair was slower than one axis
at a time (1.87 against 1.59x rfftn+irfftn). Measured with the fused forms (8 virtual CPU
devices, 256^3 float32, (2, 4) mesh, jax 0.12, one interleaved run): dctn+idctn 1.39x
rfftn+irfftn against 1.59x one axis at a time; four FFT calls instead of six.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.kernels import r2r_local as one
from darray._src.kernels.r2r_local import R2RKernel


def pair_eligible(kernel_a, kernel_b) -> bool:
    """Whether two kernels (on the last two axes of a block) run as one 2-D transform."""
    kinds = (R2RKernel,)
    return (isinstance(kernel_a, kinds) and isinstance(kernel_b, kinds)
            and kernel_a.executed_type == kernel_b.executed_type
            and kernel_a.executed_type in (2, 3))


def pair_fits(block, kernel_a, kernel_b) -> bool:
    """Whether the pair runs as one 2-D transform on `block`'s last two axes: eligible kernels
    and even output lengths on both axes (see the module docstring)."""
    return (pair_eligible(kernel_a, kernel_b)
            and kernel_a.out_length(block.shape[-2]) % 2 == 0
            and kernel_b.out_length(block.shape[-1]) % 2 == 0)


def _along(values: np.ndarray, like, axis: int):
    """A constant vector shaped to broadcast along `axis` (-1 or -2) of `like`."""
    c = one.constant_like(values, like)
    return c if axis == -1 else c[:, None]


def _scale_entries(x, axis: int, entries):
    if not entries:
        return x
    w = np.ones(x.shape[axis])
    for index, factor in entries:
        w[index] = factor
    return x * _along(w, x, axis)


def _reorder_both(x):
    n1, n2 = x.shape[-2:]
    x = jnp.take(x, jnp.asarray(one.dct2_order(n1)), axis=-2)
    return one.take_last(x, one.dct2_order(n2))


def _mirror(x, axis: int):
    """x[N - k] with x[N] = 0 along `axis` (-1 or -2): a zero, then the reversed tail."""
    tail = jax.lax.slice_in_dim(x, 1, x.shape[axis], axis=axis % x.ndim)
    pad = [(0, 0)] * x.ndim
    pad[axis % x.ndim] = (1, 0)
    return jnp.pad(jnp.flip(tail, axis=axis), pad)


@functools.lru_cache(maxsize=256)
def _cos_sin(num: int, scale: float):
    angle = np.pi * scale * np.arange(num)
    return np.cos(angle), np.sin(angle)


def _row_mirror_wrap(v):
    """v[(N1 - k1) % N1] along axis -2: the zero-padded mirror with row 0 selected back in.
    XLA materialises it beside the spectrum (the 0.06 arrays by which a standalone dctn's plan
    exceeds 3.00); a roll, and one mirror of the complex spectrum, measured the same."""
    first_row = np.zeros((v.shape[-2], 1), bool)
    first_row[0] = True
    return jnp.where(jnp.asarray(first_row), v, _mirror(v, -2))


def _dct2_2d(x):
    n1, n2 = x.shape[-2:]
    half = n2 // 2
    spec = jnp.fft.rfft2(_reorder_both(x))
    c1, s1 = (_along(v, x, -2) for v in _cos_sin(n1, 0.5 / n1))
    c2, s2 = (one.constant_like(v, x) for v in _cos_sin(half + 1, 0.5 / n2))
    # real arithmetic on the real and imaginary parts: the same post in complex arithmetic
    # (U = W2 V, U + conj(U[-k1]), ...) ran 1.49 against 1.43x rfftn+irfftn (round trip, 256^3)
    vr, vi = spec.real, spec.imag
    mr, mi = _row_mirror_wrap(vr), _row_mirror_wrap(vi)
    ur, ui = c2 * vr + s2 * vi, c2 * vi - s2 * vr          # W2 V
    tr, ti = c2 * mr + s2 * mi, c2 * mi - s2 * mr          # W2 V[-k1]
    low = 2 * (c1 * (ur + tr) + s1 * (ui - ti))            # 2 Re(W1 (A + B))
    high = -2 * (c1 * (ui + ti) - s1 * (ur - tr))          # -2 Im(W1 (A - B))
    at_half = np.zeros(half, bool)
    at_half[0] = True
    upper = jnp.where(jnp.asarray(at_half), jnp.flip(low[..., 1:half + 1], axis=-1),
                      jnp.flip(high[..., 1:half + 1], axis=-1))
    return one.join_halves(low[..., :half], upper).astype(x.dtype)


def _dct3_2d(y):
    n1, n2 = y.shape[-2:]
    half = n2 // 2
    low = y[..., :half + 1]
    flipped_rows = _mirror(low, -2)                                # y[N1 - k1, k2]
    cols = one.pad_front(jnp.flip(y[..., half:], axis=-1))        # y[k1, N2 - k2]
    both = _mirror(cols, -2)                                       # y[N1 - k1, N2 - k2]
    p = jax.lax.complex(low, -flipped_rows)
    q = -jax.lax.complex(both, cols)
    w = (_along(np.conj(one.twiddle(n1, 0.5 / n1)), y, -2)
         * one.constant_like(np.conj(one.twiddle(half + 1, 0.5 / n2)) * (n1 * n2), y))
    v = jnp.fft.irfft2(w * (p + q), s=(n1, n2)).astype(y.dtype)
    # the inverse reorder on both axes: y[2j + b] = v[j] (b = 0), v[N-1-j] (b = 1) per axis,
    # as one stack of the four quadrants (two interleaves one after the other were two
    # passes: 1.52 -> 1.46x rfftn+irfftn for the round trip, 256^3)
    h1 = n1 // 2
    rows = (v[..., :h1, :], jnp.flip(v[..., h1:, :], axis=-2))
    quads = [jnp.stack([r[..., :half], jnp.flip(r[..., half:], axis=-1)], axis=-1) for r in rows]
    return jnp.stack(quads, axis=-3).reshape(y.shape)


def _pre(x, kernel: R2RKernel, axis: int):
    n = x.shape[axis]
    typ = kernel.executed_type
    if kernel.orthogonal:
        x = _scale_entries(x, axis, one.orthogonal_weights(kernel.family, typ, n)[0])
    if kernel.family == "dst":
        # DST-II(x) = reversed DCT-II((-1)^n x); DST-III(x) = (-1)^k DCT-III(reversed x)
        x = x * _along(one.alternating(n), x, axis) if typ == 2 else jnp.flip(x, axis=axis)
    return x


def _post(y, kernel: R2RKernel, axis: int):
    n = y.shape[axis]
    typ = kernel.executed_type
    if kernel.family == "dst":
        y = jnp.flip(y, axis=axis) if typ == 2 else y * _along(one.alternating(n), y, axis)
    if kernel.orthogonal:
        y = _scale_entries(y, axis, one.orthogonal_weights(kernel.family, typ, n)[1])
    return y


def _real_pair(x, kernel_a: R2RKernel, kernel_b: R2RKernel):
    x = _pre(_pre(x, kernel_a, -2), kernel_b, -1)
    y = (_dct2_2d if kernel_a.executed_type == 2 else _dct3_2d)(x)
    y = _post(_post(y, kernel_a, -2), kernel_b, -1)
    scale = one.kernel_scale(kernel_a, x.shape[-2]) * one.kernel_scale(kernel_b, x.shape[-1])
    return y if scale == 1.0 else y * jnp.asarray(scale, y.dtype)


def apply_pair(block, kernel_a: R2RKernel, kernel_b: R2RKernel):
    """`kernel_a` along axis -2 and `kernel_b` along axis -1 of `block` (pair_eligible), as
    r2r_local.apply_kernel on each axis would give them; one axis at a time where an output
    length is odd."""
    block = jnp.asarray(block)
    if not pair_fits(block, kernel_a, kernel_b):
        if not pair_eligible(kernel_a, kernel_b):
            raise ValueError(f"apply_pair: kernels {kernel_a!r} and {kernel_b!r} do not pair; "
                             f"both must be R2RKernels of the same executed type 2 or 3")
        return one.apply_kernel(one.apply_kernel(block, -2, kernel_a), -1, kernel_b)
    sizes = (kernel_a.out_length(block.shape[-2]), kernel_b.out_length(block.shape[-1]))
    kernel_a.check_length(sizes[0], block.ndim - 2)
    kernel_b.check_length(sizes[1], block.ndim - 1)
    dt = one.working_dtype(block.dtype)
    block = one.resize_axis(one.resize_axis(block.astype(dt), -2, sizes[0]), -1, sizes[1])
    if dt.kind == "c":
        return jax.lax.complex(_real_pair(block.real, kernel_a, kernel_b),
                               _real_pair(block.imag, kernel_a, kernel_b))
    return _real_pair(block, kernel_a, kernel_b)


def apply_kernels(block, axes, kernels, apply_one=one.apply_kernel):
    """Every kernel along its axis of `block`; a type-2/3 pair on the block's last two axes
    runs as one 2-D transform (the distributed driver puts a stage's axes last), the others
    one at a time through `apply_one(block, axis, kernel)`."""
    axes = [a % block.ndim for a in axes]
    pending = dict(zip(axes, kernels))
    last, before = block.ndim - 1, block.ndim - 2
    if (before in pending and last in pending
            and pair_fits(block, pending[before], pending[last])):
        block = apply_pair(block, pending.pop(before), pending.pop(last))
    for axis, kernel in pending.items():
        block = apply_one(block, axis, kernel)
    return block


__all__ = ["apply_kernels", "apply_pair", "pair_eligible", "pair_fits"]
