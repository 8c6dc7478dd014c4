"""Heat equation on a periodic 2-D grid: an explicit 5-point stencil on ghost cells.

Each step fills one ghost cell on every side with ``u.halo(1)`` (a face-sized ``ppermute`` per
split axis, nothing else moves) and applies the stencil to every device's block with
``darray.map_blocks``. The same steps in float64 numpy (``np.roll``) are the reference; the
integral of u (heat) is conserved by the periodic scheme.

    python3 examples/heat_equation.py [--out DIR]
"""
from __future__ import annotations

import _common  # noqa: F401  (first: devices, float64, Agg backend)
import jax
import matplotlib.pyplot as plt
import numpy as np

import darray

N = 64          # grid points per axis
STEPS = 200
ALPHA = 0.2     # dt * diffusivity / h^2; explicit 5-point scheme is stable for <= 0.25


def laplacian5(block):
    """5-point Laplacian (in units of 1/h^2) of a block with one ghost on every side."""
    return (block[:-2, 1:-1] + block[2:, 1:-1] + block[1:-1, :-2] + block[1:-1, 2:]
            - 4 * block[1:-1, 1:-1])


def initial_condition(n: int) -> np.ndarray:
    g = (np.arange(n) + 0.5) / n
    x, y = np.meshgrid(g, g, indexing="ij")
    hot = np.exp(-((x - 0.3) ** 2 + (y - 0.6) ** 2) / 0.005)
    square = ((np.abs(x - 0.7) < 0.12) & (np.abs(y - 0.3) < 0.12)).astype(float)
    return hot + square


@jax.jit
def run(u):
    def step(u, _):
        return u + ALPHA * darray.map_blocks(laplacian5, u.halo(1)), None
    u, _ = jax.lax.scan(step, u, None, length=STEPS)
    return u


def numpy_reference(u: np.ndarray) -> np.ndarray:
    for _ in range(STEPS):
        lap = (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)
               - 4 * u)
        u = u + ALPHA * lap
    return u


def main(argv=None) -> int:
    args = _common.parse_args(__doc__.splitlines()[0], argv)
    checks = _common.Checks("heat_equation")
    mesh = _common.mesh_2d()
    u0_host = initial_condition(N)
    u0 = darray.asarray(u0_host, mesh=mesh, spec=("x", "y"))
    print(f"u0:         {u0!r}")
    print(f"u0.halo(1): {u0.halo(1)!r}  (ghost widths {u0.halo(1).layout.halo})")
    u = run(u0)
    print(f"after {STEPS} steps: {u!r}")

    ref = numpy_reference(u0_host)
    got = np.asarray(u)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    checks.check("matches the float64 numpy np.roll scheme", err < 1e-12, f"rel. error {err:.1e}")
    checks.check("keeps the input's layout", u.layout == u0.layout, repr(u.layout))
    heat0, heat1 = float(darray.sum(u0)), float(darray.sum(u))
    checks.check("heat (sum of u) conserved", abs(heat1 - heat0) < 1e-10 * abs(heat0),
                 f"{heat0:.12g} -> {heat1:.12g}")
    checks.check("maximum principle (max decreases)", float(darray.max(u)) <= u0_host.max())

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    for ax, field, title in zip(axes, (u0_host, got), ("u(t=0)", f"u after {STEPS} steps")):
        im = ax.imshow(field.T, origin="lower", cmap="inferno", vmin=0, vmax=u0_host.max())
        ax.set_title(title)
        # The device blocks: each device owns one tile and exchanges only its faces.
        px, py = mesh.shape["x"], mesh.shape["y"]
        for k in range(1, px):
            ax.axvline(k * N / px - 0.5, color="w", lw=0.5, ls=":")
        for k in range(1, py):
            ax.axhline(k * N / py - 0.5, color="w", lw=0.5, ls=":")
    fig.colorbar(im, ax=axes, shrink=0.8)
    fig.suptitle("heat equation, 5-point stencil on halo(1) ghost cells (dotted: device blocks)")
    _common.save_figure(fig, args.out, "heat_equation.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
