"""Differentiating through a distributed simulation: the sensitivity of a 2-D turbulence
forecast to its initial vorticity.

The loss is the vorticity that the Navier-Stokes solver of ``navier_stokes.py`` carries into a
small window after 20 Runge-Kutta steps. ``darray.value_and_grad`` (``jax.value_and_grad`` for
a loss that is a 0-d DistArray) runs reverse mode through every ``rfftn``/``irfftn`` and the
``lax.scan`` of time steps; the gradient comes back distributed exactly like the initial field.
Checks: the gradient's directional derivative equals a central finite difference of the loss;
the gradient has the initial field's layout; one gradient step changes the loss as predicted.

    python3 examples/differentiate_simulation.py [--out DIR]
"""
from __future__ import annotations

import _common  # noqa: F401  (first: devices, float64, Agg backend)
import jax
import matplotlib.pyplot as plt
import navier_stokes as ns
import numpy as np

import darray

STEPS = 20
WINDOW_CENTRE = (np.pi, np.pi)
WINDOW_WIDTH = 0.5


def window(mesh):
    """A smooth Gaussian window: the region whose future vorticity we care about."""
    g = np.arange(ns.N) * ns.BOX / ns.N
    x, y = np.meshgrid(g, g, indexing="ij")
    w = np.exp(-((x - WINDOW_CENTRE[0]) ** 2 + (y - WINDOW_CENTRE[1]) ** 2)
               / (2 * WINDOW_WIDTH ** 2))
    return darray.asarray(w / w.sum(), mesh=mesh, spec=("x", "y"))


def loss(w0, target):
    """Window-weighted vorticity after STEPS steps (a 0-d DistArray)."""
    return darray.sum(ns.advance(w0, STEPS) * target)


@jax.jit
def loss_along(w0, direction, t, target):
    """loss(w0 + t * direction): one compiled program for every t."""
    return loss(w0 + t * direction, target)


@jax.jit
def inner(a, b):
    return darray.sum(a * b)


def main(argv=None) -> int:
    args = _common.parse_args(__doc__.splitlines()[0], argv)
    checks = _common.Checks("differentiate_simulation")
    mesh = _common.mesh_2d()
    w0 = ns.initial_vorticity(mesh)
    target = window(mesh)
    value_and_grad = jax.jit(darray.value_and_grad(loss))
    value, g = value_and_grad(w0, target)
    print(f"loss = {float(value):.6f}  ({value!r})")
    print(f"gradient: {g!r}")
    checks.check("the gradient has the initial field's layout", g.layout == w0.layout,
                 repr(g.layout))

    # Directional derivative along a random direction vs a central finite difference (float64).
    direction = darray.random.normal(jax.random.key(3), w0.shape, dtype=darray.float64,
                                     mesh=mesh, spec=("x", "y"))
    eps = 1e-4
    fd = (float(loss_along(w0, direction, eps, target))
          - float(loss_along(w0, direction, -eps, target))) / (2 * eps)
    ad = float(inner(g, direction))
    rel = abs(ad - fd) / abs(fd)
    checks.check("<grad, h> equals the central finite difference", rel < 1e-6,
                 f"AD {ad:.10f}, FD {fd:.10f}, rel. difference {rel:.1e}")

    # Steepest ascent: raise the window's future vorticity by a small change of the initial one.
    g_norm2 = float(inner(g, g))
    alpha = 0.5 / np.sqrt(g_norm2)
    raised = float(loss_along(w0, g, alpha, target))
    predicted = float(value) + alpha * g_norm2
    checks.check("a gradient step raises the loss about as predicted",
                 raised > float(value)
                 and abs(raised - predicted) < 0.1 * (predicted - float(value)),
                 f"{float(value):.5f} -> {raised:.5f} (linear prediction {predicted:.5f})")

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    lim = np.abs(np.asarray(w0)).max()
    axes[0].imshow(np.asarray(w0).T, origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim,
                   extent=(0, ns.BOX, 0, ns.BOX), interpolation="bicubic")
    axes[0].add_patch(plt.Circle(WINDOW_CENTRE, 2 * WINDOW_WIDTH, fill=False, color="k"))
    axes[0].set_title("initial vorticity and target window")
    glim = np.abs(np.asarray(g)).max()
    axes[1].imshow(np.asarray(g).T, origin="lower", cmap="PuOr", vmin=-glim, vmax=glim,
                   extent=(0, ns.BOX, 0, ns.BOX), interpolation="bicubic")
    axes[1].add_patch(plt.Circle(WINDOW_CENTRE, 2 * WINDOW_WIDTH, fill=False, color="k"))
    axes[1].set_title(f"d loss / d initial vorticity ({STEPS} steps)")
    _common.save_figure(fig, args.out, "differentiate_simulation.png")
    return checks.finish()


if __name__ == "__main__":
    raise SystemExit(main())
