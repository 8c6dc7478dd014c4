"""Run under `mpiexec -n P python3 mpi_worker.py NATIVE_SO`: checks the MPI transport against
numpy on every rank and prints "RANK ok" lines. One JAX CPU device per process; the native
module with the MPI handler is loaded from the path given (a build with DARRAY_ENABLE_MPI=ON)."""
import importlib.util
import os
import sys

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.pop("XLA_FLAGS", None)
spec = importlib.util.spec_from_file_location("darray._native", sys.argv[1])
native_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native_mod)
sys.modules["darray._native"] = native_mod  # darray._src.base.native imports this one

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from darray.distributed import gather  # noqa: E402  (collective host reads: every rank)

jax.config.update("jax_enable_x64", True)
from darray._src.backends import mpi_transport as mt  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
assert mt.available()


def reference(x, c, split_axis, concat_axis):
    """lax.all_to_all(tiled=True) on the blocks of every rank of communicator c."""
    blocks = c.allgather(gather(x))
    me = c.Get_rank()
    return np.concatenate([np.split(b, c.Get_size(), axis=split_axis)[me] for b in blocks],
                          axis=concat_axis)


# 1. the exchange against numpy, eager and under jit, several dtypes and axis pairs
rng = np.random.default_rng(rank)
for dtype in (np.float32, np.float64, np.complex128):
    for split_axis, concat_axis in ((0, 1), (1, 0), (2, 0), (1, 1)):
        x = (rng.standard_normal((2 * size, 3 * size, size)) * 10).astype(dtype)
        want = reference(x, comm, split_axis, concat_axis)
        got, order = mt.all_to_all(x, mt.new_order(), comm, split_axis=split_axis,
                                   concat_axis=concat_axis)
        assert got.dtype == dtype and np.array_equal(gather(got), want), (dtype, split_axis)
        jitted = jax.jit(lambda a, o, split_axis=split_axis, concat_axis=concat_axis:
                         mt.all_to_all(a, o, comm, split_axis=split_axis,
                                       concat_axis=concat_axis))
        got, _ = jitted(x, mt.new_order())
        assert np.array_equal(gather(got), want)
sys.stdout.write(f"{rank} ok exchange\n")
sys.stdout.flush()

# 2. two exchanges in one program, on two communicators (one with reversed ranks), chained by
# the order token so every rank runs them in the same order
reversed_comm = comm.Split(color=0, key=size - 1 - rank)
a = rng.standard_normal((size, 5))
b = rng.standard_normal((2 * size, 3)) + 1j * rng.standard_normal((2 * size, 3))


@jax.jit
def two(a, b):
    ya, order = mt.all_to_all(a, mt.new_order(), comm, split_axis=0, concat_axis=1)
    yb, order = mt.all_to_all(b, order, reversed_comm, split_axis=0, concat_axis=0)
    return ya, yb, order


for _ in range(3):
    ya, yb, _ = two(a, b)
    assert np.array_equal(gather(ya), reference(a, comm, 0, 1))
    assert np.array_equal(gather(yb), reference(b, reversed_comm, 0, 0))
sys.stdout.write(f"{rank} ok ordering\n")
sys.stdout.flush()

# 2b. vmap (jacfwd/jacrev batch through it): a batch axis anywhere, both exchanges, eager/jit
xb = rng.standard_normal((3, size, 4))
rows = jax.vmap(lambda a: mt.exchange_rows(a, mt.new_order(), comm)[0])
want = np.stack([reference(xb[i], comm, 0, 0) for i in range(3)])
assert np.array_equal(gather(rows(xb)), want)
rows2 = jax.jit(jax.vmap(lambda a: mt.exchange_rows(a, mt.new_order(), comm)[0], in_axes=2,
                         out_axes=2))
assert np.array_equal(gather(rows2(np.moveaxis(xb, 0, 2))), np.moveaxis(want, 0, 2))
ring = [(r, (r + 1) % size) for r in range(size)]
shift = jax.jit(jax.vmap(lambda a: mt.sendrecv(a, mt.new_order(), comm, ring)[0], in_axes=1))
got = gather(shift(xb[:, 0]))
everyone = comm.allgather(xb[:, 0])
assert np.array_equal(got, everyone[(rank - 1) % size].T), (got, everyone)
sys.stdout.write(f"{rank} ok vmap\n")
sys.stdout.flush()

# 3. a slab-decomposed 3-D FFT built on the transport equals numpy's fftn of the global array
n = 4 * size
glob = np.random.default_rng(7).standard_normal((n, n, n))
mine = glob[rank * n // size:(rank + 1) * n // size]


@jax.jit
def fftn_slab(block):
    k = jnp.fft.fftn(block, axes=(1, 2))
    k, _ = mt.all_to_all(k, mt.new_order(), comm, split_axis=1, concat_axis=0)
    return jnp.fft.fft(k, axis=0)  # now split along axis 1


want = np.fft.fftn(glob)[:, rank * n // size:(rank + 1) * n // size]
np.testing.assert_allclose(gather(fftn_slab(mine)), want, rtol=1e-12, atol=1e-9)
sys.stdout.write(f"{rank} ok fftn\n")
sys.stdout.flush()

# 4. errors come back as exceptions, the process goes on
call = jax.ffi.ffi_call(mt.TARGET, (jax.ShapeDtypeStruct((size + 1, 2), jnp.float64),
                                    jax.ShapeDtypeStruct((), jnp.uint8)), has_side_effect=True)
try:
    call(jnp.zeros((size + 1, 2)), mt.new_order(), comm=np.int64(comm.py2f()),
         call_id=np.int64(0))
    raise AssertionError("a wrong leading dimension was accepted")
except Exception as err:  # jax's runtime error type moved between versions
    assert "leading dimension must equal the communicator size" in str(err), err
try:
    mt.all_to_all(np.zeros((size + 1, 2)), mt.new_order(), comm, split_axis=0, concat_axis=1)
    raise AssertionError("an uneven split was accepted")
except ValueError as err:
    assert "not a multiple of the communicator size" in str(err)
comm.Barrier()
sys.stdout.write(f"{rank} ok errors\n")
sys.stdout.flush()

# 5. ranks at different exchanges get an error, never each other's data. Both exchanges move
# 32 bytes per rank (4 float64 / 8 float32 a row), so MPI_Alltoall alone would pair them and
# mix the data silently; the handlers' id check must refuse on every rank first.
MISMATCH = "reached different MPI exchanges"
wide = np.arange(size * 4, dtype=np.float64).reshape(size, 4) + 100 * rank
narrow = np.arange(size * 8, dtype=np.float32).reshape(size, 8) - 100 * rank


def expect_mismatch(run, what):
    try:
        jax.block_until_ready(run())
    except Exception as err:  # jax's runtime error type moved between versions
        assert MISMATCH in str(err) and "no data was moved" in str(err), (what, err)
        return
    raise AssertionError(f"rank {rank}: {what} ran exchanges out of step without an error")


# 5a. one program whose order is picked per rank: rank 0 exchanges `wide` first, the others
# `narrow` first (each chain is consistent in itself; the ranks disagree)
def swapped(a, b):
    order = mt.new_order()
    if rank == 0:
        ya, order = mt.exchange_rows(a, order, comm)
        yb, order = mt.exchange_rows(b, order, comm)
    else:
        yb, order = mt.exchange_rows(b, order, comm)
        ya, order = mt.exchange_rows(a, order, comm)
    return ya, yb


expect_mismatch(lambda: jax.jit(swapped)(wide, narrow), "a rank-dependent order in one jit")
# 5b. two separately jitted exchanges called in a different order on rank 0 than on the others:
# both calls fail on every rank (each time rank 0 meets the other exchange)
first = jax.jit(lambda a: mt.exchange_rows(a, mt.new_order(), comm)[0])
second = jax.jit(lambda b: mt.exchange_rows(b, mt.new_order(), comm)[0])
calls = [lambda: first(wide), lambda: second(narrow)]
for call in (calls if rank == 0 else calls[::-1]):
    expect_mismatch(call, "two jitted exchanges in a different order per rank")
# 5c. an exchange of a token chain differs from the same exchange at another position, so the
# ids tell apart two chains that run the same shapes in different orders
assert mt._call_id("all_to_all", (size, 4), "float64", size, 0) != \
    mt._call_id("all_to_all", (size, 4), "float64", size, 1)
# every check above completed on every rank, so MPI is in step again: the process goes on
got_wide, got_narrow = first(wide), second(narrow)
assert np.array_equal(gather(got_wide), reference(wide, comm, 0, 0))
assert np.array_equal(gather(got_narrow), reference(narrow, comm, 0, 0))
comm.Barrier()
sys.stdout.write(f"{rank} ok mismatch\n")
sys.stdout.flush()
