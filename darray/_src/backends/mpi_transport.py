"""The MPI transport: collectives of darray's executors done by MPI on CPUs (csrc/mpi_*.cc).

Two exchanges, each a JAX primitive lowered to an XLA FFI custom call:

- `exchange_rows(x, order, comm)`: ``lax.all_to_all(x, split_axis=0, concat_axis=0,
  tiled=True)`` over `comm` (row j goes to rank j; row j of the result came from rank j), with
  ``MPI_Alltoall`` (csrc/mpi_all_to_all.cc). `all_to_all` wraps it with lax's axis arguments.
- `sendrecv(x, order, comm, pairs)`: ``lax.ppermute`` over `comm` (`pairs` of ranks
  ``(source, destination)``; a rank that receives nothing gets zeros), with ``MPI_Sendrecv``
  (csrc/mpi_halo.cc).

One JAX device per process: the block given is the process's whole local block, and the
communicator (an mpi4py communicator, e.g. one split per mesh axis) spans the processes that
exchange. Every call takes and returns an `order` token (a small array): pass the token one call
returned to the next, so that the exchanges of one jitted program run in the same order on every
rank (XLA may otherwise run independent custom calls concurrently or reordered, and mismatched
collectives deadlock or mix data). Calls are declared side-effecting.

Separate token chains in one program (two darray ops in one user jit) are ordered by XLA only
through data dependence. As a safety net every exchange carries a `call_id`, the same on every
rank (a stable hash of the kind, shape, dtype, communicator size, permutation, a caller's `tag`,
e.g. the position in its chain), and the handler checks with one small MPI_Allreduce that every
rank of the communicator is at the same id before moving data; otherwise it returns an error
(csrc/mpi_common.h). Two exchanges with the SAME id (e.g. the first exchanges of two fftn of
same-shaped arrays, whose compiled op darray caches and reuses) cannot be told apart this way.

Why primitives and not bare ffi_calls: both exchanges are linear permutations of the data, so
their JVP is the exchange of the tangent and their transpose is the inverse exchange (the
all-to-all is its own inverse; a ppermute's inverse swaps sources and destinations). Declaring
that makes grad, jvp and jax.linear_transpose (halo_reduce) work through the MPI backend.
"""
from __future__ import annotations

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jex_core
from jax.interpreters import ad, batching, mlir

from darray._src.backends.errors import BackendUnavailableError, how_to_get
from darray._src.base import native

TARGET = "darray_mpi_all_to_all_cpu"
SENDRECV_TARGET = "darray_mpi_sendrecv_cpu"


def available() -> bool:
    """True if this build has the MPI transport handlers compiled in."""
    targets = native.build_info().get("targets", ())
    return TARGET in targets and SENDRECV_TARGET in targets


def _require() -> None:
    if not available():
        raise BackendUnavailableError(
            f"the MPI transport ({TARGET}, {SENDRECV_TARGET}) is not compiled into this darray "
            f"build; to get it, {how_to_get('mpi')}")
    why_not = native.bind_mpi()
    if why_not is not None:
        raise BackendUnavailableError(f"the MPI transport cannot reach an MPI library: {why_not}"
                                      f"; to get it, {how_to_get('mpi')}")
    native.register_targets("cpu")


def new_order() -> jax.Array:
    """A fresh order token for the first exchange of a program (a float scalar: the exchanges
    are linear in it too, so AD threads tokens through tangents and cotangents)."""
    return jnp.zeros((), jnp.float32)


def _comm_handle(comm) -> int:
    """The communicator's C handle (an int for MPICH's ABI, an address for Open MPI's and the
    MPI 5 ABI), as the handlers call MPI with it."""
    from mpi4py import MPI  # optional: importing mpi4py initialises MPI
    if comm == MPI.COMM_NULL:
        raise ValueError("comm is MPI.COMM_NULL; pass a communicator this rank belongs to")
    return native.mpi_handle(comm)


def _call_id(*parts) -> int:
    """A stable id of an exchange, equal on every rank that traces the same exchange (Python's
    hash() is salted per process, so hash the text of the parts); below 2^62 so the handler can
    negate it."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 2


def _derived_id(call_id: int, role: str) -> int:
    # the tangent (jvp) and transposed (grad) exchanges: distinct from the primal one
    return _call_id(call_id, role)


# --- the primitives ------------------------------------------------------------------------

def _same_avals(x, order, **_):
    # Outputs have the inputs' shapes, dtypes (and, inside shard_map, their varying axes).
    return x, order


def _zero_tangent(value):
    return ad.Zero(jax.typeof(value).to_tangent_aval())


def _primitive(name: str, target: str, inverse_params, rows_leading: bool):
    prim = jex_core.Primitive(name)
    prim.multiple_results = True
    prim.def_abstract_eval(_same_avals)
    # eager calls compile the one exchange (like any jax primitive outside jit)
    prim.def_impl(lambda x, order, **params: jax.jit(
        lambda a, o: prim.bind(a, o, **params))(x, order))
    lower = jax.ffi.ffi_lowering(target, has_side_effect=True)

    def lowering(ctx, x, order, **params):
        # params are hashable tuples/ints (jaxpr equations compare them); FFI wants arrays.
        attrs = {k: (np.asarray(v, np.int64) if isinstance(v, tuple) else np.int64(v))
                 for k, v in params.items()}
        return lower(ctx, x, order, **attrs)
    mlir.register_lowering(prim, lowering, platform="cpu")

    # Linear in (x, order) jointly: (x, order) -> (P x, order). The token is a float so that
    # its tangent and cotangent are tokens too: the tangent exchanges of a jvp and the
    # transposed exchanges of a grad / linear_transpose then form token chains of their own,
    # ordered like the primal one (reversed for the transpose).
    def jvp(primals, tangents, **params):
        x, order = primals
        y, order_out = prim.bind(x, order, **params)
        x_dot, order_dot = tangents
        if type(x_dot) is ad.Zero and type(order_dot) is ad.Zero:
            return (y, order_out), (_zero_tangent(y), _zero_tangent(order_out))
        x_dot, order_dot = ad.instantiate_zeros(x_dot), ad.instantiate_zeros(order_dot)
        # the tangent's exchange runs after the primal one on every rank (adding 0 * token:
        # a data dependence that changes no value)
        order_dot = order_dot + order_out * 0
        tangent_params = dict(params, call_id=_derived_id(params["call_id"], "jvp"))
        return (y, order_out), tuple(prim.bind(x_dot, order_dot, **tangent_params))
    ad.primitive_jvps[prim] = jvp

    def transpose(cts, x, order, **params):
        ct_y, ct_order = cts
        undefined = (ad.is_undefined_primal(x), ad.is_undefined_primal(order))
        if type(ct_y) is ad.Zero and type(ct_order) is ad.Zero:
            return [ad.Zero(v.aval) if u else None for v, u in zip((x, order), undefined)]
        if type(ct_order) is ad.Zero:
            # the end of a chain: start the reversed chain (after the forward one, if known)
            ct_order = (new_order() if undefined[1] else order * 0)
        ct_y = ad.instantiate_zeros(ct_y)
        inverse = inverse_params(params)
        inverse["call_id"] = _derived_id(params["call_id"], "transpose")
        ct_x, ct_order = prim.bind(ct_y, ct_order, **inverse)
        return [ct_x if undefined[0] else None, ct_order if undefined[1] else None]
    ad.primitive_transposes[prim] = transpose

    # vmap (and so jacfwd / jacrev): the handlers move bytes per rank, so a batch axis placed
    # right after the rows axis rides along; a batched token is cut to one element.
    def batch(args, dims, **params):
        x, order = args
        bx, border = dims
        if border is not None:
            order = lax.index_in_dim(order, 0, border, keepdims=False)
        if bx is None:
            return prim.bind(x, order, **params), (None, None)
        if rows_leading:
            x = jnp.swapaxes(jnp.moveaxis(x, bx, 0), 0, 1)
            bx = 1
        y, order = prim.bind(x, order, **params)
        return (y, order), (bx, None)
    batching.primitive_batchers[prim] = batch
    return prim


# rows_leading: axis 0 holds one row per rank (the all-to-all), else the buffer is sent whole
_all_to_all_p = _primitive("darray_mpi_all_to_all", TARGET, dict,
                           rows_leading=True)
_sendrecv_p = _primitive("darray_mpi_sendrecv", SENDRECV_TARGET,
                         lambda p: dict(p, dests=p["sources"], sources=p["dests"]),
                         rows_leading=False)


def exchange_rows(x, order, comm, *, tag=0):
    """``lax.all_to_all(x, split_axis=0, concat_axis=0, tiled=True)`` over `comm` with MPI;
    ``x.shape[0]`` must equal ``comm.Get_size()`` (one row per rank). `tag` (any value with a
    stable repr, the same on every rank) goes into the exchange's id, e.g. its position in its
    token chain. Returns ``(y, order)``."""
    _require()
    size = comm.Get_size()
    if jnp.ndim(x) == 0 or jnp.shape(x)[0] != size:
        raise ValueError(f"exchange_rows: x.shape={jnp.shape(x)} must lead with the "
                         f"communicator size {size}")
    call_id = _call_id("all_to_all", tuple(jnp.shape(x)), str(jnp.result_type(x)), size, tag)
    return _all_to_all_p.bind(x, order, comm=_comm_handle(comm), call_id=call_id)


def sendrecv(x, order, comm, pairs, *, tag=0):
    """``lax.ppermute`` of `x` over `comm` with MPI_Sendrecv: for every ``(src, dst)`` in
    `pairs` (ranks of `comm`, each at most once as a source and once as a destination) rank
    `dst` receives `src`'s `x`; ranks that receive nothing get zeros. `tag`: as in
    `exchange_rows`. Returns ``(y, order)``."""
    _require()
    size = comm.Get_size()
    dests, sources = [-1] * size, [-1] * size
    for src, dst in pairs:
        if not (0 <= src < size and 0 <= dst < size):
            raise ValueError(f"sendrecv: pairs={pairs!r} name ranks outside 0..{size - 1}")
        if dests[src] != -1 or sources[dst] != -1:
            raise ValueError(f"sendrecv: pairs={pairs!r} is not a permutation (rank {src} or "
                             f"{dst} appears twice)")
        dests[src], sources[dst] = dst, src
    call_id = _call_id("sendrecv", tuple(jnp.shape(x)), str(jnp.result_type(x)), size,
                       tuple(dests), tag)
    return _sendrecv_p.bind(x, order, comm=_comm_handle(comm), dests=tuple(dests),
                            sources=tuple(sources), call_id=call_id)


def all_to_all(x, order, comm, *, split_axis: int, concat_axis: int, tag=0):
    """``lax.all_to_all(x, ..., split_axis, concat_axis, tiled=True)`` over `comm` with MPI.

    Args:
      x: this process's block; ``x.shape[split_axis]`` must be a multiple of ``comm.Get_size()``.
      order: the token returned by the previous exchange (or `new_order()`).
      comm: an mpi4py communicator (its error handler should be ``MPI.ERRORS_RETURN``, mpi4py's
        default, so MPI errors come back as exceptions instead of aborting).
      split_axis, concat_axis: as in ``lax.all_to_all``.
      tag: as in `exchange_rows`.

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
    got, order = exchange_rows(rows, order, comm, tag=tag)
    # row j came from rank j: put the rank axis just before concat_axis and merge them
    got = jnp.moveaxis(got, 0, concat_axis)
    shape = list(got.shape)
    merged = shape[:concat_axis] + [size * shape[concat_axis + 1]] + shape[concat_axis + 2:]
    return got.reshape(merged), order


__all__ = ["TARGET", "SENDRECV_TARGET", "all_to_all", "available", "exchange_rows",
           "new_order", "sendrecv"]
