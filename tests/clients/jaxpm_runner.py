"""JaxPM 0.1.6 on a (2, 4) CPU mesh against single-device JaxPM, on jaxDecomp or darray.

Run as ``python jaxpm_runner.py darray|jaxdecomp``; prints one JSON line of max-norm relative
errors (distributed vs one device) of the painted field, the forces and their gradients.
With ``darray``, ``sys.modules["jaxdecomp"]`` is darray.jaxdecomp before JaxPM is imported:
JaxPM's own code runs unchanged. Used by test_jaxdecomp_parity.py (a subprocess per backend,
since JaxPM binds `jaxdecomp` when it is imported).

JaxPM 0.1.6 calls the pre-0.7 shard_map, ``shard_map(f, mesh, in_specs, out_specs, check_rep,
auto)``, from jax.experimental.shard_map (gone in newer jax). `shim_jaxpm_shard_map` gives it
today's ``jax.shard_map`` under that name, the one change needed to run it on current jax.
"""
import json
import os
import pathlib
import sys
import types

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # darray from the checkout

import jax

jax.config.update("jax_enable_x64", True)


def _shard_map(f, mesh=None, in_specs=None, out_specs=None, check_rep=True, auto=frozenset()):
    """The pre-0.7 signature on jax.shard_map (check_rep is check_vma; `auto` are the mesh axes
    left to the partitioner, i.e. not in axis_names)."""
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                         check_vma=check_rep,
                         axis_names=frozenset(mesh.axis_names) - frozenset(auto))


def shim_jaxpm_shard_map():
    try:
        import jax.experimental.shard_map  # noqa: F401  (jax < 0.8 still has it)
    except ImportError:
        module = types.ModuleType("jax.experimental.shard_map")
        module.shard_map = _shard_map
        sys.modules["jax.experimental.shard_map"] = module
    import jaxpm.distributed
    jaxpm.distributed.shard_map = _shard_map


def main(backend: str):
    if backend == "darray":
        import darray.jaxdecomp
        sys.modules["jaxdecomp"] = darray.jaxdecomp
    shim_jaxpm_shard_map()
    import jax.numpy as jnp
    import jax_cosmo as jc
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P
    from jaxpm.distributed import fft3d, ifft3d
    from jaxpm.painting import cic_paint_dx, cic_read_dx
    from jaxpm.pm import lpt, make_ode_fn, pm_forces

    mesh_shape = (16, 16, 16)
    halo_size = mesh_shape[0] // 2  # as JaxPM's own distributed tests
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    sharding = NamedSharding(mesh, P("x", "y"))
    ic = jax.random.normal(jax.random.PRNGKey(0), mesh_shape)
    disp = 0.5 * jax.random.normal(jax.random.PRNGKey(1), (*mesh_shape, 3))
    target = 1.0 + 0.1 * jax.random.normal(jax.random.PRNGKey(2), mesh_shape)

    def cosmo():
        return jc.Planck15()

    def paint(d, sh, halo):
        return cic_paint_dx(d, halo_size=halo, sharding=sh)

    def forces(field, sh, halo):
        k = fft3d(field)
        return pm_forces(jnp.zeros((*mesh_shape, 3)), delta=k, paint_absolute_pos=False,
                         halo_size=halo, sharding=sh)

    def simulate(ic, sh, halo):
        c = cosmo()
        dx, p, _ = lpt(c, ic, a=0.1, order=1, halo_size=halo, sharding=sh)
        ode = make_ode_fn(mesh_shape, paint_absolute_pos=False, halo_size=halo, sharding=sh)
        state, a, da = (dx, p), 0.1, 0.3
        for _ in range(3):  # three Euler steps of JaxPM's own ODE
            dpos, dvel = ode(state, a, c)
            state, a = (state[0] + da * dpos, state[1] + da * dvel), a + da
        return paint(state[0], sh, halo)

    def losses(sh, halo):
        return {
            "paint": lambda d: jnp.sum((paint(d, sh, halo) - target) ** 2),
            "read": lambda d: jnp.sum(cic_read_dx(target, d, halo_size=halo, sharding=sh) ** 2),
            "forces": lambda f: jnp.sum(forces(f, sh, halo) ** 2),
            "fft_roundtrip": lambda f: jnp.sum(ifft3d(fft3d(f) * fft3d(f)) ** 2),
            "simulation": lambda i: jnp.sum((simulate(i, sh, halo) - target) ** 2),
        }
    inputs = {"paint": disp, "read": disp, "forces": ic, "fft_roundtrip": ic, "simulation": ic}
    values = {"paint": lambda d, sh, h: paint(d, sh, h),
              "read": lambda d, sh, h: cic_read_dx(target, d, halo_size=h, sharding=sh),
              "forces": forces,
              "fft_roundtrip": lambda f, sh, h: ifft3d(fft3d(f) * fft3d(f)),
              "simulation": simulate}

    def rel(a, b):
        a, b = np.asarray(a), np.asarray(b)
        return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))

    single = losses(None, 0)
    # one device, no mesh anywhere, under jit (JaxPM's single-device path)
    refs = {name: (jax.jit(lambda v, n=name: values[n](v, None, 0))(x),
                   jax.jit(jax.grad(single[name]))(x))
            for name, x in inputs.items()}
    report = {"backend": backend}
    # no mesh context: planned when XLA partitions the program, as jaxDecomp does
    dist = losses(sharding, halo_size)
    for name, x in inputs.items():
        ref_val, ref_grad = refs[name]
        xs = jax.device_put(x, NamedSharding(mesh, P("x", "y")))
        try:
            val = jax.jit(lambda v, n=name: values[n](v, sharding, halo_size))(xs)
            grad = jax.jit(jax.grad(dist[name]))(xs)
            report[name] = {"value": rel(val, ref_val), "grad": rel(grad, ref_grad),
                            "grad_norm": float(np.max(np.abs(np.asarray(ref_grad)))),
                            "grad_spec": str(getattr(grad.sharding, "spec", None))}
        except Exception as err:  # reported, and the test says which piece failed
            report[name] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
    report["jacobians"] = jacobians(fft3d, pm_forces)
    print(json.dumps(report))


def jacobians(fft3d, pm_forces):
    """What JaxPM's test_fwd_rev_gradients does, checked further: jacfwd and jacrev of the
    x-force of an 8^3 field (jitted, no mesh context) on its four meshes, against the
    single-device Jacobian; the forward result must keep the input's sharding."""
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    shape = (8, 8, 8)
    field = jax.random.normal(jax.random.PRNGKey(42), shape)

    def force_x(f, sharding, halo):
        if sharding is not None:
            f = jax.lax.with_sharding_constraint(f, sharding)
        out = pm_forces(jnp.zeros((*shape, 3)), delta=fft3d(f), paint_absolute_pos=False,
                        halo_size=halo, sharding=sharding)
        return out[..., 0]

    one = jax.jit(jax.jacfwd(lambda f: force_x(f, None, 0)))(field)
    scale = float(np.max(np.abs(np.asarray(one))))
    out = {}
    for pdims in ((1, 8), (8, 1), (4, 2), (2, 4)):
        mesh = jax.make_mesh(pdims, ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
        sharding = NamedSharding(mesh, P("x", "y"))
        fs = jax.device_put(field, sharding)
        try:
            value = jax.jit(lambda f, s=sharding: force_x(f, s, 4))(fs)
            fwd = jax.jit(jax.jacfwd(lambda f, s=sharding: force_x(f, s, 4)))(fs)
            rev = jax.jit(jax.jacrev(lambda f, s=sharding: force_x(f, s, 4)))(fs)
            out[str(pdims)] = {
                "jacfwd": float(np.max(np.abs(np.asarray(fwd) - np.asarray(one)))) / scale,
                "jacrev": float(np.max(np.abs(np.asarray(rev) - np.asarray(one)))) / scale,
                "sharding_kept": bool(value.sharding.is_equivalent_to(sharding, 3))}
        except Exception as err:
            out[str(pdims)] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
    return out


if __name__ == "__main__":
    main(sys.argv[1])
