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
from darray._src.engine.apply import apply_physical
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
        return None if out is None else out.data

    return jax.eval_shape(probe, *[a.data for a in arrays]) is not None


def with_adjoint(forward: Forward, backward, arrays: Sequence[DistArray]) -> DistArray:
    """forward(*arrays) under a `jax.custom_vjp` whose backward pass is
    backward(inputs, output, output_bar) -> one cotangent DistArray per input (any layout:
    each is moved to its input's layout and dtype here)."""
    layouts = tuple(a.layout for a in arrays)
    dtypes = tuple(a.dtype for a in arrays)
    out_layout = {}

    def primal(*datas):
        out = forward(*[DistArray._new(d, lay) for d, lay in zip(datas, layouts)])
        out_layout["out"] = out.layout
        return out.data

    @jax.custom_vjp
    def run(*datas):
        return primal(*datas)

    def run_fwd(*datas):
        out = primal(*datas)
        return out, (datas, out)

    def run_bwd(residuals, out_bar):
        datas, out = residuals
        lay = out_layout["out"]
        inputs = [DistArray._new(d, la) for d, la in zip(datas, layouts)]
        bars = backward(inputs, DistArray._new(out, lay), DistArray._new(out_bar, lay))
        return tuple(redistribute(b, la, dtype=dt).data
                     for b, la, dt in zip(bars, layouts, dtypes))

    run.defvjp(run_fwd, run_bwd)
    data = run(*[a.data for a in arrays])
    return DistArray._new(data, out_layout["out"])


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

    def backward(inputs, y, y_bar):
        a, b = inputs
        b_bar = solve(a.mT, y_bar)
        if b.ndim == 1:
            a_bar = matmul(b_bar[:, None], y[None, :])
        else:
            a_bar = matmul(b_bar, _transposed(y))
        return -a_bar, b_bar

    return backward


def inv_backward(matmul):
    """The backward pass of Y = inv(A), given darray's matmul."""

    def backward(inputs, y, y_bar):
        del inputs
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

    def backward(inputs, factor, factor_bar):
        del inputs
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
