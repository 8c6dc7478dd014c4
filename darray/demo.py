"""darray demo: a periodic Poisson solve with distributed real FFTs.

    python3 -m darray.demo [--mesh 2,4] [--n 64]

Runs on 8 virtual CPU devices unless XLA_FLAGS says otherwise. Creates arrays and shows their
layouts, then solves  laplacian(phi) = rho  on the periodic unit cube with rfftn, the sample
frequencies and irfftn, printing the layout after each step, the time taken, and the residual
against a float64 numpy solution.
"""
from __future__ import annotations

import os

# Before jax starts: 8 virtual CPU devices, so the demo is distributed on any laptop.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

import darray  # noqa: E402
import darray.fft as dfft  # noqa: E402
from darray._src.base import compat  # noqa: E402


def make_mesh(text: str):
    shape = tuple(int(s) for s in text.split(","))
    names = ("d",) if len(shape) == 1 else ("x", "y", "z")[: len(shape)]
    if np.prod(shape) > jax.device_count():
        raise SystemExit(f"--mesh {text} needs {np.prod(shape)} devices, have "
                         f"{jax.device_count()}")
    return compat.make_auto_mesh(shape, names), names


def show(label, x):
    print(f"  {label:<28s} {x!r}")


def source(n: int) -> np.ndarray:
    """A smooth zero-mean periodic source (the Poisson problem needs a zero mean)."""
    g = np.arange(n) / n
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    rho = np.sin(2 * np.pi * x) * np.cos(4 * np.pi * y) + 0.5 * np.cos(2 * np.pi * (y + 3 * z))
    return rho - rho.mean()


def wavenumbers(rho_k, n):
    """|k|^2 on the rfftn grid from `darray.fft.wavenumbers`: each axis's vector is split like
    that axis of the spectrum, so the sum lands in the k-space layout with no communication."""
    kx, ky, kz = dfft.wavenumbers(rho_k, s=(n, n, n), d=1.0 / n)
    show("kx = 2pi fftfreq", kx)
    show("ky = 2pi fftfreq", ky)
    show("kz = 2pi rfftfreq", kz)
    return kx ** 2 + ky ** 2 + kz ** 2


def poisson(rho, k2):
    """phi = irfftn(-rfftn(rho) / |k|^2), with the mean mode set to zero."""
    rho_k = dfft.rfftn(rho)
    inv = darray.where(k2 > 0, -1.0 / darray.where(k2 > 0, k2, 1.0), 0.0)
    return dfft.irfftn(rho_k * inv, s=rho.shape), rho_k


def numpy_solution(rho: np.ndarray) -> np.ndarray:
    n = rho.shape[0]
    k = 2 * np.pi * np.fft.fftfreq(n, 1.0 / n)
    kz = 2 * np.pi * np.fft.rfftfreq(n, 1.0 / n)
    k2 = k[:, None, None] ** 2 + k[None, :, None] ** 2 + kz[None, None, :] ** 2
    inv = np.where(k2 > 0, -1.0 / np.where(k2 > 0, k2, 1.0), 0.0)
    return np.fft.irfftn(np.fft.rfftn(rho) * inv, s=rho.shape, axes=(0, 1, 2))


# -- stencil step (halo) --
def laplacian7(block, h):
    """7-point Laplacian of a block with one ghost cell on every side (returns the interior)."""
    c = block[1:-1, 1:-1, 1:-1]
    return (block[:-2, 1:-1, 1:-1] + block[2:, 1:-1, 1:-1] + block[1:-1, :-2, 1:-1]
            + block[1:-1, 2:, 1:-1] + block[1:-1, 1:-1, :-2] + block[1:-1, 1:-1, 2:] - 6 * c) / h**2


def stencil_step(phi, rho):
    """One explicit heat-equation (Jacobi-type) step u <- phi + dt * lap(phi), the Laplacian a
    7-point stencil on ghost cells filled by `phi.halo(1)` (one ppermute per face), checked
    against numpy's np.roll formula. Also reports the finite-difference residual against rho."""
    print("\n4. stencil step: heat equation, 7-point Laplacian on ghost cells")
    n = phi.shape[0]
    h = 1.0 / n
    dt = np.float32(h * h / 12)

    def step(u):
        return u + dt * darray.map_blocks(lambda b: laplacian7(b, np.float32(h)), u.halo(1))
    show("phi.halo(1)", phi.halo(1))
    run = jax.jit(step)
    out = run(phi)
    jax.block_until_ready(out.data)
    t0 = time.perf_counter()
    out = run(phi)
    jax.block_until_ready(out.data)
    elapsed = time.perf_counter() - t0
    show("phi + dt * lap7(phi)", out)
    print(f"  stencil step time (jit, warm): {elapsed * 1e3:.2f} ms")
    host = np.asarray(phi).astype(np.float64)
    lap = (sum(np.roll(host, s, axis=k) for k in range(3) for s in (1, -1)) - 6 * host) / h**2
    ref = host + dt * lap
    err = np.abs(np.asarray(out) - ref).max() / np.abs(ref).max()
    fd_residual = np.abs(lap - np.asarray(rho)).max() / np.abs(np.asarray(rho)).max()
    assert out.layout == phi.layout, "the stencil step must keep phi's layout"
    assert err < 1e-5, f"stencil step differs from numpy's np.roll formula: {err:.2e}"
    return (f"max |step - numpy| / max|numpy| = {err:.2e}; finite-difference residual "
            f"|lap7(phi) - rho| / |rho| = {fd_residual:.2e} (O(h^2))")


def main(argv=None):
    parser = argparse.ArgumentParser(description="darray periodic Poisson demo")
    parser.add_argument("--mesh", default=str(jax.device_count()),
                        help="mesh shape, e.g. 8 (slab) or 2,4 (pencil)")
    parser.add_argument("--n", type=int, default=64, help="grid points per axis")
    args = parser.parse_args(argv)
    mesh, names = make_mesh(args.mesh)
    n = args.n
    spec = names if len(names) > 1 else (names[0],)
    print(f"darray demo on {jax.device_count()} {jax.devices()[0].platform} devices, "
          f"mesh {dict(mesh.shape)}, grid {n}^3")

    print("\n1. creating arrays")
    show("darray.zeros((n,n,n))", darray.zeros((n, n, n), mesh=mesh, spec=spec))
    show("darray.arange(13) (uneven)", darray.arange(13, mesh=mesh, spec=(names,)))
    rho_host = source(n).astype(np.float32)
    rho = darray.asarray(rho_host, mesh=mesh, spec=spec)
    show("rho (real space)", rho)

    print("\n2. Poisson solve: laplacian(phi) = rho, periodic")
    rho_k = dfft.rfftn(rho)
    show("rho_k = rfftn(rho)", rho_k)
    k2 = wavenumbers(rho_k, n)
    show("|k|^2", k2)
    solve = jax.jit(poisson)
    phi, rho_k = solve(rho, k2)
    jax.block_until_ready(phi.data)
    t0 = time.perf_counter()
    phi, rho_k = solve(rho, k2)
    jax.block_until_ready(phi.data)
    elapsed = time.perf_counter() - t0
    show("phi = irfftn(...)", phi)
    print(f"  solve time (jit, warm): {elapsed * 1e3:.2f} ms")

    print("\n3. check against numpy (float64)")
    ref = numpy_solution(rho_host.astype(np.float64))
    got = np.asarray(phi)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    # Residual of the spectral Laplacian of phi against rho.
    lap = numpy_solution_laplacian(got)
    residual = np.abs(lap - rho_host).max() / np.abs(rho_host).max()
    print(f"  max |phi - phi_numpy| / max|phi_numpy| = {err:.2e}")
    print(f"  spectral residual |lap(phi) - rho| / |rho| = {residual:.2e}")
    assert phi.layout == rho.layout, "irfftn(rfftn(x)) must come back in x's layout"
    # float32 round-off in phi is amplified by |k|^2 (up to ~(pi n)^2) in the residual.
    ok = err < 1e-4 and residual < 1e-9 * n ** 3 + 1e-5

    # -- stencil step (halo) --
    stencil = stencil_step(phi, rho)
    if stencil is not None:
        print(f"  stencil check: {stencil}")

    print("\nOK" if ok else "\nFAILED")
    return 0 if ok else 1


def numpy_solution_laplacian(phi: np.ndarray) -> np.ndarray:
    n = phi.shape[0]
    k = 2 * np.pi * np.fft.fftfreq(n, 1.0 / n)
    kz = 2 * np.pi * np.fft.rfftfreq(n, 1.0 / n)
    k2 = k[:, None, None] ** 2 + k[None, :, None] ** 2 + kz[None, None, :] ** 2
    return np.fft.irfftn(-k2 * np.fft.rfftn(phi), s=phi.shape, axes=(0, 1, 2))


if __name__ == "__main__":
    raise SystemExit(main())
