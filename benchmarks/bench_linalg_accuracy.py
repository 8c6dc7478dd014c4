"""Accuracy of darray.linalg's distributed paths beside numpy's LAPACK on the same matrices,
per dtype (issue 50: "float32 and complex dtypes at matching tolerances").

Prints one row per (function, measure, dtype): darray's error, numpy's error in the same
dtype, and their ratio. Errors relative to ||A||_2 (eigenvalues, singular values, residuals,
backward errors) or absolute (orthogonality ||Q^H Q - I||_F), measured in float64 / complex128.

    PYTHONPATH=. python benchmarks/bench_linalg_accuracy.py   (8 CPU devices; x64 on)
"""
from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

import darray  # noqa: E402

la = darray.linalg
N, M, K = 101, 2000, 32  # square n (2x4 mesh), tall m x k (8 devices)


def mesh(shape):
    return jax.make_mesh(shape, ("x", "y")[:len(shape)], devices=jax.devices()[:8],
                         axis_types=(jax.sharding.AxisType.Auto,) * len(shape))


def with_cond(m, n, cond, complex_, rng):
    def q(k):
        z = rng.standard_normal((k, k)) + (1j * rng.standard_normal((k, k)) if complex_ else 0)
        return np.linalg.qr(z)[0][:, :n] if k == m else np.linalg.qr(z)[0]
    return (q(m) * np.logspace(0, -np.log10(cond), n)) @ np.conj(q(n).T)


def c(a):
    return np.asarray(a).astype(np.complex128)


def orth(q):
    q = c(q)
    return np.linalg.norm(np.conj(q.T) @ q - np.eye(q.shape[1]))


def measures(dtype, rng):
    cplx = np.dtype(dtype).kind == "c"
    out = []
    sq = mesh((2, 4))
    tall_mesh = mesh((8,))
    # qr, tall-skinny, cond 1e4
    a = with_cond(M, K, 1e4, cplx, rng).astype(dtype)
    x = darray.asarray(a, mesh=tall_mesh, spec=("x",))
    norm = np.linalg.norm(c(a), 2)
    q, r = la.qr(x)
    qn, rn = np.linalg.qr(a)
    out.append(("qr tall cond 1e4", "backward", np.linalg.norm(c(q) @ c(r) - c(a), 2) / norm,
                np.linalg.norm(c(qn) @ c(rn) - c(a), 2) / norm))
    out.append(("qr tall cond 1e4", "orthogonality", orth(q), orth(qn)))
    # svd: tall and square, singular values
    ref = np.linalg.svd(c(a), compute_uv=False)
    s = la.svdvals(x)
    out.append(("svdvals tall", "values", np.max(np.abs(np.asarray(s) - ref)) / ref[0],
                np.max(np.abs(np.linalg.svd(a, compute_uv=False) - ref)) / ref[0]))
    b = with_cond(N, N, 1e4, cplx, rng).astype(dtype)
    y = darray.asarray(b, mesh=sq, spec=("x", "y"))
    refb = np.linalg.svd(c(b), compute_uv=False)
    u, s, vh = la.svd(y)
    un, sn, vhn = np.linalg.svd(b)
    out.append(("svd square cond 1e4", "values", np.max(np.abs(np.asarray(s) - refb)) / refb[0],
                np.max(np.abs(sn - refb)) / refb[0]))
    out.append(("svd square cond 1e4", "orthogonality U", orth(u), orth(un)))
    out.append(("svd square cond 1e4", "reconstruction",
                np.linalg.norm((c(u) * np.asarray(s)) @ c(vh) - c(b), 2) / refb[0],
                np.linalg.norm((c(un) * sn) @ c(vhn) - c(b), 2) / refb[0]))
    # eigh
    h = rng.standard_normal((N, N)) + (1j * rng.standard_normal((N, N)) if cplx else 0)
    h = ((h + np.conj(h.T)) / 2).astype(dtype)
    z = darray.asarray(h, mesh=sq, spec=("x", "y"))
    hn = np.linalg.norm(c(h), 2)
    wref = np.linalg.eigvalsh(c(h))
    w, v = la.eigh(z)
    wn, vn = np.linalg.eigh(h)
    out.append(("eigh", "eigenvalues", np.max(np.abs(np.asarray(w) - wref)) / hn,
                np.max(np.abs(wn - wref)) / hn))
    out.append(("eigh", "residual", np.linalg.norm(c(h) @ c(v) - c(v) * np.asarray(w)) / hn,
                np.linalg.norm(c(h) @ c(vn) - c(vn) * wn) / hn))
    out.append(("eigh", "orthogonality", orth(v), orth(vn)))
    # cholesky and solve (square, 2x4)
    spd = (c(b) @ np.conj(c(b).T) + N * np.eye(N)).astype(dtype)
    p = darray.asarray(spd, mesh=sq, spec=("x", "y"))
    spn = np.linalg.norm(c(spd), 2)
    low = la.cholesky(p)
    lown = np.linalg.cholesky(spd)
    out.append(("cholesky", "backward", np.linalg.norm(c(low) @ np.conj(c(low).T) - c(spd), 2)
                / spn, np.linalg.norm(c(lown) @ np.conj(c(lown).T) - c(spd), 2) / spn))
    g = (rng.standard_normal((N, N)) + (1j * rng.standard_normal((N, N)) if cplx else 0))
    g = g.astype(dtype)
    rhs = rng.standard_normal((N, 3)).astype(dtype)
    gx = darray.asarray(g, mesh=sq, spec=("x", "y"))
    rx = darray.asarray(rhs, mesh=sq, spec=("x", None))
    sol = la.solve(gx, rx)
    soln = np.linalg.solve(g, rhs)
    gn = np.linalg.norm(c(g), 2)

    def backward(xs):
        xs = c(xs)
        return np.linalg.norm(c(g) @ xs - c(rhs), 2) / (gn * np.linalg.norm(xs, 2))
    out.append(("solve", "backward", backward(sol), backward(soln)))
    return out


def main():
    print(f"{'function':22} {'measure':17} {'dtype':10} {'darray':>9} {'numpy':>9} {'ratio':>6}")
    for dtype in (np.float64, np.float32, np.complex64, np.complex128):
        rng = np.random.default_rng(0)
        for fn, what, mine, ref in measures(dtype, rng):
            ratio = mine / ref if ref > 0 else float("inf") if mine > 0 else 1.0
            print(f"{fn:22} {what:17} {np.dtype(dtype).name:10} {mine:9.1e} {ref:9.1e} "
                  f"{ratio:6.1f}")


if __name__ == "__main__":
    main()
