"""The "mpi" backend: darray's FFT plans and halo fills with MPI doing the exchanges (CPU).

The per-device work is the pure-JAX backend's own (`fft_exec.run_stages`, `halo_exchange.fill`)
inside one shard_map; only the collectives change: every all-to-all of a transpose is
MPI_Alltoall and every halo face move is MPI_Sendrecv (`mpi_transport`), on a communicator
split from COMM_WORLD for the group of processes that exchange (one per mesh-axis group).

One JAX device per process: the shard_map body's block is then the process's whole local block,
which is what an MPI rank can send. Each process computes its own coordinates in the mesh (its
device's position), so each group's communicator numbers its ranks exactly like the Layout
numbers blocks along those mesh axes (major first, in the split's order).

Ordering: every exchange of one program takes the order token the previous one returned, so
XLA runs them in the same order on every rank. Separate programs (two darray ops in one user
jit) each start their own chain; between chains XLA orders them by data dependence only, and
the handlers return an error if two exchanges ever overlap in one process, or if the ranks of a
communicator reach exchanges with different ids (kind, shape, dtype, permutation, position in
the chain; csrc/mpi_common.h), rather than let them pair with the wrong exchange on another rank.
Two ops whose exchanges have the same ids (same op, same shapes) are not told apart by that
check: make one depend on the other, or jit them separately.
"""
from __future__ import annotations

import importlib.util
import sys

import jax
import numpy as np

from darray._src.backends import mpi_transport, native_permute
from darray._src.backends.jax import fft_exec, halo_exchange
from darray._src.base import compat, native

# (mesh device ids, mesh shape, axis names, exchange axes) -> split communicator
_COMMS: dict = {}


def why_unusable() -> str | None:
    """None when the MPI backend can run in this process, else the reason."""
    if not native.available():
        return native.build_info()["reason"].split("; to fix it")[0]
    if not mpi_transport.available():
        return "the MPI transport handlers are not compiled into this darray build"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    if jax.local_device_count() != 1:
        # one MPI rank per JAX device: a process with several devices can never use it
        return (f"it needs one JAX device per process and this process has "
                f"{jax.local_device_count()}")
    if "mpi4py.MPI" in sys.modules:  # MPI is up: check the handlers can reach its library
        return native.bind_mpi()
    # Not imported yet: importing mpi4py.MPI runs MPI_Init, too much for a question (listing
    # the backends must not start MPI); the first exchange binds and raises if it cannot.
    return None


def _world():
    from mpi4py import MPI  # optional: importing mpi4py initialises MPI
    world = MPI.COMM_WORLD
    if world.Get_size() != jax.process_count():
        raise ValueError(
            f"the MPI backend needs one MPI rank per JAX process: MPI's COMM_WORLD has "
            f"{world.Get_size()} ranks but jax.process_count() is {jax.process_count()} (start "
            f"every rank with `mpiexec -n P` and call darray.distributed.initialize() first)")
    return world


def communicator(mesh, names) -> object:
    """The mpi4py communicator of this process's group along mesh axes `names`: the processes
    whose devices differ only in `names`, ranked by their block number along `names` (major
    first, in the order given). Created on first use (a collective over COMM_WORLD, reached in
    the same order on every process because every process traces the same program) and cached.
    """
    names = (names,) if isinstance(names, str) else tuple(names)
    devices = np.asarray(mesh.devices)
    key = (tuple(d.id for d in devices.flat), devices.shape, tuple(mesh.axis_names), names)
    comm = _COMMS.get(key)
    if comm is not None:
        return comm
    world = _world()
    owners = [d.process_index for d in devices.flat]
    if len(set(owners)) != len(owners) or len(owners) != jax.process_count():
        raise ValueError(
            f"the MPI backend needs a mesh with exactly one device per process; mesh "
            f"{dict(mesh.shape)} has {len(owners)} devices on processes {sorted(owners)} of "
            f"{jax.process_count()} (use one CPU device per process, e.g. no "
            f"--xla_force_host_platform_device_count, and a mesh over jax.devices())")
    mine = [i for i, p in enumerate(owners) if p == jax.process_index()]
    coords = dict(zip(mesh.axis_names, np.unravel_index(mine[0], devices.shape)))
    sizes = dict(mesh.shape)
    key_in_group = 0
    for name in names:  # the block number along `names`: major first
        key_in_group = key_in_group * sizes[name] + int(coords[name])
    color = 0
    for name in mesh.axis_names:  # which group: the coordinates on the other axes
        if name not in names:
            color = color * sizes[name] + int(coords[name])
    from mpi4py import MPI  # optional: importing mpi4py initialises MPI
    comm = world.Split(color, key_in_group)
    comm.Set_errhandler(MPI.ERRORS_RETURN)  # MPI errors come back as exceptions
    _COMMS[key] = comm
    return comm


class Exchanges:
    """The exchanges of one program (one shard_map body): each takes the token of the one
    before, so all of them run in trace order on every rank."""

    def __init__(self, mesh):
        self.mesh = mesh
        self.order = None
        self.position = 0  # goes into each exchange's id (the same on every rank)

    def _token(self):
        if self.order is None:  # created inside the body, on first use
            self.order = mpi_transport.new_order()
        return self.order

    def all_to_all(self, rows, names):
        comm = communicator(self.mesh, names)
        out, self.order = mpi_transport.exchange_rows(rows, self._token(), comm,
                                                      tag=(names, self._next()))
        return out

    def _next(self) -> int:
        self.position += 1
        return self.position - 1

    def permute(self, x, names, pairs, mesh):
        comm = communicator(mesh, names)
        out, self.order = mpi_transport.sendrecv(x, self._token(), comm, pairs,
                                                 tag=(names, self._next()))
        return out


def execute(plan, data, norm: str, standalone: bool = False):
    """The FFT executor: physical array of `plan.in_layout` -> that of `plan.out_layout`.
    `standalone` (an eager call's program): the opening and closing reorders run on the native
    copy too (fft_exec.run_stages)."""
    if not plan.stages:
        return data
    mesh = plan.in_layout.mesh

    def body(block):
        # the reorders between working orders by the native tiled copy (native_permute): one
        # rank per core, where XLA's transposes of the minor axis cost more than the FFTs
        return fft_exec.run_stages(block, plan, norm, exchange=Exchanges(mesh).all_to_all,
                                   permute=native_permute.permute, standalone=standalone)
    return compat.shard_map(body, mesh=mesh, in_specs=(plan.in_layout.spec,),
                            out_specs=plan.out_layout.spec)(data)


def halo_fill(data, fill_value, *, in_layout, out_layout, rules):
    """The halo backend: `halo_exchange.fill` with MPI_Sendrecv moving the faces. Linear in
    `data` when `fill_value` is None (the exchange primitive has a transpose), so halo_reduce
    runs on it too."""
    chain = []

    def permute(x, names, pairs, mesh):
        if not chain:  # first face of the (one) shard_map body: the chain starts there
            chain.append(Exchanges(mesh))
        return chain[0].permute(x, names, pairs, mesh)
    return halo_exchange.fill(data, fill_value, in_layout=in_layout, out_layout=out_layout,
                              rules=rules, permute=permute)


__all__ = ["communicator", "execute", "halo_fill", "why_unusable"]
