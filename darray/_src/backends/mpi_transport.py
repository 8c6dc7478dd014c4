"""The MPI transport: lax.all_to_all's exchange done by MPI (csrc/mpi_all_to_all.cc) on CPUs.

One JAX device per process: the block given here is the process's whole local block, and the
communicator (an mpi4py communicator, e.g. one split per mesh axis) spans the processes that
exchange. Every call takes and returns an `order` token (any small array): pass the token one
call returned to the next call, so that two exchanges in one jitted program run in the same
order on every rank (XLA would otherwise be free to run independent exchanges concurrently, and
mismatched collectives deadlock or mix data). Calls are declared side-effecting.

Not yet wired into the FFT/halo executors (issue 12, part 3): this is the transport primitive.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from darray._src import native
from darray._src.backends import HOW_TO_GET, BackendUnavailableError

TARGET = "darray_mpi_all_to_all_cpu"


def available() -> bool:
    """True if this build has the MPI transport handler compiled in."""
    return TARGET in native.build_info().get("targets", ())


def _require() -> None:
    if not available():
        raise BackendUnavailableError(
            f"the MPI transport ({TARGET}) is not compiled into this darray build; to get it, "
            f"{HOW_TO_GET['mpi']}")
    native.register_targets("cpu")


def new_order() -> jax.Array:
    """A fresh order token for the first exchange of a program."""
    return jnp.zeros((), jnp.uint8)


def all_to_all(x, order, comm, *, split_axis: int, concat_axis: int):
    """``lax.all_to_all(x, ..., split_axis, concat_axis, tiled=True)`` over `comm` with MPI.

    Args:
      x: this process's block; ``x.shape[split_axis]`` must be a multiple of ``comm.Get_size()``.
      order: the token returned by the previous exchange (or `new_order()`).
      comm: an mpi4py communicator (its error handler should be ``MPI.ERRORS_RETURN``, mpi4py's
        default, so MPI errors come back as exceptions instead of aborting).
      split_axis, concat_axis: as in ``lax.all_to_all``.

    Returns:
      ``(y, order)``: chunk j of `split_axis` went to rank j; `y` holds the chunks received from
      ranks 0..P-1 in order along `concat_axis`; pass `order` to the next exchange.
    """
    _require()
    x = jnp.asarray(x)
    size = comm.Get_size()
    ndim = x.ndim
    if not (-ndim <= split_axis < ndim and -ndim <= concat_axis < ndim):
        raise ValueError(f"all_to_all: split_axis={split_axis} and concat_axis={concat_axis} "
                         f"must be axes of an array of rank {ndim}")
    split_axis, concat_axis = split_axis % ndim, concat_axis % ndim
    if x.shape[split_axis] % size:
        raise ValueError(f"all_to_all: x.shape[{split_axis}]={x.shape[split_axis]} is not a "
                         f"multiple of the communicator size {size}")
    # rows for the ranks first and contiguous: (P, ...) with the split axis shortened
    chunk = x.shape[split_axis] // size
    rows = x.reshape(x.shape[:split_axis] + (size, chunk) + x.shape[split_axis + 1:])
    rows = jnp.moveaxis(rows, split_axis, 0)
    call = jax.ffi.ffi_call(TARGET, (jax.ShapeDtypeStruct(rows.shape, rows.dtype),
                                     jax.ShapeDtypeStruct(jnp.shape(order), jnp.result_type(order))),
                            has_side_effect=True)
    got, order = call(rows, order, comm=np.int64(comm.py2f()))
    # row j came from rank j: put the rank axis just before concat_axis and merge them
    got = jnp.moveaxis(got, 0, concat_axis)
    shape = list(got.shape)
    merged = shape[:concat_axis] + [size * shape[concat_axis + 1]] + shape[concat_axis + 2:]
    return got.reshape(merged), order
