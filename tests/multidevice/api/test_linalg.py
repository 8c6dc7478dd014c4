"""Covers: darray/_src/api/linalg.py

Linear algebra against numpy (float64): batched ops keep the batch split; output layouts and
the no-communication property of batch-split matmul asserted."""
import jax
import numpy as np
import pytest
from helpers import mesh_of
from scalar_check import assert_replicated_scalar

import darray

MESHES = [(8,), (2, 4), (4, 2), (1, 8)]


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m)))
def mesh(request):
    return mesh_of(request.param)


def batch(mesh, shape=(7, 5, 5), seed=0, spd=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    if spd:
        a = a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])
    split = tuple(mesh.axis_names)  # the batch axis over every mesh axis
    return a, darray.asarray(a, mesh=mesh, spec=(split,)), (split,)


def check(y, ref, split, tol=1e-9, mesh=None):
    if np.ndim(ref) == 0:  # 0-d results are 0-d DistArrays, data replicated
        assert split == () and mesh is not None
        assert_replicated_scalar(y, mesh, ref, rtol=tol, atol=tol)
        return
    np.testing.assert_allclose(np.asarray(y), ref, atol=tol, rtol=tol)
    assert y.layout.split == tuple(split), y.layout
    assert y.data.shape == y.layout.physical_shape


@pytest.mark.x64
def test_batched_factorizations_keep_batch_split(mesh):
    a, x, (b,) = batch(mesh)
    s, xs, _ = batch(mesh, spd=True)
    la = darray.linalg
    check(la.det(x), np.linalg.det(a), (b,))
    check(la.inv(x), np.linalg.inv(a), (b, (), ()))
    check(la.cholesky(xs), np.linalg.cholesky(s), (b, (), ()))
    check(la.cholesky(xs, upper=True), np.swapaxes(np.linalg.cholesky(s), -1, -2), (b, (), ()))
    check(la.eigvalsh(xs), np.linalg.eigvalsh(s), (b, ()))
    w, v = la.eigh(xs)
    check(darray.matmul(xs, v), np.asarray(v) * np.asarray(w)[:, None, :], (b, (), ()))
    check(la.svdvals(x), np.linalg.svd(a, compute_uv=False), (b, ()))
    u, sv, vh = la.svd(x, full_matrices=False)
    np.testing.assert_allclose(np.asarray(u) * np.asarray(sv)[:, None, :] @ np.asarray(vh), a,
                               atol=1e-9)
    assert u.layout.split == (b, (), ())
    q, r = la.qr(x)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-9)
    assert q.layout.split == r.layout.split == (b, (), ())
    sign, logdet = la.slogdet(x)
    np.testing.assert_allclose(np.asarray(sign) * np.exp(np.asarray(logdet)), np.linalg.det(a))
    assert sign.layout.split == (b,)


@pytest.mark.x64
def test_batched_solvers_and_norms(mesh):
    a, x, (b,) = batch(mesh)
    rhs = np.random.default_rng(1).standard_normal((7, 5, 2))
    xr = darray.asarray(rhs, mesh=mesh, spec=(b,))
    la = darray.linalg
    check(la.solve(x, xr), np.linalg.solve(a, rhs), (b, (), ()))
    check(la.pinv(x), np.linalg.pinv(a), (b, (), ()))
    check(la.matrix_rank(x), np.linalg.matrix_rank(a), (b,))
    check(la.matrix_norm(x), np.linalg.norm(a, axis=(1, 2)), (b,))
    check(la.matrix_norm(x, ord="nuc", keepdims=True),
          np.linalg.norm(a, ord="nuc", axis=(1, 2), keepdims=True), (b, (), ()))
    check(la.matrix_power(x, 3), np.linalg.matrix_power(a, 3), (b, (), ()))
    check(la.matrix_power(x, -1), np.linalg.inv(a), (b, (), ()))
    check(la.trace(x, offset=1), np.trace(a, offset=1, axis1=1, axis2=2), (b,))
    check(la.diagonal(x, offset=-1), np.diagonal(a, offset=-1, axis1=1, axis2=2), (b, ()))
    check(la.vector_norm(x, axis=(0, 2), ord=1), np.abs(a).sum((0, 2)), ((),))
    check(la.vector_norm(x, axis=1, keepdims=True), np.linalg.norm(a, axis=1, keepdims=True),
          (b, (), ()))
    check(la.vector_norm(x), np.linalg.norm(a.ravel()), (), mesh=mesh)


@pytest.mark.x64
def test_matmul_family(mesh):
    rng = np.random.default_rng(2)
    m = rng.standard_normal((13, 9))
    spec = ("x",) if len(mesh.axis_names) == 1 else ("x", "y")
    xm = darray.asarray(m, mesh=mesh, spec=spec)
    s0, s1 = xm.layout.split
    check(darray.matmul(xm, darray.matrix_transpose(xm)), m @ m.T, (s0, ()))
    xt = darray.asarray(m.T, mesh=mesh)
    cols = xt.layout.split[1] if not set(xt.layout.split[1]) & set(s0) else ()
    check(xm @ xt, m @ m.T, (s0, cols))
    check(darray.matmul(xm, xm[0]), m @ m[0], (s0,))
    check(darray.tensordot(xm, xm, axes=([0], [0])), m.T @ m, (s1, ()))
    check(darray.tensordot(xm, xm, axes=2), np.tensordot(m, m, 2), (), mesh=mesh)
    # 1-D . 1-D contracts to a 0-d result: a 0-d DistArray
    check(darray.vecdot(xm[0], xm[1]), m[0] @ m[1], (), mesh=mesh)
    check(darray.matmul(xm[:, 2], xm[:, 3]), m[:, 2] @ m[:, 3], (), mesh=mesh)
    check(darray.tensordot(xm[0], xm[1], axes=1), m[0] @ m[1], (), mesh=mesh)
    check(darray.vecdot(xm, xm), (m * m).sum(-1), (s0,))
    check(darray.linalg.outer(xm[0], xm[:, 1]), np.outer(m[0], m[:, 1]), (s1, s0))
    c = rng.standard_normal((7, 3))
    xc = darray.asarray(c, mesh=mesh, spec=(mesh.axis_names[0],))
    check(darray.linalg.cross(xc, darray.flip(xc, axis=0)), np.cross(c, c[::-1]),
          xc.layout.split)
    with pytest.raises(ValueError, match="contraction extents differ"):
        darray.matmul(xm, xm)
    with pytest.raises(ValueError, match="square matrices"):
        darray.linalg.inv(xm)
    with pytest.raises(ValueError, match="rank >= 2"):
        darray.linalg.det(xm[0])


@pytest.mark.x64
def test_batch_split_matmul_has_no_communication(mesh):
    a, x, (b,) = batch(mesh, shape=(16, 4, 4))
    hlo = jax.jit(lambda v: darray.matmul(v, v)).lower(x).compile().as_text()
    for op in ("all-gather", "all-to-all", "all-reduce", "collective-permute"):
        assert op not in hlo
    check(darray.matmul(x, x), a @ a, (b, (), ()))


@pytest.mark.x64
def test_complex_vecdot_conjugates_first_argument(mesh):
    rng = np.random.default_rng(3)
    z = rng.standard_normal((9, 4)) + 1j * rng.standard_normal((9, 4))
    xz = darray.asarray(z, mesh=mesh, spec=(mesh.axis_names[0],))
    check(darray.vecdot(xz, xz), np.sum(np.conj(z) * z, axis=-1), xz.layout.split[:1])
