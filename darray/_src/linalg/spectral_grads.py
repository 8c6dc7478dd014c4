"""Derivatives of the square eigh / svd path (issue 50, item 4).

jacobi.py's programs iterate in a `lax.while_loop`, which JAX can push tangents through but
not transpose, so `jax.grad` needs a rule of its own: `differentiable` wraps a program in a
`jax.custom_jvp` whose tangents are the standard perturbation formulas, written (as
jax.numpy's own rules are) so that they are linear in dA and hence transposable:

  eigh (A = V diag(w) V^H):  M = V^H dA V,  dw = Re diag(M),  dV = V (F o M),
                             F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it;
  svd (A = U diag(s) Vh):    dS = U^H dA V,  ds = Re diag(dS),
                             dU = U (F o (dS S + S dS^H) + 1/2 (dS - dS^H) S^-1 on the diagonal),
                             dV = V (F o (S dS + dS^H S)),  F_ij = 1 / (s_j^2 - s_i^2).

The values-only functions (eigvalsh, svdvals) run the vector program to get V (and U).

The products run on the logical matrices with their layouts pinned, partitioned by XLA
(it may gather V for them: the derivative is not held to the no-gather rule).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from darray._src.layout.layout import Layout
from darray._src.placement import physical

HIGHEST = lax.Precision.HIGHEST


def _ct(a):
    return jnp.conj(jnp.swapaxes(a, -1, -2))


def _mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def _eigh_tangent(a_layout: Layout, w, v_data, da_data):
    v = physical.physical_to_logical(v_data, a_layout)
    # pinned: the transpose of this constraint lays the gradient out like the input
    da = physical.physical_to_logical(physical.constrain(da_data, a_layout), a_layout)
    da = (da + _ct(da)) / 2  # the Hermitian part, as jax.numpy's eigh (symmetrize_input)
    m = _mm(_ct(v), _mm(da, v))
    dw = jnp.real(jnp.diagonal(m))
    eye = jnp.eye(w.shape[-1], dtype=w.dtype)
    f = 1 / (eye + w[None, :] - w[:, None]) - eye  # jax.numpy's eigh rule, same degeneracies
    dv = _mm(v, f.astype(m.dtype) * m)
    return dw, physical.logical_to_physical(dv, a_layout)


def _svd_tangent(a_layout: Layout, s, u_data, vh_data, da_data):
    u = physical.physical_to_logical(u_data, a_layout)
    vh = physical.physical_to_logical(vh_data, a_layout)
    da = physical.physical_to_logical(physical.constrain(da_data, a_layout), a_layout)
    v = _ct(vh)
    ds_mat = _mm(_ct(u), _mm(da, v))
    ds = jnp.real(jnp.diagonal(ds_mat))
    s_row = s[None, :]
    diffs = (s_row + s_row.T) * (s_row - s_row.T)
    eye = jnp.eye(s.shape[-1], dtype=s.dtype)
    f = (1 / (diffs + eye) - eye).astype(ds_mat.dtype)
    dss = s_row.astype(ds_mat.dtype) * ds_mat
    sds = s_row.T.astype(ds_mat.dtype) * ds_mat
    zero = (s == 0).astype(s.dtype)
    s_inv = jnp.diag(1 / (s + zero) - zero).astype(ds_mat.dtype)
    du = _mm(u, f * (dss + _ct(dss)) + 0.5 * (ds_mat - _ct(ds_mat)) * s_inv)
    dv = _mm(v, f * (sds + _ct(sds)))
    return (physical.logical_to_physical(du, a_layout), ds,
            physical.logical_to_physical(_ct(dv), a_layout))


def differentiable(program, vector_program, layout: Layout, hermitian: bool, vectors: bool):
    """`program` (physical data -> outputs) with the derivative rule above; `vector_program`
    computes the vectors when `program` gives values only."""

    @jax.custom_jvp
    def run(data):
        return program(data)

    @run.defjvp
    def run_jvp(primals, tangents):
        (data,), (dt,) = primals, tangents
        full = program(data) if vectors else vector_program(data)
        dt = dt.astype(full[1 if hermitian else 0].dtype)
        if hermitian:
            w, v = full
            dw, dv = _eigh_tangent(layout, w, v, dt)
            return (full, (dw, dv)) if vectors else ((w,), (dw,))
        u, s, vh = full
        du, ds, dvh = _svd_tangent(layout, s, u, vh, dt)
        return (full, (du, ds, dvh)) if vectors else ((s,), (ds,))

    return run
