"""Run under `VENV/bin/mpiexec -n P VENV/bin/python install_worker.py` in a venv where darray was
installed with `pip install '.[mpi]'` (test_install.py): the MPI backend must be there with no
rebuild and no activated venv. Prints "RANK r ok ..." lines; any failure raises."""
import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.pop("XLA_FLAGS", None)  # one CPU device per process

import jax  # noqa: E402
import numpy as np  # noqa: E402

import darray  # noqa: E402

jax.config.update("jax_enable_x64", True)
assert not darray.__file__.startswith(os.environ.get("DARRAY_SOURCE_TREE", "/nonexistent")), \
    f"darray was imported from the source tree ({darray.__file__}), not the venv"
darray.distributed.initialize()
rank, size = jax.process_index(), jax.process_count()
info = darray.build_info()
assert info["mpi"] is True, info
print(f"RANK {rank} ok build_info mpi={info['mpi']}", flush=True)

shape = (4 * size, 6, 5)
host = np.random.default_rng(0).standard_normal(shape)
mesh = jax.make_mesh((size,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
x = darray.asarray(host, mesh=mesh, spec=("x", None, None))
with darray.config_context(fft_backend="mpi"):
    selection = darray._src.backends.registry.select_fft_backend()
    assert selection.backend == "mpi", selection
    y = darray.fft.fftn(x)
want = np.fft.fftn(host)
got = darray.distributed.gather(y)
err = np.max(np.abs(got - want)) / np.max(np.abs(want))
assert err < 1e-12, err
assert y.layout.mesh.shape == mesh.shape, y.layout
info = darray.build_info()
assert "MPICH" in info.get("mpi_library_version", ""), info
print(f"RANK {rank} ok fftn mpi err={err:.1e} spec={y.layout.spec} "
      f"library={info['mpi_library_version'].splitlines()[0]}", flush=True)
