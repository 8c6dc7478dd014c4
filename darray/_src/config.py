"""darray's options, each declared once: name, type, default, environment variable, help, check.

Read with `get_config(name)`, change with `set_config(name=value)` or, for a block of code,
`with config_context(name=value): ...`. The environment variable (``DARRAY_<NAME>``) gives the
initial value, so a run can be reconfigured without code changes.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any, Callable


@dataclasses.dataclass(frozen=True)
class Option:
    name: str
    type: type
    default: Any
    help: str
    check: Callable[[Any], bool]
    accepted: str  # what `check` accepts, for error messages

    @property
    def env(self) -> str:
        return "DARRAY_" + self.name.upper()


TRANSPOSE_BACKENDS = ("jax", "cudecomp", "mpi", "nccl")
# cuDecomp's names for its communication backends (cudecompTransposeCommBackend_t and
# cudecompHaloCommBackend_t without the prefix), so users can copy them from its docs.
CUDECOMP_TRANSPOSE_COMMS = ("NCCL", "NCCL_PL", "MPI_P2P", "MPI_P2P_PL", "MPI_A2A", "NVSHMEM",
                            "NVSHMEM_PL")
CUDECOMP_HALO_COMMS = ("MPI", "MPI_BLOCKING", "NCCL", "NVSHMEM", "NVSHMEM_BLOCKING")


def _one_of(values) -> str:
    return "one of " + ", ".join(repr(v) for v in values)


OPTIONS = {opt.name: opt for opt in (
    Option("mismatch", str, "redistribute",
           "What elementwise operations do when DistArray operands have different layouts: "
           "'redistribute' moves them to the output layout (communication), 'raise' raises "
           "LayoutError so that hidden communication is found during development.",
           lambda v: v in ("redistribute", "raise"), "'redistribute' or 'raise'"),
    Option("transpose_backend", str, "jax",
           "Which backend runs the transposes of distributed FFTs and the halo fills: 'jax' "
           "(shard_map + XLA collectives, always available), 'cudecomp' (cuDecomp custom calls "
           "on NVIDIA GPUs), 'nccl' (darray's own custom calls on XLA's NCCL communicator; runs "
           "on 'jax' where it cannot run, e.g. off GPU) or 'mpi' (MPI all-to-all on CPU "
           "clusters). A native backend that is "
           "not compiled in raises an error saying how to build it; plans it cannot express run "
           "on 'jax', which the backend selection records.",
           lambda v: v in TRANSPOSE_BACKENDS, _one_of(TRANSPOSE_BACKENDS)),
    Option("fft_backend", str, "",
           "Backend for FFT transposes only (any registered name); '' follows "
           "transpose_backend.", lambda v: v == "" or v.isidentifier(),
           "'' or a registered backend name"),
    Option("halo_backend", str, "",
           "Backend for halo fills only (any registered name); '' follows transpose_backend.",
           lambda v: v == "" or v.isidentifier(), "'' or a registered backend name"),
    Option("cudecomp_transpose_comm", str, "NCCL",
           "cuDecomp's communication backend for transposes.",
           lambda v: v in CUDECOMP_TRANSPOSE_COMMS, _one_of(CUDECOMP_TRANSPOSE_COMMS)),
    Option("cudecomp_halo_comm", str, "NCCL",
           "cuDecomp's communication backend for halo exchanges.",
           lambda v: v in CUDECOMP_HALO_COMMS, _one_of(CUDECOMP_HALO_COMMS)),
    Option("small_array_cells", int, 65536,
           "Arrays with fewer cells than this, created without a placement (no mesh=, "
           "device= or spec=), and every eager 0-d result live on one device (the default "
           "device), uncommitted: an op on them is a one-device program, and combined with a "
           "distributed array they move to its mesh (docs/performance.md, 'Small arrays'). "
           "0 keeps every array on the default mesh. Runs of more than one process keep "
           "0-d results replicated over their mesh, so that every process holds them.",
           lambda v: not isinstance(v, bool) and v >= 0, "an int >= 0"),
)}


def _validated(name: str, value):
    opt = OPTIONS.get(name)
    if opt is None:
        raise ValueError(f"unknown darray config option {name!r}; known options: "
                         f"{sorted(OPTIONS)}")
    if not isinstance(value, opt.type) or not opt.check(value):
        raise ValueError(f"darray config option {name}={value!r} is not accepted; "
                         f"use {opt.accepted}")
    return value


def _initial() -> dict[str, Any]:
    values = {}
    for name, opt in OPTIONS.items():
        raw = os.environ.get(opt.env)
        if raw is None:
            values[name] = opt.default
        else:
            try:
                values[name] = _validated(name, opt.type(raw))
            except ValueError as err:
                raise ValueError(f"environment variable {opt.env}={raw!r}: {err}") from None
    return values


_VALUES = _initial()


def get_config(name: str):
    """The current value of option `name` (see `darray._src.config.OPTIONS`)."""
    if name not in OPTIONS:
        _validated(name, None)
    return _VALUES[name]


def set_config(**options) -> None:
    """Set options, e.g. ``darray.set_config(mismatch="raise")``; all are checked first."""
    checked = {name: _validated(name, value) for name, value in options.items()}
    _VALUES.update(checked)


@contextlib.contextmanager
def config_context(**options):
    """Set options inside a ``with`` block and restore the previous values on exit."""
    checked = {name: _validated(name, value) for name, value in options.items()}
    saved = {name: _VALUES[name] for name in checked}
    _VALUES.update(checked)
    try:
        yield
    finally:
        _VALUES.update(saved)
