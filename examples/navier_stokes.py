"""2-D incompressible Navier-Stokes turbulence: a dealiased pseudo-spectral vorticity solver.

The state is the vorticity in k-space, w_k = rfftn(w), in the layout rfftn returns. Each
right-hand side takes the stream function psi_k = w_k / k^2, brings the velocity
(u, v) = (d psi/dy, -d psi/dx) and the vorticity gradient to real space with four ``irfftn``
padded by the 3/2 rule (``padding=1.5``: the same band-limited fields on a 96^2 grid), forms
the advection u.grad(w) there and returns with one padded ``rfftn`` (the 64^2 spectrum of the
product, free of aliasing), and adds viscosity -nu k^2 w_k. The wavenumbers come from
``darray.fft.wavenumbers``, laid out like the spectrum (no communication in k-space). Time
stepping: classical 4-stage Runge-Kutta inside ``jax.lax.scan``. The initial vorticity is
band-limited noise from ``darray.random.normal``.

Checks: the vorticity equals the same scheme in float64 numpy; the mean vorticity is conserved;
energy and enstrophy never increase (the dealiased advection conserves both; viscosity only
removes them) and energy decays at the rate -2 nu Z the equations predict.

    python3 examples/navier_stokes.py [--out DIR]
"""
from __future__ import annotations

import functools

import _common  # noqa: F401  (first: devices, float64, Agg backend)
import jax
import matplotlib.pyplot as plt
import numpy as np

import darray
import darray.fft as dfft

N = 64                  # grid points per axis on the periodic box [0, 2 pi)^2
NU = 5e-4               # kinematic viscosity
DT = 0.02
STEPS_PER_FRAME = 25
FRAMES = 8
BOX = 2 * np.pi
INITIAL_KEY = jax.random.key(11)   # the seed of the initial noise


PAD = 1.5               # the 3/2 rule: products on a 96^2 grid, no aliasing below N/2


class Spectral:
    """Wavenumbers (laid out like the spectrum `w_k`, size 1 on the other axis) and the mask
    of the Nyquist modes, which a Galerkin truncation leaves out."""

    def __init__(self, w_k):
        self.kx, self.ky = dfft.wavenumbers(w_k, s=(N, N), d=BOX / N)
        self.k2 = self.kx ** 2 + self.ky ** 2
        self.inv_k2 = darray.where(self.k2 > 0, 1.0 / darray.where(self.k2 > 0, self.k2, 1.0),
                                   0.0)
        # |k| < N/2 on both axes: with padding 3/2 the products of these modes alias only
        # onto modes beyond them, so the truncated advection is exact (and conserves energy
        # and enstrophy)
        self.keep = darray.where((darray.abs(self.kx) < N / 2) & (darray.abs(self.ky) < N / 2),
                                 1.0, 0.0)


def rhs(w_k, sp: Spectral):
    psi_k = w_k * sp.inv_k2
    to_fine = functools.partial(dfft.irfftn, s=(N, N), padding=PAD)
    u = to_fine(1j * sp.ky * psi_k)
    v = to_fine(-1j * sp.kx * psi_k)
    wx = to_fine(1j * sp.kx * w_k)
    wy = to_fine(1j * sp.ky * w_k)
    advection_k = dfft.rfftn(u * wx + v * wy, s=(N, N), padding=PAD) * sp.keep
    return -advection_k - NU * sp.k2 * w_k


def rk4_step(w_k, sp: Spectral):
    a = rhs(w_k, sp)
    b = rhs(w_k + 0.5 * DT * a, sp)
    c = rhs(w_k + 0.5 * DT * b, sp)
    d = rhs(w_k + DT * c, sp)
    return w_k + DT / 6 * (a + 2 * b + 2 * c + d)


@functools.partial(jax.jit, static_argnames="steps")
def advance(w, steps: int):
    """`steps` RK4 steps of the real-space vorticity w; returns w in w's layout."""
    w_k = dfft.rfftn(w)
    sp = Spectral(w_k)
    w_k, _ = jax.lax.scan(lambda s, _: (rk4_step(s, sp), None), w_k * sp.keep, None,
                          length=steps)
    return dfft.irfftn(w_k, s=(N, N))


@jax.jit
def diagnostics(w):
    """Energy 1/2 <|u|^2> and enstrophy 1/2 <w^2> (box averages) and the mean vorticity."""
    w_k = dfft.rfftn(w)
    sp = Spectral(w_k)
    # Parseval on the half plane: the kx-only column (ky = 0) and the Nyquist column count once.
    weight = darray.where((sp.ky > 0) & (sp.ky < N / 2), 2.0, 1.0) / N ** 4
    power = weight * darray.abs(w_k) ** 2
    return (0.5 * darray.sum(power * sp.inv_k2), 0.5 * darray.sum(power), darray.mean(w))


@functools.partial(jax.jit, static_argnames="mesh")   # one compile, not one per eager op
def initial_vorticity(mesh, key=INITIAL_KEY):
    """Noise band-passed to wavenumbers 4..10, scaled to rms vorticity 4: it rolls up into
    vortices that merge (the inverse cascade of 2-D turbulence)."""
    noise = darray.random.normal(key, (N, N), dtype=darray.float64, mesh=mesh, spec=("x", "y"))
    n_k = dfft.rfftn(noise)
    sp = Spectral(n_k)
    k = darray.sqrt(sp.k2)
    w = dfft.irfftn(darray.where((k >= 4) & (k <= 10), n_k, 0.0), s=(N, N))
    return 4.0 * w / darray.sqrt(darray.mean(w ** 2))


def numpy_advance(w: np.ndarray, steps: int) -> np.ndarray:
    """The same scheme in float64 numpy, padding by hand: zero-pad the half spectrum to the
    fine grid (the masked Nyquist modes are zero, so no Nyquist rule is needed), multiply
    there, keep the coarse modes; the factors make each padded transform the coarse one of
    the same band-limited field (darray's convention, docs/fft.md)."""
    kx, ky = _common.numpy_wavenumbers((N, N), box=BOX)
    k2 = kx ** 2 + ky ** 2
    inv_k2 = np.where(k2 > 0, 1 / np.where(k2 > 0, k2, 1), 0)
    keep = (np.abs(kx) < N / 2) & (np.abs(ky) < N / 2)
    irfft = functools.partial(np.fft.irfftn, s=(N, N), axes=(0, 1))
    m = int(PAD * N)

    def to_fine(c):
        padded = np.zeros((m, m // 2 + 1), complex)
        padded[: N // 2, : N // 2 + 1] = c[: N // 2]
        padded[m - N // 2:, : N // 2 + 1] = c[N // 2:]
        return np.fft.irfftn(padded, s=(m, m), axes=(0, 1)) * (m / N) ** 2

    def to_coarse(f):
        spec = np.fft.rfftn(f)[:, : N // 2 + 1]
        return np.concatenate([spec[: N // 2], spec[m - N // 2:]]) * (N / m) ** 2

    def rhs(w_k):
        psi_k = w_k * inv_k2
        nl = (to_fine(1j * ky * psi_k) * to_fine(1j * kx * w_k)
              - to_fine(1j * kx * psi_k) * to_fine(1j * ky * w_k))
        return -to_coarse(nl) * keep - NU * k2 * w_k

    w_k = np.fft.rfftn(w) * keep
    for _ in range(steps):
        a = rhs(w_k)
        b = rhs(w_k + 0.5 * DT * a)
        c = rhs(w_k + 0.5 * DT * b)
        d = rhs(w_k + DT * c)
        w_k = w_k + DT / 6 * (a + 2 * b + 2 * c + d)
    return irfft(w_k)


def main(argv=None) -> int:
    args = _common.parse_args(__doc__.splitlines()[0], argv)
    checks = _common.Checks("navier_stokes")
    mesh = _common.mesh_2d()
    w0 = initial_vorticity(mesh)
    print(f"vorticity: {w0!r}")
    frames, energy, enstrophy, mean = [w0], [], [], []
    w = w0
    for _ in range(FRAMES):
        w = advance(w, STEPS_PER_FRAME)
        frames.append(w)
    for f in frames:
        e, z, m = diagnostics(f)
        energy.append(float(e))
        enstrophy.append(float(z))
        mean.append(float(m))
    t = np.arange(FRAMES + 1) * STEPS_PER_FRAME * DT
    print(f"t = {t[-1]:.1f}: energy {energy[0]:.5f} -> {energy[-1]:.5f}, "
          f"enstrophy {enstrophy[0]:.4f} -> {enstrophy[-1]:.4f}")

    ref = numpy_advance(np.asarray(w0), FRAMES * STEPS_PER_FRAME)
    got = np.asarray(w)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    checks.check("vorticity matches the float64 numpy scheme", err < 1e-9, f"rel. error {err:.1e}")
    checks.check("keeps the layout of the initial field", w.layout == w0.layout)
    checks.check("mean vorticity conserved", max(abs(m) for m in mean) < 1e-13,
                 f"max |mean| {max(abs(m) for m in mean):.1e}")
    checks.check("energy never increases", bool(np.all(np.diff(energy) <= 1e-12)))
    checks.check("enstrophy never increases", bool(np.all(np.diff(enstrophy) <= 1e-12)))
    # dE/dt = -2 nu Z: compare the energy lost with the trapezoid integral of 2 nu Z.
    lost = energy[0] - energy[-1]
    predicted = 2 * NU * np.trapezoid(enstrophy, t) if hasattr(np, "trapezoid") else \
        2 * NU * np.trapz(enstrophy, t)
    checks.check("energy decays at the rate -2 nu Z", abs(lost - predicted) < 0.05 * predicted,
                 f"lost {lost:.3e}, predicted {predicted:.3e}")

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    lim = np.abs(np.asarray(w0)).max()
    for ax, f, title in ((axes[0], w0, "t = 0"), (axes[1], w, f"t = {t[-1]:.0f}")):
        ax.imshow(np.asarray(f).T, origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim,
                  interpolation="bicubic",
                  extent=(0, BOX, 0, BOX))
        ax.set_title(f"vorticity, {title}")
    axes[2].plot(t, np.array(energy) / energy[0], "o-", label="energy")
    axes[2].plot(t, np.array(enstrophy) / enstrophy[0], "s-", label="enstrophy")
    axes[2].set_xlabel("t")
    axes[2].set_title("relative to t = 0")
    axes[2].legend()
    _common.save_figure(fig, args.out, "navier_stokes.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
