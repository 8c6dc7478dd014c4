"""Test configuration: 8 virtual CPU devices, set before jax initialises its backend."""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The suite builds small arrays to exercise distributed layouts, so it keeps them distributed:
# darray's default places arrays under small_array_cells (and eager 0-d results) on one device.
# Tests of that placement turn it on with darray.config_context(small_array_cells=...)
# (tests/multidevice/test_small_arrays.py).
os.environ.setdefault("DARRAY_SMALL_ARRAY_CELLS", "0")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)
# float64 references need float64 arrays; tests that want float32 ask for it.
jax.config.update("jax_enable_x64", True)
