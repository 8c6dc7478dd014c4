"""darray.autotune: time the meshes, decompositions and backends for a problem and pick one.

A candidate is a process grid (a factorization of the device count into 1-3 mesh axes, split
over the leading array axes), an FFT decomposition (darray.fft's ``decomposition=``), a
transpose backend and, for cuDecomp, its communication settings. Every candidate is compiled
first; then all are timed in interleaved rounds (one call each per round), so that a burst of
load on a shared machine hits every candidate alike rather than the one being timed, and the
median per candidate is compared. The cheapest total over the requested operations wins.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from darray._src.api.creation import asarray
from darray._src.backends import registry as backend_registry
from darray._src.base import compat, config
from darray._src.base.program_cache import FFT, program_cache
from darray._src.fft.api import fftn, ifftn
from darray._src.halo.api import halo

OPS = ("fftn", "halo")
MESH_AXIS_NAMES = ("x", "y", "z")
DECOMPOSITIONS = ("auto", "pencil")


@dataclasses.dataclass(frozen=True)
class Choice:
    """One configuration: where the data lives and what moves it."""
    mesh_shape: tuple[int, ...]
    spec: tuple[str | None, ...]
    decomposition: str
    backend: str
    settings: tuple[tuple[str, Any], ...] = ()  # backend communication options (cuDecomp)

    @property
    def axis_names(self) -> tuple[str, ...]:
        return MESH_AXIS_NAMES[:len(self.mesh_shape)]

    def mesh(self, devices=None) -> jax.sharding.Mesh:
        """The mesh of this choice over `devices` (default: all devices)."""
        return compat.make_auto_mesh(self.mesh_shape, self.axis_names, devices=devices)

    def config(self) -> dict[str, Any]:
        """Options for ``darray.set_config(**c)`` / ``darray.config_context(**c)``."""
        if self.backend in config.TRANSPOSE_BACKENDS:
            out = {"transpose_backend": self.backend, "fft_backend": "", "halo_backend": ""}
        else:
            out = {"fft_backend": self.backend, "halo_backend": self.backend}
        out.update({f"cudecomp_{k}": v for k, v in self.settings})
        return out

    def __str__(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.settings)
        return (f"mesh={self.mesh_shape} spec={self.spec} decomposition={self.decomposition} "
                f"backend={self.backend}{extra}")


@dataclasses.dataclass(frozen=True)
class Row:
    choice: Choice
    seconds: dict[str, float]      # op -> median seconds per call
    error: str = ""                # why the candidate could not run ("" if it ran)

    @property
    def total(self) -> float:
        return sum(self.seconds.values()) if not self.error else math.inf


@dataclasses.dataclass(frozen=True)
class AutotuneResult:
    """The best Choice and the whole table (rows sorted fastest first)."""
    best: Choice
    table: tuple[Row, ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    ops: tuple[str, ...]

    @property
    def best_seconds(self) -> float:
        return self.table[0].total

    def format_table(self) -> str:
        head = ["mesh", "spec", "decomposition", "backend", *self.ops, "total"]
        lines = [" | ".join(head)]
        for row in self.table:
            c = row.choice
            cells = [str(c.mesh_shape), str(c.spec), c.decomposition,
                     c.backend + "".join(f" {k}={v}" for k, v in c.settings)]
            if row.error:
                cells += ["-"] * len(self.ops) + [f"failed: {row.error}"]
            else:
                cells += [f"{row.seconds[op] * 1e3:.3f} ms" for op in self.ops]
                cells.append(f"{row.total * 1e3:.3f} ms")
            lines.append(" | ".join(cells))
        return "\n".join(lines)

    def __str__(self) -> str:
        return (f"darray.autotune {self.shape} {self.dtype} ops={self.ops}: best {self.best} "
                f"({self.best_seconds * 1e3:.3f} ms)\n{self.format_table()}")


# -- candidates ---------------------------------------------------------------------------------
def factorizations(n: int, max_axes: int = 3) -> list[tuple[int, ...]]:
    """Ordered factorizations of `n` into 1..max_axes factors > 1 (``(n,)`` for any n)."""
    out: list[tuple[int, ...]] = [(n,)]
    for k in range(2, max_axes + 1):
        for combo in itertools.product(range(2, n + 1), repeat=k):
            if math.prod(combo) == n:
                out.append(combo)
    return out


def _comm_settings(backend: str, ops) -> list[tuple[tuple[str, Any], ...]]:
    if backend != "cudecomp":
        return [()]
    transpose = config.CUDECOMP_TRANSPOSE_COMMS if "fftn" in ops else (None,)
    halo = config.CUDECOMP_HALO_COMMS if "halo" in ops else (None,)
    return [tuple((k, v) for k, v in (("transpose_comm", t), ("halo_comm", h)) if v)
            for t, h in itertools.product(transpose, halo)]


def _mesh_fits(mesh_shape, shape) -> bool:
    return len(mesh_shape) <= len(shape) and all(
        m <= n for m, n in zip(mesh_shape, shape))


def candidates(shape, n_devices, ops, meshes, backends, decompositions) -> list[Choice]:
    out = []
    for mesh_shape in meshes:
        if not _mesh_fits(mesh_shape, shape):
            continue
        spec = MESH_AXIS_NAMES[:len(mesh_shape)] + (None,) * (len(shape) - len(mesh_shape))
        # one decomposition is enough where nothing plans an FFT or one mesh axis leaves
        # nothing to choose (both plans are the single slab transpose)
        decs = decompositions if "fftn" in ops and len(mesh_shape) > 1 else decompositions[:1]
        for backend in backends:
            for settings in _comm_settings(backend, ops):
                for dec in decs:
                    out.append(Choice(tuple(mesh_shape), spec, dec, backend, settings))
    return out


# -- checks -----------------------------------------------------------------------------------
def _check(shape, dtype, ops, meshes, backends, decompositions, repeats, n_devices):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError:
        raise TypeError(f"autotune: shape={shape!r} must be a sequence of positive ints") from None
    if not shape or any(n < 1 for n in shape):
        raise ValueError(f"autotune: shape={shape} must be a non-empty sequence of positive ints")
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        raise TypeError(f"autotune: dtype={dtype} must be a real or complex floating dtype")
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    bad = [op for op in ops if op not in OPS]
    if bad or not ops:
        raise ValueError(f"autotune: ops={ops!r} is not accepted; use a non-empty selection "
                         f"of {OPS}")
    if meshes is None:
        meshes = factorizations(n_devices)
    else:
        meshes = [tuple(int(m) for m in ms) for ms in meshes]
        for ms in meshes:
            if math.prod(ms) != n_devices or not 1 <= len(ms) <= 3:
                raise ValueError(f"autotune: meshes entry {ms} must have 1-3 axes whose product "
                                 f"is the device count {n_devices}")
    if not any(_mesh_fits(ms, shape) for ms in meshes):
        raise ValueError(f"autotune: no mesh in {meshes} fits shape={shape} (a mesh needs no "
                         f"more axes than the array and each axis no longer than the array's)")
    if backends is None:
        backends = backend_registry.available_fft_backends()
    else:
        backends = (backends,) if isinstance(backends, str) else tuple(backends)
        for name in backends:  # an unavailable backend asked for by name raises, saying why
            backend_registry.select_fft_backend(name)
    decompositions = (decompositions,) if isinstance(decompositions, str) else tuple(
        decompositions)
    bad = [d for d in decompositions if d not in DECOMPOSITIONS]
    if bad or not decompositions:
        raise ValueError(f"autotune: decompositions={decompositions!r} is not accepted; use a "
                         f"non-empty selection of {DECOMPOSITIONS}")
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ValueError(f"autotune: repeats={repeats!r} must be a positive int")
    return shape, dtype, ops, meshes, tuple(backends), decompositions, int(repeats)


# -- timing -----------------------------------------------------------------------------------
def _sample(shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    host = rng.standard_normal(shape)
    if dtype.kind == "c":
        host = host + 1j * rng.standard_normal(shape)
    return host.astype(dtype)


@program_cache(FFT)
def _runner(choice: Choice, shape, dtype_str, op, halo_width):
    """(input DistArray, compiled op) for one candidate; compiled once, cached for re-timing."""
    x = asarray(_sample(shape, np.dtype(dtype_str)), mesh=choice.mesh(), spec=choice.spec)
    dec = choice.decomposition
    if op == "fftn":
        fn = jax.jit(lambda a: ifftn(fftn(a, decomposition=dec), decomposition=dec))
    else:
        fn = jax.jit(lambda a: halo(a, halo_width))
    with config.config_context(**choice.config()):  # the backend is chosen at trace time
        jax.block_until_ready(fn(x).data)
    return x, fn


def _call_seconds(x, fn) -> float:
    t0 = time.perf_counter()
    jax.block_until_ready(fn(x).data)
    return time.perf_counter() - t0


def time_choices(choices, shape, dtype, ops=("fftn",), *, repeats=5, halo_width=1,
                 on_round=None) -> dict[Choice, dict[str, float]]:
    """Median seconds per call of each op for each choice, timed in interleaved rounds (one call
    of every choice and op per round). Compiles on first use; cached for re-timing."""
    runs = {c: {op: _runner(c, tuple(shape), np.dtype(dtype).str, op, int(halo_width))
                for op in ops} for c in choices}
    samples: dict = {c: {op: [] for op in ops} for c in runs}
    for r in range(repeats):
        for choice, per_op in runs.items():
            with config.config_context(**choice.config()):
                for op, (x, fn) in per_op.items():
                    samples[choice][op].append(_call_seconds(x, fn))
        if on_round is not None:
            on_round(r)
    return {c: {op: statistics.median(v) for op, v in per.items()} for c, per in samples.items()}


class _Progress:
    """tqdm when it is installed, else one printed line per step (on stderr)."""

    def __init__(self, total, enabled):
        self.enabled, self.total, self.done, self.bar = enabled, total, 0, None
        if enabled:
            try:
                from tqdm.auto import tqdm
                self.bar = tqdm(total=total, desc="darray.autotune")
            except ImportError:
                pass

    def step(self, message):
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(message, refresh=False)
            self.bar.update()
        else:
            print(f"darray.autotune [{self.done}/{self.total}] {message}", file=sys.stderr,
                  flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def autotune(shape: Sequence[int], dtype=np.complex128, *, ops=("fftn",), meshes=None,
             backends=None, decompositions=DECOMPOSITIONS, repeats: int = 5,
             halo_width: int = 1, progress: bool = True) -> AutotuneResult:
    """Time the candidate layouts and backends for `ops` on the devices at hand; return the best.

    Args:
      shape, dtype: the global array the program works on.
      ops: operations to time, any of ``"fftn"`` (an ``ifftn(fftn(x))`` round trip) and
        ``"halo"`` (``darray.halo(x, halo_width)``, periodic, every axis); the score is the sum.
      meshes: process grids to try, each a tuple of 1-3 axis sizes whose product is the device
        count; default every factorization. Mesh axes split the leading array axes.
      backends: transpose backends to try; default every one available here. A backend named
        here that is not available raises (BackendUnavailableError, with how to get it).
      decompositions: the fft planner's strategies to try (``"auto"``, ``"pencil"``).
      repeats: timed calls per candidate and op (interleaved rounds; the median counts).
      progress: report each compiled and timed candidate (tqdm if installed, else stderr).

    Returns:
      AutotuneResult: ``best`` (a Choice: ``mesh()``, ``spec``, ``decomposition``, ``backend``,
      ``config()`` for ``darray.config_context``) and ``table`` (every candidate's median seconds
      per op, fastest first; candidates that failed carry the error).

    Examples:
      >>> r = darray.autotune((64, 64, 64), darray.complex64, ops=("fftn", "halo"))
      >>> x = darray.asarray(host, mesh=r.best.mesh(), spec=r.best.spec)
      >>> with darray.config_context(**r.best.config()):
      ...     k = darray.fft.fftn(x, decomposition=r.best.decomposition)
    """
    n_devices = jax.device_count()
    shape, dtype, ops, meshes, backends, decompositions, repeats = _check(
        shape, dtype, ops, meshes, backends, decompositions, repeats, n_devices)
    if isinstance(halo_width, bool) or not isinstance(halo_width, (int, np.integer)) \
            or halo_width < 0:
        raise ValueError(f"autotune: halo_width={halo_width!r} must be a non-negative int")
    choices = candidates(shape, n_devices, ops, meshes, backends, decompositions)
    bar = _Progress(len(choices) + repeats, progress)
    runnable, errors = [], {}
    try:
        for choice in choices:
            try:
                for op in ops:
                    _runner(choice, shape, dtype.str, op, int(halo_width))
                runnable.append(choice)
                bar.step(f"compiled {choice}")
            except Exception as err:  # noqa: BLE001 - a candidate that cannot run is a result
                errors[choice] = f"{type(err).__name__}: {err}"
                bar.step(f"skipped {choice}: {errors[choice]}")
        medians = time_choices(runnable, shape, dtype, ops, repeats=repeats,
                               halo_width=halo_width,
                               on_round=lambda r: bar.step(f"timing round {r + 1}/{repeats}"))
    finally:
        bar.close()
    rows = [Row(c, medians[c]) for c in runnable] + [Row(c, {}, errors[c]) for c in errors]
    rows.sort(key=lambda row: row.total)
    if not runnable:
        raise RuntimeError("autotune: no candidate could run:\n" + "\n".join(
            f"  {c}: {e}" for c, e in errors.items()))
    return AutotuneResult(rows[0].choice, tuple(rows), tuple(shape), dtype, ops)
