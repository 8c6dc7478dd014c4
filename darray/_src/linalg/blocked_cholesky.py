"""Cholesky of a square matrix split over the mesh, without gathering it (issue 50, item 2).

When it applies
  A 2-D Hermitian matrix with at least one matrix axis split, no ghosts (`plan_for`). Stacks
  with split matrix axes run this kernel per batch element (linalg/stacked.py).

The algorithm (right-looking, blocked by the column panels of panels.py)
  The matrix moves to column panels (one all-to-all at most) and is symmetrized there,
  (A + A^H) / 2 as jnp.linalg.cholesky does, through one more all-to-all of c x c tiles. For
  each panel k (a static loop over the P devices): the owner factors its diagonal block,
  L_kk = chol(A_kk), and computes the panel below it, L_ik = A_ik L_kk^-H (a triangular
  solve); the panel (one block at most) is broadcast; every device right of k subtracts
  L_i,k L_j,k^H from its own columns j. No row or column is ever gathered.

  `upper=True` returns L^H, formed by the same tile all-to-all. The result comes back in the
  input's layout (the movers' inverse).

Gradients
  Every step is lax.linalg on local blocks plus all-to-all and psum inside one shard_map, so
  JAX's own rules differentiate it; the symmetrization makes the gradient jnp's (which also
  symmetrizes its input).
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from darray._src.distarray.array import DistArray
from darray._src.linalg import panels


def plan_for(x: DistArray) -> panels.Side | None:
    """The Side of a square 2-D matrix with a split matrix axis (None: gathering path)."""
    lay = x.layout
    if lay.ndim != 2 or lay.shape[0] != lay.shape[1] or lay.shape[0] == 0:
        return None
    if not (lay.split[0] or lay.split[1]):
        return None
    side = panels.side_of(lay)
    if side is None or side.parts < 2:
        return None
    return side


def factor_panels(a, side: panels.Side):
    """The lower Cholesky factor, in panels, of the Hermitian matrix whose panels are `a`.

    Each step rewrites rows top: of the panels in place (one select of three candidates:
    the owner's new panel, a trailing update right of it, the old rows left of it); the
    entries above the diagonal are cleared once at the end."""
    p, c, names = side.parts, side.cf, side.names
    q = lax.axis_index(names)
    for k in range(p):
        top, below = k * c, (k + 1) * c
        # off the owner, factor the identity: garbage there would give NaNs whose (masked)
        # gradients still poison the sum (NaN * 0)
        eye = jnp.eye(c, dtype=a.dtype)
        l_kk = lax.linalg.cholesky(jnp.where(q == k, a[top:below], eye), symmetrize_input=False)
        l_ik = lax.linalg.triangular_solve(l_kk, a[below:], left_side=False, lower=True,
                                           transpose_a=True, conjugate_a=True)
        if k == p - 1:  # the last panel: nothing right of it to update
            a = a.at[top:].set(jnp.where(q == k, l_kk, a[top:]))
            break
        panel = panels.broadcast(l_ik, k, q, names)
        mine = lax.dynamic_slice_in_dim(panel, jnp.maximum(q - k - 1, 0) * c, c, axis=0)
        trailing = a[below:] - panels.mm(panel, jnp.conj(mine).T)
        a = a.at[top:below].set(jnp.where(q == k, l_kk, a[top:below]))
        a = a.at[below:].set(jnp.where(q == k, l_ik, jnp.where(q > k, trailing, a[below:])))
        # one step's panels are dead past this point: without the barrier, jax 0.12's XLA
        # overlapped the unrolled steps and planned 17.6-18 blocks (jax 0.10: 5.1)
        a = lax.optimization_barrier(a)
    rows = lax.broadcasted_iota(jnp.int32, a.shape, 0)
    cols = q * c + lax.broadcasted_iota(jnp.int32, a.shape, 1)
    return jnp.where(rows >= cols, a, jnp.zeros((), a.dtype))


def _cholesky(block, *, side, upper):
    a = block.astype(panels.inexact(block.dtype))
    pos = side.positions()
    a = panels.to_panels(a, side, pos, side.width)
    a = panels.square_embedding(a, side)
    a = (a + panels.transpose_panels(a, side)) / 2
    low = factor_panels(a, side)
    if upper:
        low = panels.transpose_panels(low, side)
    return (panels.from_panels(low, side, pos),)


def cholesky(x: DistArray, upper: bool):
    """The Cholesky factor in x's layout, or None when the layout does not fit."""
    side = plan_for(x)
    if side is None:
        return None
    return panels.run(_cholesky, [x], (x.layout,), side=side, upper=bool(upper))[0]


kernel = _cholesky  # one matrix's kernel, run per batch element by linalg/stacked.py
