"""Backends: the mechanism that executes darray's pure-data plans.

A backend registers an FFT executor under a name. The pure-JAX backend ("jax": shard_map with
lax.all_to_all) is always available; a native backend (e.g. cuDecomp through XLA FFI) registers
itself under its own name when its extension is importable. Both run the same `Plan`.

An executor is ``execute(plan, data, norm, standalone) -> data``: it takes the physical input
array of ``plan.in_layout`` (a jax.Array or tracer) and returns the physical array of
``plan.out_layout``. It is called inside jit; it must not pin shardings (the caller does).
`standalone` is True when the transform is the whole program (an eager call), so nothing
around it could fuse with its first and last reorders (the MPI backend then runs those on its
native copy too).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from darray._src.backends.errors import HOW_TO_GET, BackendUnavailableError, how_to_get
from darray._src.backends.jax import fft_exec, halo_exchange
from darray._src.backends.jax.transpose import lax_exchange
from darray._src.base import compat, config


@dataclasses.dataclass(frozen=True)
class Selection:
    """Which backend executes an op: the one asked for, or "jax" where a native backend cannot
    express this plan (`reason` says why). Its repr makes such a fallback visible."""
    kind: str
    requested: str
    backend: str
    reason: str = ""
    settings: tuple[tuple[str, Any], ...] = ()
    impl: Callable | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def fell_back(self) -> bool:
        return self.backend != self.requested

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.settings)
        if self.fell_back:
            return (f"Selection({self.kind} on {self.backend!r}, fallback from "
                    f"{self.requested!r}: {self.reason}{extra})")
        return f"Selection({self.kind} on {self.backend!r}{extra})"


def _settings(backend: str) -> tuple[tuple[str, Any], ...]:
    if backend == "cudecomp":
        return (("transpose_comm", config.get_config("cudecomp_transpose_comm")),
                ("halo_comm", config.get_config("cudecomp_halo_comm")))
    return ()


def _option_of(env_var: str) -> str | None:
    return next((o.name for o in config.OPTIONS.values() if o.env == env_var), None)


class Registry:
    """Named implementations of one op family, with a built-in "jax" loaded on first use. FFT
    executors and halo fills both use one. Without a name, the family's own config option
    (e.g. ``fft_backend`` / ``$DARRAY_FFT_BACKEND``) decides, else ``transpose_backend``."""

    def __init__(self, kind: str, env_var: str, load_builtin: Callable[[], Callable]):
        self.kind, self.env_var, self._load_builtin = kind, env_var, load_builtin
        self.option = _option_of(env_var)
        self._entries: dict[str, Callable] = {}
        self._supports: dict[str, Callable] = {}
        self._usable: dict[str, Callable] = {}
        self._fallback: dict[str, Callable] = {}

    def register(self, name: str, impl: Callable, *, supports: Callable | None = None,
                 usable: Callable | None = None, fallback: Callable | None = None) -> None:
        """Make `impl` available under `name` (replaces an earlier registration).

        `supports(plan)` returns None when `impl` can run `plan`, else the reason it cannot (the
        plan then runs on "jax", recorded in the Selection). The plan is an fft `Plan`, or for
        halo fills the tuple ``(in_layout, out_layout, rules)``. `usable()` returns None when the
        backend can run on this machine, else the reason (selecting it then raises).
        `fallback()` returns None when it can run here, else the reason "jax" runs instead
        (selecting it then falls back, and `names()` leaves it out)."""
        self._entries[name] = impl
        for table in (self._supports, self._usable, self._fallback):
            table.pop(name, None)
        if supports is not None:
            self._supports[name] = supports
        if usable is not None:
            self._usable[name] = usable
        if fallback is not None:
            self._fallback[name] = fallback

    def unregister(self, name: str) -> None:
        """Forget backend `name` ("jax" cannot be removed)."""
        if name != "jax":
            for table in (self._entries, self._supports, self._usable, self._fallback):
                table.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """The registered backends that can run here."""
        self._ensure_builtin()
        return tuple(sorted(n for n in self._entries
                            if (n not in self._usable or self._usable[n]() is None)
                            and (n not in self._fallback or self._fallback[n]() is None)))

    def requested(self, name: str | None = None) -> str:
        """The backend name in force: `name`, else the family's option, else transpose_backend."""
        if name:
            return config.backend_name(name)  # 'NCCL', 'MPI', 'cuDecomp' as jaxDecomp writes
        own = (config.get_config(self.option) if self.option
               else os.environ.get(self.env_var, ""))
        return own or config.get_config("transpose_backend")

    def select(self, name: str | None = None, plan=None) -> Selection:
        """The Selection for `plan` (or for any plan when None); raises for unavailable names."""
        self._ensure_builtin()
        name = self.requested(name)
        impl = self._entries.get(name)
        if impl is None:
            if name in HOW_TO_GET:
                raise BackendUnavailableError(
                    f"backend={name!r}: the {self.kind} backend {name!r} is not compiled into "
                    f"this darray build; to get it, {how_to_get(name)}. Available here: "
                    f"{self.names()}")
            raise ValueError(f"backend={name!r} is not a registered {self.kind} backend; "
                             f"available: {self.names()}")
        why_not = self._usable[name]() if name in self._usable else None
        if why_not is not None:
            fix = how_to_get(name) if name in HOW_TO_GET else "see its documentation"
            raise BackendUnavailableError(
                f"backend={name!r}: the {self.kind} backend {name!r} cannot run here "
                f"({why_not}); to get it, {fix}")
        why_not = self._fallback[name]() if name in self._fallback else None
        if why_not is None and plan is not None and name in self._supports:
            why_not = self._supports[name](plan)
        if why_not is not None:
            return Selection(self.kind, name, "jax", why_not, (), self._entries["jax"])
        return Selection(self.kind, name, name, "", _settings(name), impl)

    def why_not(self, name: str) -> str | None:
        """None when backend `name` runs here, else why it does not (for reports such as
        ``python -m darray.info``: it runs nothing and imports no MPI)."""
        self._ensure_builtin()
        if name not in self._entries:
            return f"not registered (known: {sorted(self._entries)})"
        for table in (self._usable, self._fallback):
            if name in table and (reason := table[name]()) is not None:
                return reason
        return None

    def get(self, name: str | None = None) -> Callable:
        """The implementation `name` (default: see `requested`)."""
        impl = self.select(name).impl
        assert impl is not None  # select falls back to "jax", which is always registered
        return impl

    def _ensure_builtin(self) -> None:
        if "jax" not in self._entries:
            self._entries["jax"] = self._load_builtin()
            for name, native in _NATIVE.get(self.kind, {}).items():
                if name not in self._entries:
                    self.register(name, native.impl, supports=native.supports,
                                  usable=native.usable, fallback=native.fallback)


# The native backends: registered in every build; `usable` says when one cannot run here (not
# compiled in, no mpi4py, no GPU), and selecting it then raises BackendUnavailableError with the
# fix. Imported late, on first use: importing darray loads no native backend.
def _mpi_usable():
    from darray._src.backends import mpi_exec  # late: native, loaded on first use
    return mpi_exec.why_unusable()


def _mpi_fft(plan, data, norm, standalone=False):
    from darray._src.backends import mpi_exec  # late: native, loaded on first use
    return mpi_exec.execute(plan, data, norm, standalone)


def _mpi_halo(data, fill_value, **layouts_and_rules):
    from darray._src.backends import mpi_exec  # late: native, loaded on first use
    return mpi_exec.halo_fill(data, fill_value, **layouts_and_rules)


def _cudecomp(name):
    def call(*args, **kwargs):
        from darray._src.backends import cudecomp  # late: native, loaded on first use
        return getattr(cudecomp, name)(*args, **kwargs)
    return call


def _nccl(name):
    def call(*args, **kwargs):
        from darray._src.backends import nccl  # late: native, loaded on first use
        return getattr(nccl, name)(*args, **kwargs)
    return call


class NativeBackend(NamedTuple):
    """A native backend as every Registry of its kind registers it (see `Registry.register` for
    what each callable answers)."""
    impl: Callable
    supports: Callable | None = None
    usable: Callable | None = None
    fallback: Callable | None = None


# kind -> {name: NativeBackend}: native backends every Registry of that kind has. "nccl" falls
# back to "jax" (instead of raising) where it cannot run: it needs no extra install beyond a
# GPU build, so asking for it everywhere is a reasonable default.
_NATIVE = {
    "FFT": {"mpi": NativeBackend(_mpi_fft, usable=_mpi_usable),
            "cudecomp": NativeBackend(_cudecomp("execute"), supports=_cudecomp("supports"),
                                      usable=_cudecomp("usable")),
            "nccl": NativeBackend(_nccl("execute"), supports=_nccl("plan_reason"),
                                  fallback=_nccl("environment_reason"))},
    "halo": {"mpi": NativeBackend(_mpi_halo, usable=_mpi_usable),
             "cudecomp": NativeBackend(_cudecomp("halo_fill"), supports=_cudecomp("halo_supports"),
                                       usable=_cudecomp("usable")),
             "nccl": NativeBackend(_nccl("halo_fill"), supports=_nccl("halo_supports"),
                                   fallback=_nccl("environment_reason"))},
}


def _jax_fft_executor():
    return fft_exec.execute


DEFAULT_BACKEND_ENV = "DARRAY_FFT_BACKEND"
FFT_EXECUTORS = Registry("FFT", DEFAULT_BACKEND_ENV, _jax_fft_executor)
register_fft_executor = FFT_EXECUTORS.register
available_fft_backends = FFT_EXECUTORS.names
select_fft_backend = FFT_EXECUTORS.select
fft_executor = FFT_EXECUTORS.get


def _jax_halo_fill():
    return halo_exchange.fill


HALO_BACKEND_ENV = "DARRAY_HALO_BACKEND"
HALO_FILLS = Registry("halo", HALO_BACKEND_ENV, _jax_halo_fill)


# -- the exchanges of darray's own routes ----------------------------------------------------
# The split-axis FFT (four-step, Bluestein, and the split real-to-real transforms built on it)
# and the stencils (`pad`) are not plans an executor runs whole: they are darray's own steps
# with all-to-alls and face moves in between. A backend runs them when it offers those two
# moves per program: `all_to_all(x, names)` (row i of the leading axis to block i of the mesh
# axes `names`) and `permute(x, names, pairs, mesh)` (block-numbered ppermute).
class JaxExchanges:
    """XLA's collectives: lax.all_to_all and lax.ppermute."""

    def __init__(self, mesh):
        self.mesh = mesh

    @staticmethod
    def all_to_all(x, names):
        return lax_exchange(x, names)

    @staticmethod
    def permute(x, names, pairs, mesh):
        return compat.ppermute_blocks(x, names, pairs, mesh)


def _mpi_exchanges(mesh):
    from darray._src.backends import mpi_exec  # late: native, loaded on first use
    return mpi_exec.Exchanges(mesh)


# backend name -> factory(mesh) of the exchanges of one program (created inside the shard_map
# body: the MPI backend chains every exchange of a program through one order token)
EXCHANGES: dict[str, Callable] = {"jax": JaxExchanges, "mpi": _mpi_exchanges}

_WHOLE_PLANS = {
    "cudecomp": "cuDecomp's handlers run whole pencil transposes and halo updates of its own "
                "grid, not darray's row exchanges",
    "nccl": "the NCCL handlers run plan transposes and halo faces, not darray's row exchanges",
}


def select_exchanges(route: str, registry: Registry, name: str | None = None) -> Selection:
    """The backend whose exchanges run `route` (e.g. "FFT split-axis", "pad"): the one in force
    for `registry` when it offers them, else "jax" with the reason. Raises as
    `Registry.select` does for a backend that cannot run here."""
    chosen = registry.select(name)
    if chosen.backend in EXCHANGES:
        return dataclasses.replace(chosen, kind=route, impl=EXCHANGES[chosen.backend])
    reason = _WHOLE_PLANS.get(chosen.backend,
                              f"backend {chosen.backend!r} registers no row exchanges")
    return Selection(route, chosen.requested, "jax", f"{reason}; {route} runs on JAX's",
                     (), JaxExchanges)


# -- which backend each call ran on, for those who ask ----------------------------------------
_RECORDS = threading.local()


@contextlib.contextmanager
def record_backends():
    """Within the block, every darray call that exchanges data appends its `Selection` (the
    route, the backend asked for, the one that runs and why) to the list this yields. Recorded
    at each call, cached program or not; thread-local, as config_context is."""
    log: list[Selection] = []
    stack = getattr(_RECORDS, "stack", None)
    if stack is None:
        stack = _RECORDS.stack = []
    stack.append(log)
    try:
        yield log
    finally:
        stack.remove(log)


def record(selection: Selection) -> Selection:
    """Append `selection` to every open `record_backends` log (none while `unrecorded`);
    returns it."""
    if not getattr(_RECORDS, "muted", 0):
        for log in getattr(_RECORDS, "stack", ()):
            log.append(selection)
    return selection


@contextlib.contextmanager
def unrecorded():
    """Within the block, `record` appends nothing: a route made of other darray calls (the
    split real-to-real transforms) records its own Selection once per call, not theirs, which
    only its first call would trace."""
    _RECORDS.muted = getattr(_RECORDS, "muted", 0) + 1
    try:
        yield
    finally:
        _RECORDS.muted -= 1
