"""Particle-mesh step: one kick-drift-kick step and its gradient, darray.particles vs JaxPM on
jaxDecomp vs single-device jax.numpy, interleaved in one run, with XLA's memory estimate.

Rows (per grid size): "darray step", "jaxpm step", "jnp step" and the same three for
"... grad" (reverse mode of sum(positions after the step)^2 with respect to the initial
displacements). ``ratio`` is time relative to JaxPM's row of the same kind (to jax.numpy's when
JaxPM is not installed). ``peak_mib`` is the per-device memory XLA planned for the compiled
program (arguments + outputs + temporaries, from ``compiled.memory_analysis()``).

The "-2x" rows (issue 38) compute the force on a 2x finer mesh: n^3 particles as an (n^3, 3)
catalogue of positions (`darray.particles.paint_catalogue` / `readout_catalogue`, cloud in
cell, rows split over every device) painted on a (2n)^3 mesh, against the same step on one
device in jax.numpy; their ratio is to "jnp-2x". JaxPM has no such row: its mesh must equal
its particle grid (0.1.6's ``cic_paint`` reshapes the particles to the mesh's shape, and
``cic_paint_dx`` puts one particle in each mesh cell).

All three use cloud-in-cell painting and readout, one rfftn and three irfftn per force, float32,
one particle per cell with displacements of up to one cell; darray's ghost reach is 3 cells,
JaxPM's halo_size 6 (it pads by halo_size to paint and halo_size / 2 to read).

JaxPM 0.1.6 calls the pre-0.7 positional ``shard_map``; a small shim replaces its module global
``jaxpm.distributed.shard_map`` with a wrapper around ``jax.shard_map``. JaxPM rows are
skipped with a printed reason when ``jaxpm`` or ``jaxdecomp`` cannot be imported (install:
``pip install jaxdecomp==0.3.1 jaxpm==0.1.6``, in a venv that keeps your jax).

    python3 benchmarks/bench_pm.py [--n 64] [--n 128] [--mesh 2,4] [--repeats 5] [--small]
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax
import jax.numpy as jnp
import numpy as np
from _bench_common import (
    default_json_path,
    make_row,
    mesh_label,
    time_interleaved,
    write_table,
)
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import darray
import darray.fft as dfft
from darray._src.base import compat

REACH = 3
KICK, DRIFT = 0.05, 0.1      # fixed step factors: the cost does not depend on the cosmology


def import_jaxpm():
    """(pm_forces, None) or (None, reason)."""
    def shard_map(f, mesh=None, in_specs=None, out_specs=None, check_rep=False,
                  auto=frozenset()):
        # JaxPM 0.1.6 calls the pre-0.7 positional form shard_map(f, mesh, in, out, check_rep,
        # auto); today's jax.shard_map takes keywords and check_vma.
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=check_rep)
    try:
        import jaxpm.distributed
        jaxpm.distributed.shard_map = shard_map
    except Exception as exc:  # noqa: BLE001  (any import failure skips the rows)
        return None, f"{type(exc).__name__}: {exc}"
    try:
        from jaxpm.pm import pm_forces
    except Exception as exc:  # noqa: BLE001  (any import failure skips the rows)
        return None, f"{type(exc).__name__}: {exc}"
    return pm_forces, None


# -- the force functions ----------------------------------------------------------------------
def darray_forces(disp):
    n = disp.shape[0]
    delta = darray.particles.paint(disp, reach=REACH) - 1.0
    delta_k = dfft.rfftn(delta)
    ks = [darray.fromfunction(
        lambda *i, a=a: (jnp.where(i[a] < n // 2, i[a], i[a] - n) if a < 2 else i[a])
        * (i[a] != n // 2) * (2 * np.pi / n), delta_k.shape, dtype=delta.dtype,
        mesh=delta_k.layout.mesh, spec=delta_k.layout.spec) for a in range(3)]
    k2 = ks[0] ** 2 + ks[1] ** 2 + ks[2] ** 2
    pot = delta_k * darray.where(k2 > 0, 1.0 / darray.where(k2 > 0, k2, 1.0), 0.0)
    field = darray.stack([dfft.irfftn(1j * k * pot, s=delta.shape) for k in ks], axis=-1)
    return darray.particles.readout(field, disp, reach=REACH)


def _fine_kernels(delta_k, n):
    """ik_a (Nyquist zeroed) and 1/k^2 on the rfftn grid of an n^3 mesh, radians per cell."""
    ks = [darray.fromfunction(
        lambda *i, a=a: (jnp.where(i[a] < n // 2, i[a], i[a] - n) if a < 2 else i[a])
        * (i[a] != n // 2) * (2 * np.pi / n), delta_k.shape, dtype=jnp.float32,
        mesh=delta_k.layout.mesh, spec=delta_k.layout.spec) for a in range(3)]
    k2 = ks[0] ** 2 + ks[1] ** 2 + ks[2] ** 2
    return ks, darray.where(k2 > 0, 1.0 / darray.where(k2 > 0, k2, 1.0), 0.0)


def darray_fine_forces(n, capacity):
    """Forces on a (2n)^3 mesh at an (n^3, 3) catalogue in particle-grid units."""
    def forces(pos):
        fine = (2 * n,) * 3
        rho = darray.particles.paint_catalogue(pos, fine, box=float(n), capacity=capacity)
        delta_k = dfft.rfftn(rho * 8.0 - 1.0)        # mean density: 1/8 particle per cell
        ks, inv_k2 = _fine_kernels(delta_k, 2 * n)
        field = darray.stack([dfft.irfftn(1j * k * inv_k2 * delta_k, s=fine) for k in ks],
                             axis=-1)
        return darray.particles.readout_catalogue(field, pos, box=float(n), capacity=capacity)
    return forces


def jnp_fine_forces(pos):
    n2 = 2 * round(pos.shape[0] ** (1 / 3))
    cells = pos * 2.0
    cells = cells - n2 * jnp.floor(cells / n2)
    base = jnp.floor(cells)
    frac = cells - base
    corners = []
    for offset in np.ndindex(2, 2, 2):
        w = frac[:, 0] if offset[0] else 1 - frac[:, 0]
        for a in (1, 2):
            w = w * (frac[:, a] if offset[a] else 1 - frac[:, a])
        corners.append((tuple((base[:, a].astype(jnp.int32) + o) % n2
                              for a, o in enumerate(offset)), w))
    rho = jnp.zeros((n2, n2, n2), pos.dtype)
    for index, w in corners:
        rho = rho.at[index].add(w)
    delta_k = jnp.fft.rfftn(rho * 8.0 - 1.0)
    f = [np.fft.fftfreq(n2) * 2 * np.pi, np.fft.fftfreq(n2) * 2 * np.pi,
         np.fft.rfftfreq(n2) * 2 * np.pi]
    ks = [np.where(np.abs(fa) < np.pi * 0.999, fa, 0).reshape([-1 if b == a else 1
                                                              for b in range(3)])
          for a, fa in enumerate(f)]
    k2 = ks[0] ** 2 + ks[1] ** 2 + ks[2] ** 2
    pot = delta_k * np.where(k2 > 0, 1 / np.where(k2 > 0, k2, 1), 0).astype(np.float32)
    field = [jnp.fft.irfftn(1j * k.astype(np.float32) * pot, s=(n2,) * 3) for k in ks]
    return jnp.stack([sum(w * fl[index] for index, w in corners) for fl in field], axis=-1)


def jnp_forces(disp):
    n = disp.shape[0]
    q = jnp.indices((n, n, n))
    pos = [q[a] + disp[..., a] for a in range(3)]
    base = [jnp.floor(p) for p in pos]
    frac = [p - b for p, b in zip(pos, base)]
    corners = []
    for offset in np.ndindex(2, 2, 2):
        w = frac[0] if offset[0] else 1 - frac[0]
        for f, o in zip(frac[1:], offset[1:]):
            w = w * (f if o else 1 - f)
        corners.append((tuple((b.astype(jnp.int32) + o) % n for b, o in zip(base, offset)), w))
    rho = jnp.zeros((n, n, n), disp.dtype)
    for index, w in corners:
        rho = rho.at[index].add(w)
    delta_k = jnp.fft.rfftn(rho - 1.0)
    f = [np.fft.fftfreq(n) * 2 * np.pi, np.fft.fftfreq(n) * 2 * np.pi,
         np.fft.rfftfreq(n) * 2 * np.pi]
    ks = [np.where(np.abs(fa) < np.pi * 0.999, fa, 0).reshape([-1 if b == a else 1
                                                              for b in range(3)])
          for a, fa in enumerate(f)]
    k2 = ks[0] ** 2 + ks[1] ** 2 + ks[2] ** 2
    pot = delta_k * np.where(k2 > 0, 1 / np.where(k2 > 0, k2, 1), 0).astype(np.float32)
    field = [jnp.fft.irfftn(1j * k.astype(np.float32) * pot, s=(n, n, n)) for k in ks]
    return jnp.stack([sum(w * fl[index] for index, w in corners) for fl in field], axis=-1)


def kdk(forces):
    def step(state):
        disp, vel = state
        vel = vel + KICK * forces(disp)
        disp = disp + DRIFT * vel
        vel = vel + KICK * forces(disp)
        return disp, vel

    def loss(disp, vel):
        out, _ = step((disp, vel))
        return (out ** 2).sum() if not isinstance(out, darray.DistArray) else \
            darray.sum(out ** 2)
    return step, loss


def peak_mib(fn, arg) -> float:
    try:
        mem = jax.jit(fn).lower(arg).compile().memory_analysis()
        total = (mem.argument_size_in_bytes + mem.output_size_in_bytes
                 + mem.temp_size_in_bytes - mem.alias_size_in_bytes)
        return total / 2 ** 20
    except Exception:  # noqa: BLE001  (a backend without the analysis)
        return float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help="grid edge (repeatable; "
                        "default 64; add --n 128 for the larger size)")
    parser.add_argument("--mesh", default="2,4", help="mesh shape (default 2,4)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="smoke run: 16^3, 2 repeats")
    parser.add_argument("--json", default=str(default_json_path("bench_pm")))
    args = parser.parse_args(argv)
    sizes = [16] if args.small else (args.n or [64])
    repeats = 2 if args.small else args.repeats
    mesh_shape = tuple(int(s) for s in args.mesh.split(","))
    mesh = compat.make_auto_mesh(mesh_shape, ("x", "y")[:len(mesh_shape)])
    spec = ("x", "y")[:len(mesh_shape)]
    pm_forces, why = import_jaxpm()
    if pm_forces is None:
        print(f"JaxPM rows skipped: jaxpm/jaxdecomp not importable ({why})")
    rows = []
    for n in sizes:
        rng = np.random.default_rng(0)
        disp_h = rng.uniform(-1, 1, (n, n, n, 3)).astype(np.float32)
        vel_h = np.zeros_like(disp_h)
        programs = {}

        d_step, d_loss = kdk(darray_forces)
        d_state = (darray.asarray(disp_h, mesh=mesh, spec=spec),
                   darray.asarray(vel_h, mesh=mesh, spec=spec))
        programs["darray"] = (jax.jit(d_step),
                              jax.jit(lambda s, loss=d_loss: darray.grad(loss)(*s)), d_state)

        j_step, j_loss = kdk(jnp_forces)
        one = jax.devices()[0]
        j_state = (jax.device_put(disp_h, one), jax.device_put(vel_h, one))
        programs["jnp"] = (jax.jit(j_step), jax.jit(lambda s, loss=j_loss: jax.grad(loss)(*s)),
                           j_state)

        # the 2x finer force mesh: the particles as a catalogue of positions
        q = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float32)] * 3, indexing="ij"), -1)
        pos_h = (q + disp_h).reshape(-1, 3)
        row_spec = (tuple(mesh.axis_names),)
        c_state = (darray.asarray(pos_h, mesh=mesh, spec=row_spec),
                   darray.asarray(np.zeros_like(pos_h), mesh=mesh, spec=row_spec))
        _, need = darray.particles.paint_catalogue(c_state[0], (2 * n,) * 3, box=float(n),
                                                   return_needed=True)
        capacity = int(1.25 * int(need))        # room for the drift within the step
        c_step, c_loss = kdk(darray_fine_forces(n, capacity))
        # an overflowing capacity would time a NaN result: check that the step fits
        assert np.isfinite(np.asarray(jax.jit(c_step)(c_state)[0])).all(), "capacity short"
        programs["darray-2x"] = (jax.jit(c_step),
                                 jax.jit(lambda s, loss=c_loss: darray.grad(loss)(*s)), c_state)
        f_step, f_loss = kdk(jnp_fine_forces)
        f_state = (jax.device_put(pos_h, one), jax.device_put(np.zeros_like(pos_h), one))
        programs["jnp-2x"] = (jax.jit(f_step),
                              jax.jit(lambda s, loss=f_loss: jax.grad(loss)(*s)), f_state)

        if pm_forces is not None:
            sharding = NamedSharding(mesh, P(*spec))

            def pm_force(disp, n=n, sharding=sharding):
                return pm_forces(disp, mesh_shape=(n, n, n), paint_absolute_pos=False,
                                 halo_size=2 * REACH, sharding=sharding)
            p_step, p_loss = kdk(pm_force)
            p_state = (jax.device_put(disp_h, sharding), jax.device_put(vel_h, sharding))
            programs["jaxpm"] = (jax.jit(p_step),
                                 jax.jit(lambda s, loss=p_loss: jax.grad(loss)(*s)), p_state)

        timed = []
        for name, (step, grad, state) in programs.items():
            timed.append((f"{name} step", step, state))
            timed.append((f"{name} grad", grad, state))
        times = time_interleaved(timed, repeats, desc=f"{n}^3")
        memory = {label: peak_mib(fn, state) for label, fn, state in timed}
        base = "jaxpm" if "jaxpm" in programs else "jnp"
        for label, _, _ in timed:
            program, kind = label.split()
            ref = times[f"{'jnp-2x' if program.endswith('-2x') else base} {kind}"][0]
            rows.append(make_row(label, f"{n}^3", "1" if program.startswith("jnp") else
                                 mesh_label(mesh_shape), times[label][0], times[label][0] / ref,
                                 min_ms=times[label][1] * 1e3, peak_mib=memory[label]))
        print(f"\n{n}^3 on {mesh_label(mesh_shape)} ({jax.device_count()} devices, "
              f"{jax.default_backend()}); ratio to {base} (-2x rows: to jnp-2x; JaxPM's "
              f"mesh must equal its particle grid, so it has no -2x row)")
        print(f"{'row':<14}{'median ms':>11}{'min ms':>9}{'ratio':>8}{'peak MiB':>10}")
        for row in rows[-len(timed):]:
            print(f"{row['program']:<14}{row['time_ms']:>11.1f}{row['min_ms']:>9.1f}"
                  f"{row['ratio']:>8.2f}{row['peak_mib']:>10.1f}")
    write_table(rows, args.json, "bench_pm", "JaxPM on jaxDecomp, same kind of row",
                "particle-mesh KDK step and gradient")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
