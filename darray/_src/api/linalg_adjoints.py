"""Reverse-mode derivatives of the distributed solve and inv (issue 50, item 4), without the
loop residuals.

Left to JAX, `jax.grad` through the blocked LU (linalg/blocked_lu.py) transposes its panel
loops, and a transposed loop keeps each step's trailing matrix as a residual: the compiled
gradient of `solve` or `inv` of a 2x4-split 203 x 203 matrix planned about 100 blocks of
temporaries per device (the forward program: 5.4). Here the backward pass is written with
the adjoint identities, each product one more distributed darray call (the same LU and SUMMA
plans, forward only), so the gradient program holds the residuals A and the result plus what
one solve or one matmul holds:

  Y = solve(A, B):  B_bar = solve(A^T, Y_bar),  A_bar = -B_bar Y^T  (an outer product for a
                    vector B);
  Y = inv(A):       A_bar = -Y^T Y_bar Y^T;
  L = cholesky(A):  A_bar = sym(L^-T phi(L^T L_bar) conj(L)^-1), phi keeping the lower
                    triangle with half its diagonal, sym(G) = (G + G^H) / 2 (the input is
                    symmetrized, as jnp.linalg.cholesky does); the two triangular solves are
                    darray solves.

These are JAX's cotangents (transposes of the linear maps, no conjugation), so complex inputs
get what jax.numpy's rules give.

Only reverse mode takes this route. `jax.custom_vjp` has no forward-mode rule, so under
`jax.jvp` / `jax.jacfwd` (a forward-mode tracer on top) the caller keeps the plain program, which
JAX differentiates forward through its loops (no transpose, no residual stack).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from darray._src.base import compat
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import apply_logical, apply_physical
from darray._src.engine.placing import redistribute
from darray._src.layout.layout import make_out_layout

Forward = Callable[..., DistArray | None]


def reverse_mode(*arrays: DistArray) -> bool:
    """Whether a reverse-mode derivative (jax.grad, vjp, linearize) is being traced over
    these arrays, with no forward-mode tracer above it."""
    return any(compat.is_linearize_tracer(a.data) for a in arrays)


def applies(forward: Forward, arrays: Sequence[DistArray]) -> bool:
    """Whether `forward` takes its distributed path for these arrays (it returns None for a
    layout it does not fit), decided abstractly: nothing runs."""
    layouts = [a.layout for a in arrays]

    def probe(*datas):
        out = forward(*[DistArray._new(d, lay) for d, lay in zip(datas, layouts)])
        if out is None:
            return None
        return out.data if isinstance(out, DistArray) else [o.data for o in out]

    return jax.eval_shape(probe, *[a.data for a in arrays]) is not None


def with_adjoint(forward: Forward, backward, arrays: Sequence[DistArray], saved=None):
    """forward(*arrays) (a DistArray or a tuple of them) under a `jax.custom_vjp` whose
    backward pass is backward(inputs, outputs, extras, output_bars) -> one cotangent DistArray
    per input (any layout: each is moved to its input's layout and dtype here). `saved`:
    saved(*arrays) -> (outputs, extras), what the forward pass computes under the derivative
    when the backward pass needs more than the outputs (eigvalsh: the eigenvectors)."""
    layouts = tuple(a.layout for a in arrays)
    dtypes = tuple(a.dtype for a in arrays)
    meta: dict = {}

    def inputs_of(datas):
        return [DistArray._new(d, lay) for d, lay in zip(datas, layouts)]

    def outputs_of(outs, key):
        single = isinstance(outs, DistArray)
        outs = (outs,) if single else tuple(outs)
        meta.setdefault("single", single)
        meta[key] = tuple(o.layout for o in outs)
        return tuple(o.data for o in outs)

    def primal(*datas):
        return outputs_of(forward(*inputs_of(datas)), "outs")

    @jax.custom_vjp
    def run(*datas):
        return primal(*datas)

    def fwd(*datas):
        if saved is None:
            outs, extras = primal(*datas), ()
        else:
            got, more = saved(*inputs_of(datas))
            outs, extras = outputs_of(got, "outs"), outputs_of(tuple(more), "extras")
        return outs, (datas, outs, extras)

    def bwd(residuals, bars):
        datas, outs, extras = residuals
        as_arrays = [DistArray._new(d, lay) for d, lay in zip(outs, meta["outs"])]
        more = [DistArray._new(d, lay) for d, lay in zip(extras, meta.get("extras", ()))]
        bar_arrays = [DistArray._new(d, lay) for d, lay in zip(bars, meta["outs"])]
        cts = backward(inputs_of(datas), as_arrays, more, bar_arrays)
        return tuple(redistribute(c, lay, dtype=dt).data
                     for c, lay, dt in zip(cts, layouts, dtypes))

    run.defvjp(fwd, bwd)
    outs = run(*[a.data for a in arrays])
    result = tuple(DistArray._new(d, lay) for d, lay in zip(outs, meta["outs"]))
    return result[0] if meta["single"] else result


def distributed(x: DistArray, forward: Forward, backward, saved=None):
    """forward(x) (None where its distributed path does not apply); under reverse mode with
    `backward` as its backward pass (see with_adjoint)."""
    if reverse_mode(x) and applies(forward, [x]):
        return with_adjoint(forward, backward, [x], saved)
    return forward(x)


def vectors_saved(forward: Forward, values_at: int):
    """`saved` for a values-only function: the vector program `forward`'s values (output
    `values_at`) as the output, its vectors as the extras."""
    def saved(x):
        out = forward(x)
        return out[values_at], [o for i, o in enumerate(out) if i != values_at]
    return saved


def _transposed(z: DistArray) -> DistArray:
    """z.mT with each position split as z's was (an all-to-all of blocks): a product with a
    permuted layout goes to XLA's partitioner, which all-gathers panels of it, where equal
    splits take darray's SUMMA / ring plans."""
    t = z.mT
    if z.layout.has_halo:
        return t
    return redistribute(t, make_out_layout(z.mesh, t.shape, z.layout.split))


def solve_backward(solve, matmul):
    """The backward pass of Y = solve(A, B), given darray's solve and matmul."""

    def backward(inputs, outputs, extras, bars):
        (a, b), (y,), (y_bar,) = inputs, outputs, bars
        b_bar = solve(a.mT, y_bar)
        if b.ndim == 1:
            a_bar = matmul(b_bar[:, None], y[None, :])
        else:
            a_bar = matmul(b_bar, _transposed(y))
        return -a_bar, b_bar

    return backward


def inv_backward(matmul):
    """The backward pass of Y = inv(A), given darray's matmul."""

    def backward(inputs, outputs, extras, bars):
        (y,), (y_bar,) = outputs, bars
        yt = _transposed(y)
        return (-matmul(matmul(yt, y_bar), yt),)

    return backward


def _lower_half_diagonal(data):
    """phi: the strict lower triangle of the last two axes, and half the diagonal (physical
    index = logical index: padding sits at the end of each split axis)."""
    rows = jax.lax.broadcasted_iota(jnp.int32, data.shape, data.ndim - 2)
    cols = jax.lax.broadcasted_iota(jnp.int32, data.shape, data.ndim - 1)
    return jnp.where(rows > cols, data, jnp.where(rows == cols, data / 2, jnp.zeros_like(data)))


def _conj(z: DistArray) -> DistArray:
    return z if not jnp.issubdtype(z.dtype, jnp.complexfloating) else \
        apply_physical(jnp.conj, [z], z.layout)


def cholesky_backward(solve, matmul, upper: bool):
    """The backward pass of cholesky(A, upper), given darray's solve and matmul."""

    def backward(inputs, outputs, extras, bars):
        (factor,), (factor_bar,) = outputs, bars
        if upper:  # U = L^H: L = conj(U)^T, and L_bar = conj(U_bar)^T
            factor, factor_bar = _transposed(_conj(factor)), _transposed(_conj(factor_bar))
        lt = _transposed(factor)
        s_bar = matmul(lt, factor_bar)
        s_bar = apply_physical(_lower_half_diagonal, [s_bar], s_bar.layout)
        left = solve(lt, s_bar)  # L^-T phi(...)
        # left conj(L)^-1 = (conj(L)^-T left^T)^T = solve(L^H, left^T)^T
        a_bar = _transposed(solve(_transposed(_conj(factor)), _transposed(left)))
        return ((a_bar + _transposed(_conj(a_bar))) / 2,)

    return backward


# -- eigh / svd (the Jacobi paths) ---------------------------------------------------------------
# The tangent rules are jax.numpy's (linalg/spectral_grads.py writes them out); their
# transposes, with F the matrix of inverse gaps (0 on the diagonal) and sym(G) = (G + G^H) / 2:
#   eigh:  A_bar = sym(conj(V) (F o (V^T V_bar) + diag(w_bar)) V^T),  F_ij = 1 / (w_j - w_i);
#   svd:   A_bar = conj(U) M conj(Vh), with K = U^T U_bar, L = conj(Vh) Vh_bar^H and
#          M = (F o K + F^T o K^H) S + (K - K^H) o D / 2 + S (F o L + F^T o L^H) + diag(s_bar),
#          F_ij = 1 / (s_j^2 - s_i^2), D = diag(1 / s) (0 where s = 0);
#   values only: the diag terms alone.
# The gap matrices are built inside one elementwise program from the (replicated or
# batch-split) value vectors, partitioned like the product they scale.

def _inverse_gaps(values, squared: bool):
    v = values * values if squared else values
    eye = jnp.eye(v.shape[-1], dtype=v.dtype)
    return 1 / (eye + v[..., None, :] - v[..., :, None]) - eye


def _diag_embed(d, dtype):
    return (d[..., :, None] * jnp.eye(d.shape[-1], dtype=d.dtype)).astype(dtype)


def _eigh_middle(g, w, w_bar):
    return g * _inverse_gaps(w, False).astype(g.dtype) + _diag_embed(w_bar, g.dtype)


def _svd_middle(k, kh, l_, lh, s, s_bar):
    f = _inverse_gaps(s, True).astype(k.dtype)
    ft = jnp.swapaxes(f, -1, -2)
    zero = (s == 0).astype(s.dtype)
    d = _diag_embed(1 / (s + zero) - zero, k.dtype)
    srow, scol = s[..., None, :].astype(k.dtype), s[..., :, None].astype(k.dtype)
    return ((f * k + ft * kh) * srow + (k - kh) * d / 2 + scol * (f * l_ + ft * lh)
            + _diag_embed(s_bar, k.dtype))


def _scale_columns(v, d, conj: bool):
    return (jnp.conj(v) if conj else v) * d[..., None, :].astype(v.dtype)


def _hermitian_part(a: DistArray) -> DistArray:
    return (a + _transposed(_conj(a))) / 2


def eigh_backward(matmul, vectors: bool):
    """The backward pass of eigh (vectors) or eigvalsh, given darray's matmul."""

    def backward(inputs, outputs, extras, bars):
        if vectors:
            (w, v), (w_bar, v_bar) = outputs, bars
            g = matmul(_transposed(v), v_bar)
            middle = apply_logical(_eigh_middle, [g, w, w_bar], g.layout)
            a_bar = matmul(matmul(_conj(v), middle), _transposed(v))
        else:
            (w,), (v,), (w_bar,) = outputs, extras, bars
            scaled = apply_logical(_scale_columns, [v, w_bar], v.layout, static=(True,))
            a_bar = matmul(scaled, _transposed(v))
        return (_hermitian_part(a_bar),)

    return backward


def svd_backward(matmul, vectors: bool):
    """The backward pass of a square svd (vectors) or svdvals, given darray's matmul."""

    def backward(inputs, outputs, extras, bars):
        if vectors:
            (u, s, vh), (u_bar, s_bar, vh_bar) = outputs, bars
            k = matmul(_transposed(u), u_bar)
            l_ = matmul(_conj(vh), _transposed(_conj(vh_bar)))
            kh, lh = _transposed(_conj(k)), _transposed(_conj(l_))
            middle = apply_logical(_svd_middle, [k, kh, l_, lh, s, s_bar], k.layout)
            return (matmul(matmul(_conj(u), middle), _conj(vh)),)
        (s,), (u, vh), (s_bar,) = outputs, extras, bars
        scaled = apply_logical(_scale_columns, [u, s_bar], u.layout, static=(True,))
        return (matmul(scaled, _conj(vh)),)

    return backward
