"""Gradients through many particle-mesh steps: compile time, memory and run time of three ways
to write the loop (docs/cosmology.md, "Long runs").

Rows (per grid size and step count), each the reverse-mode gradient of ``sum(disp_final**2)``
with respect to the initial displacements through S kick-drift-kick steps of
`darray.particles` CIC paint/readout and darray.fft (3 irfftn and one rfftn per force):

- "unrolled": a Python loop over the steps (XLA sees S copies of the step);
- "scan": ``jax.lax.scan`` over the steps (one step body; the backward pass keeps every
  step's residuals: the painted and transformed fields);
- "scan+remat": ``jax.lax.scan(jax.checkpoint(step), ...)`` (keeps only the carry, the
  displacements and momenta, per step; recomputes each step's forward in the backward pass).

Columns: ``time_ms`` (median wall time of one gradient), ``ratio`` (to "scan"), ``compile_s``
(``jax.jit(...).lower(...).compile()`` wall time), ``peak_mib`` (per-device memory XLA planned:
arguments + outputs + temporaries, ``compiled.memory_analysis()``).

    python3 benchmarks/bench_remat.py [--n 32] [--steps 10] [--mesh 2,4] [--repeats 3] [--small]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax
import numpy as np
from _bench_common import default_json_path, make_row, mesh_label, time_interleaved, write_table

import darray
import darray.fft as dfft
from darray._src.base import compat

REACH, CAPACITY = 3, 1024
KICK, DRIFT = 0.05, 0.1


def forces(disp):
    n = disp.shape[:-1]
    delta = darray.particles.paint(disp, reach=REACH, capacity=CAPACITY) - 1.0
    delta_k = dfft.rfftn(delta)
    ks = dfft.wavenumbers(delta_k, s=n)
    k2 = ks[0] ** 2 + ks[1] ** 2 + ks[2] ** 2
    pot = delta_k * darray.where(k2 > 0, 1.0 / darray.where(k2 > 0, k2, 1.0), 0.0)
    field = darray.stack([dfft.irfftn(1j * k * pot, s=n) for k in ks], axis=-1)
    return darray.particles.readout(field, disp, reach=REACH, capacity=CAPACITY)


def step(state, _=None):
    disp, mom = state
    mom = mom + KICK * forces(disp)
    disp = disp + DRIFT * mom
    mom = mom + KICK * forces(disp)
    return (disp, mom), None


def loss_fn(kind, steps):
    def loss(disp):
        state = (disp, darray.zeros_like(disp))
        if kind == "unrolled":
            for _ in range(steps):
                state, _ = step(state)
        else:
            body = jax.checkpoint(step) if kind == "scan+remat" else step
            state, _ = jax.lax.scan(body, state, None, length=steps)
        return darray.sum(state[0] ** 2)
    return loss


def compile_and_measure(fn, arg):
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(arg).compile()
    seconds = time.perf_counter() - t0
    try:
        mem = compiled.memory_analysis()
        mib = (mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes
               - mem.alias_size_in_bytes) / 2 ** 20
    except Exception:  # noqa: BLE001  (a backend without the analysis)
        mib = float("nan")
    return seconds, mib


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="grid edge (default 32)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--mesh", default="2,4")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="smoke run: 16^3, 3 steps")
    parser.add_argument("--json", default=str(default_json_path("bench_remat")))
    args = parser.parse_args(argv)
    sizes = [16] if args.small else (args.n or [32])
    steps = 3 if args.small else args.steps
    repeats = 2 if args.small else args.repeats
    mesh_shape = tuple(int(s) for s in args.mesh.split(","))
    mesh = compat.make_auto_mesh(mesh_shape, ("x", "y")[:len(mesh_shape)])
    spec = ("x", "y")[:len(mesh_shape)]
    rows = []
    for n in sizes:
        disp_h = np.random.default_rng(0).uniform(-1, 1, (n, n, n, 3)).astype(np.float32)
        disp = darray.asarray(disp_h, mesh=mesh, spec=spec)
        kinds = ("unrolled", "scan", "scan+remat")
        grads = {k: darray.grad(loss_fn(k, steps)) for k in kinds}
        measured = {k: compile_and_measure(g, disp) for k, g in grads.items()}
        jitted = {k: jax.jit(g) for k, g in grads.items()}
        values = {k: np.asarray(jitted[k](disp)) for k in kinds}
        for k in kinds[1:]:   # the three ways compute one gradient
            err = np.abs(values[k] - values["unrolled"]).max()
            if not err <= 1e-4 * np.abs(values["unrolled"]).max():
                raise AssertionError(f"{k} gradient differs from the unrolled one by {err}")
        times = time_interleaved([(k, jitted[k], disp) for k in kinds], repeats,
                                 desc=f"{n}^3 x {steps}")
        for k in kinds:
            rows.append(make_row(k, f"{n}^3 x {steps} steps", mesh_label(mesh_shape),
                                 times[k][0], times[k][0] / times["scan"][0],
                                 compile_s=measured[k][0], peak_mib=measured[k][1]))
        print(f"\n{n}^3, {steps} KDK steps, gradient, on {mesh_label(mesh_shape)} "
              f"({jax.device_count()} {jax.devices()[0].platform} devices)")
        print(f"{'loop':<12}{'run ms':>10}{'compile s':>12}{'peak MiB':>11}")
        for row in rows[-3:]:
            print(f"{row['program']:<12}{row['time_ms']:>10.1f}{row['compile_s']:>12.2f}"
                  f"{row['peak_mib']:>11.1f}")
    write_table(rows, args.json, "bench_remat", "scan",
                "PM gradient through many steps: unrolled vs scan vs scan+checkpoint")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
