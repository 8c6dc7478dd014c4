"""LU with partial pivoting of a square matrix split over the mesh, and what is built on it:
solve, inv, det and slogdet, without gathering the matrix (issue 50, item 2).

When it applies
  A 2-D square matrix with at least one matrix axis split and no ghosts (blocked_cholesky's
  `plan_for`); for solve, a right-hand side that is a vector or a 2-D matrix on the same
  mesh. Stacks with split matrix axes run these kernels per batch element
  (linalg/stacked.py).

The factorization (LAPACK getrf's semantics, blocked by the column panels of panels.py)
  For each panel k (a static loop over the P devices) every device holds rows top: of its
  columns. The owner factors its tall panel with partial pivoting (lax.linalg.lu: P_k A =
  L U on the (n - top) x c panel) and broadcasts the packed factors with the row
  permutation (one block at most); every device applies the permutation to its rows top:
  (the row swaps are local: each device has whole columns), and the devices right of k
  solve U_kj = L_kk^-1 A_kj and update A_ij -= L_ik U_kj. The pivots choose the largest
  entry of the whole column below the diagonal, as getrf does, so the backward error is
  LAPACK's (about n eps |L| |U|).

Solving (solve and inv)
  The right-hand side moves to column panels of its own (inv builds the identity in place);
  its rows are permuted as the matrix's were, then the panels of L are broadcast one by one
  for the forward substitution and those of U, last first, for the back substitution: every
  device solves for its own right-hand columns. The result comes back in the right-hand
  side's layout (inv: the matrix's). Both substitutions come after the factorization (rolled
  loops, one panel in flight) rather than riding on its broadcasts: riding, the right-hand
  side's copies lived beside the matrix's (7.3 blocks for inv and solve, now about 5.4).

det and slogdet
  The product of U's diagonal times the permutation's sign: each device multiplies (or sums
  the logs of) its c diagonal entries; P numbers are exchanged by a masked all-reduce.

Gradients
  lax.linalg on local blocks plus all-to-all and psum inside one shard_map: JAX's own rules
  differentiate it (pivots and permutations are integers, constant under differentiation).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.linalg import panels
from darray._src.linalg.blocked_cholesky import plan_for


def factor_panels(a, side: panels.Side):
    """(packed L\\U panels, row permutation (replicated), swap count (replicated)) of the
    matrix whose panels are `a`: rows perm of the matrix equal L U."""
    p, c, names = side.parts, side.cf, side.names
    width = p * c
    q = lax.axis_index(names)
    perm = jnp.arange(width, dtype=jnp.int32)
    swaps = jnp.zeros((), jnp.int32)
    for k in range(p):
        top, below = k * c, (k + 1) * c
        # off the owner, factor [I; 0]: garbage there would give NaNs whose (masked)
        # gradients still poison the sum (NaN * 0)
        eye = jnp.eye(width - top, c, dtype=a.dtype)
        lu, pivots, order = lax.linalg.lu(jnp.where(q == k, a[top:], eye))
        lu = panels.broadcast(lu, k, q, names)
        order = panels.broadcast(order, k, q, names)
        pivots = panels.broadcast(pivots, k, q, names)
        swaps = swaps + jnp.sum(pivots != jnp.arange(c, dtype=pivots.dtype)).astype(jnp.int32)
        perm = perm.at[top:].set(perm[top:][order])
        rows = jnp.take(a[top:], order, axis=0)
        if k == p - 1:
            a = a.at[top:].set(jnp.where(q == k, lu, rows))
            break
        u_kj = lax.linalg.triangular_solve(lu[:c], rows[:c], left_side=True, lower=True,
                                           unit_diagonal=True)
        trailing = rows[c:] - panels.mm(lu[c:], u_kj)
        a = a.at[top:below].set(jnp.where(q == k, lu[:c], jnp.where(q > k, u_kj, rows[:c])))
        a = a.at[below:].set(jnp.where(q == k, lu[c:], jnp.where(q > k, trailing, rows[c:])))
        # as in blocked_cholesky.factor_panels: keeps jax 0.12's XLA from overlapping the
        # unrolled steps' panels (a alone: through the barrier jax 0.10 no longer sees that
        # perm and swaps are replicated)
        a = lax.optimization_barrier(a)
    return a, perm, swaps


def back_substitute(lu, b, side: panels.Side):
    """x with U x = b, given U in panels (`lu`) and b's panels (any columns per device): U's
    panels are broadcast one by one, last first.

    A rolled loop (fori_loop, full-height panels with the rows below the diagonal block
    masked): unrolled, XLA's CPU scheduler kept every broadcast panel alive at once (17
    blocks for inv); rolled, one panel is in flight by construction."""
    p, c, names = side.parts, side.cf, side.names
    q = lax.axis_index(names)
    rows = lax.broadcasted_iota(jnp.int32, (lu.shape[0], 1), 0)

    def step(i, b):
        k = p - 1 - i
        top = k * c
        panel = panels.broadcast(lu, k, q, names)
        diag = lax.dynamic_slice_in_dim(panel, top, c, axis=0)
        x = lax.linalg.triangular_solve(diag, lax.dynamic_slice_in_dim(b, top, c, axis=0),
                                        left_side=True, lower=False)
        b = b - jnp.where(rows < top, panels.mm(panel, x), jnp.zeros((), b.dtype))
        return lax.dynamic_update_slice_in_dim(b, x, top, axis=0)
    return lax.fori_loop(0, p, step, b)


def forward_substitute(lu, perm, b, side: panels.Side):
    """y with L y = P b, given L in panels (`lu`, unit diagonal), the row permutation `perm`
    and b's panels: L's panels are broadcast one by one, first first.

    After the factorization, not riding on its broadcasts: riding, the right-hand side, its
    permuted copy and its update were alive beside the matrix's own (7 blocks for inv and
    solve); after, the factorization and the substitution each peak lower (about 5 and 4)."""
    p, c, names = side.parts, side.cf, side.names
    q = lax.axis_index(names)
    rows = lax.broadcasted_iota(jnp.int32, (lu.shape[0], 1), 0)
    b = jnp.take(b, perm, axis=0)

    def step(k, b):
        top = k * c
        panel = panels.broadcast(lu, k, q, names)
        diag = lax.dynamic_slice_in_dim(panel, top, c, axis=0)
        y = lax.linalg.triangular_solve(diag, lax.dynamic_slice_in_dim(b, top, c, axis=0),
                                        left_side=True, lower=True, unit_diagonal=True)
        b = b - jnp.where(rows >= top + c, panels.mm(panel, y), jnp.zeros((), b.dtype))
        return lax.dynamic_update_slice_in_dim(b, y, top, axis=0)
    return lax.fori_loop(0, p, step, b)


def _factor(block, side):
    a = block.astype(panels.inexact(block.dtype))
    pos = side.positions()
    a = panels.square_embedding(panels.to_panels(a, side, pos, side.width), side)
    return factor_panels(a, side), pos


def _solve(block, rhs, *, side, rhs_side, dtype):
    (lu, perm, _), pos = _factor(block.astype(dtype), side)
    b = panels.to_panels(rhs.astype(dtype), rhs_side, pos, side.width)
    y = forward_substitute(lu, perm, b, side)
    return (panels.from_panels(back_substitute(lu, y, side), rhs_side, pos),)


def _inv(block, *, side):
    (lu, perm, _), pos = _factor(block, side)
    q = lax.axis_index(side.names)
    shape = (side.width, side.cf)
    rows = lax.broadcasted_iota(jnp.int32, shape, 0)
    cols = q * side.cf + lax.broadcasted_iota(jnp.int32, shape, 1)
    eye = (rows == cols).astype(lu.dtype)
    y = forward_substitute(lu, perm, eye, side)
    return (panels.from_panels(back_substitute(lu, y, side), side, pos),)


def _diagonal(lu, side):
    """This device's c diagonal entries of U (the padding's are 1)."""
    q = lax.axis_index(side.names)
    tile = lax.dynamic_slice_in_dim(lu, q * side.cf, side.cf, axis=0)
    return jnp.diagonal(tile)


def _gathered(value, side):
    """The P devices' values of a scalar, on every device (a masked all-reduce of P numbers:
    no all-gather in the program)."""
    q = lax.axis_index(side.names)
    onehot = jnp.arange(side.parts) == q
    return lax.psum(jnp.where(onehot, value, jnp.zeros((), value.dtype)), side.names)


def _det(block, *, side):
    (lu, _, swaps), _ = _factor(block, side)
    d = _diagonal(lu, side)
    sign = jnp.where(swaps % 2 == 1, -1, 1).astype(d.dtype)
    return (sign * jnp.prod(_gathered(jnp.prod(d), side)),)


def _slogdet(block, *, side):
    (lu, _, swaps), _ = _factor(block, side)
    d = _diagonal(lu, side)
    size = jnp.abs(d)
    unit = jnp.where(size == 0, jnp.zeros((), d.dtype), d / jnp.where(size == 0, 1, size))
    sign = jnp.where(swaps % 2 == 1, -1, 1).astype(d.dtype)
    sign = sign * jnp.prod(_gathered(jnp.prod(unit), side))
    return sign, lax.psum(jnp.sum(jnp.log(size)), side.names)


# -- entry points (None: the layouts do not fit; keep the gathering path) --------------------------
def _scalar(x: DistArray) -> Layout:
    return make_out_layout(x.mesh, (), ())


def solve(x1: DistArray, x2: DistArray):
    side = plan_for(x1)
    if side is None or x2.mesh is not x1.mesh or x2.ndim not in (1, 2):
        return None
    rhs_side = panels.side_of(x2.layout)
    if rhs_side is None or x2.shape[0] != x1.shape[0] or x2.shape[-1] == 0:
        return None
    dtype = panels.inexact(jnp.result_type(x1.dtype, x2.dtype))
    return panels.run(_solve, [x1, x2], (x2.layout,), side=side, rhs_side=rhs_side,
                      dtype=np.dtype(dtype))[0]


def inv(x: DistArray):
    side = plan_for(x)
    if side is None:
        return None
    return panels.run(_inv, [x], (x.layout,), side=side)[0]


def det(x: DistArray):
    side = plan_for(x)
    if side is None:
        return None
    return panels.run(_det, [x], (_scalar(x),), side=side)[0]


def slogdet(x: DistArray):
    side = plan_for(x)
    if side is None:
        return None
    return panels.run(_slogdet, [x], (_scalar(x), _scalar(x)), side=side)


# one matrix's kernels, run per batch element by linalg/stacked.py
solve_kernel, inv_kernel, det_kernel, slogdet_kernel = _solve, _inv, _det, _slogdet
