"""A cosmological particle-mesh simulation on darray.particles, and a differentiable universe.

1. Initial conditions: a Gaussian linear density field with the Eisenstein-Hu (1998) no-wiggle
   power spectrum (Omega_m = 0.3, h = 0.7, n_s = 0.96, sigma_8 = 0.8) from
   `darray.cosmo.gaussian_field`, one particle per cell displaced by second-order Lagrangian
   perturbation theory (`darray.cosmo.lpt2`, D2 = -3/7 D1^2) at a = 0.1, with growing-mode
   momenta.
2. Kick-drift-kick leapfrog in the scale factor a to a = 1 (JaxPM's equations: dx/da =
   p / (a^3 E), dp/da = 1.5 Omega_m F / (a^2 E), F = -grad inverse-laplacian delta), with
   `darray.particles.paint` / `readout` (cloud in cell) and darray.fft; particles that move
   beyond the ghost cells are migrated by darray.particles, so no step loses a particle.
3. The power spectrum of the initial and final density with `darray.cosmo.power_spectrum`
   (CIC window deconvolved; each device bins its own block of the spectrum, then one
   all-reduce of the bins; never a gather of the grid), against linear theory P_lin(k) D(a)^2.
4. A "differentiable universe": from the final density of a small box, recover the initial
   field by gradient descent through the whole simulation (darray.grad).

Checks: the distributed run equals the same simulation on one device in plain jax.numpy
(positions to 1e-9 cells, float64); mass is conserved; total momentum stays zero; the
large-scale power grew like linear theory D(a)^2; the reconstruction lowers the loss 10x and
correlates with the true initial field.

    python3 examples/particle_mesh.py [--small] [--out DIR]

``--small`` (what CI runs): 32^3 particles and 10 steps; the default is 64^3, 10 steps.
"""
from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (first: devices, float64, Agg backend)
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import darray
import darray.fft as dfft
from darray.particles import paint, readout

OMEGA_M, OMEGA_B, HUBBLE, N_S, SIGMA_8 = 0.3, 0.05, 0.7, 0.96, 0.8
A_START, A_END = 0.1, 1.0
REACH, CAPACITY = 3, 4096     # ghost cells; strays per destination device (see docs)


# -- linear cosmology (numpy) -----------------------------------------------------------------
def e_of_a(a):
    """H(a) / H0 of flat Lambda-CDM."""
    return np.sqrt(OMEGA_M / a ** 3 + 1 - OMEGA_M)


def growth(a):
    """Linear growth D(a) (D(1) = 1) and rate f = dlnD/dlna, by Heath's integral."""
    grid = np.linspace(1e-5, 1.0, 20001)
    integrand = 1 / (grid * e_of_a(grid)) ** 3
    cumulative = np.concatenate([[0], np.cumsum(0.5 * (integrand[1:] + integrand[:-1])
                                                * np.diff(grid))])
    def d_unnorm(x):
        return 2.5 * OMEGA_M * e_of_a(x) * np.interp(x, grid, cumulative)
    d = d_unnorm(a) / d_unnorm(1.0)
    eps = 1e-4
    f = (np.log(d_unnorm(a * (1 + eps))) - np.log(d_unnorm(a * (1 - eps)))) / (2 * eps)
    return d, f


def eisenstein_hu_nowiggle(k):
    """Transfer function T(k), k in h/Mpc (Eisenstein & Hu 1998, eqs. 26-31)."""
    om_h2, ob_h2, ratio = OMEGA_M * HUBBLE ** 2, OMEGA_B * HUBBLE ** 2, OMEGA_B / OMEGA_M
    s = 44.5 * np.log(9.83 / om_h2) / np.sqrt(1 + 10 * ob_h2 ** 0.75)
    alpha = 1 - 0.328 * np.log(431 * om_h2) * ratio + 0.38 * np.log(22.3 * om_h2) * ratio ** 2
    gamma = OMEGA_M * HUBBLE * (alpha + (1 - alpha) / (1 + (0.43 * k * HUBBLE * s) ** 4))
    q = k * (2.7255 / 2.7) ** 2 / gamma
    l0 = np.log(2 * np.e + 1.8 * q)
    return l0 / (l0 + (14.2 + 731 / (1 + 62.5 * q)) * q ** 2)


def linear_power(k):
    """P_lin(k) at a = 1 in (Mpc/h)^3, normalised to sigma_8 (top hat of 8 Mpc/h)."""
    def shape(x):
        return x ** N_S * eisenstein_hu_nowiggle(x) ** 2
    ks = np.logspace(-4, 2, 4000)
    x = ks * 8.0
    tophat = 3 * (np.sin(x) - x * np.cos(x)) / x ** 3
    integrand = shape(ks) * tophat ** 2 * ks ** 2 / (2 * np.pi ** 2)
    sigma2 = np.sum(0.5 * (integrand[1:] + integrand[:-1]) * np.diff(ks))
    return SIGMA_8 ** 2 / sigma2 * shape(np.where(k > 0, k, 1.0)) * (k > 0)


# -- the distributed simulation ----------------------------------------------------------------
def spectral_kernels(k_layout, n):
    """ik_a for the gradient (Nyquist zeroed: an odd kernel) and 1/k^2 (0 at k = 0), radians
    per cell, each a DistArray in rfftn's output layout."""
    ks = _common.wavenumbers(k_layout, (n, n, n), box=n)
    k2 = sum(k ** 2 for k in ks)
    inv_k2 = darray.where(k2 > 0, 1.0 / darray.where(k2 > 0, k2, 1.0), 0.0)
    odd = [darray.where(darray.abs(k) < np.pi * 0.999, k, 0.0) for k in ks]
    return odd, inv_k2


def forces(disp):
    """-grad inverse-laplacian of the density contrast, read at the particles: (*G, 3)."""
    n = disp.shape[0]
    delta = paint(disp, reach=REACH, capacity=CAPACITY) - 1.0
    delta_k = dfft.rfftn(delta)
    odd, inv_k2 = spectral_kernels(delta_k.layout, n)
    field = darray.stack([dfft.irfftn(1j * k * inv_k2 * delta_k, s=delta.shape) for k in odd],
                         axis=-1)
    return readout(field, disp, reach=REACH, capacity=CAPACITY)


def kdk(disp, mom, stepper, force_fn):
    """Leapfrog in a: kick half, drift, kick half, for every step; `stepper` holds per step
    (half-kick factor at a_i, drift factor at the midpoint, half-kick factor at a_i+1)."""
    force = force_fn(disp)

    def step(state, factors):
        disp, mom, force = state
        kick_a, drift, kick_b = factors[0], factors[1], factors[2]
        mom = mom + kick_a * force
        disp = disp + drift * mom
        force = force_fn(disp)
        mom = mom + kick_b * force
        return (disp, mom, force), None
    (disp, mom, _), _ = jax.lax.scan(step, (disp, mom, force), stepper)
    return disp, mom


def stepper_factors(steps):
    """The KDK coefficients of JaxPM's ODE in a, per step."""
    a = np.linspace(A_START, A_END, steps + 1)
    da = np.diff(a)
    mid = 0.5 * (a[1:] + a[:-1])
    def kick(x):
        return 1.5 * OMEGA_M / (x ** 2 * e_of_a(x))
    return np.stack([0.5 * da * kick(a[:-1]), da / (mid ** 3 * e_of_a(mid)),
                     0.5 * da * kick(a[1:])], axis=1)


_PK_TABLE = None


def linear_power_jax(k):
    """P_lin interpolated from a numpy table (traceable)."""
    ks, pk = _PK_TABLE
    return jnp.interp(jnp.log(jnp.maximum(k, 1e-6)), jnp.log(ks), pk) * (k > 0)


# -- initial conditions and spectra from darray.cosmo -------------------------------------------
def initial_conditions(white, box, a, order=2):
    """(displacement, momentum) in cells at scale factor `a`: the linear field coloured by P_lin
    (darray.cosmo.gaussian_field, given the white noise), displaced by 2LPT (Zel'dovich for
    order=1); momenta of the growing mode, p = a^2 E(a) (f1 D1 psi1 + f2 D2 psi2)."""
    n = white.shape
    delta_k = darray.cosmo.gaussian_field(linear_power_jax, box=box, noise=white, fourier=True)
    d1, f1 = growth(a)
    if order == 1:
        psi1 = darray.cosmo.zeldovich(delta_k, s=n)          # cell units (no box=)
        return d1 * psi1, (a ** 2 * e_of_a(a) * f1 * d1) * psi1
    psi1, psi2 = darray.cosmo.lpt2(delta_k, s=n)
    d2 = -3.0 / 7.0 * d1 ** 2
    f2 = 2.0 * (OMEGA_M / a ** 3 / e_of_a(a) ** 2) ** (6.0 / 11.0)
    disp = d1 * psi1 + d2 * psi2
    mom = a ** 2 * e_of_a(a) * (f1 * d1 * psi1 + f2 * d2 * psi2)
    return disp, mom


def power_spectrum(rho, box):
    """P(k) of the painted density (CIC window deconvolved): darray.cosmo.power_spectrum; bins
    centred on multiples of the fundamental 2 pi / box, up to the Nyquist wavenumber."""
    r = darray.cosmo.power_spectrum(rho - 1.0, box=box, window="cic")
    modes = np.asarray(r.modes)
    good = modes > 0
    return np.asarray(r.k)[good], np.asarray(r.power)[good]


# -- the same simulation on one device, in plain jax.numpy ------------------------------------
def cic_corners(disp):
    n = disp.shape[0]
    q = jnp.indices((n, n, n))
    pos = [q[a] + disp[..., a] for a in range(3)]
    base = [jnp.floor(p) for p in pos]
    frac = [p - b for p, b in zip(pos, base)]
    for offset in np.ndindex(2, 2, 2):
        w = jnp.prod(jnp.stack([f if o else 1 - f for f, o in zip(frac, offset)]), axis=0)
        yield tuple((b.astype(int) + o) % n for b, o in zip(base, offset)), w


def forces_jnp(disp):
    n = disp.shape[0]
    rho = jnp.zeros((n, n, n))
    for index, w in cic_corners(disp):
        rho = rho.at[index].add(w)
    delta_k = jnp.fft.rfftn(rho - 1.0)
    k = _common.numpy_wavenumbers((n, n, n), box=n)
    k2 = sum(ki ** 2 for ki in k)
    inv_k2 = np.where(k2 > 0, 1 / np.where(k2 > 0, k2, 1), 0)
    field = [jnp.fft.irfftn(1j * np.where(np.abs(ki) < np.pi * 0.999, ki, 0) * inv_k2 * delta_k,
                            s=(n, n, n)) for ki in k]
    return jnp.stack([sum(w * f[index] for index, w in cic_corners(disp)) for f in field],
                     axis=-1)


# -- driver ------------------------------------------------------------------------------------
def main(argv=None) -> int:
    global _PK_TABLE
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--small", action="store_true")
    known, rest = parser.parse_known_args(argv)
    args = _common.parse_args(__doc__.splitlines()[0], rest)
    n, steps = (32, 10) if known.small else (64, 10)
    box = 4.0 * n                                  # 4 Mpc/h cells
    checks = _common.Checks("particle_mesh")
    mesh = _common.mesh_2d()
    ks_table = np.logspace(-4, 2, 2000)
    _PK_TABLE = (jnp.asarray(ks_table), jnp.asarray(linear_power(ks_table)))
    d0, _ = growth(A_START)
    d1, _ = growth(A_END)

    white = darray.random.normal(jax.random.key(2), (n, n, n), dtype=darray.float64, mesh=mesh,
                                 spec=("x", "y"))

    disp0, mom0 = jax.jit(lambda w: initial_conditions(w, box, A_START))(white)
    print(f"displacements: {disp0!r}")
    stepper = jnp.asarray(stepper_factors(steps))
    run = jax.jit(lambda d, p: kdk(d, p, stepper, forces))
    t0 = time.perf_counter()
    disp, mom = jax.block_until_ready(run(disp0, mom0))
    print(f"simulation (compile + run): {time.perf_counter() - t0:.1f} s")
    print(f"after {steps} steps, max |disp| = {float(darray.max(darray.abs(disp))):.2f} cells")

    # one device, plain jax.numpy
    ref_disp, _ = jax.jit(lambda d, p: kdk(d, p, stepper, forces_jnp))(
        jnp.asarray(np.asarray(disp0)), jnp.asarray(np.asarray(mom0)))
    err = float(np.abs(np.asarray(disp) - np.asarray(ref_disp)).max())
    print(f"single-device reference: {time.perf_counter() - t0:.1f} s")
    checks.check("positions equal the single-device jax.numpy simulation", err < 1e-9,
                 f"max error {err:.1e} cells")
    rho = paint(disp, reach=REACH, capacity=CAPACITY)
    rho0 = paint(disp0, reach=REACH, capacity=CAPACITY)
    mass = float(darray.sum(rho))
    checks.check("mass conserved", abs(mass - n ** 3) < 1e-8 * n ** 3, f"{mass:.10g}")
    momentum = float(darray.max(darray.abs(darray.sum(mom, axis=(0, 1, 2)))))
    scale = float(darray.sum(darray.abs(mom)))
    checks.check("total momentum stays zero", momentum < 1e-11 * scale,
                 f"|sum p| = {momentum:.1e}, sum |p| = {scale:.3g}")
    checks.check("layouts kept", disp.layout == disp0.layout
                 and rho.layout == white.layout)

    k_i, p_i = power_spectrum(rho0, box)
    k_f, p_f = power_spectrum(rho, box)
    lin_i, lin_f = linear_power(k_i) * d0 ** 2, linear_power(k_f) * d1 ** 2
    large = slice(0, 3)
    growth_measured = np.mean(p_f[large] / p_i[large])
    growth_linear = (d1 / d0) ** 2
    checks.check("large-scale power grew like linear theory D(a)^2",
                 abs(growth_measured / growth_linear - 1) < 0.25,
                 f"P_final/P_initial = {growth_measured:.1f} on the 3 lowest bins, "
                 f"D(1)^2/D(0.1)^2 = {growth_linear:.1f}")

    print(f"power spectra: {time.perf_counter() - t0:.1f} s")

    # -- differentiable universe: recover the initial field from the final density ---------
    m, rec_steps, iterations = (16, 1, 30) if known.small else (16, 3, 40)
    small_mesh_white = darray.random.normal(jax.random.key(5), (m, m, m), dtype=darray.float64,
                                            mesh=mesh, spec=("x", "y"))
    rec_stepper = jnp.asarray(stepper_factors(rec_steps))
    rec_box = 8.0 * m

    def final_density(w):
        disp, mom = initial_conditions(w, rec_box, A_START, order=1)
        disp, _ = kdk(disp, mom, rec_stepper, forces)
        return paint(disp, reach=REACH, capacity=CAPACITY)
    target = jax.jit(final_density)(small_mesh_white)

    def loss(w):
        return darray.sum((final_density(w) - target) ** 2) + 1e-3 * darray.sum(w ** 2)
    lr, beta1, beta2 = 0.1, 0.9, 0.999

    @jax.jit
    def adam(w, mom1, mom2, it):                               # Adam, written out
        value, g = darray.value_and_grad(loss)(w)
        mom1 = beta1 * mom1 + (1 - beta1) * g
        mom2 = beta2 * mom2 + (1 - beta2) * g * g
        step = (mom1 / (1 - beta1 ** it)) / (darray.sqrt(mom2 / (1 - beta2 ** it)) + 1e-8)
        return w - lr * step, mom1, mom2, value
    w = darray.zeros_like(small_mesh_white)
    mom1, mom2 = darray.zeros_like(w), darray.zeros_like(w)
    history = []
    for it in range(1, iterations + 1):
        w, mom1, mom2, value = adam(w, mom1, mom2, float(it))
        history.append(float(value))
    print(f"reconstruction: {time.perf_counter() - t0:.1f} s")
    truth, found = np.asarray(small_mesh_white), np.asarray(w)

    def smooth(x):  # keep |k| < 1.5 (the large scales the reconstruction can recover)
        k2 = sum(k ** 2 for k in _common.numpy_wavenumbers(x.shape, box=m))
        return np.fft.irfftn(np.fft.rfftn(x) * (np.abs(k2) < 1.5 ** 2), s=x.shape,
                             axes=(0, 1, 2))

    corr = np.corrcoef(smooth(truth).ravel(), smooth(found).ravel())[0, 1]
    checks.check("reconstruction lowered the loss 10x", history[-1] < 0.1 * history[0],
                 f"{history[0]:.3g} -> {history[-1]:.3g}")
    checks.check("recovered initial field correlates with the truth (large scales)",
                 corr > 0.8, f"r = {corr:.3f}")

    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for ax, field, title in ((axes[0], np.asarray(rho0), f"a = {A_START}"),
                             (axes[1], np.asarray(rho), f"a = {A_END} ({steps} KDK steps)")):
        ax.imshow(np.log10(np.maximum(field[:, :, :4].mean(axis=2), 1e-2)).T, origin="lower",
                  cmap="magma", vmin=-1, vmax=1.2)
        ax.set_title(f"log10 density, {n}^3, {title}")
    ax = axes[2]
    ax.loglog(k_i, p_i, "o", ms=3, label=f"measured, a = {A_START}")
    ax.loglog(k_f, p_f, "o", ms=3, label=f"measured, a = {A_END}")
    ax.loglog(k_i, lin_i, "-", color="C0", label="linear P(k) D(a)^2")
    ax.loglog(k_f, lin_f, "-", color="C1")
    ax.set_xlabel("k [h/Mpc]")
    ax.set_ylabel("P(k) [(Mpc/h)^3]")
    ax.legend(fontsize=7)
    ax = axes[3]
    ax.semilogy(history)
    ax.set_xlabel("Adam iteration")
    ax.set_title(f"recover initial field ({m}^3): r = {corr:.2f}")
    _common.save_figure(fig, args.out, "particle_mesh.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
