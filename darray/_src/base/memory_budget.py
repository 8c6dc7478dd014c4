"""The ``max_temp_blocks`` option: a program that would plan too much memory is refused by name.

Out of memory found before it happens: XLA plans every buffer of a program when it compiles
it, and ``compiled.memory_analysis()`` reports, per device, the bytes of the arguments, of
the outputs and of the temporaries. A *block* is the larger of a device's share of the
arguments and of the outputs (at least `MIN_BLOCK` bytes); a program whose temporaries are
many blocks holds copies of its operands, which at 64^3 cost nothing and at 2048^3 do not
fit. With ``darray.config_context(max_temp_blocks=4)`` (or ``DARRAY_MAX_TEMP_BLOCKS=4``) every
program darray compiles is measured before its first run and refused with
`MemoryBudgetError` when its temporaries exceed 4 blocks per device; the message names the
namespace function that asked for it.

Where: every program darray keeps goes through base/program_cache.py, which hands out
`guard`'s checking wrapper while a limit is in force (`config.MEMORY_LIMITED`) and the plain
program otherwise: with the default (None) nothing is measured and nothing is wrapped. A
program is measured once per argument signature (shapes, dtypes, shardings); the measurement
compiles it a second time (a development setting, not one for production runs).

Under a user's ``jax.jit`` darray's operations are traced into the user's one program, whose
memory XLA plans as a whole: no operation can be measured on its own there, so the wrapper
lets traced calls through. `check_memory` measures a whole function (jitted or not) instead.
"""
from __future__ import annotations

import dataclasses
import sys
import weakref
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from darray._src.base import config
from darray._src.base.errors import MemoryBudgetError

MIN_BLOCK = 4096  # bytes: a block is never counted smaller (a 0-d result is not the unit)
OPTION = "max_temp_blocks"


@dataclasses.dataclass(frozen=True)
class MemoryReport:
    """What XLA planned for one program, per device.

    Attributes:
        function: the name of what was measured.
        blocks: temporaries / block.
        temp_bytes: the temporaries XLA planned.
        block_bytes: the larger of the arguments and of the outputs (at least `MIN_BLOCK`).
        all_gathers: the all-gathers in the compiled program.
        limit: the limit it was checked against (None: only measured).
    """
    function: str
    blocks: float
    temp_bytes: int
    block_bytes: int
    all_gathers: int
    limit: int | None = None

    @property
    def within(self) -> bool:
        return self.limit is None or self.blocks <= self.limit


def measure(compiled, function: str, limit: int | None = None,
            count_gathers: bool = False) -> MemoryReport | None:
    """The report of a compiled program (None where the backend gives no memory analysis)."""
    stats = compiled.memory_analysis()
    if stats is None:
        return None
    block = max(stats.argument_size_in_bytes, stats.output_size_in_bytes, MIN_BLOCK)
    gathers = 0
    if count_gathers:
        text = compiled.as_text()
        gathers = text.count("all-gather-start") or text.count("all-gather(")
    return MemoryReport(function, stats.temp_size_in_bytes / block, stats.temp_size_in_bytes,
                        block, gathers, limit)


def _refusal(report: MemoryReport, program: str | None = None) -> MemoryBudgetError:
    inner = f" (darray's program {program})" if program else ""
    return MemoryBudgetError(
        f"{report.function}{inner} plans {report.blocks:.2f} blocks of temporaries per device "
        f"({report.temp_bytes} bytes; a block, the larger of a device's share of its inputs and "
        f"of its outputs, is {report.block_bytes} bytes), over max_temp_blocks={report.limit}. "
        f"Raise the limit or set it to None (darray.config_context(max_temp_blocks=...), "
        f"darray.set_config, the environment variable DARRAY_MAX_TEMP_BLOCKS) to run it.")


# -- darray's own programs -------------------------------------------------------------------
def _is_program(value) -> bool:
    return isinstance(value, jax.stages.Wrapped)


def guard(value, program: str):
    """`value` (a cached jit program, or a tuple holding some) with each program wrapped in a
    `_Checked` that measures it before running it."""
    if _is_program(value):
        return _Checked(value, program)
    if isinstance(value, tuple) and any(_is_program(v) for v in value):
        return tuple(_Checked(v, program) if _is_program(v) else v for v in value)
    return value


# program -> {argument signature: MemoryReport or None}; weak, so that a program the cache
# drops takes its measurements with it
_MEASURED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _signature(leaves) -> tuple:
    return tuple((tuple(x.shape), str(x.dtype), getattr(x, "sharding", None))
                 if hasattr(x, "shape") and hasattr(x, "dtype") else (type(x), x)
                 if isinstance(x, (bool, int, float, complex, str)) or x is None else type(x)
                 for x in leaves)


class _Checked:
    """A darray program that is measured, and refused over the limit, before it runs."""
    __slots__ = ("_program", "_name")

    def __init__(self, program, name: str):
        self._program = program
        self._name = name

    def __getattr__(self, attr):  # lower, trace, eval_shape... as the program has them
        return getattr(self._program, attr)

    def __call__(self, *args, **kwargs):
        limit = config.get_config(OPTION)
        if limit is not None:
            self._check(args, kwargs, limit)
        return self._program(*args, **kwargs)

    def _check(self, args, kwargs, limit: int) -> None:
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        if any(isinstance(x, jax.core.Tracer) for x in leaves):
            return  # traced into an outer program: measured as a whole (check_memory)
        try:
            key: Any = (treedef, _signature(leaves))
            hash(key)
        except TypeError:
            key = None
        seen = _MEASURED.setdefault(self._program, {})
        if key is not None and key in seen:
            report = seen[key]
        else:
            compiled = self._program.lower(*args, **kwargs).compile()
            report = measure(compiled, self._name)
            if key is not None:
                seen[key] = report
        if report is not None and report.blocks > limit:
            report = dataclasses.replace(report, limit=limit,
                                         function=_public_caller() or self._name)
            raise _refusal(report, self._name)


# the operator wrappers of darray/_src/methods/table.py: named by the function they call
_WRAPPERS = frozenset({"forward", "reflected", "inplace", "compute"})


def _public_caller() -> str | None:
    """The darray function the user called: the outermost frame of the innermost run of darray
    frames on the stack, preferring public names (``darray.argmax``, ``DistArray.reshape``)."""
    frame: Any = sys._getframe(1)
    run: list = []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == __name__:
            pass  # this module's own frames: the check, not the function
        elif module == "darray" or module.startswith("darray."):
            run.append(frame.f_code)
        elif run and not module.startswith(("functools", "contextlib")):
            break
        frame = frame.f_back
    if not run:
        return None
    for code in reversed(run):  # outermost first
        name = code.co_name
        public = not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
        if public and "<" not in name and name not in _WRAPPERS:
            qual = code.co_qualname
            return qual if "." in qual and "<" not in qual else f"darray.{name}"
    return f"darray's {run[-1].co_qualname}"


# -- a user's function -------------------------------------------------------------------------
def check_memory(fn: Callable, *args, max_temp_blocks: int | None = None,
                 **kwargs) -> MemoryReport:
    """Compile ``fn(*args, **kwargs)`` as one program and report its temporaries per device;
    raise `MemoryBudgetError` when they exceed ``max_temp_blocks`` blocks.

    The check for code that darray cannot check operation by operation: a function the user
    jits (its operations are one XLA program, planned as a whole), or any function before a
    large run. Array leaves of the arguments (DistArrays, jax arrays, numpy arrays) are the
    program's inputs; everything else (axes, shapes, flags) is held fixed, as static. Nothing
    runs: the program is only compiled.

    Args:
        fn: the function, taking DistArrays (or jax arrays) and returning arrays.
        *args: its arguments, e.g. a small version of the real arrays (64^3 for 2048^3).
        max_temp_blocks: the limit; None takes the ``max_temp_blocks`` option in force, and if
            that is None too the report is returned without a check.
        **kwargs: its keyword arguments.

    Returns:
        A `MemoryReport` (blocks, temporaries and block in bytes, all-gathers).
    """
    if max_temp_blocks is None:
        max_temp_blocks = config.get_config(OPTION)
    elif isinstance(max_temp_blocks, bool) or not isinstance(max_temp_blocks, int) \
            or max_temp_blocks < 1:
        raise ValueError(f"check_memory: max_temp_blocks={max_temp_blocks!r} is not accepted; "
                         f"use None or an int >= 1")
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    dynamic = [i for i, x in enumerate(leaves) if isinstance(x, (jax.Array, np.ndarray))]

    def program(*arrays):
        full = list(leaves)
        for i, a in zip(dynamic, arrays):
            full[i] = a
        call_args, call_kwargs = jax.tree_util.tree_unflatten(treedef, full)
        return fn(*call_args, **call_kwargs)

    name = getattr(fn, "__qualname__", None) or repr(fn)
    compiled = jax.jit(program).lower(*[leaves[i] for i in dynamic]).compile()
    report = measure(compiled, name, max_temp_blocks, count_gathers=True)
    if report is None:
        raise NotImplementedError(f"check_memory: {jax.default_backend()!r} gives no memory "
                                  f"analysis of compiled programs")
    if not report.within:
        raise _refusal(report)
    return report


__all__ = ["MIN_BLOCK", "MemoryReport", "check_memory", "guard", "measure"]
