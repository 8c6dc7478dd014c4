"""A Gaussian random field with a prescribed power spectrum, and its measured power spectrum.

White noise from ``darray.random.normal`` (the same numbers on any mesh and process count) is
transformed with ``rfftn``, coloured by sqrt(P(k)) in k-space, and brought back with ``irfftn``:
the standard way to draw initial conditions for a cosmological simulation. The power spectrum is
then measured by averaging |delta_k|^2 in spherical shells with distributed reductions. Checks:
the field equals the same pipeline in float64 numpy; the measured spectrum agrees with P(k)
within its cosmic variance; the noise does not depend on the mesh.

    python3 examples/gaussian_random_field.py [--out DIR]
"""
from __future__ import annotations

import _common  # noqa: F401  (first: devices, float64, Agg backend)
import jax
import matplotlib.pyplot as plt
import numpy as np

import darray
import darray.fft as dfft

N = 32
N_BINS = N // 2          # shells of width one fundamental wavenumber, up to the Nyquist one
K_FUNDAMENTAL = 2 * np.pi
SHELLS = np.arange(1, N_BINS + 1, dtype=np.float64)


def power(k):
    """The target spectrum: a power law k^-3 with a smooth cut-off; P(0) = 0 (zero mean)."""
    safe = darray.where(k > 0, k, 1.0)
    return darray.where(k > 0, 10.0 * (safe / K_FUNDAMENTAL) ** -3
                        * darray.exp(-(safe / (0.5 * N * K_FUNDAMENTAL)) ** 2), 0.0)


def half_plane_weight(kz, n):
    """rfftn keeps kz >= 0 only: every other kz stands for itself and its mirror -kz."""
    nyquist = np.pi * n
    return darray.where((kz > 0) & (kz < nyquist), 2.0, 1.0)


@jax.jit
def field_and_spectrum(white):
    w_k = dfft.rfftn(white)
    kx, ky, kz = _common.wavenumbers(w_k.layout, white.shape)
    k = darray.sqrt(kx ** 2 + ky ** 2 + kz ** 2)
    delta_k = w_k * darray.sqrt(power(k))
    delta = dfft.irfftn(delta_k, s=white.shape)

    # Shell averages of |delta_k|^2 / N^3 (the estimator of P). One pass: a trailing shell axis
    # (a one-hot mask, k-space split kept on the leading axes) summed over the k axes.
    shell = darray.floor(k / K_FUNDAMENTAL + 0.5)
    weight = half_plane_weight(kz, white.shape[-1])
    p = weight * darray.abs(delta_k) ** 2 / white.size
    one_hot = darray.where(shell[..., None] == SHELLS, 1.0, 0.0)
    axes = (0, 1, 2)
    stats = [darray.sum(one_hot * v[..., None], axis=axes)
             for v in (p, weight, weight * k, weight * power(k))]
    return delta, stats, darray.sum(p)


def numpy_field(white: np.ndarray) -> np.ndarray:
    k = np.sqrt(sum(ki ** 2 for ki in _common.numpy_wavenumbers(white.shape)))
    p = np.asarray(power(darray.asarray(k)))  # the same P(k) formula, evaluated on the host grid
    return np.fft.irfftn(np.fft.rfftn(white) * np.sqrt(p), s=white.shape, axes=(0, 1, 2))


def main(argv=None) -> int:
    args = _common.parse_args(__doc__.splitlines()[0], argv)
    checks = _common.Checks("gaussian_random_field")
    mesh = _common.mesh_2d()
    key = jax.random.key(2024)
    white = darray.random.normal(key, (N, N, N), dtype=darray.float64, mesh=mesh, spec=("x", "y"))
    print(f"white noise: {white!r}")
    delta, (sums, counts, kmeans, targets), total = field_and_spectrum(white)
    print(f"field:       {delta!r}")

    white_host = np.asarray(white)
    slab = darray.random.normal(key, (N, N, N), dtype=darray.float64,
                                mesh=jax.make_mesh((jax.device_count(),), ("d",)),
                                spec=(None, "d"))
    checks.check("the noise is the same on the pencil mesh and a slab mesh",
                 np.array_equal(np.asarray(slab), white_host))
    ref = numpy_field(white_host)
    got = np.asarray(delta)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    checks.check("field matches the float64 numpy pipeline", err < 1e-12, f"rel. error {err:.1e}")
    checks.check("field keeps the noise's layout", delta.layout == white.layout)

    counts, sums = np.asarray(counts), np.asarray(sums)
    measured = sums / counts
    expected = np.asarray(targets) / counts          # P averaged over the shell's own modes
    k_shell = np.asarray(kmeans) / counts
    # Each shell averages `counts` modes with exponential |delta_k|^2 (counted in +-k pairs):
    # relative standard deviation sqrt(2 / counts).
    sigma = np.sqrt(2.0 / counts)
    pulls = (measured / expected - 1) / sigma
    checks.check("measured P(k) within 4 sigma of the target in every shell",
                 bool(np.all(np.abs(pulls) < 4)), f"max |pull| {np.abs(pulls).max():.2f}")
    chi2 = float(np.sum(pulls ** 2))
    checks.check(f"chi^2 consistent with {N_BINS} degrees of freedom",
                 chi2 < N_BINS + 5 * np.sqrt(2 * N_BINS), f"chi^2 = {chi2:.1f}")
    parseval = float(total) / N ** 3
    checks.check("field variance equals the summed spectrum (Parseval)",
                 abs(got.var() - parseval) < 1e-10 * got.var(),
                 f"{got.var():.6g} vs {parseval:.6g}")

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    im = axes[0].imshow(got[:, :, 0].T, origin="lower", cmap="RdBu_r", extent=(0, 1, 0, 1))
    axes[0].set_title(f"field slice, {N}^3 grid")
    fig.colorbar(im, ax=axes[0], shrink=0.8)
    axes[1].errorbar(k_shell, measured, yerr=sigma * expected, fmt="o", ms=3, label="measured")
    axes[1].loglog(k_shell, expected, "k-", lw=1, label="target P(k)")
    axes[1].set_xlabel("k")
    axes[1].set_ylabel("P(k)")
    axes[1].legend()
    axes[1].set_title("shell-averaged power spectrum")
    _common.save_figure(fig, args.out, "gaussian_random_field.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
