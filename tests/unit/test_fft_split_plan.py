"""Covers: darray/_src/plans/split_plan.py, darray/_src/fft/split_axis.py, darray/_src/fft/core.py
Covers: darray/_src/fft/request.py

The split-axis route runs the plan `fft_plan` shows: the typed stages of plans/split_plan.py,
planned by core.plan (the one planning function of `fft_plan` and the transforms) and built
into a program by split_axis.py. The plans are planned and their programs traced on
`AbstractMesh` meshes, no devices involved; one test runs a transform on devices and compares
with numpy.
"""
import jax
import numpy as np
import pytest
from jax.sharding import AbstractMesh, NamedSharding

import darray
from darray._src.fft import core, split_axis
from darray._src.fft.api import fft_plan
from darray._src.fft.request import Request
from darray._src.layout.layout import Layout
from darray._src.plans.split_plan import (
    AxisCut,
    BluesteinStage,
    FourStepStage,
    LocalAxisStage,
    SplitAxisPlan,
)
from tests.helpers import mesh_of

LINE = AbstractMesh((8,), ("x",))
GRID = AbstractMesh((2, 4), ("x", "y"))
WITH_ONE = AbstractMesh((1, 8), ("a", "x"))

# (mesh, shape, spec, request, stage types in order of execution)
CASES = [
    (LINE, (64,), ("x",), Request((0,), (64,), "c2c", False), [FourStepStage]),
    (LINE, (40,), ("x",), Request((0,), (40,), "c2c", True, "ortho"), [BluesteinStage]),
    (LINE, (64,), ("x",), Request((0,), (64,), "r2c", False), [FourStepStage]),
    (LINE, (33,), ("x",), Request((0,), (64,), "c2r", True), [FourStepStage]),
    (GRID, (6, 10), ("x", "y"), Request((0, 1), (6, 10), "c2c", False),
     [BluesteinStage, BluesteinStage]),
    (GRID, (6, 16), ("x", "y"), Request((0, 1), (6, 32), "r2c", False),
     [FourStepStage, BluesteinStage]),
    # "pencil" keeps the size-1 mesh axis's split: that axis is transformed whole, locally
    (WITH_ONE, (6, 64), ("a", "x"), Request((0, 1), (6, 64), "c2c", False),
     [LocalAxisStage, FourStepStage]),
]


def _plan(mesh, shape, spec, request):
    return core.plan(Layout.create(shape, mesh, spec), request, None, "pencil")


@pytest.mark.parametrize("mesh, shape, spec, request_, types", CASES)
def test_typed_stages_carry_their_factors(mesh, shape, spec, request_, types):
    plan = _plan(mesh, shape, spec, request_)
    assert isinstance(plan, SplitAxisPlan)
    assert [type(s) for s in plan.stages] == types
    for stage, (axis, size) in zip(plan.stages, _execution_order(request_)):
        assert (stage.axis, stage.size) == (axis, size)
        if isinstance(stage, FourStepStage):
            assert stage.n1 * stage.n2 == size
            assert stage.n1 % stage.parts == 0 and stage.n2 % stage.parts == 0
        if isinstance(stage, BluesteinStage):
            m = stage.m1 * stage.m2
            assert m >= 2 * size - 1 and m % (stage.parts * stage.parts) == 0
    assert plan.n_transposes == sum(s.exchanges for s in plan.stages)


def _execution_order(request):
    """r2c runs its halved axis first, c2r last (the route's rule)."""
    pairs = list(zip(request.axes, request.sizes))
    return [pairs[-1]] + pairs[:-1] if request.kind == "r2c" else pairs


@pytest.mark.x64  # traces complex128 / float64 programs
@pytest.mark.parametrize("mesh, shape, spec, request_, types", CASES)
def test_the_program_runs_the_plan_shown(mesh, shape, spec, request_, types):
    """The program is built from the plan object `fft_plan` shows and nothing else about the
    stages: traced on the abstract mesh, it makes the plan's exchanges (one more per Bluestein
    stage, whose filter a traced program builds itself) and ends in its output layout."""
    shown = _plan(mesh, shape, spec, request_)
    dtype = np.dtype(np.complex128 if request_.kind != "r2c" else np.float64)
    complex_dtype = np.dtype(np.result_type(dtype, np.complex64))
    program = split_axis._compiled(shown, request_, complex_dtype, True, "jax")
    arg = jax.ShapeDtypeStruct(shown.in_layout.physical_shape, dtype,
                               sharding=NamedSharding(mesh, shown.in_layout.spec))
    traced = program.trace(arg, ((),) * len(shown.stages))
    blue = sum(isinstance(s, BluesteinStage) for s in shown.stages)
    assert str(traced.jaxpr).count("all_to_all") == shown.n_transposes + blue
    (out,) = traced.jaxpr.out_avals
    assert out.shape == shown.out_layout.physical_shape


@pytest.mark.x64  # compares with numpy at 1e-12
def test_plans_are_equal_on_abstract_and_device_meshes_and_run_as_shown(monkeypatch):
    """What `fft_plan` shows on devices is the plan planned on an AbstractMesh (pure data),
    and the one the compiled program is built from; the result is numpy's."""
    x_host = np.random.default_rng(0).standard_normal(40) + 0j
    x = darray.asarray(x_host, mesh=mesh_of((8,), ("x",)), spec=("x",))
    shown = fft_plan(x)
    abstract = core.plan(Layout.create((40,), LINE, ("x",)), Request((0,), (40,), "c2c", False))
    assert shown.stages == abstract.stages
    assert shown.stages == (BluesteinStage(0, "c2c", False, 40, AxisCut(("x",), 8, 5, 40, 40, 5),
                                           16, 8),)
    built = []
    real_compiled = split_axis._compiled

    def spy(plan, *args):
        built.append(plan)
        return real_compiled(plan, *args)
    monkeypatch.setattr(split_axis, "_compiled", spy)
    y = darray.fft.fft(x)
    assert built == [shown]
    assert y.layout == shown.out_layout and y.data.sharding.spec == y.layout.spec
    np.testing.assert_allclose(np.asarray(y), np.fft.fft(x_host), rtol=1e-12, atol=1e-12)


def test_request_is_canonical_and_drops_a_cast_to_the_input_dtype():
    a = Request([0, np.int64(1)], (np.int64(4), 5), "c2c", 0, cast=np.complex128)
    b = Request((0, 1), (4, 5), "c2c", False, cast=np.dtype(np.complex128))
    assert a == b and hash(a) == hash(b)
    assert a.taking(np.complex128).cast is None
    assert a.taking(np.float64).cast == np.dtype(np.complex128)


@pytest.mark.parametrize("backend, decomposition, kernels, expected", [
    ("cudecomp", "auto", (), "pencil"), ("cudecomp", "pencil", (), "pencil"),
    ("jax", "auto", (), "auto"), ("cudecomp", "auto", ("kernel",), "auto")])
def test_cudecomp_means_pencil_for_plain_transforms(backend, decomposition, kernels, expected):
    request = Request((0,), (8,), "c2c", False, kernels=kernels)
    assert core.strategy_for(backend, decomposition, request) == expected
