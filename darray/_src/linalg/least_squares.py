"""`lstsq`: numpy's least-squares solver (name, signature and 4-tuple), a darray extra.

A tall-skinny `a` (rows split, few columns: the rule of tall_skinny.py) is solved from its TSQR
and the SVD of the small R, so only k x k and k x K pieces are ever summed over the mesh; a
short-wide `a` (columns split) gets the minimum-norm solution the same way through its
conjugate transpose. Any other layout takes jnp.linalg.lstsq on the gathered matrix.

Residuals follow numpy where they can: eagerly, an empty array when rank < n or m <= n (numpy
returns no residuals then); under a trace the rank is not known, so, as jnp.linalg.lstsq does,
the residuals are always the squared column norms of b - a @ x.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.distarray.array import DistArray
from darray._src.engine.apply import apply_logical
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_same_mesh
from darray._src.layout.layout import make_out_layout
from darray._src.linalg.tall_skinny import ct, inexact, mm, plan_for, run, tsqr


class LstsqResult(NamedTuple):
    x: DistArray
    residuals: DistArray
    rank: DistArray
    s: DistArray


def _solve_small(r, rcond):
    """The SVD of R and the cut-off that both orientations share."""
    u_r, s, vh_r = jnp.linalg.svd(r, full_matrices=False)
    mask = (s > 0) & (s >= rcond * s[..., :1])
    s_inv = jnp.where(mask, 1 / jnp.where(mask, s, 1), 0).astype(r.dtype)
    return u_r, s, vh_r, s_inv, jnp.sum(mask)


def _lstsq_tall(a_block, b_block, *, plan, rcond, dtype, vector):
    a = a_block.astype(dtype)
    b = b_block.astype(dtype)[:, None] if vector else b_block.astype(dtype)
    q, r = tsqr(a, plan.names)
    u_r, s, vh_r, s_inv, rank = _solve_small(r, rcond)
    # U^H b = sum over blocks of U_R^H (Q_p^H b_p): one psum of k x K
    utb = lax.psum(mm(ct(u_r), q.ct_times(b)), plan.names)
    x = mm(ct(vh_r), s_inv[:, None] * utb)
    resid = lax.psum(jnp.sum(jnp.abs(b - mm(a, x)) ** 2, axis=0), plan.names)
    return (x[:, 0] if vector else x), resid, rank, s


def _lstsq_wide(a_block, b_block, *, plan, rcond, dtype, vector):
    a = a_block.astype(dtype)
    b = b_block.astype(dtype)[:, None] if vector else b_block.astype(dtype)
    q, r = tsqr(ct(a), plan.names)   # A^H = Q R, R = U_R S Vh_R
    u_r, s, vh_r, s_inv, rank = _solve_small(r, rcond)
    # minimum norm: x = Q U_R S^+ Vh_R b, this block's rows of it
    x = q.times(mm(u_r, s_inv[:, None] * mm(vh_r, b)))
    resid = jnp.sum(jnp.abs(b - lax.psum(mm(a, x), plan.names)) ** 2, axis=0)
    return (x[:, 0] if vector else x), resid, rank, s


def _gathered(a, b, rcond):
    x, resid, rank, s = jnp.linalg.lstsq(a, b, rcond=rcond)
    return x, resid, rank, s


def _rcond(rcond, m: int, n: int, dtype) -> float:
    eps = float(np.finfo(dtype).eps)
    if rcond is None:
        return eps * max(m, n)
    if isinstance(rcond, (bool, np.bool_)) or not isinstance(rcond, (int, float, np.integer,
                                                                       np.floating)):
        raise TypeError(f"lstsq: rcond={rcond!r} must be None or a real number (the cut-off "
                        "ratio of singular values to the largest)")
    return eps if rcond < 0 else float(rcond)  # numpy and jax: a negative rcond is eps


def lstsq(a, b, rcond=None) -> LstsqResult:
    """Least-squares solution of a @ x = b (numpy.linalg.lstsq).

    Args:
      a: (M, N) coefficient matrix.
      b: (M,) or (M, K) right-hand side.
      rcond: singular values below rcond * largest count as zero; None: eps * max(M, N);
        a negative value: eps.

    Returns:
      (x, residuals, rank, s) as numpy: x (N,) or (N, K); residuals the squared 2-norms of
      the columns of b - a @ x, shape (K,) (or (1,) for a 1-D b), empty when rank < N or
      M <= N (eagerly; under a trace they are always returned, as jax.numpy does); rank; s
      the singular values of a, descending.

    Layout:
      Tall-skinny a (rows split, N small): x, residuals, rank and s replicated, b moved to
      a's row split, one psum of N x K numbers besides the TSQR's gathered R factors.
      Short-wide a (columns split, M small): x split as a's columns, b replicated. Other
      layouts: jnp.linalg.lstsq on the gathered matrix, results replicated.
    """
    a = ensure_array("lstsq", a, "a")
    b = ensure_array("lstsq", b, "b")
    a, b = check_same_mesh("lstsq", [a, b], "a, b")
    if a.ndim != 2:
        raise ValueError(f"lstsq: a must be a 2-D matrix, got shape {a.shape} (numpy's lstsq "
                         "takes no stacks)")
    if b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ValueError(f"lstsq: b must have shape ({a.shape[0]},) or ({a.shape[0]}, K) to "
                         f"match a of shape {a.shape}, got {b.shape}")
    m, n = a.shape
    dtype = inexact(jnp.result_type(a.dtype, b.dtype))
    real = np.dtype(jnp.finfo(dtype).dtype)
    cut = _rcond(rcond, m, n, real)
    vector = b.ndim == 1
    k_rhs = () if vector else (b.shape[1],)
    plan = plan_for(a)
    mesh = a.mesh
    if plan is None:
        outs = tuple(make_out_layout(mesh, shape, ((),) * len(shape)) for shape in
                     ((n, *k_rhs), (1,) if vector else k_rhs, (), (min(m, n),)))
        x, resid, rank, s = apply_logical(_gathered, [a, b], outs, static=(cut,))
    else:
        b_split = () if plan.wide else plan.names
        b_layout = make_out_layout(mesh, b.shape, (b_split,) + ((),) * (b.ndim - 1))
        if b.layout != b_layout:
            from darray._src.engine.placing import redistribute
            b = redistribute(b, b_layout)
        x_split = plan.names if plan.wide else ()
        outs = (make_out_layout(mesh, (n, *k_rhs), (x_split,) + ((),) * len(k_rhs)),
                make_out_layout(mesh, (1,) if vector else k_rhs, ((),)),
                make_out_layout(mesh, (), ()),
                make_out_layout(mesh, (min(m, n),), ((),)))
        kernel = _lstsq_wide if plan.wide else _lstsq_tall
        x, resid, rank, s = run(kernel, [a, b], outs, plan=plan, rcond=cut, dtype=dtype,
                                vector=vector)
    if not _holds_tracer(a, b) and (int(np.asarray(rank.data)) < n or m <= n):
        from darray._src.engine.placing import asarray
        resid = asarray(np.zeros((0,), resid.dtype), mesh=mesh, spec=(None,))
    return LstsqResult(x, resid, rank, s)


def _holds_tracer(*arrays) -> bool:
    """Whether a DistArray among `arrays` holds a tracer (its rank is then unknown here)."""
    return any(isinstance(a, DistArray) and isinstance(a.data, jax.core.Tracer) for a in arrays)
