"""darray's options, each declared once: name, type, default, environment variable, help, check.

Read with `get_config(name)`, change with `set_config(name=value)` or, for a block of code,
`with config_context(name=value): ...`. The environment variable (``DARRAY_<NAME>``) gives the
initial value, so a run can be reconfigured without code changes.

An option marked ``traced`` is read while a program is traced (which backend runs an FFT,
whether mismatched layouts raise): its value is part of every program's key, as JAX's own
``include_in_jit_key`` options are. darray publishes those values to JAX through a
`jax.make_user_context` object, so a user's ``jax.jit`` function retraces after a change
instead of replaying what the old value traced, and `program_key()` goes into the key of
darray's own program cache (base/program_cache.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any, Never

import jax


def _as_given(value):
    return value


@dataclasses.dataclass(frozen=True)
class Option:
    name: str
    type: Any  # a type, or a union of types (isinstance accepts both)
    default: Any
    help: str
    check: Callable[[Any], bool]  # applied to the canonical spelling
    accepted: str  # what `check` accepts, for error messages
    # Read while a program is traced, hence part of the program key. True unless declared
    # otherwise: forgetting the mark then costs a retrace, never a stale program.
    traced: bool = True
    canonical: Callable[[Any], Any] = _as_given  # the one spelling stored and returned
    # How the environment variable's text becomes a value (None: `type` applied to it).
    parse: Callable[[str], Any] | None = None

    @property
    def env(self) -> str:
        return "DARRAY_" + self.name.upper()


TRANSPOSE_BACKENDS = ("jax", "cudecomp", "mpi", "nccl")
# cuDecomp's names for its communication backends (cudecompTransposeCommBackend_t and
# cudecompHaloCommBackend_t without the prefix), so users can copy them from its docs.
CUDECOMP_TRANSPOSE_COMMS = ("NCCL", "NCCL_PL", "MPI_P2P", "MPI_P2P_PL", "MPI_A2A", "NVSHMEM",
                            "NVSHMEM_PL")
CUDECOMP_HALO_COMMS = ("MPI", "MPI_BLOCKING", "NCCL", "NVSHMEM", "NVSHMEM_BLOCKING")


def backend_name(name: str) -> str:
    """A built-in backend name in any case ('NCCL', 'MPI' as jaxDecomp users write them,
    'cuDecomp') -> darray's spelling; any other name (a registered backend) unchanged."""
    if isinstance(name, str) and name.lower() in TRANSPOSE_BACKENDS:
        return name.lower()
    return name


LOCAL_FFT_PROVIDERS = ("xla", "fftw", "auto")
FFTW_PLANNERS = ("estimate", "measure")


def _lower(value):
    return value.lower() if isinstance(value, str) else value


def _comm_name(*prefixes: str) -> Callable[[Any], Any]:
    """cuDecomp comm names in any case, with or without the prefix of cuDecomp's enum
    (``CUDECOMP_TRANSPOSE_COMM_``) or jaxDecomp's constant (``TRANSPOSE_COMM_``)."""
    def canonical(value):
        if not isinstance(value, str):
            return value
        value = value.upper()
        for prefix in prefixes:
            if value.startswith(prefix):
                return value[len(prefix):]
        return value
    return canonical


def _optional_int(text: str) -> int | None:
    """An environment variable's text for an int-or-None option ('' and 'none': None)."""
    return None if text.strip().lower() in ("", "none") else int(text)


# The type of max_temp_blocks, one object so that `typing.get_type_hints` of the keyword
# signatures below returns this very object (tests/unit/test_config.py compares them).
OptionalInt = int | None


def _one_of(values, *, any_case=False) -> str:
    return "one of " + ", ".join(repr(v) for v in values) + (" (any case)" if any_case else "")


OPTIONS = {opt.name: opt for opt in (
    Option("mismatch", str, "redistribute",
           "What elementwise operations do when DistArray operands have different layouts: "
           "'redistribute' moves them to the output layout (communication), 'raise' raises "
           "LayoutError so that hidden communication is found during development.",
           lambda v: v in ("redistribute", "raise"), "'redistribute' or 'raise'",
           traced=True),
    Option("transpose_backend", str, "jax",
           "Which backend runs the transposes of distributed FFTs and the halo fills: 'jax' "
           "(shard_map + XLA collectives, always available), 'cudecomp' (cuDecomp custom calls "
           "on NVIDIA GPUs), 'nccl' (darray's own custom calls on XLA's NCCL communicator; runs "
           "on 'jax' where it cannot run, e.g. off GPU) or 'mpi' (MPI all-to-all on CPU "
           "clusters); any case ('NCCL', 'MPI' as jaxDecomp writes them). A native backend that "
           "is not compiled in raises an error saying how to build it; plans it cannot express "
           "run on 'jax', which the backend selection records.",
           lambda v: v in TRANSPOSE_BACKENDS, _one_of(TRANSPOSE_BACKENDS, any_case=True),
           traced=True, canonical=backend_name),
    Option("fft_backend", str, "",
           "Backend for FFT transposes only (any registered name; the built-in ones in any "
           "case); '' follows transpose_backend.", lambda v: v == "" or v.isidentifier(),
           "'' or a registered backend name", traced=True, canonical=backend_name),
    Option("halo_backend", str, "",
           "Backend for halo fills only (any registered name; the built-in ones in any case); "
           "'' follows transpose_backend.",
           lambda v: v == "" or v.isidentifier(), "'' or a registered backend name",
           traced=True, canonical=backend_name),
    Option("cudecomp_transpose_comm", str, "NCCL",
           "cuDecomp's communication backend for transposes (any case; cuDecomp's "
           "CUDECOMP_TRANSPOSE_COMM_ and jaxDecomp's TRANSPOSE_COMM_ prefixes are accepted).",
           lambda v: v in CUDECOMP_TRANSPOSE_COMMS,
           _one_of(CUDECOMP_TRANSPOSE_COMMS, any_case=True), traced=True,
           canonical=_comm_name("CUDECOMP_TRANSPOSE_COMM_", "TRANSPOSE_COMM_")),
    Option("cudecomp_halo_comm", str, "NCCL",
           "cuDecomp's communication backend for halo exchanges (any case; cuDecomp's "
           "CUDECOMP_HALO_COMM_ and jaxDecomp's HALO_COMM_ prefixes are accepted).",
           lambda v: v in CUDECOMP_HALO_COMMS, _one_of(CUDECOMP_HALO_COMMS, any_case=True),
           traced=True, canonical=_comm_name("CUDECOMP_HALO_COMM_", "HALO_COMM_")),
    Option("small_array_cells", int, 65536,
           "Arrays with fewer cells than this, created without a placement (no mesh=, "
           "device= or spec=), and every eager 0-d result live on one device (the default "
           "device), uncommitted: an op on them is a one-device program, and combined with a "
           "distributed array they move to its mesh (docs/performance.md, 'Small arrays'). "
           "0 keeps every array on the default mesh. Runs of more than one process keep "
           "0-d results replicated over their mesh, so that every process holds them.",
           lambda v: not isinstance(v, bool) and v >= 0, "an int >= 0",
           traced=True),
    Option("max_temp_blocks", OptionalInt, None,
           "None (the default) runs every program. An int refuses, with MemoryBudgetError "
           "naming the function, any program darray compiles whose temporaries per device "
           "exceed that many blocks (a block: the larger of a device's share of the program's "
           "inputs and of its outputs; XLA's own plan, read before the program runs), so a "
           "run at 64^3 finds what would run out of memory at 2048^3 (docs/performance.md, "
           "'Memory budget'). Checked per eager operation; inside a user's jax.jit the "
           "operations are one program: check it with darray.check_memory.",
           lambda v: v is None or (not isinstance(v, bool) and v >= 1), "None or an int >= 1",
           traced=False, parse=_optional_int),
    Option("local_fft", str, "xla",
           "Which library runs the local FFT of each block on CPU: 'xla' (XLA's own, the "
           "default), 'fftw' (FFTW, which the user installs: the pyFFTW wheel or a system "
           "libfftw3, found at run time and never shipped with darray; FFTW is GPL, see "
           "docs/fftw.md) or 'auto' (FFTW where it is found, else XLA's). GPU programs always "
           "use XLA's FFT.",
           lambda v: v in LOCAL_FFT_PROVIDERS, _one_of(LOCAL_FFT_PROVIDERS, any_case=True),
           traced=True, canonical=_lower),
    Option("fftw_planner", str, "estimate",
           "How FFTW plans a local FFT the first time it meets its shape: 'estimate' (at once, "
           "a heuristic plan) or 'measure' (times candidate plans first; slower to plan, often "
           "faster to run). Plans are kept for the process.",
           lambda v: v in FFTW_PLANNERS, _one_of(FFTW_PLANNERS, any_case=True), traced=True,
           canonical=_lower),
)}


def _validated(name: str, value):
    """`value` in the option's canonical spelling, or ValueError naming what is accepted."""
    opt = OPTIONS.get(name)
    if opt is None:
        raise ValueError(f"unknown darray config option {name!r}; known options: "
                         f"{sorted(OPTIONS)}")
    if isinstance(value, opt.type):
        canonical = opt.canonical(value)
        if opt.check(canonical):
            return canonical
    raise ValueError(f"darray config option {name}={value!r} is not accepted; "
                     f"use {opt.accepted}")


def _initial() -> dict[str, Any]:
    values = {}
    for name, opt in OPTIONS.items():
        raw = os.environ.get(opt.env)
        if raw is None:
            values[name] = opt.default
        else:
            try:
                values[name] = _validated(name, (opt.parse or opt.type)(raw))
            except (ValueError, TypeError) as err:
                raise ValueError(f"environment variable {opt.env}={raw!r}: {err}") from None
    return values


# The process-wide values: the environment's, then whatever `set_config` stored.
_VALUES = _initial()
_lock = threading.Lock()  # one writer at a time keeps _VALUES and the published key in step


class _Local(threading.local):
    """This thread's `config_context` overrides (innermost block last wins), and the program
    key they give; a new thread starts with none, as JAX's own config contexts do."""
    overrides: dict[str, Any] = {}
    traced: tuple[tuple[str, Any], ...] = ()  # the traced options among `overrides`


_LOCAL = _Local()


def _traced_values() -> tuple[tuple[str, Any], ...]:
    return tuple((name, _VALUES[name]) for name, opt in OPTIONS.items() if opt.traced)


# The traced options' values, as JAX sees them: a user context is part of the key of every
# jax.jit cache (tracing, lowering, compilation), so a jitted function traced under other
# values is traced again. Two of them: the process-wide values (set_global by set_config, seen
# by every thread) and this thread's config_context overrides (entered as JAX's thread-local
# context), so a change of either retraces. Created once, at import (JAX: creating one is not
# thread-safe).
_JIT_CONTEXT = jax.make_user_context(_traced_values())
_JIT_OVERRIDES = jax.make_user_context(())
_KEY = [_traced_values()]


# Whether a max_temp_blocks limit may be in force: set process-wide, or in an open
# config_context of any thread. The program cache reads this one item on every lookup, so with
# no limit anywhere (the default) the memory check costs nothing more; where it is True the
# check reads the thread's own value (base/memory_budget.py).
MEMORY_LIMITED = [False]
_LIMITING_BLOCKS = [0]  # open config_context blocks, in any thread, that set a limit


def _update_memory_limited() -> None:
    MEMORY_LIMITED[0] = _VALUES["max_temp_blocks"] is not None or _LIMITING_BLOCKS[0] > 0


_update_memory_limited()  # DARRAY_MAX_TEMP_BLOCKS may have set one


def _store(values: dict[str, Any]) -> None:
    with _lock:
        _VALUES.update(values)
        _update_memory_limited()
        key = _traced_values()
        if key != _KEY[0]:
            _KEY[0] = key
            _JIT_CONTEXT.set_global(key)


def program_key() -> tuple[tuple[str, Any], ...]:
    """The values of the options read while tracing, ``((name, value), ...)``, as this thread
    sees them: part of the key of every program darray caches, as they are of every jax.jit
    cache (see the module doc)."""
    traced = _LOCAL.traced
    if not traced:
        return _KEY[0]
    over = dict(traced)
    return tuple((name, over.get(name, value)) for name, value in _KEY[0])


def get_config(name: str):
    """The current value of option `name` (see `darray._src.base.config.OPTIONS`): this thread's
    innermost `config_context` value, else the process-wide one."""
    if name not in OPTIONS:
        _validated(name, None)
    overrides = _LOCAL.overrides
    return overrides[name] if name in overrides else _VALUES[name]


class _Unset:
    """The default of every `set_config` keyword: the option is left as it is."""
    def __repr__(self) -> str:
        return "<unchanged>"


_UNSET: Any = _Unset()


def _given(local_vars: dict[str, Any], unknown: dict[str, Any]) -> dict[str, Any]:
    """The options a keyword call named, checked (unknown names raise ValueError, as before the
    signature was typed), in their canonical spelling."""
    given = {name: local_vars[name] for name in OPTIONS if local_vars[name] is not _UNSET}
    given.update(unknown)
    return {name: _validated(name, value) for name, value in given.items()}


# The signatures below name every option of OPTIONS with its type, so a type checker and an IDE
# see them; tests/unit/test_config.py fails when they and OPTIONS disagree. Unknown keywords
# still reach `_given` through **unknown (typed Never: a type checker flags them) and raise
# the ValueError that names the known options.
def set_config(*, mismatch: str = _UNSET, transpose_backend: str = _UNSET,
               fft_backend: str = _UNSET, halo_backend: str = _UNSET,
               cudecomp_transpose_comm: str = _UNSET, cudecomp_halo_comm: str = _UNSET,
               small_array_cells: int = _UNSET,
               max_temp_blocks: OptionalInt = _UNSET, local_fft: str = _UNSET,
               fftw_planner: str = _UNSET, **unknown: Never) -> None:
    """Set options, e.g. ``darray.set_config(mismatch="raise")``; all are checked first.

    Options read while tracing (``OPTIONS[name].traced``) reach the next call, jitted or not:
    a ``jax.jit`` function traced before retraces."""
    _store(_given(locals(), unknown))


@contextlib.contextmanager
def config_context(*, mismatch: str = _UNSET, transpose_backend: str = _UNSET,
                   fft_backend: str = _UNSET, halo_backend: str = _UNSET,
                   cudecomp_transpose_comm: str = _UNSET, cudecomp_halo_comm: str = _UNSET,
                   small_array_cells: int = _UNSET,
                   max_temp_blocks: OptionalInt = _UNSET, local_fft: str = _UNSET,
                   fftw_planner: str = _UNSET, **unknown: Never):
    """Set options inside a ``with`` block, for this thread only, and restore them on exit.

    Other threads keep their own values (as with JAX's config contexts); `set_config` changes
    the process-wide values that every thread sees outside its own blocks."""
    checked = _given(locals(), unknown)
    saved = (_LOCAL.overrides, _LOCAL.traced)
    overrides = {**saved[0], **checked}
    traced = tuple((name, overrides[name]) for name, opt in OPTIONS.items()
                   if opt.traced and name in overrides)
    limiting = checked.get("max_temp_blocks") is not None
    if limiting:
        with _lock:
            _LIMITING_BLOCKS[0] += 1
            _update_memory_limited()
    _LOCAL.overrides, _LOCAL.traced = overrides, traced
    try:
        with _JIT_OVERRIDES(traced):
            yield
    finally:
        _LOCAL.overrides, _LOCAL.traced = saved
        if limiting:
            with _lock:
                _LIMITING_BLOCKS[0] -= 1
                _update_memory_limited()
