"""Covers: darray/_src/base/errors.py, darray/_src/backends/errors.py, darray/_src/layout/axes.py

darray.errors (#36.6): every exception darray raises on purpose, public in one module, the
same classes as at their older import paths; PlanError only from the entry points that must
return a plan, with a message that says what darray does instead."""
import numpy as np
import pytest
from helpers import mesh_of

import darray
import darray.errors
from darray._src.backends import errors as backend_errors
from darray._src.backends import registry as backend_registry
from darray._src.fft.api import fft_plan
from darray._src.layout import axes, host
from darray._src.plans import fft_plan as fft_plan_module
from darray._src.plans import split_plan
from darray._src.plans.fft_planner import plan_fft

BASES = {
    "LayoutError": (ValueError,),
    "AxisError": (darray.errors.LayoutError, ValueError, IndexError),
    "PlanError": (NotImplementedError,),
    "NonLocalDataError": (RuntimeError,),
    "BackendUnavailableError": (ImportError, RuntimeError),
    "ParticleError": (ValueError,),
    "MemoryBudgetError": (MemoryError,),
}


def test_every_exception_is_public_and_the_same_class_everywhere():
    assert sorted(darray.errors.__all__) == sorted(BASES)
    for name, bases in BASES.items():
        cls = getattr(darray.errors, name)
        assert issubclass(cls, Exception) and all(issubclass(cls, b) for b in bases), name
        assert cls.__doc__, name
    e = darray.errors
    assert darray.LayoutError is e.LayoutError and axes.LayoutError is e.LayoutError
    assert axes.AxisError is e.AxisError
    assert fft_plan_module.PlanError is e.PlanError
    assert host.NonLocalDataError is e.NonLocalDataError
    assert darray.distributed.NonLocalDataError is e.NonLocalDataError
    assert backend_errors.BackendUnavailableError is e.BackendUnavailableError
    assert backend_registry.BackendUnavailableError is e.BackendUnavailableError
    assert darray.particles.ParticleError is e.ParticleError
    assert darray.MemoryBudgetError is e.MemoryBudgetError


def test_axis_error_is_caught_by_name():
    x = darray.asarray(np.ones((4, 8)))
    with pytest.raises(darray.errors.AxisError, match="out of range"):
        darray.sum(x, axis=2)


@pytest.mark.x64
def test_plan_fft_raises_a_true_plan_error_where_fftn_runs():
    mesh = mesh_of((8,), ("d",), explicit=True)
    ref = np.arange(64.0) % 7
    x = darray.asarray(ref, mesh=mesh, spec=("d",))  # a split 1-D array: no plan of stages
    np.testing.assert_allclose(np.asarray(darray.fft.fft(x)), np.fft.fft(ref), atol=1e-9)
    with pytest.raises(darray.errors.PlanError) as err:
        plan_fft(x.layout, (0,), "c2c", False, (64,))
    text = str(err.value)
    assert text.startswith("plan_fft: no plan of local transforms")
    assert "four-step FFT along the split axis, which has no Plan" in text
    assert "not implemented" not in text
    # fft_plan shows that route instead of raising: the split-axis record (64 = 8 x 8)
    split = fft_plan(x)
    cut = split_plan.AxisCut(("d",), 8, 8, 64, 64, 8)
    assert split.stages == (split_plan.FourStepStage(0, "c2c", False, 64, cut, 8, 8),)
    assert split.out_layout == x.layout and split.n_transposes == 3
    # an array with an unsplit axis has a plan
    y = darray.asarray(np.ones((16, 8)), mesh=mesh, spec=("d", None))
    assert fft_plan(y).out_layout.shape == (16, 8)
