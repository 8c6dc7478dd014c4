"""Every exception darray raises on purpose, in one module below every layer.

The public `darray.errors` re-exports them; the modules that raise each one also name it (the
same class), so ``darray._src.layout.host.NonLocalDataError`` and older import paths keep working.
Each subclasses the builtin exception generic code already catches.
"""
from __future__ import annotations


class LayoutError(ValueError):
    """A layout request that cannot be satisfied: unknown mesh axis, bad spec, bad width...

    Subclasses ValueError so that generic Array API code catching ValueError still works.
    """


class AxisError(LayoutError, IndexError):
    """An axis out of range: a LayoutError (a ValueError, darray's rule for axes) and an
    IndexError (what the Array API asks of e.g. expand_dims), as numpy's AxisError is."""


class PlanError(NotImplementedError):
    """No plan of local transforms and all-to-alls exists for a request (e.g. every array axis
    is split), raised only where a plan must be returned or run (`plan_fft`, `fft_plan` and
    `run_r2r` in darray._src.fft, jaxDecomp's pfft3d). `darray.fft.fftn`, `dctn` and their
    siblings do not raise it: they run the distributed four-step FFT along a split axis."""


class NonLocalDataError(RuntimeError):
    """A host read of one process needs blocks that only other processes hold."""


class BackendUnavailableError(ImportError, RuntimeError):
    """A known backend was asked for that is not compiled in or cannot run on this machine.

    Raised instead of silently running another backend; the message says how to get it. It is
    both an ImportError (the native part is missing) and a RuntimeError (it cannot run here)."""


class MemoryBudgetError(MemoryError):
    """A program whose temporaries per device exceed the ``max_temp_blocks`` option, refused
    before it runs (base/memory_budget.py); the message names the function, the blocks XLA
    planned, the limit and the option. A MemoryError: it stands for one found in advance."""


class ParticleError(ValueError):
    """A particle that cannot be painted or read: a NaN displacement, or more strays for one
    device than the bounded exchange holds."""


__all__ = ["AxisError", "BackendUnavailableError", "LayoutError", "MemoryBudgetError",
           "NonLocalDataError", "ParticleError", "PlanError"]
