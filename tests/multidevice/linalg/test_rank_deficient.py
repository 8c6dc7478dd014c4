"""Covers: darray/_src/linalg/jacobi_sweeps.py, darray/_src/linalg/jacobi.py
Covers: darray/_src/linalg/tall_skinny.py, darray/_src/linalg/stacked.py, darray/_src/api/linalg.py

Rank-deficient, exactly zero and graded matrices (issue 50): numpy's U, eigenvectors and Q
always have orthonormal columns, so darray's must too. Square svd (one-sided Jacobi) fills
the columns of zero singular values with an orthonormal basis of the complement and makes
the columns of small ones orthogonal (jacobi_sweeps.py); tall-skinny and short-wide qr / svd
(Householder TSQR where CholeskyQR2's guard fails) and eigh of degenerate spectra give them
by construction. Each case against numpy's LAPACK: orthonormality, reconstruction, the
values, and the output layout; uneven extents on meshes 8 and 2x4.
"""
import jax
import numpy as np
import pytest
from helpers import assert_layout, mesh_of

import darray
from darray._src.linalg import jacobi, tall_skinny

la = darray.linalg


# jax 0.12 with x64 off: lowering the float32 Jacobi sweep sometimes raises a KeyError in
# eval_jaxpr and then refuses a ppermute's axis order (not every run; as test_jacobi_eigh_svd's
# float32 eigh). Not strict: it passes on most runs.
_JAX_012_X64_OFF = pytest.mark.xfail(
    not jax.config.jax_enable_x64
    and tuple(int(v) for v in jax.__version__.split(".")[:2]) >= (0, 12),
    reason="jax 0.12, x64 off: KeyError in eval_jaxpr inside the Jacobi sweep (issue 50)",
    strict=False)


def low_rank(m, n, rank, dtype, seed=0):
    """A matrix of exactly `rank` (0: zeros), float64 / complex128 built, then cast."""
    rng = np.random.default_rng(seed)
    if rank == 0:
        return np.zeros((m, n), dtype)
    a = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * (rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n)))
    return a.astype(dtype)


def graded(n, dtype, low, seed=0):
    """Singular values from 1 down to 10**low, log-spaced (ranks that numpy calls deficient)."""
    rng = np.random.default_rng(seed)
    q1 = np.linalg.qr(rng.standard_normal((n, n)))[0]
    q2 = np.linalg.qr(rng.standard_normal((n, n)))[0]
    return ((q1 * np.logspace(0, low, n)) @ q2.T).astype(dtype)


def bounds(dtype):
    """(orthonormality, reconstruction and values relative to ||A||_2). Orthonormality is a
    Frobenius norm over up to 101 columns: float32 Jacobi rounding reaches 1.1e-3 there on
    jax 0.12 (x64 off); the zero columns this file guards against give about 10."""
    if np.dtype(dtype) in (np.float32, np.complex64):
        return 3e-3, 2e-4
    return 1e-10, 1e-12


def unitary_columns(q, tol):
    q = np.asarray(q).astype(np.complex128)
    assert np.linalg.norm(np.conj(q.T) @ q - np.eye(q.shape[1])) <= tol


def check_svd(a, u, s, vh, u_layout=None, vh_layout=None):
    """U, Vh^H orthonormal, values as numpy's, U S Vh = A; the layouts where given."""
    if u_layout is not None:
        assert_layout(u, u_layout)
        assert_layout(vh, vh_layout)
    e_orth, e_val = bounds(a.dtype)
    ah = a.astype(np.complex128)
    norm = max(np.linalg.norm(ah, 2), 1.0)  # a zero matrix: absolute
    unitary_columns(u, e_orth)
    unitary_columns(np.conj(np.asarray(vh).T), e_orth)
    sn = np.asarray(s).astype(np.float64)
    assert np.max(np.abs(sn - np.linalg.svd(ah, compute_uv=False))) <= e_val * norm
    rebuilt = (np.asarray(u).astype(np.complex128) * sn) @ np.asarray(vh)
    assert np.linalg.norm(rebuilt - ah) / norm <= 10 * e_val * np.sqrt(a.shape[0])


SQUARE = [((8,), ("x",), 70), ((2, 4), ("x", "y"), 101)]
SQUARE_IDS = ["rows8-70", "2x4-101"]


@pytest.mark.x64
def test_square_svd_of_a_rank_5_matrix_has_orthonormal_u():
    """The default tier's case: rank 5 of 70 (small values refined, zero ones completed)."""
    a = low_rank(70, 70, 5, np.float64)
    x = darray.asarray(a, mesh=mesh_of((8,)), spec=("x",))
    check_svd(a, *la.svd(x), x.layout, x.layout)


@pytest.mark.slow
@pytest.mark.parametrize("where", SQUARE, ids=SQUARE_IDS)
@pytest.mark.parametrize("dtype", [pytest.param(np.float64, marks=pytest.mark.x64),
                                   np.float32,
                                   pytest.param(np.complex128, marks=pytest.mark.x64)])
def test_square_svd_of_deficient_matrices_has_orthonormal_u(where, dtype):
    """Rank 5, rank n - 1 (one zero value), exactly zero and graded down to 1e-30: U and Vh
    orthonormal, values as numpy's, U and Vh in the input's layout."""
    mesh_shape, spec, n = where
    for a in (low_rank(n, n, 5, dtype), low_rank(n, n, n - 1, dtype, seed=1),
              np.zeros((n, n), dtype), graded(n, dtype, -30)):
        x = darray.asarray(a, mesh=mesh_of(mesh_shape), spec=spec)
        assert jacobi.plan_for(x) is not None
        for full in (True, False):  # square: the same answer
            check_svd(a, *la.svd(x, full_matrices=full), x.layout, x.layout)


@pytest.mark.slow
@pytest.mark.x64
def test_square_svd_under_jit_completes_u():
    a = low_rank(70, 70, 3, np.float64, seed=2)
    x = darray.asarray(a, mesh=mesh_of((2, 4)), spec=("x", "y"))
    check_svd(a, *jax.jit(la.svd)(x), x.layout, x.layout)


@pytest.mark.slow
@pytest.mark.x64
def test_stacked_svd_of_deficient_matrices():
    """A stack with split matrix axes (the per-element Jacobi kernel; every device joins
    the completion when one element needs it): a zero, a rank-2 and a full-rank element."""
    n = 64
    stack = np.stack([np.zeros((n, n)), low_rank(n, n, 2, np.float64, seed=3),
                      low_rank(n, n, n, np.float64, seed=4)])
    x = darray.asarray(stack, mesh=mesh_of((2, 4)), spec=("x", "y", None))
    u, s, vh = la.svd(x)
    for i in range(len(stack)):
        check_svd(stack[i], *(np.asarray(t)[i] for t in (u, s, vh)))
    assert_layout(u, x.layout)
    assert_layout(vh, x.layout)


@pytest.mark.parametrize("dtype", [pytest.param(np.float64, marks=[pytest.mark.x64,
                                                                   pytest.mark.slow]),
                                   pytest.param(np.float32, marks=_JAX_012_X64_OFF),
                                   pytest.param(np.complex128, marks=[pytest.mark.x64,
                                                                      pytest.mark.slow])])
def test_eigh_of_degenerate_and_zero_matrices_has_orthonormal_vectors(dtype):
    n = 70
    rng = np.random.default_rng(5)
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    values = np.repeat([-2.0, 0.0, 3.0], [20, 30, 20])  # repeated and zero eigenvalues
    for a in (((q * values) @ q.T).astype(dtype), np.zeros((n, n), dtype)):
        x = darray.asarray(a, mesh=mesh_of((2, 4)), spec=("x", "y"))
        w, v = la.eigh(x)
        assert_layout(v, x.layout)
        e_orth, e_val = bounds(dtype)
        norm = max(np.linalg.norm(a.astype(np.complex128), 2), 1.0)
        unitary_columns(v, 10 * e_orth)
        np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a.astype(np.complex128)),
                                   atol=10 * e_val * norm)
        vn = np.asarray(v).astype(np.complex128)
        assert np.linalg.norm(a @ vn - vn * np.asarray(w)) / norm <= 100 * e_orth


# m = 108 rows over 8 devices: blocks of 14, the last one 10 rows, fewer than k = 13
TALL = [(108, 13, 5), (108, 13, 0), pytest.param((203, 13, 13), marks=pytest.mark.slow)]


@pytest.mark.parametrize("shape", TALL, ids=["rank5-short-last", "zero", "full"])
@pytest.mark.parametrize("dtype", [pytest.param(np.float64, marks=pytest.mark.x64),
                                   pytest.param(np.float32, marks=pytest.mark.slow),
                                   pytest.param(np.complex64, marks=pytest.mark.slow)])
def test_tall_and_wide_qr_and_svd_of_deficient_matrices(shape, dtype):
    """Q, U (tall) and Vh (wide) orthonormal and split like the long axis, eagerly and under
    jit (where CholeskyQR2's guard picks Householder TSQR inside the program)."""
    m, k, rank = shape
    a = low_rank(m, k, rank, dtype, seed=6)
    e_orth, e_val = bounds(dtype)
    norm = max(np.linalg.norm(a.astype(np.complex128), 2), 1.0)
    tall = darray.asarray(a, mesh=mesh_of((8,)), spec=("x",))
    wide = darray.asarray(np.ascontiguousarray(a.T), mesh=mesh_of((8,)), spec=(None, "x"))
    assert tall_skinny.plan_for(tall) is not None and tall_skinny.plan_for(wide) is not None
    for qr in (la.qr, jax.jit(la.qr)):
        q, r = qr(tall)
        assert_layout(q, split=(("x",), ()), shape=(m, k))
        unitary_columns(q, e_orth)
        assert np.linalg.norm(np.asarray(q) @ np.asarray(r) - a) / norm <= 10 * e_val * m
    check_svd(a, *la.svd(tall, full_matrices=False), tall.layout,
              tall_skinny.small_layout(tall, (k, k)))
    at = np.ascontiguousarray(a.T)
    check_svd(at, *la.svd(wide, full_matrices=False),
              tall_skinny.small_layout(wide, (k, k)), wide.layout)
