"""Poisson solve in a channel: Dirichlet walls in x, periodic in y and z, by mixed transforms.

Solves  laplacian(phi) = rho  on [0, pi] x [0, 2 pi)^2 with phi = 0 on the walls x = 0 and
x = pi, on the interior points x_i = i pi / (N + 1) of the wall-normal axis and a periodic grid
on the other two. One ``darray.fft.transformn(rho, ("dst1", "fft", "rfft"))`` takes rho to its
sine-Fourier-Fourier coefficients in a single plan (the exchanges of an rfftn: all-to-alls,
never an all-gather); the sine modes sin(j x) have the exact eigenvalue -j^2 and the Fourier
modes -k^2, so phi's coefficients are a division; ``itransformn`` brings phi back to rho's
layout. The wavenumbers, sine modes included, come from ``darray.fft.wavenumbers(...,
kinds=KINDS)`` (laid out like the spectrum: the division needs no communication).

Checks: phi equals the same solve in float64 scipy/numpy (scipy.fft.dst + numpy rfftn); a
manufactured solution sin(2x) cos(3y) sin(z), whose Laplacian is -14 times itself, comes back
to round-off; phi comes back in rho's layout.

    python3 examples/channel_poisson.py [--out DIR]
"""
from __future__ import annotations

import _common  # noqa: F401  (first: devices, float64, Agg backend)
import jax
import matplotlib.pyplot as plt
import numpy as np
import scipy.fft as sf

import darray
import darray.fft as dfft

NX, NY, NZ = 31, 32, 24       # wall-normal interior points, periodic points per axis
KINDS = ("dst1", "fft", "rfft")


def grid():
    x = np.pi * np.arange(1, NX + 1) / (NX + 1)
    y = 2 * np.pi * np.arange(NY) / NY
    z = 2 * np.pi * np.arange(NZ) / NZ
    return np.meshgrid(x, y, z, indexing="ij")


def source() -> np.ndarray:
    """A vortex-sheet-like blob pair between the walls (smooth; any rho is solvable)."""
    x, y, z = grid()

    def blob(cx, cy, cz, w):
        return np.exp(-((x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2) / w)
    return blob(1.0, 2.5, 3.0, 0.3) - 0.7 * blob(2.2, 4.0, 3.5, 0.5)


@jax.jit
def solve(rho):
    rho_k = dfft.transformn(rho, KINDS)
    # dst1 on x_i = i d, d = pi / (NX + 1): mode j (0-based) is sin((j + 1) x), so kx = 1..NX;
    # every vector is laid out like its axis of the spectrum
    kx, ky, kz = dfft.wavenumbers(rho_k, s=rho.shape, kinds=KINDS,
                                  d=(np.pi / (NX + 1), 2 * np.pi / NY, 2 * np.pi / NZ))
    phi_k = -rho_k / (kx ** 2 + ky ** 2 + kz ** 2)
    return dfft.itransformn(phi_k, KINDS, s=rho.shape), rho_k


def numpy_solve(rho: np.ndarray) -> np.ndarray:
    c = np.fft.fftn(np.fft.rfft(sf.dst(rho, type=1, axis=0), axis=2), axes=(1,))
    kx = np.arange(1.0, NX + 1)[:, None, None]
    ky = (2 * np.pi * np.fft.fftfreq(NY, 2 * np.pi / NY))[None, :, None]
    kz = (2 * np.pi * np.fft.rfftfreq(NZ, 2 * np.pi / NZ))[None, None, :]
    c = -c / (kx ** 2 + ky ** 2 + kz ** 2)
    return sf.idst(np.fft.irfft(np.fft.ifftn(c, axes=(1,)), n=NZ, axis=2), type=1, axis=0)


def main(argv=None) -> int:
    args = _common.parse_args(__doc__.splitlines()[0], argv)
    checks = _common.Checks("channel_poisson")
    mesh = _common.mesh_2d()
    rho_host = source()
    rho = darray.asarray(rho_host, mesh=mesh, spec=("x", "y"))
    phi, rho_k = solve(rho)
    print(f"rho:                    {rho!r}")
    print(f"transformn(rho, {KINDS}): {rho_k!r}")
    print(f"phi = itransformn(..):  {phi!r}")

    ref = numpy_solve(rho_host)
    got = np.asarray(phi)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    checks.check("phi matches the float64 scipy/numpy solve", err < 1e-12, f"rel. error {err:.1e}")
    x, y, z = grid()
    exact = np.sin(2 * x) * np.cos(3 * y) * np.sin(z)
    manufactured, _ = solve(darray.asarray(-14 * exact, mesh=mesh, spec=("x", "y")))
    m_err = np.abs(np.asarray(manufactured) - exact).max()
    checks.check("manufactured solution sin(2x)cos(3y)sin(z) recovered", m_err < 1e-12,
                 f"max error {m_err:.1e}")
    checks.check("phi comes back in rho's layout", phi.layout == rho.layout, repr(phi.layout))
    checks.check("the spectrum keeps the halved last axis", rho_k.shape == (NX, NY, NZ // 2 + 1),
                 str(rho_k.shape))

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    mid = NZ // 2
    for ax, field, title, cmap in ((axes[0], rho_host, "source rho", "RdBu_r"),
                                   (axes[1], got, "potential phi", "viridis")):
        im = ax.imshow(field[:, :, mid], origin="lower", cmap=cmap, aspect="auto",
                       extent=(0, 2 * np.pi, 0, np.pi))
        ax.set_xlabel("y (periodic)")
        ax.set_title(f"{title} (slice z = pi)")
        fig.colorbar(im, ax=ax, shrink=0.8)
    axes[0].set_ylabel("x (walls at 0 and pi)")
    fig.tight_layout()
    _common.save_figure(fig, args.out, "channel_poisson.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
