"""A catalogue of particles on a finer force mesh: 64^3 particles on a 128^3 mesh, distributed.

1. The catalogue: 64^3 particles on a lattice in a periodic box of side 1 (box units), moved by
   a smooth Gaussian random displacement (about a third of a lattice spacing), stored as an
   ``(M, 3)`` DistArray whose rows are split over every device.
2. Three kick-drift-kick steps with gravity on a 2x finer 128^3 mesh:
   `darray.particles.paint_catalogue` (cloud in cell, ``box=1.0``), ``rfftn``, the force
   ``i k delta_k / k^2``, three ``irfftn`` and `darray.particles.readout_catalogue`. Every
   particle is routed to the device owning its cell of the fine mesh, so particles migrate
   between devices as they move (Zel'dovich initial velocities). The steps run under
   ``jax.jit`` with a static capacity, learned from an eager call and raised by the
   documented retry when a step needs more.
3. The same three steps on one device in plain jax.numpy (float64).

Checks: the distributed positions equal the jax.numpy run (to 1e-9 of a fine cell); the
painted mass equals the number of particles; the forces sum to zero (momentum: the same
scheme paints and reads, and the gradient kernel is odd); no step lost a particle (no NaN).

    python3 examples/catalogue_mesh.py [--small] [--out DIR]

``--small`` (what CI runs): 16^3 particles on a 32^3 mesh; the default is 64^3 on 128^3.
"""
from __future__ import annotations

import argparse
import functools

import _common  # noqa: F401  (first: devices, float64, Agg backend)
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import darray
import darray.fft as dfft
from darray.particles import paint_catalogue, readout_catalogue

BOX = 1.0
STEPS = 3
KICK = 0.25     # velocity gained per step per unit force (fine cells per step, per fine cell)


# -- the catalogue (numpy, on the host) --------------------------------------------------------
def lattice_catalogue(n, seed=0):
    """(n^3, 3) positions in box units: a lattice moved by a smooth Gaussian displacement psi,
    and psi itself (box units) for the initial velocities (Zel'dovich's growing mode)."""
    rng = np.random.default_rng(seed)
    k = [2 * np.pi * np.fft.fftfreq(n)] * 2 + [2 * np.pi * np.fft.rfftfreq(n)]
    kx, ky, kz = np.meshgrid(*k, indexing="ij")
    k2 = kx ** 2 + ky ** 2 + kz ** 2
    smooth = np.exp(-k2 * (n / 16) ** 2)               # keep scales above n / 16 cells
    psi = []
    for _ in range(3):
        white = np.fft.rfftn(rng.standard_normal((n, n, n)), axes=(0, 1, 2))
        field = np.fft.irfftn(white * smooth, s=(n,) * 3, axes=(0, 1, 2))
        psi.append(0.35 * field / field.std())         # lattice spacings
    q = np.stack(np.meshgrid(*[np.arange(n, dtype=float)] * 3, indexing="ij"), -1)
    psi = np.stack(psi, -1) * (BOX / n)
    return (q * (BOX / n) + psi).reshape(-1, 3), psi.reshape(-1, 3)


# -- the distributed forces --------------------------------------------------------------------
def forces(pos, n_mesh, capacity):
    """Gravity -grad inverse-laplacian(delta) on the n_mesh^3 mesh, read at the particles (in
    box units per step), and the capacity the paint and readout needed."""
    shape = (n_mesh,) * 3
    rho, need_paint = paint_catalogue(pos, shape, box=BOX, capacity=capacity,
                                      return_needed=True)
    delta = rho * (n_mesh ** 3 / pos.shape[0]) - 1.0
    delta_k = dfft.rfftn(delta)
    ks = dfft.wavenumbers(delta_k, s=shape)            # radians per fine cell
    k2 = sum(k ** 2 for k in ks)
    inv_k2 = darray.where(k2 > 0, 1.0 / darray.where(k2 > 0, k2, 1.0), 0.0)
    odd = [darray.where(darray.abs(k) < np.pi * 0.999, k, 0.0) for k in ks]   # Nyquist -> 0
    field = darray.stack([dfft.irfftn(1j * k * inv_k2 * delta_k, s=shape) for k in odd],
                         axis=-1)
    force, need_read = readout_catalogue(field, pos, box=BOX, capacity=capacity,
                                         return_needed=True)
    return force * (BOX / n_mesh), rho, jnp.maximum(need_paint, need_read)


@functools.partial(jax.jit, static_argnames=("n_mesh", "capacity"))
def kdk_step(pos, vel, n_mesh, capacity):
    """One kick-drift-kick step (unit time step); returns the new state, the painted mass,
    the sum of the forces and the capacity the step needed."""
    force, rho, need_a = forces(pos, n_mesh, capacity)
    vel = vel + KICK * force
    pos = pos + vel
    force, rho, need_b = forces(pos, n_mesh, capacity)
    vel = vel + KICK * force
    return pos, vel, darray.sum(rho), darray.sum(force, axis=0), jnp.maximum(need_a, need_b)


# -- the same steps on one device in jax.numpy --------------------------------------------------
def forces_jnp(pos, n_mesh):
    cells = pos * (n_mesh / BOX)
    cells = cells - n_mesh * jnp.floor(cells / n_mesh)
    base = jnp.floor(cells)
    frac = cells - base
    corners = []
    for offset in np.ndindex(2, 2, 2):
        w = jnp.prod(jnp.stack([frac[:, a] if o else 1 - frac[:, a]
                                for a, o in enumerate(offset)]), axis=0)
        corners.append((tuple((base[:, a].astype(int) + o) % n_mesh
                              for a, o in enumerate(offset)), w))
    rho = jnp.zeros((n_mesh,) * 3)
    for index, w in corners:
        rho = rho.at[index].add(w)
    delta_k = jnp.fft.rfftn(rho * (n_mesh ** 3 / pos.shape[0]) - 1.0)
    freqs = [np.fft.fftfreq(n_mesh)] * 2 + [np.fft.rfftfreq(n_mesh)]
    ks = [(2 * np.pi * f).reshape([-1 if b == a else 1 for b in range(3)])
          for a, f in enumerate(freqs)]
    k2 = sum(k ** 2 for k in ks)
    inv_k2 = np.where(k2 > 0, 1 / np.where(k2 > 0, k2, 1), 0)
    field = [jnp.fft.irfftn(1j * np.where(np.abs(k) < np.pi * 0.999, k, 0) * inv_k2 * delta_k,
                            s=(n_mesh,) * 3) for k in ks]
    return jnp.stack([sum(w * f[index] for index, w in corners) for f in field],
                     axis=-1) * (BOX / n_mesh)


@functools.partial(jax.jit, static_argnames="n_mesh")
def kdk_step_jnp(pos, vel, n_mesh):
    vel = vel + KICK * forces_jnp(pos, n_mesh)
    pos = pos + vel
    return pos, vel + KICK * forces_jnp(pos, n_mesh)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--small", action="store_true")
    known, rest = parser.parse_known_args(argv)
    out = _common.parse_args(__doc__.splitlines()[0], rest).out
    checks = _common.Checks("catalogue_mesh")
    n_part = 16 if known.small else 64
    n_mesh = 2 * n_part
    mesh = _common.mesh_2d()
    rows = (tuple(mesh.axis_names),)                   # the catalogue's rows over every device
    host, psi = lattice_catalogue(n_part)
    m = host.shape[0]
    print(f"{m} particles ({n_part}^3) on a {n_mesh}^3 mesh, {jax.device_count()} devices")

    pos = darray.asarray(host, mesh=mesh, spec=rows)
    vel = darray.asarray(psi, mesh=mesh, spec=rows)   # box units per step
    # eagerly the capacity sizes itself; its count, with room to spare, is the jit's capacity
    rho0, need = paint_catalogue(pos, (n_mesh,) * 3, box=BOX, return_needed=True)
    capacity = int(1.25 * int(need))
    print(f"capacity: {int(need)} particles from one device to one other; using {capacity}")

    pos_j, vel_j = jnp.asarray(host), jnp.asarray(psi)
    for step in range(STEPS):
        new = kdk_step(pos, vel, n_mesh=n_mesh, capacity=capacity)
        if int(new[-1]) > capacity:                    # the documented retry: rerun the step
            capacity = 2 * int(new[-1])
            print(f"step {step}: capacity raised to {capacity}")
            new = kdk_step(pos, vel, n_mesh=n_mesh, capacity=capacity)
        pos, vel, mass, total_force, _ = new
        pos_j, vel_j = kdk_step_jnp(pos_j, vel_j, n_mesh=n_mesh)
        checks.check(f"step {step}: painted mass == {m}", abs(float(mass) - m) < 1e-8 * m,
                     f"{float(mass):.10f}")
        drift = float(np.abs(np.asarray(total_force)).max())
        checks.check(f"step {step}: forces sum to 0 (momentum)", drift < 1e-8 * m,
                     f"|sum F| = {drift:.2e}")

    got = np.asarray(pos)
    checks.check("no particle lost (finite positions)", bool(np.isfinite(got).all()))
    cells = n_mesh / BOX
    err = float(np.abs(got - np.asarray(pos_j)).max()) * cells
    moved = float(np.abs(got - host).max()) * cells
    checks.check("positions equal single-device jax.numpy", err < 1e-9,
                 f"max difference {err:.2e} fine cells")
    # far enough that particles changed device (blocks are n_mesh / 4 cells or more wide)
    checks.check("particles moved across cells", moved > 1.5, f"up to {moved:.2f} fine cells")

    rho1 = paint_catalogue(pos, (n_mesh,) * 3, box=BOX)
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for ax, rho, title in ((axes[0], rho0, "start"), (axes[1], rho1, f"after {STEPS} steps")):
        image = np.log10(np.asarray(rho).sum(axis=2) + 1)
        ax.imshow(image.T, origin="lower", cmap="magma", extent=(0, BOX, 0, BOX))
        ax.set_title(f"{m} particles on {n_mesh}^3, {title}")
        ax.set_xlabel("x (box units)")
    axes[0].set_ylabel("y (box units)")
    _common.save_figure(fig, out, "catalogue_mesh.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
