"""Test configuration: 8 virtual CPU devices, set before jax initialises its backend.

Two switches select the configuration JAX users run by default (the py3.12 leg of .ci/run):

* ``DARRAY_TEST_X64=0`` leaves ``jax_enable_x64`` at JAX's default (off); tests marked ``x64``
  (they need float64 arrays) are deselected then, and the count is printed.
* ``DARRAY_TEST_DEFAULT_PLACEMENT=1`` leaves ``DARRAY_SMALL_ARRAY_CELLS`` unset, so darray's
  shipped small-array placement applies.
"""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

X64 = os.environ.get("DARRAY_TEST_X64", "1") != "0"
DEFAULT_PLACEMENT = os.environ.get("DARRAY_TEST_DEFAULT_PLACEMENT", "0") == "1"

if not DEFAULT_PLACEMENT:
    # The suite builds small arrays to exercise distributed layouts, so it keeps them
    # distributed: darray's default places arrays under small_array_cells (and eager 0-d
    # results) on one device. Tests of that placement turn it on with
    # darray.config_context(small_array_cells=...) (tests/multidevice/test_small_arrays.py).
    os.environ.setdefault("DARRAY_SMALL_ARRAY_CELLS", "0")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)
if X64:
    # float64 references need float64 arrays; tests that want float32 ask for it.
    jax.config.update("jax_enable_x64", True)
