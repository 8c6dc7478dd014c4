"""darray.errors: every exception darray raises on purpose, to catch by name.

This module only re-exports; the classes live in darray._src.base.errors. Each also subclasses the
builtin exception generic code catches (ValueError, IndexError, NotImplementedError,
RuntimeError, ImportError, MemoryError), so ``except ValueError`` keeps working.
"""
from darray._src.base.errors import AxisError as AxisError
from darray._src.base.errors import BackendUnavailableError as BackendUnavailableError
from darray._src.base.errors import LayoutError as LayoutError
from darray._src.base.errors import MemoryBudgetError as MemoryBudgetError
from darray._src.base.errors import NonLocalDataError as NonLocalDataError
from darray._src.base.errors import ParticleError as ParticleError
from darray._src.base.errors import PlanError as PlanError

__all__ = ["AxisError", "BackendUnavailableError", "LayoutError", "MemoryBudgetError",
           "NonLocalDataError", "ParticleError", "PlanError"]
