"""Backends: the mechanism that executes darray's pure-data plans.

A backend registers an FFT executor under a name. The pure-JAX backend ("jax": shard_map with
lax.all_to_all) is always available; a native backend (e.g. cuDecomp through XLA FFI) registers
itself under its own name when its extension is importable. Both run the same `Plan`.

An executor is ``execute(plan, data, norm) -> data``: it takes the physical input array of
``plan.in_layout`` (a jax.Array or tracer) and returns the physical array of
``plan.out_layout``. It is called inside jit; it must not pin shardings (the caller does).
"""
from __future__ import annotations

import os
from typing import Callable

class Registry:
    """Named implementations of one op family, with a built-in "jax" loaded on first use and
    a default chosen by an environment variable. FFT executors and halo fills both use one."""

    def __init__(self, kind: str, env_var: str, load_builtin: Callable[[], Callable]):
        self.kind, self.env_var, self._load_builtin = kind, env_var, load_builtin
        self._entries: dict[str, Callable] = {}

    def register(self, name: str, impl: Callable) -> None:
        """Make `impl` available under `name` (replaces an earlier registration)."""
        self._entries[name] = impl

    def names(self) -> tuple[str, ...]:
        self._ensure_builtin()
        return tuple(sorted(self._entries))

    def get(self, name: str | None = None) -> Callable:
        """The implementation `name` (default: $env_var, else "jax")."""
        self._ensure_builtin()
        name = name or os.environ.get(self.env_var) or "jax"
        try:
            return self._entries[name]
        except KeyError:
            raise ValueError(f"backend={name!r} is not a registered {self.kind} backend; "
                             f"available: {self.names()}") from None

    def _ensure_builtin(self) -> None:
        if "jax" not in self._entries:
            self._entries["jax"] = self._load_builtin()


def _jax_fft_executor():
    from darray._src.backends.jax import fft_exec
    return fft_exec.execute


DEFAULT_BACKEND_ENV = "DARRAY_FFT_BACKEND"
FFT_EXECUTORS = Registry("FFT", DEFAULT_BACKEND_ENV, _jax_fft_executor)
register_fft_executor = FFT_EXECUTORS.register
available_fft_backends = FFT_EXECUTORS.names
fft_executor = FFT_EXECUTORS.get
