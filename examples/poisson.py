"""Periodic Poisson solve in 3-D with distributed real FFTs.

Solves  laplacian(phi) = rho  on the periodic unit cube: ``rfftn`` (pencil transposes by
all-to-all), a division by -|k|^2 in k-space where the wavenumbers are built directly in the
layout rfftn returned, and ``irfftn`` back to rho's layout. Checked against the same solve in
float64 numpy, and by the spectral residual |lap(phi) - rho|.

    python3 examples/poisson.py [--out DIR]
"""
from __future__ import annotations

import _common  # noqa: F401  (first: devices, float64, Agg backend)
import jax
import matplotlib.pyplot as plt
import numpy as np

import darray
import darray.fft as dfft

N = 32


def source(n: int) -> np.ndarray:
    """Two Gaussian blobs of opposite sign: a smooth, zero-mean (solvable) periodic source."""
    g = (np.arange(n) + 0.5) / n
    x, y, z = np.meshgrid(g, g, g, indexing="ij")

    def blob(cx, cy, cz, w):
        return np.exp(-((x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2) / w)
    rho = blob(0.35, 0.4, 0.5, 0.01) - 0.6 * blob(0.7, 0.65, 0.5, 0.02)
    return rho - rho.mean()


@jax.jit
def solve(rho):
    rho_k = dfft.rfftn(rho)
    kx, ky, kz = _common.wavenumbers(rho_k.layout, rho.shape)
    k2 = kx ** 2 + ky ** 2 + kz ** 2
    # The k = 0 mode is the (zero) mean: set phi's mean to 0 instead of dividing by 0.
    phi_k = darray.where(k2 > 0, -rho_k / darray.where(k2 > 0, k2, 1.0), 0.0)
    return dfft.irfftn(phi_k, s=rho.shape), rho_k


def numpy_solve(rho: np.ndarray) -> np.ndarray:
    k = _common.numpy_wavenumbers(rho.shape)
    k2 = sum(ki ** 2 for ki in k)
    phi_k = np.where(k2 > 0, -np.fft.rfftn(rho) / np.where(k2 > 0, k2, 1.0), 0.0)
    return np.fft.irfftn(phi_k, s=rho.shape, axes=(0, 1, 2))


def main(argv=None) -> int:
    args = _common.parse_args(__doc__.splitlines()[0], argv)
    checks = _common.Checks("poisson")
    mesh = _common.mesh_2d()
    rho_host = source(N)
    rho = darray.asarray(rho_host, mesh=mesh, spec=("x", "y"))
    phi, rho_k = solve(rho)
    print(f"rho:              {rho!r}")
    print(f"rho_k = rfftn:    {rho_k!r}")
    print(f"phi = irfftn(..): {phi!r}")

    ref = numpy_solve(rho_host)
    got = np.asarray(phi)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    checks.check("phi matches the float64 numpy solve", err < 1e-12, f"rel. error {err:.1e}")
    k2 = sum(ki ** 2 for ki in _common.numpy_wavenumbers(rho_host.shape))
    lap = np.fft.irfftn(-k2 * np.fft.rfftn(got), s=got.shape, axes=(0, 1, 2))
    residual = np.abs(lap - rho_host).max() / np.abs(rho_host).max()
    checks.check("spectral residual |lap(phi) - rho| / |rho|", residual < 1e-10, f"{residual:.1e}")
    checks.check("phi comes back in rho's layout", phi.layout == rho.layout, repr(phi.layout))
    checks.check("rfftn stores the halved last axis", rho_k.shape == (N, N, N // 2 + 1),
                 str(rho_k.shape))

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    mid = N // 2
    for ax, field, title, cmap in ((axes[0], rho_host, "source rho", "RdBu_r"),
                                   (axes[1], got, "potential phi", "viridis")):
        im = ax.imshow(field[:, :, mid].T, origin="lower", cmap=cmap, extent=(0, 1, 0, 1))
        ax.set_title(f"{title} (slice z = 1/2)")
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(f"periodic Poisson solve, {N}^3 grid on a "
                 f"{mesh.shape['x']}x{mesh.shape['y']} device mesh")
    _common.save_figure(fig, args.out, "poisson.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
