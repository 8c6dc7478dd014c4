"""Starting a multi-process run: find the launcher, start jax.distributed, bound failures.

`initialize` works out (coordinator address, process count, process id) from, in order:
explicit arguments, DARRAY_COORDINATOR_ADDRESS / DARRAY_NUM_PROCESSES / DARRAY_PROCESS_ID,
SLURM (delegated to JAX's own SLURM detection), and mpiexec of MPICH (PMI_RANK, PMI_SIZE) or
Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE). Under mpiexec the coordinator address
comes from mpi4py when it is importable (rank 0's host and a free port, broadcast); without
mpi4py, ranks that all run on one node agree on a port derived from the launcher's process id.

Failure bounds: JAX's heartbeat and shutdown timeouts are passed down (30 s each by default
instead of JAX's 100 s / 300 s), and darray adds a watchdog: every process keeps a TCP
connection to process 0 with periodic pings. A process that dies (its sockets close, or its
pings stop for `heartbeat_timeout` seconds) is named to every other process, which prints
"darray.distributed: process K of N ... died" and exits with status DEAD_PEER_EXIT, instead of
waiting in a collective. A process that finishes normally says goodbye first, so finishing
early is not mistaken for dying.
"""
from __future__ import annotations

import atexit
import dataclasses
import os
import socket
import sys
import threading
import time

import jax
import numpy as np
from jax.experimental import multihost_utils

from darray._src.layout import host
from darray._src.layout.memory import buffer_reuse, huge_page_buffers
from darray._src.placement import physical

DEAD_PEER_EXIT = 75
DEFAULT_TIMEOUT_S = 30
# How long an uncaught exception waits for the watchdog to name a peer that died first.
CRASH_GRACE_S = 2.0


@dataclasses.dataclass(frozen=True)
class Launch:
    """How this process was started: what `initialize` passes to jax.distributed."""
    launcher: str  # "explicit", "env", "slurm", "mpich", "openmpi", "single"
    coordinator_address: str | None
    num_processes: int | None
    process_id: int | None


def _int_env(name):
    value = os.environ.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} must be an integer") from None


def detect_launch(coordinator_address=None, num_processes=None, process_id=None,
                  environ=None) -> Launch:
    """The launch description from arguments, then DARRAY_* variables, then the launcher."""
    env = os.environ if environ is None else environ
    given = (coordinator_address, num_processes, process_id)
    if any(v is not None for v in given):
        if any(v is None for v in given):
            raise ValueError(f"give all of coordinator_address, num_processes and process_id, or "
                             f"none of them (launcher detection); got coordinator_address="
                             f"{coordinator_address!r}, num_processes={num_processes!r}, "
                             f"process_id={process_id!r}")
        return _checked(Launch("explicit", coordinator_address, int(num_processes),
                               int(process_id)))
    if "DARRAY_NUM_PROCESSES" in env or "DARRAY_COORDINATOR_ADDRESS" in env:
        get = (lambda n: _int_env(n)) if environ is None else (
            lambda n: int(env[n]) if n in env else None)
        return _checked(Launch("env", env.get("DARRAY_COORDINATOR_ADDRESS"),
                               get("DARRAY_NUM_PROCESSES"), get("DARRAY_PROCESS_ID")))
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        return Launch("slurm", None, None, None)  # JAX's SLURM detection fills these in
    for launcher, rank_var, size_var in (("mpich", "PMI_RANK", "PMI_SIZE"),
                                         ("openmpi", "OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_SIZE")):
        if rank_var in env and size_var in env:
            rank, size = int(env[rank_var]), int(env[size_var])
            return _checked(Launch(launcher, _mpi_coordinator(launcher, rank, size, env),
                                   size, rank))
    return Launch("single", None, 1, 0)


def _checked(launch: Launch) -> Launch:
    n, rank, addr = launch.num_processes, launch.process_id, launch.coordinator_address
    if n is None or rank is None or addr is None:
        raise ValueError(f"incomplete launch description from {launch.launcher}: "
                         f"coordinator_address={addr!r}, num_processes={n!r}, process_id={rank!r}"
                         "; set DARRAY_COORDINATOR_ADDRESS (host:port), DARRAY_NUM_PROCESSES "
                         "and DARRAY_PROCESS_ID")
    if n < 1 or not 0 <= rank < n:
        raise ValueError(f"process_id={rank} must be in [0, num_processes={n})")
    if ":" not in addr:
        raise ValueError(f"coordinator_address={addr!r} must be 'host:port'")
    return launch


def _mpi_coordinator(launcher, rank, size, env) -> str | None:
    if "DARRAY_COORDINATOR_ADDRESS" in env:
        return env["DARRAY_COORDINATOR_ADDRESS"]
    try:
        from mpi4py import MPI  # optional: importing mpi4py initialises MPI
    except ImportError:
        pass
    else:
        address = None
        if MPI.COMM_WORLD.Get_rank() == 0:
            address = f"{socket.gethostname()}:{_free_port()}"
        return MPI.COMM_WORLD.bcast(address, root=0)
    local = env.get("MPI_LOCALNRANKS") or env.get("OMPI_COMM_WORLD_LOCAL_SIZE")
    if local is not None and int(local) == size:
        # One node, no mpi4py: every rank's parent is the same launcher proxy, so its pid
        # gives all ranks the same port without any communication.
        return f"127.0.0.1:{20000 + (os.getppid() * 7919) % 30000}"
    return None


def local_process_count(environ=None) -> int | None:
    """How many processes of this job run on this node, from the launcher's environment
    (MPICH's, Open MPI's or SLURM's); None where none says."""
    env = os.environ if environ is None else environ
    for name in ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"):
        if env.get(name, "").isdigit():
            return int(env[name])
    # SLURM_TASKS_PER_NODE lists every node's count, runs compressed: "2(x3),1"
    per_node, node = env.get("SLURM_TASKS_PER_NODE"), env.get("SLURM_NODEID", "")
    if per_node and node.isdigit():
        counts = []
        for run in per_node.split(","):
            count, compressed, times = run.partition("(x")
            if compressed and not (times.endswith(")") and times[:-1].isdigit()):
                return None
            if not count.isdigit():
                return None
            counts += [int(count)] * (int(times[:-1]) if compressed else 1)
        return counts[int(node)] if int(node) < len(counts) else None
    return None


def cpu_binding(local_processes=None, cores=None, node_cores=None, environ=None) -> str:
    """Whether this process's CPU threads have cores of their own, and how to ask.

    XLA:CPU sizes its thread pools to the cores the process may run on (its affinity mask), so
    unbound processes that share a node each start pools as wide as the node and take cores
    from each other: under MPICH's mpiexec, which binds nothing unless told, darray's MPI FFT
    round trip on 2 ranks of a 2-core node took up to 1.7x as long as with each rank bound to
    a core (docs/performance.md, "Bind each process to its cores"). Defaults: the launcher's
    count of processes on this node (`local_process_count`), this process's affinity mask, the
    node's cores.
    """
    if local_processes is None:
        local_processes = local_process_count(environ)
    if cores is None:
        if not hasattr(os, "sched_getaffinity"):  # macOS, Windows
            return "unknown: this system does not say which cores a process may run on"
        cores = len(os.sched_getaffinity(0))
    if node_cores is None:
        node_cores = os.cpu_count() or cores
    mine = f"{cores} of the node's {node_cores} cores"
    if local_processes is None:
        return (f"unknown: this process may run on {mine}; the launcher does not say how many "
                "processes share the node")
    if local_processes * cores <= node_cores:
        return f"ok: each of the {local_processes} process(es) on this node has {mine}"
    return (f"oversubscribed: the {local_processes} processes on this node may each run on "
            f"{mine}, and XLA sizes its thread pools to them; bind each process to its own "
            "cores: mpiexec --bind-to core (MPICH, Open MPI) or srun --cpu-bind=cores "
            "(see darray's performance guide, 'Bind each process to its cores')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


_STATE: dict = {}


def initialize(coordinator_address=None, num_processes=None, process_id=None, *,
               local_device_ids=None, heartbeat_timeout=DEFAULT_TIMEOUT_S,
               shutdown_timeout=DEFAULT_TIMEOUT_S, initialization_timeout=300,
               watchdog=True) -> dict:
    """Start jax.distributed for this launcher, with bounded failure handling.

    Args:
      coordinator_address, num_processes, process_id: as jax.distributed.initialize; give all
        three or none (then they are detected, see the module docstring).
      local_device_ids: passed to JAX (e.g. the GPU of this rank).
      heartbeat_timeout: seconds without a heartbeat after which a process counts as dead
        (JAX's heartbeat and darray's watchdog).
      shutdown_timeout: seconds the final shutdown barrier waits for the others.
      initialization_timeout: seconds to wait for every process to connect.
      watchdog: run darray's watchdog (a dead process is named to all others, which exit with
        status DEAD_PEER_EXIT within about `heartbeat_timeout`, or at once if its sockets close).

    Returns:
      `report()`. A single process (no launcher found) is not an error: nothing is started.
    """
    for name, value in (("heartbeat_timeout", heartbeat_timeout),
                        ("shutdown_timeout", shutdown_timeout),
                        ("initialization_timeout", initialization_timeout)):
        if not isinstance(value, (int, float)) or value < 1:
            raise ValueError(f"{name}={value!r} must be a number of seconds >= 1")
    if _STATE.get("launch") is not None:
        raise RuntimeError("darray.distributed.initialize was already called in this process")
    launch = detect_launch(coordinator_address, num_processes, process_id)
    if launch.launcher == "single":
        _STATE["launch"] = launch
        return report()
    jax.distributed.initialize(launch.coordinator_address, launch.num_processes,
                               launch.process_id, local_device_ids=local_device_ids,
                               initialization_timeout=int(initialization_timeout),
                               heartbeat_timeout_seconds=int(heartbeat_timeout),
                               shutdown_timeout_seconds=int(shutdown_timeout))
    _STATE["launch"] = launch
    address = launch.coordinator_address
    if watchdog and address is not None and jax.process_count() > 1:
        host, coordinator_port = address.rsplit(":", 1)
        port = int(os.environ.get("DARRAY_WATCHDOG_PORT", int(coordinator_port) + 1))
        _STATE["watchdog"] = _Watchdog(host, port, jax.process_index(), jax.process_count(),
                                       float(heartbeat_timeout))
    return report()


def gather(x):
    """The whole of `x` as a numpy array on every process. Collective: every process must call
    it (in the same order); a host read on one process alone (np.asarray(x), print, float,
    tolist) of an array spanning other processes raises instead of waiting for them.

    Args:
      x: a DistArray, a jax.Array (gathered with process_allgather when it spans processes) or
        anything np.asarray takes (returned as np.asarray(x)).

    Returns:
      numpy.ndarray of x's logical global shape (padding and ghost cells removed).

    Layout:
      One all-gather of x's blocks across processes (none on a single process).
    """
    if hasattr(x, "layout") and hasattr(x, "data"):  # a DistArray
        return physical.gather_to_host(x.data, x.layout)
    if host.spans_other_processes(x):
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


def report() -> dict:
    """Where this process stands: launcher, process index and count, its devices, all devices,
    whether its large host buffers come as huge pages and its smaller ones are reused
    (`memory.huge_page_buffers`, `memory.buffer_reuse`) and whether its threads have cores of
    their own (`cpu_binding`)."""
    launch = _STATE.get("launch")
    local = local_process_count()
    if local is None and jax.process_count() == 1:
        local = 1
    return {
        "launcher": launch.launcher if launch else "not initialized by darray",
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": [str(d) for d in jax.local_devices()],
        "device_count": jax.device_count(),
        "backend": jax.default_backend(),
        "watchdog": "watchdog" in _STATE,
        "huge_page_buffers": huge_page_buffers(),
        "buffer_reuse": buffer_reuse(),
        "cpu_binding": cpu_binding(local) if jax.default_backend() == "cpu" else
                       "not applicable: the devices are not CPUs",
    }


class _Watchdog:
    """Star of TCP connections to process 0; see the module docstring for the protocol.

    Messages are single lines: "hello R", "ping", "bye" (a normal end), "dead K" (from process
    0: process K died; from process K itself: it is failing with an uncaught exception).
    """

    def __init__(self, host, port, rank, size, timeout):
        self.rank, self.size, self.timeout = rank, size, timeout
        self.lock = threading.Lock()
        self.peers: dict[int, socket.socket] = {}
        self.finished = self.crashed = False
        self._previous_hook = sys.excepthook
        sys.excepthook = self._crash_hook
        if rank == 0:
            try:
                self.server = socket.create_server(("", port))
            except OSError as err:
                raise RuntimeError(f"darray.distributed: the watchdog cannot listen on port "
                                   f"{port} ({err}); set DARRAY_WATCHDOG_PORT to a free port or "
                                   "pass watchdog=False") from None
            threading.Thread(target=self._accept, daemon=True).start()
        else:
            sock = self._connect(host, port)
            self.peers[0] = sock
            sock.sendall(f"hello {rank}\n".encode())
            threading.Thread(target=self._listen, args=(0, sock), daemon=True).start()
        threading.Thread(target=self._ping, daemon=True).start()
        atexit.register(self.close)

    def _connect(self, host, port):
        deadline = time.monotonic() + 60
        while True:
            try:
                return socket.create_connection((host, port), timeout=5)
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"darray.distributed: cannot reach the watchdog of process "
                                       f"0 at {host}:{port}; set DARRAY_WATCHDOG_PORT to a free "
                                       "port or pass watchdog=False") from None
                time.sleep(0.2)

    def _accept(self):
        while len(self.peers) < self.size - 1:
            sock, _ = self.server.accept()
            hello = self._readline(sock.makefile("rb"))
            rank = int(hello.split()[1])
            with self.lock:
                self.peers[rank] = sock
            threading.Thread(target=self._listen, args=(rank, sock), daemon=True).start()

    @staticmethod
    def _readline(stream) -> str:
        return stream.readline().decode().strip()

    def _listen(self, peer, sock):
        sock.settimeout(self.timeout)
        stream = sock.makefile("rb")
        try:
            while True:
                line = self._readline(stream)
                if line == "bye":
                    return
                if line.startswith("dead "):
                    self._die(int(line.split()[1]), "it failed, as reported to this process")
                if line == "":
                    break  # the connection closed without goodbye: the peer died
        except (OSError, ValueError):
            pass  # a timeout (no ping) or a reset: the peer is gone
        if not self.finished:
            self._die(peer, "its connection closed or its heartbeat stopped")

    def _send(self, sock, text):
        try:
            sock.sendall(text.encode())
        except OSError:
            pass  # that peer's own listener reports it

    def _ping(self):
        while not self.finished:
            with self.lock:
                peers = list(self.peers.values())
            for sock in peers:
                self._send(sock, "ping\n")
            time.sleep(max(0.5, self.timeout / 4))

    def _die(self, dead, how):
        if self.finished:
            return
        self.finished = True
        if self.rank == 0:  # tell everyone else which process died
            with self.lock:
                others = [s for r, s in self.peers.items() if r != dead]
            for sock in others:
                self._send(sock, f"dead {dead}\n")
        sys.stderr.write(f"\ndarray.distributed: process {dead} of {self.size} died ({how}); "
                         f"ending process {self.rank} (exit status {DEAD_PEER_EXIT}) instead of "
                         f"waiting in a collective\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(DEAD_PEER_EXIT)

    def _crash_hook(self, *exc_info):
        # An uncaught exception is a death, not a normal end. Tell the peers now: this process
        # may yet sit in JAX's shutdown barrier for shutdown_timeout before it really exits.
        # But first wait a moment: a collective also raises here when a peer has just died,
        # and then the listeners name that peer (and end this process) within milliseconds;
        # announcing this process at once would make the others blame the wrong one.
        deadline = time.monotonic() + CRASH_GRACE_S
        while not self.finished and time.monotonic() < deadline:
            time.sleep(0.05)
        self.crashed = True
        with self.lock:
            peers = list(self.peers.values())
        for sock in peers:
            self._send(sock, f"dead {self.rank}\n")
        self._previous_hook(*exc_info)

    def close(self):
        """A normal end: say goodbye so no peer mistakes this exit for a death."""
        if self.finished or self.crashed:
            return
        self.finished = True
        with self.lock:
            peers = list(self.peers.values())
        for sock in peers:
            self._send(sock, "bye\n")
