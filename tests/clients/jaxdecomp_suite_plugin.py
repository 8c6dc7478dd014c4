"""pytest plugin: jaxDecomp's own test suite (its sdist's ``tests/``) on darray.jaxdecomp.

    cd <jaxdecomp-0.3.1>/tests && PYTHONPATH=<darray checkout>:<darray checkout>/tests/clients \\
        python -m pytest -p jaxdecomp_suite_plugin test_fft.py test_transpose.py test_halo.py

With JAXDECOMP_BACKEND=jaxdecomp the same suite runs on jaxDecomp itself (the reference).

jaxDecomp's tests import, besides the public names, three private ones, mapped here because
they are test scaffolding, not API:
- ``jaxdecomp._src.PENCILS``, ``SLAB_XY``, ``SLAB_YZ``: the decomposition constants, which
  darray.jaxdecomp exports publicly (the same objects);
- ``jaxdecomp._src.spmd_ops.ALLOW_SHARDY_PARTITIONER``: jaxDecomp's flag "this jax can
  partition custom calls with Shardy" (jax > 0.7). darray's partition-time rules work with
  both partitioners on every jax darray supports, so it is True.
darray does not mirror ``jaxdecomp._src`` as a package: its modules are jaxDecomp's
implementation (cuDecomp bindings, spmd primitives), not something user code imports.
"""
import os
import sys
import types

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

if os.environ.get("JAXDECOMP_BACKEND", "darray") == "darray":
    import darray.jaxdecomp

    sys.modules["jaxdecomp"] = darray.jaxdecomp
    private = types.ModuleType("jaxdecomp._src")
    private.PENCILS = darray.jaxdecomp.PENCILS
    private.SLAB_XY = darray.jaxdecomp.SLAB_XY
    private.SLAB_YZ = darray.jaxdecomp.SLAB_YZ
    spmd_ops = types.ModuleType("jaxdecomp._src.spmd_ops")
    spmd_ops.ALLOW_SHARDY_PARTITIONER = True
    private.spmd_ops = spmd_ops
    sys.modules["jaxdecomp._src"] = private
    sys.modules["jaxdecomp._src.spmd_ops"] = spmd_ops


def pytest_plugin_registered(plugin, manager):
    """With JAXDECOMP_STRICT=1, the suite's value helpers (conftest.assert_allclose and
    assert_array_equal, which return a bool that most tests never assert) raise on a mismatch,
    so the values the suite computes are checked too."""
    if os.environ.get("JAXDECOMP_STRICT") != "1":
        return
    if getattr(plugin, "__name__", "") != "conftest" or not hasattr(plugin, "assert_allclose"):
        return
    for name in ("assert_allclose", "assert_array_equal"):
        loose = getattr(plugin, name)

        def strict(*args, _loose=loose, _name=name, **kwargs):
            ok = bool(_loose(*args, **kwargs))
            assert ok, f"jaxDecomp's suite helper {_name} found a mismatch"
            return ok
        setattr(plugin, name, strict)
