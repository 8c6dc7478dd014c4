"""Covers: darray/_src/linalg/tall_skinny.py, darray/_src/linalg/least_squares.py
Covers: darray/_src/api/linalg.py

Tall-skinny and short-wide linear algebra that never gathers the matrix (issue 50, item 1).

Every result is compared with numpy's LAPACK in float64 (issue 50's tolerances: qr backward
error <= 1e-12 and orthogonality <= 1e-10 at condition number 1e4, singular values within
1e-12 of the largest), every distributed result's layout is asserted (the long factor split as
the input's long axis, small factors replicated), the compiled programs hold no collective
larger than the P stacked k x k factors, their temporaries stay under 3 blocks + O(P k^2), and
gradients equal single-device jax.numpy's.
"""
import re
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_layout, compiled_hlo, mesh_of

import darray
from darray._src.layout.layout import Layout
from darray._src.linalg import tall_skinny

la = darray.linalg
pytestmark = pytest.mark.x64


def ill(shape, cond=1e4, dtype=np.float64, seed=0):
    """A (batch of) matrices with singular values spread geometrically from 1 to 1/cond."""
    rng = np.random.default_rng(seed)
    *batch, m, n = shape
    k = min(m, n)

    def orth(rows):
        a = rng.standard_normal((*batch, rows, k))
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal((*batch, rows, k))
        return np.linalg.qr(a)[0]

    s = np.geomspace(1.0, 1.0 / cond, k)
    return ((orth(m) * s) @ np.conj(np.swapaxes(orth(n), -1, -2))).astype(dtype)


def bound(dtype, f64, f32):
    return f32 if np.dtype(dtype) in (np.float32, np.complex64) else f64


def ct(a):
    return np.conj(np.swapaxes(a, -1, -2))


# (mesh shape, spec of the matrix, shape): rows over one or both mesh axes, an uneven long axis
# (1001 = 7 * 126 + 119), a last block shorter than k (370: blocks of 47, the last 41 < 45), an
# empty last block (49 = 7 * 7, k = 5), a stack with its batch axis split too, and short-wide twins.
TALL = [
    ((8,), ("x",), (1001, 45)),
    ((2, 4), (("x", "y"),), (370, 45)),
    ((8,), ("x",), (49, 5)),
    ((2, 4), ("x", "y"), (4, 203, 9)),
]
WIDE = [
    ((8,), (None, "x"), (45, 1001)),
    ((2, 4), (None, None, "y"), (3, 17, 130)),
]


def case(mesh_shape, spec, shape, dtype=np.float64, cond=1e4, seed=0):
    a = ill(shape, cond, dtype, seed)
    x = darray.asarray(a, mesh=mesh_of(mesh_shape), spec=spec)
    assert tall_skinny.plan_for(x) is not None, x.layout  # the cases must take the new path
    return a, x


def small_split(x, ndim):
    """The split of a replicated small result: x's batch splits, matrix axes unsplit."""
    return tuple(x.layout.split[:x.ndim - 2]) + ((),) * ndim


# -- accuracy against LAPACK ----------
# each layout once, each dtype at least once (2 shared CPU cores: a full product is too slow)
@pytest.mark.parametrize("where,dtype", [
    (TALL[0], np.float64), (TALL[0], np.complex128), (TALL[1], np.float64),
    (TALL[2], np.float32), (TALL[3], np.complex64)])
def test_tall_qr_is_as_accurate_as_lapack(where, dtype):
    cond = 1e4 if np.dtype(dtype).itemsize >= 16 or dtype == np.float64 else 1e2
    a, x = case(*where, dtype=dtype, cond=cond)
    q, r = la.qr(x)
    assert_layout(q, x.layout)
    assert_layout(r, split=small_split(x, 2), shape=a.shape[:-2] + (a.shape[-1],) * 2)
    qh, rh = np.asarray(q).astype(np.complex128), np.asarray(r).astype(np.complex128)
    norm = np.linalg.norm(a, axis=(-2, -1), keepdims=True)
    backward = np.max(np.linalg.norm(qh @ rh - a, axis=(-2, -1), keepdims=True) / norm)
    eye = np.eye(a.shape[-1])
    orthogonality = np.max(np.linalg.norm(ct(qh) @ qh - eye, axis=(-2, -1)))
    assert backward <= bound(dtype, 1e-12, 1e-5), backward
    assert orthogonality <= bound(dtype, 1e-10, 1e-5), orthogonality
    np.testing.assert_array_equal(np.tril(rh, -1), 0)
    # R is LAPACK's up to the signs (phases) of its rows
    r_ref = np.linalg.qr(a.astype(np.complex128))[1]
    np.testing.assert_allclose(np.abs(rh), np.abs(r_ref), atol=bound(dtype, 1e-12, 1e-5))


@pytest.mark.parametrize("where,dtype", [(WIDE[0], np.float64), (WIDE[1], np.complex128),
                                         (WIDE[0], np.float32)])
def test_wide_qr_equals_lapack(where, dtype):
    """A short-wide QR is LAPACK's factorization itself (same reflectors, same signs)."""
    a, x = case(*where, dtype=dtype, cond=bound(dtype, 1e4, 1e2))
    tol = bound(dtype, 1e-12, 1e-4)
    for mode in ("reduced", "complete"):
        q, r = la.qr(x, mode=mode)
        q_ref, r_ref = np.linalg.qr(a.astype(np.complex128 if a.dtype.kind == "c"
                                             else np.float64), mode=mode)
        assert_layout(q, split=small_split(x, 2), shape=a.shape[:-1] + (a.shape[-2],))
        assert_layout(r, x.layout)
        np.testing.assert_allclose(np.asarray(q), q_ref, atol=tol)
        np.testing.assert_allclose(np.asarray(r), r_ref, atol=tol)


@pytest.mark.parametrize("where,dtype", [
    (TALL[0], np.float64), pytest.param(TALL[1], np.complex128, marks=pytest.mark.slow),
    pytest.param(TALL[3], np.float32, marks=pytest.mark.slow), (WIDE[0], np.complex64),
    (WIDE[1], np.float64)])
def test_svd_family_matches_lapack(where, dtype):
    a, x = case(*where, dtype=dtype, cond=1e4 if np.dtype(dtype).itemsize in (8, 16)
                and dtype != np.complex64 else 1e2)
    wide = x.layout.split[-1] != ()
    k = min(a.shape[-2:])
    s_ref = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    tol = bound(dtype, 1e-12, 2e-6)
    u, s, vh = la.svd(x, full_matrices=False)
    if wide:
        assert_layout(u, split=small_split(x, 2), shape=a.shape[:-1] + (k,))
        assert_layout(vh, x.layout)
    else:
        assert_layout(u, x.layout)
        assert_layout(vh, split=small_split(x, 2), shape=a.shape[:-2] + (k, k))
    assert_layout(s, split=small_split(x, 1), shape=a.shape[:-2] + (k,))
    scale = s_ref[..., :1]
    assert np.max(np.abs(np.asarray(s) - s_ref) / scale) <= tol
    uh, vhh = np.asarray(u).astype(np.complex128), np.asarray(vh).astype(np.complex128)
    rebuilt = (uh * np.asarray(s)[..., None, :]) @ vhh
    assert np.max(np.abs(rebuilt - a)) <= 10 * tol
    assert np.max(np.abs(ct(uh) @ uh - np.eye(k))) <= bound(dtype, 1e-10, 1e-5)
    assert np.max(np.abs(vhh @ ct(vhh) - np.eye(k))) <= bound(dtype, 1e-10, 1e-5)
    sv = la.svdvals(x)
    assert_layout(sv, split=small_split(x, 1))
    assert np.max(np.abs(np.asarray(sv) - s_ref) / scale) <= tol
    for ord_, ref in ((2, s_ref[..., 0]), (-2, s_ref[..., -1]), ("nuc", s_ref.sum(-1))):
        nrm = la.matrix_norm(x, ord=ord_)
        assert_layout(nrm, split=small_split(x, 0))
        np.testing.assert_allclose(np.asarray(nrm), ref, rtol=tol * k)
    kept = la.matrix_norm(x, ord=2, keepdims=True)
    assert_layout(kept, split=small_split(x, 2), shape=a.shape[:-2] + (1, 1))


@pytest.mark.parametrize("where", [TALL[0], TALL[3], pytest.param(WIDE[0], marks=pytest.mark.slow)],
                         ids=lambda w: "x".join(map(str, w[2])))
def test_pinv_and_matrix_rank(where):
    mesh_shape, spec, shape = where
    a = ill(shape, cond=1e3)
    # rank deficient by construction: the last two singular values exactly zero
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    s[..., -2:] = 0
    a = (u * s[..., None, :]) @ vh
    x = darray.asarray(a, mesh=mesh_of(mesh_shape), spec=spec)
    assert tall_skinny.plan_for(x) is not None
    wide = x.layout.split[-1] != ()
    p = la.pinv(x)
    want = list(x.layout.split[:-2]) + ([x.layout.split[-1], ()] if wide
                                         else [(), x.layout.split[-2]])
    assert_layout(p, split=tuple(want), shape=a.shape[:-2] + a.shape[:-3:-1])
    np.testing.assert_allclose(np.asarray(p), np.linalg.pinv(a), atol=1e-9)
    rank = la.matrix_rank(x)
    assert_layout(rank, split=small_split(x, 0))
    np.testing.assert_array_equal(np.asarray(rank), np.linalg.matrix_rank(a))
    # a relative cut-off between the 2nd and 3rd smallest nonzero singular values
    k = min(shape[-2:])
    cut = float(np.sqrt(s[..., k - 3].max() * s[..., k - 4].min()) / s[..., 0].min()) \
        if np.ndim(s) > 1 else float(np.sqrt(s[k - 3] * s[k - 4]) / s[0])
    np.testing.assert_array_equal(np.asarray(la.matrix_rank(x, rtol=cut)),
                                  np.linalg.matrix_rank(a, rtol=cut))
    np.testing.assert_allclose(np.asarray(la.pinv(x, rtol=cut)), np.linalg.pinv(a, rtol=cut),
                               atol=1e-9)


# -- lstsq ----------
@pytest.mark.parametrize("where,rhs,dtype", [
    (((8,), ("x",), (1001, 45)), (3,), np.float64),
    (((2, 4), (("x", "y"),), (370, 45)), (), np.complex128),
    (((8,), (None, "x"), (45, 1001)), (2,), np.float64),
    (((2, 4), (None,), (60, 7)), (2,), np.float64)],
    ids=["tall", "tall-vector-complex", "wide", "gathered"])
def test_lstsq_matches_numpy(where, rhs, dtype):
    mesh_shape, spec, shape = where
    a = ill(shape, cond=1e3, dtype=dtype)
    b = ill((shape[0],) + (rhs or (1,)), cond=1.0, dtype=dtype, seed=1) * 3
    b = b if rhs else b[:, 0]
    mesh = mesh_of(mesh_shape)
    x_in = darray.asarray(a, mesh=mesh, spec=spec)
    b_in = darray.asarray(b, mesh=mesh)  # the default layout: lstsq moves it where it needs
    sol, resid, rank, s = la.lstsq(x_in, b_in)
    ref = np.linalg.lstsq(a, b)
    wide = len(spec) == 2 and spec[1] == "x"
    assert_layout(sol, split=((("x",) if wide else ()),) + ((),) * len(rhs),
                  shape=(shape[1],) + rhs)
    np.testing.assert_allclose(np.asarray(sol), ref[0], atol=1e-10)
    assert np.asarray(resid).shape == ref[1].shape
    np.testing.assert_allclose(np.asarray(resid), ref[1], rtol=1e-10)
    assert int(np.asarray(rank)) == ref[2]
    np.testing.assert_allclose(np.asarray(s), ref[3], rtol=1e-12, atol=1e-14)
    for r in (resid, s):
        assert_layout(r, split=((),))


def test_lstsq_refuses_bad_operands():
    mesh = mesh_of((8,))
    a = darray.asarray(np.ones((64, 3)), mesh=mesh, spec=("x",))
    with pytest.raises(ValueError, match=r"b must have shape \(64,\) or \(64, K\)"):
        la.lstsq(a, darray.asarray(np.ones(63), mesh=mesh))
    with pytest.raises(ValueError, match="a must be a 2-D matrix"):
        la.lstsq(darray.asarray(np.ones((2, 64, 3)), mesh=mesh), np.ones(64))
    with pytest.raises(TypeError, match="rcond='big' must be None or a real number"):
        la.lstsq(a, np.ones(64), rcond="big")


# -- the layouts the rule leaves to the gathering path stay correct ----------
@pytest.mark.parametrize("mesh_shape,spec,shape", [
    ((8,), ("x",), (300, 45)),       # blocks of 38 rows < 45 columns
    ((2, 4), ("x", "y"), (64, 48)),  # both matrix axes split
    ((8,), (None,), (64, 3)),        # nothing split
])
def test_rule_and_fallbacks(mesh_shape, spec, shape):
    mesh = mesh_of(mesh_shape)
    a = ill(shape, cond=10.0)
    x = darray.asarray(a, mesh=mesh, spec=spec)
    assert tall_skinny.plan_for(x) is None
    q, r = la.qr(x)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
    np.testing.assert_allclose(np.asarray(la.svdvals(x)), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-12, atol=1e-14)


def test_rule_caps_the_small_extent():
    """More than MAX_SMALL columns is not "skinny": k x k pieces per device would not be small."""
    lay = Layout.create((8 * 4200, tall_skinny.MAX_SMALL + 1), mesh_of((8,)), ("x",))
    assert tall_skinny.plan_for(SimpleNamespace(layout=lay, dtype=np.dtype(np.float64))) is None
    lay = Layout.create((8 * 4200, tall_skinny.MAX_SMALL), mesh_of((8,)), ("x",))
    plan = tall_skinny.plan_for(SimpleNamespace(layout=lay, dtype=np.dtype(np.float64)))
    assert plan == tall_skinny.Plan(False, ("x",), 8 * 4200, tall_skinny.MAX_SMALL)


def test_full_matrices_and_complete_keep_numpy_semantics():
    """A full U (complete Q) of a tall matrix is m x m: the answer numpy gives, via gathering."""
    a, x = case((8,), ("x",), (200, 5))
    u, s, vh = la.svd(x)  # full_matrices=True, the Array API default
    assert u.shape == (200, 200)
    np.testing.assert_allclose((np.asarray(u)[:, :5] * np.asarray(s)) @ np.asarray(vh), a,
                               atol=1e-12)
    q, r = la.qr(x, mode="complete")
    assert q.shape == (200, 200) and r.shape == (200, 5)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)


# -- communication and memory ----------
_COLLECTIVE = re.compile(r"=\s*(.*?)\s(all-gather|all-reduce|all-to-all|reduce-scatter|"
                         r"collective-permute)(?:-start)?\(")
_SHAPE = re.compile(r"\w+\[([\d,]*)\]")


def largest_collective(hlo: str) -> tuple[int, list[str]]:
    """Elements of the largest collective result in `hlo`, and the collectives seen."""
    most, seen = 0, []
    for result, op in _COLLECTIVE.findall(hlo):
        seen.append(op)
        for dims in _SHAPE.findall(result):
            most = max(most, int(np.prod([int(d) for d in dims.split(",") if d] or [1])))
    return most, seen


FUNCS = {
    "qr": lambda v: la.qr(v),
    "svd": lambda v: la.svd(v, full_matrices=False),
    "pinv": la.pinv,
    "lstsq": lambda v: la.lstsq(v, darray.linalg.matrix_transpose(v)[0])[:2],
}


@pytest.mark.parametrize("name", list(FUNCS))
def test_hlo_moves_only_small_factors_and_temporaries_stay_small(name):
    rows, k, parts = 8 * 512 - 5, 16, 8
    a, x = case((8,), ("x",), (rows, k))
    fn = FUNCS[name]
    hlo = compiled_hlo(fn, x)
    most, seen = largest_collective(hlo)
    assert "all-gather" in seen or name == "lstsq" or "all-reduce" in seen
    block = x.layout.chunk(0) * k
    assert most <= parts * k * k < block, (most, seen)  # never a block, only the R factors
    memory = jax.jit(fn).lower(x).compile().memory_analysis()
    block_bytes = block * 8
    small_bytes = parts * k * k * 8
    assert memory.temp_size_in_bytes <= 3 * block_bytes + 4 * small_bytes, (
        memory.temp_size_in_bytes / block_bytes)


def test_eager_programs_take_cholesky_qr2_and_fall_back_to_householder():
    """Called eagerly, the svd program is CholeskyQR2 alone (at most one block of temporaries:
    the padding-zeroed copy of an uneven block, Q1 is streamed by row chunks; the traced
    program's lax.cond also holds the Householder branch's two), and a
    rank-deficient matrix, where Cholesky of the Gram fails, gets the Householder answer."""
    rows, k = 8 * 512 - 5, 16
    a, x = case((8,), ("x",), (rows, k))
    plan = tall_skinny.plan_for(x)
    outs = (x.layout, tall_skinny.small_layout(x, (k,)), tall_skinny.small_layout(x, (k, k)))
    block, small = x.layout.chunk(0) * k * 8, 8 * k * k * 8
    temps = {}
    for method in ("cholesky", "guarded"):
        program = tall_skinny._program(tall_skinny._svd, (x.layout,), outs, (("plan", plan),),
                                       method)
        temps[method] = program.lower(x.data).compile().memory_analysis().temp_size_in_bytes
    assert temps["cholesky"] <= block + 4 * small < temps["guarded"], (temps, block)

    b = a.copy()
    b[:, 3] = b[:, 2]  # rank k - 1
    q, r = la.qr(darray.asarray(b, mesh=x.mesh, spec=("x",)))
    assert_layout(q, x.layout)
    qh = np.asarray(q)
    assert np.linalg.norm(qh.T @ qh - np.eye(k)) <= 1e-12
    assert np.linalg.norm(qh @ np.asarray(r) - b) <= 1e-12 * np.linalg.norm(b)


def test_float32_grams_take_cholesky_qr2_up_to_their_margin(monkeypatch):
    """With x64 off the Grams of float32 data are float32: CholeskyQR2 runs while cond(A) <
    GRAM_MARGIN / sqrt(eps) (1450), as accurate as Householder's (scikit-learn's LDA hands
    the svd a cond-458 matrix, which took the slow per-device LAPACK path at margin 0.1).
    The float32 Gram is forced here, so that the x64 tier checks it too."""
    monkeypatch.setattr(tall_skinny, "gram_dtype", lambda dtype: np.dtype(dtype))
    taken = []
    original = tall_skinny._program
    monkeypatch.setattr(tall_skinny, "_program",
                        lambda *a: taken.append(a[-1]) or original(*a))
    rows, k = 8 * 1024 - 3, 19  # a shape no other test compiles (programs are cached)
    for cond, method in ((1000.0, "cholesky"), (1e5, "householder")):
        a = ill((rows, k), cond=cond, dtype=np.float64).astype(np.float32)
        x = darray.asarray(a, mesh=mesh_of((8,)), spec=("x",))
        taken.clear()
        u, s, vh = la.svd(x, full_matrices=False)
        assert taken[-1] == method, (cond, taken)
        assert_layout(u, x.layout)
        ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
        np.testing.assert_allclose(np.asarray(s, np.float64), ref, rtol=2e-5 * cond ** 0.5)
        uh = np.asarray(u, np.float64)
        assert np.linalg.norm(uh.T @ uh - np.eye(k)) <= 1e-5


@pytest.mark.parametrize("where,dtype", [
    (((8,), ("x",), (1003, 7)), np.float64),
    (((2, 4), (("x", "y"),), (611, 6)), np.complex128),
    (((2, 4), ("x", "y"), (3, 301, 5)), np.float64),
    (((8,), (None, "x"), (7, 1003)), np.float64)],
    ids=["tall", "tall-complex", "stack", "wide"])
def test_eager_cholesky_qr2_streams_q1_by_row_chunks(where, dtype, monkeypatch):
    """Eagerly, Q1 = A R1^-1 is never formed whole: it is rebuilt by row chunks (here 15 to 26 rows;
    blocks of 126 / 77 / 151 rows: the last chunk moved back to end at the block's end) for the
    second Gram and wherever Q is applied. Every result equals LAPACK's, and the svd program's
    temporaries are chunks, not a block."""
    monkeypatch.setattr(tall_skinny, "CHUNK_BYTES", 1456)  # 26 rows of 7 float64, 15 complex
    mesh_shape, spec, shape = where
    a, x = case(mesh_shape, spec, shape, dtype=dtype, cond=1e4)
    plan = tall_skinny.plan_for(x)
    k, wide = plan.small, plan.wide
    q, r = la.qr(x)
    qh, rh = np.asarray(q), np.asarray(r)
    eye = np.eye(k)
    assert np.linalg.norm(ct(qh) @ qh - eye) <= 1e-10
    assert np.linalg.norm(qh @ rh - a) <= 1e-12 * np.linalg.norm(a)
    u, s, vh = la.svd(x, full_matrices=False)
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a, compute_uv=False),
                               rtol=0, atol=1e-12)
    long = np.asarray(vh) if wide else np.asarray(u)
    assert_layout(vh if wide else u, x.layout)
    gram = long @ ct(long) if wide else ct(long) @ long
    assert np.linalg.norm(gram - np.eye(k)) <= 1e-10
    assert np.linalg.norm((np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh) - a
                          ) <= 1e-12 * np.linalg.norm(a)
    p = la.pinv(x)
    np.testing.assert_allclose(np.asarray(p), np.linalg.pinv(a), atol=1e-8 * np.abs(
        np.linalg.pinv(a)).max())
    if len(shape) == 2:
        b = ill((shape[0], 2), cond=1.0, dtype=dtype, seed=1)
        sol = la.lstsq(x, darray.asarray(b, mesh=x.mesh))[0]
        np.testing.assert_allclose(np.asarray(sol), np.linalg.lstsq(a, b)[0],
                                   atol=1e-8 * np.abs(np.linalg.lstsq(a, b)[0]).max())
    if not wide and len(shape) == 2:  # temporaries: chunks, not a block (16 KiB chunks); the
        # rows are even here: padding is zeroed in a masked copy of the block before the kernel
        monkeypatch.setattr(tall_skinny, "CHUNK_BYTES", 1 << 14)
        big = darray.asarray(np.ones((8 * 4096, k), dtype), mesh=x.mesh, spec=spec)
        outs = (big.layout, tall_skinny.small_layout(big, (k,)),
                tall_skinny.small_layout(big, (k, k)))
        program = tall_skinny._program(tall_skinny._svd, (big.layout,), outs,
                                       (("plan", tall_skinny.plan_for(big)),), "cholesky")
        temp = program.lower(big.data).compile().memory_analysis().temp_size_in_bytes
        block = big.layout.chunk(0) * k * np.dtype(dtype).itemsize
        assert temp < block / 2, (temp, block)


def test_gram_matrix_is_a_reduction_then_small_factorizations():
    """x^H x of a row-split x is a local product plus an all-reduce of k x k (no all-gather);
    cholesky and eigh then act on the small replicated matrix."""
    a, x = case((8,), ("x",), (1001, 12), cond=10.0)
    gram = lambda v: darray.matrix_transpose(v) @ v  # noqa: E731
    most, seen = largest_collective(compiled_hlo(gram, x))
    assert "all-gather" not in seen and most <= 12 * 12, (most, seen)
    g = gram(x)
    assert_layout(g, split=((), ()))
    np.testing.assert_allclose(np.asarray(g), a.T @ a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(la.cholesky(g)), np.linalg.cholesky(a.T @ a),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(la.eigvalsh(g)), np.linalg.eigvalsh(a.T @ a),
                               rtol=1e-12)


# -- gradients ----------
def _weights(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("where", [
    TALL[0], pytest.param(((2, 4), ("y",), (370, 45)), marks=pytest.mark.slow),
    pytest.param(WIDE[0], marks=pytest.mark.slow)],
                         ids=["tall", "tall-y", "wide"])
def test_gradients_equal_single_device_jax(where):
    """darray.grad of losses of (Q, R) and (U, S, Vh) equals jax.grad of the same losses of
    jnp.linalg's factors, and is laid out like the input. The losses do not depend on the
    signs a factorization may choose (Q's columns with R's rows, U's with Vh's rows)."""
    mesh_shape, spec, shape = where
    a, x = case(mesh_shape, spec, shape, cond=1e2)
    m, n = shape
    k = min(m, n)
    cq, cr = _weights((m, k), 1), _weights((k, n), 2)
    wq, ws = _weights((k, 3), 3), _weights((k,), 4)

    def qr_loss(v):
        q, r = la.qr(v)
        d = darray.sign(la.diagonal(r))  # the factorization with a positive diagonal of R
        return darray.sum(q * d * cq) + darray.sum(r * d[:, None] * cr)

    def qr_loss_ref(v):
        q, r = jnp.linalg.qr(v)
        d = jnp.sign(jnp.diagonal(r))
        return jnp.sum(q * d * cq) + jnp.sum(r * d[:, None] * cr)

    g = darray.grad(qr_loss)(x)
    g_ref = jax.grad(qr_loss_ref)(jnp.asarray(a))
    assert_layout(g, x.layout)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-9, atol=1e-9)

    def svd_loss(svd_fn, xp):
        def loss(v):
            u, s, vh = svd_fn(v, full_matrices=False)
            proj = xp.matmul(u, xp.matmul(xp.matrix_transpose(u), xp.asarray(cq)))
            return (s * xp.asarray(ws)).sum() + (proj * xp.asarray(cq)).sum() + \
                ((vh * vh).sum(axis=-2) * xp.asarray(wq[:, 0] if n == k else
                                                     _weights((n,), 5))).sum()
        return loss

    g = darray.grad(svd_loss(la.svd, darray))(x)
    g_ref = jax.grad(svd_loss(jnp.linalg.svd, jnp))(jnp.asarray(a))
    assert_layout(g, x.layout)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-8, atol=1e-8)
    # under jit, with jax.grad of the jax scalar a DistArray loss converts to
    g = jax.jit(jax.grad(lambda v: svd_loss(la.svd, darray)(v).to_jax()))(x)
    assert_layout(g, x.layout)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-8, atol=1e-8)
