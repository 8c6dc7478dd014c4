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

_FFT_EXECUTORS: dict[str, Callable] = {}
DEFAULT_BACKEND_ENV = "DARRAY_FFT_BACKEND"


def register_fft_executor(name: str, execute: Callable) -> None:
    """Make `execute` available as FFT backend `name` (replaces an earlier registration)."""
    _FFT_EXECUTORS[name] = execute


def available_fft_backends() -> tuple[str, ...]:
    _ensure_builtin()
    return tuple(sorted(_FFT_EXECUTORS))


def fft_executor(name: str | None = None) -> Callable:
    """The executor registered as `name` (default: $DARRAY_FFT_BACKEND, else "jax")."""
    _ensure_builtin()
    name = name or os.environ.get(DEFAULT_BACKEND_ENV) or "jax"
    try:
        return _FFT_EXECUTORS[name]
    except KeyError:
        raise ValueError(f"backend={name!r} is not a registered FFT backend; available: "
                         f"{available_fft_backends()}") from None


def _ensure_builtin() -> None:
    if "jax" not in _FFT_EXECUTORS:
        from darray._src.backends.jax import fft_exec
        register_fft_executor("jax", fft_exec.execute)
