"""pytest plugin: JaxPM's own tests (its repository's tests/test_distributed_pm.py) on today's
jax, on darray.jaxdecomp (or, with JAXPM_BACKEND=jaxdecomp, on jaxDecomp itself).

    cd JaxPM && PYTHONPATH=<darray checkout>:<darray checkout>/tests/clients \\
        python -m pytest -p jaxpm_plugin tests/test_distributed_pm.py -k "fwd_rev or vmap"

What it changes around JaxPM, whose code runs unchanged:
- ``sys.modules["jaxdecomp"] = darray.jaxdecomp`` (unless JAXPM_BACKEND=jaxdecomp);
- JaxPM 0.1.6's pre-0.7 ``shard_map`` call gets today's ``jax.shard_map`` (jaxpm_runner.py);
- ``jax.make_mesh`` gives Auto axes, as when JaxPM 0.1.6 was written (jaxDecomp 0.3.1 and
  JaxPM's eager ``with_sharding_constraint`` refuse today's Explicit default). No mesh is put
  in context: darray.jaxdecomp plans traced arrays on Auto axes when XLA partitions the
  program, as jaxDecomp does.
The tests needing pmesh/fastpm fixtures (test_distrubted_pm, test_distrubted_gradients) need
those packages (MPI builds).
"""
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402

if os.environ.get("JAXPM_BACKEND", "darray") == "darray":
    import darray.jaxdecomp
    sys.modules["jaxdecomp"] = darray.jaxdecomp

import jaxpm_runner  # noqa: E402

jaxpm_runner.shim_jaxpm_shard_map()
_make_mesh = jax.make_mesh


def _auto_make_mesh(shape, names, *args, **kwargs):
    kwargs.setdefault("axis_types", (jax.sharding.AxisType.Auto,) * len(names))
    return _make_mesh(shape, names, *args, **kwargs)


jax.make_mesh = _auto_make_mesh
