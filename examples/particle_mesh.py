"""Particle-mesh gravity: cloud-in-cell painting on ghost cells, an FFT Poisson solve, force
interpolation from ghost cells and a few leapfrog steps.

One particle starts in every cell (the "Lagrangian grid"), displaced by the Zel'dovich
approximation of a Gaussian random field; the particles are stored as three displacement arrays
split like the density grid, so every device paints and pushes the particles that started in its
own block. A particle that moved less than the ghost width stays inside its device's ghosted block:

* painting: each device scatters its particles' mass into its block of ``grid.halo(W)``
  (spilling into ghost cells is fine); ``halo_reduce()`` adds every ghost cell into the cell it
  mirrors on the neighbouring device (the adjoint of the halo fill).
* forces: ``rfftn`` of the density, F_k = -i k phi_k with phi_k = -4 pi G delta_k / k^2,
  ``irfftn`` per component.
* interpolation: each force component gets ``halo(W)`` and every device reads its particles'
  cloud-in-cell weights from its ghosted block (the transpose of painting).

Checks: the final displacements equal the same simulation in float64 numpy (``np.add.at``
painting on the global grid); mass is conserved; total momentum stays zero (CIC painting and
interpolation are transposes and the spectral gradient is antisymmetric, so the forces cancel
exactly); no particle moved farther than the ghost width.

    python3 examples/particle_mesh.py [--out DIR]
"""
from __future__ import annotations

import _common  # noqa: F401  (first: devices, float64, Agg backend)

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import darray
import darray.fft as dfft

N = 32                 # grid cells per axis = particles per axis; the box is N cells wide
GHOST = 2              # ghost width: particles may move less than GHOST cells from their cell
STEPS = 8
DT = 0.4
FOUR_PI_G = 0.25       # 4 pi G rho_mean in grid units: sets the time scale of the collapse
OFFSETS = [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]


# -- block functions (run on every device's own block inside shard_map) ----------------------
def _cic(d, lo):
    """Lower cell index and CIC weights per axis of particles at Lagrangian cell q + d, in the
    coordinates of a block whose owned cells start at `lo` (ghosts before them)."""
    cells, fracs = [], []
    for axis, disp in enumerate(d):
        q = jnp.arange(disp.shape[axis]).reshape([-1 if a == axis else 1 for a in range(3)])
        pos = q + lo[axis] + disp
        cell = jnp.floor(pos)
        cells.append(cell.astype(jnp.int32))
        fracs.append(pos - cell)
    return cells, fracs


def paint_block(grid, dx, dy, dz):
    lo = [GHOST] * 3          # owned cells start after GHOST ghost cells on every axis
    cells, fracs = _cic((dx, dy, dz), lo)
    for offset in OFFSETS:
        weight = 1.0
        for f, o in zip(fracs, offset):
            weight = weight * (f if o else 1.0 - f)
        index = tuple(jnp.broadcast_to(c + o, dx.shape) for c, o in zip(cells, offset))
        grid = grid.at[index].add(jnp.broadcast_to(weight, dx.shape))
    return grid


def read_block(field, dx, dy, dz):
    lo = [GHOST] * 3          # owned cells start after GHOST ghost cells on every axis
    cells, fracs = _cic((dx, dy, dz), lo)
    out = jnp.zeros(dx.shape, field.dtype)
    for offset in OFFSETS:
        weight = 1.0
        for f, o in zip(fracs, offset):
            weight = weight * (f if o else 1.0 - f)
        out = out + weight * field[tuple(c + o for c, o in zip(cells, offset))]
    return out



# -- distributed steps -----------------------------------------------------------------------
def paint(d, template):
    """Density (mean 1) of the particles displaced by d = (dx, dy, dz)."""
    grid = darray.zeros_like(template).halo(GHOST)
    return darray.map_blocks(paint_block, grid, *d).halo_reduce()


def gradient_wavenumbers(k_layout):
    """ik_a needs an odd (antisymmetric) k_a: the Nyquist entries, their own mirror, are 0."""
    ks = _common.wavenumbers(k_layout, (N, N, N), box=N)
    return [darray.where(darray.abs(k) < np.pi * 0.999, k, 0.0) for k in ks]


def forces(d, template):
    rho = paint(d, template)
    rho_k = dfft.rfftn(rho)
    kx, ky, kz = _common.wavenumbers(rho_k.layout, (N, N, N), box=N)
    k2 = kx ** 2 + ky ** 2 + kz ** 2
    phi_k = darray.where(k2 > 0, -FOUR_PI_G * rho_k / darray.where(k2 > 0, k2, 1.0), 0.0)
    out = []
    for k in gradient_wavenumbers(rho_k.layout):
        force = dfft.irfftn(-1j * k * phi_k, s=rho.shape)
        out.append(darray.map_blocks(read_block, force.halo(GHOST), *d))
    return out, rho


@jax.jit
def simulate(d, v):
    """Kick-drift-kick leapfrog; returns the final displacements, velocities and density."""
    template = d[0]
    f, rho = forces(d, template)

    def step(state, _):
        d, v, f, _ = state
        v = [vi + 0.5 * DT * fi for vi, fi in zip(v, f)]
        d = [di + DT * vi for di, vi in zip(d, v)]
        f, rho = forces(d, template)
        v = [vi + 0.5 * DT * fi for vi, fi in zip(v, f)]
        return (d, v, f, rho), None
    # scan: one compiled step, whatever STEPS is (DistArrays are pytrees).
    (d, v, _, rho), _ = jax.lax.scan(step, (d, v, f, rho), None, length=STEPS)
    return d, v, rho

def zeldovich(delta):
    """Displacement d = grad(inverse laplacian(delta)) (first-order Lagrangian perturbation) of
    white noise coloured by 1/k^2: large-scale modes dominate, as in a cold-dark-matter box."""
    delta_k = dfft.rfftn(delta)
    kx, ky, kz = _common.wavenumbers(delta_k.layout, delta.shape, box=N)
    k2 = kx ** 2 + ky ** 2 + kz ** 2
    psi_k = darray.where(k2 > 0, delta_k / darray.where(k2 > 0, k2, 1.0) ** 2, 0.0)
    return [dfft.irfftn(1j * k * psi_k, s=delta.shape)
            for k in gradient_wavenumbers(delta_k.layout)]


@jax.jit
def initial_conditions(white):
    d = zeldovich(white)
    largest = darray.max(darray.stack([darray.max(darray.abs(di)) for di in d]))
    d = [(0.3 / largest) * di for di in d]
    return d, [0.5 * di for di in d]


# -- the same simulation in numpy on the global grid -----------------------------------------
def numpy_simulation(d, v):
    q = np.indices((N, N, N)).astype(np.float64)
    k = _common.numpy_wavenumbers((N, N, N), box=N)
    k2 = sum(ki ** 2 for ki in k)
    k_odd = [np.where(np.abs(ki) < np.pi * 0.999, ki, 0.0) for ki in k]

    def weights(d):
        pos = [qa + da for qa, da in zip(q, d)]
        cells = [np.floor(p) for p in pos]
        return [c.astype(int) for c in cells], [p - c for p, c in zip(pos, cells)]

    def forces(d):
        cells, fracs = weights(d)
        rho = np.zeros((N, N, N))
        corners = []
        for offset in OFFSETS:
            w = np.prod([f if o else 1 - f for f, o in zip(fracs, offset)], axis=0)
            index = tuple((c + o) % N for c, o in zip(cells, offset))
            np.add.at(rho, index, w)
            corners.append((index, w))
        phi_k = np.where(k2 > 0, -FOUR_PI_G * np.fft.rfftn(rho) / np.where(k2 > 0, k2, 1), 0)
        out = []
        for ka in k_odd:
            force = np.fft.irfftn(-1j * ka * phi_k, s=rho.shape, axes=(0, 1, 2))
            out.append(sum(w * force[index] for index, w in corners))
        return out, rho

    f, _ = forces(d)
    for _ in range(STEPS):
        v = [vi + 0.5 * DT * fi for vi, fi in zip(v, f)]
        d = [di + DT * vi for di, vi in zip(d, v)]
        f, rho = forces(d)
        v = [vi + 0.5 * DT * fi for vi, fi in zip(v, f)]
    return d, v, rho


def main(argv=None) -> int:
    args = _common.parse_args(__doc__.splitlines()[0], argv)
    checks = _common.Checks("particle_mesh")
    mesh = _common.mesh_2d()
    # Initial conditions: a red-ish Gaussian field, Zel'dovich displacements scaled to at most
    # 0.3 cells, velocities along the displacements (the growing mode).
    white = darray.random.normal(jax.random.key(7), (N, N, N), dtype=darray.float64,
                                 mesh=mesh, spec=("x", "y"))
    d0, v0 = initial_conditions(white)
    print(f"displacement x: {d0[0]!r}")
    rho0 = jax.jit(paint)(d0, d0[0])
    print(f"density:        {rho0!r}")

    d, v, rho = simulate(d0, v0)
    host = lambda arrays: [np.asarray(a) for a in arrays]  # noqa: E731
    ref_d, ref_v, ref_rho = numpy_simulation(host(d0), host(v0))
    err = max(np.abs(a - b).max() for a, b in zip(host(d), ref_d))
    checks.check("final displacements match the float64 numpy simulation", err < 1e-10,
                 f"max error {err:.1e} cells")
    rho_err = np.abs(np.asarray(rho) - ref_rho).max()
    checks.check("final density matches numpy's np.add.at painting", rho_err < 1e-10,
                 f"max error {rho_err:.1e}")
    mass = float(darray.sum(rho))
    checks.check("mass conserved by painting + halo_reduce", abs(mass - N ** 3) < 1e-8,
                 f"{mass:.10g} vs {N ** 3}")
    momentum = [abs(float(darray.sum(vi))) for vi in v]
    speed = sum(float(darray.sum(darray.abs(vi))) for vi in v)
    checks.check("total momentum stays zero", max(momentum) < 1e-12 * speed,
                 f"|sum v| = {max(momentum):.1e}, sum |v| = {speed:.3g}")
    reach = max(float(darray.max(darray.abs(di))) for di in d)
    # CIC reaches one cell beyond floor(q + d): |d| < GHOST keeps every write in the ghosts
    # (jax drops out-of-bounds scatter writes silently, so this must be checked).
    checks.check(f"particles stayed within the ghost width ({GHOST} cells)", reach < GHOST,
                 f"max |d| = {reach:.2f} cells")
    checks.check("density and displacements keep the grid layout",
                 rho.layout == white.layout and all(di.layout == white.layout for di in d))
    contrast0 = float(darray.max(rho0))
    contrast = float(darray.max(rho))
    checks.check("gravity made the field clumpier", contrast > contrast0,
                 f"max density {contrast0:.2f} -> {contrast:.2f}")

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.8))
    for ax, field, title in ((axes[0], np.asarray(rho0), "initial"),
                             (axes[1], np.asarray(rho), f"after {STEPS} leapfrog steps")):
        im = ax.imshow(np.log10(field[:, :, :4].mean(axis=2)).T, origin="lower", cmap="magma",
                       vmin=-0.7, vmax=0.7)
        ax.set_title(title)
    fig.suptitle("log10 density (4-cell slab)")
    fig.colorbar(im, ax=axes, shrink=0.8)
    _common.save_figure(fig, args.out, "particle_mesh.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
