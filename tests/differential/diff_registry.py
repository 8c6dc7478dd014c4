"""The registry: one Case per (namespace function, argument family). Coverage is countable:
test_coverage.py checks that the cases cover darray's public functions.

A Case draws an Example (operands and parameters), calls `fn` on DistArrays and `ref` on numpy
arrays (once on the inputs' own dtypes for the result dtype, once widened to float64 /
complex128 / int64 for the values) and compares every leaf of the result.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import diff_support as ds
from hypothesis import strategies as st

import darray


@dataclasses.dataclass
class Example:
    mesh: Any
    args: list                      # Operand, or anything passed as is to both sides
    params: dict = dataclasses.field(default_factory=dict)
    scale: float = 1.0              # reduction length (multiplies the tolerance)

    def __repr__(self) -> str:
        return f"Example(args={self.args}, params={self.params})"


@dataclasses.dataclass(frozen=True)
class AllowedRefusal:
    """A NotImplementedError a Case may raise: on the Examples `when` accepts, for `reason`.

    Any other NotImplementedError fails the case, so a planner regression that starts refusing
    a common layout fails the suite instead of being recorded.
    """
    when: Callable[[Example], bool]
    reason: str


def allowed_refusal(case: Case, example: Example) -> AllowedRefusal | None:
    """The entry of the case's allow-list that covers this example, or None."""
    return next((r for r in case.refusals if r.when(example)), None)


@dataclasses.dataclass
class Case:
    name: str                       # test id, "<namespace function>[<family>]"
    draw: Any                       # strategy of Example
    fn: Callable                    # fn(*darray_args, **params)
    ref: Callable                   # ref(*numpy_args, **params)
    tol: float | None = 64.0        # None: exact; else multiple of eps * scale * magnitude
    covers: tuple[str, ...] = ()    # namespace functions exercised; default: the name's stem
    xfail: str | None = None        # a known bug in a module this suite does not own
    refusals: tuple = ()            # AllowedRefusal: the NotImplementedErrors that may occur
    check_dtype: bool = True
    post: Callable | None = None    # canonicalise both results (e.g. sort eigenvalues)
    mutates: bool = False           # fn modifies its first argument (setitem): compare it
    widen: bool = True              # False: the value reference is numpy on the native dtypes
    layout: bool = True             # results are arrays (not dtypes, shapes or info objects)
    weight: int = 1                 # examples multiplier: data-dependent shapes (compaction)

    def __post_init__(self):
        if not self.covers:
            self.covers = (self.name.split("[")[0],)


REGISTRY: list[Case] = []


def register(*cases: Case) -> None:
    names = {c.name for c in REGISTRY}
    for case in cases:
        assert case.name not in names, f"duplicate case {case.name}"
        names.add(case.name)
        REGISTRY.append(case)


def one_array(dtypes, kind="real", min_ndim=1, max_ndim=3, allow_zero=True, small=False,
              params=None):
    """Example with one operand; `params(draw, shape)` draws the keyword parameters."""
    @st.composite
    def build(draw):
        mesh = draw(ds.meshes)
        shape = draw(ds.shapes(min_ndim, max_ndim, allow_zero, small))
        dtype = draw(st.sampled_from(dtypes))
        x = draw(ds.operand(mesh, shape, dtype, kind))
        p = params(draw, shape) if params else {}
        scale = p.pop("_scale", 1.0)
        return Example(mesh, [x], p, scale)
    return build()


def axis_param(draw, ndim, *, allow_none=True, allow_tuple=True):
    """An axis argument: None, an int (maybe negative) or a tuple of distinct axes."""
    choices = ["int"] + (["none"] if allow_none else []) + (["tuple"] if allow_tuple else [])
    how = draw(st.sampled_from(choices)) if ndim else "none"
    if how == "none" or ndim == 0:
        return None
    neg = lambda a: a - ndim if draw(st.booleans()) else a  # noqa: E731
    if how == "int":
        return neg(draw(st.integers(0, ndim - 1)))
    axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(neg(a) for a in axes)


def reduced_length(shape, axis) -> int:
    if axis is None:
        axes = range(len(shape))
    elif isinstance(axis, int):
        axes = [axis]
    else:
        axes = axis
    n = 1
    for a in axes:
        n *= shape[a]
    return max(n, 1)


# Public functions with no numpy counterpart to compare with, each tested elsewhere.
EXCLUDED = {
    "build_info": "reports the native build, no array",
    "config_context": "configuration, no array (tests/unit)",
    "check_memory": "reports a compiled program's memory, no array "
                    "(tests/multidevice/base/test_memory_budget.py)",
    "record_backends": "a log of backend selections, no array (test_route_backends.py)",
    "get_config": "configuration, no array",
    "set_config": "configuration, no array",
    "default_mesh": "returns a mesh, no array",
    "vmap": "a transform, not an array function (tests/multidevice/distarray/test_vmap.py)",
    "map_blocks": "runs user code per block; no numpy counterpart (test_map_blocks.py)",
    "halo": "ghost cells have no numpy counterpart (test_halo.py)",
    "halo_reduce": "ghost cells have no numpy counterpart (test_halo.py)",
    "unhalo": "ghost cells have no numpy counterpart (test_halo.py)",
    "autotune": "times candidate layouts/backends; returns a choice, not an array",
    "fft.wavenumbers": "takes a spectrum, returns broadcastable vectors: against 2*pi*fftfreq in "
                       "test_fft_wavenumbers.py",
    "cross": "numpy's name for linalg.cross (its differential case), checked in "
             "test_numpy_names.py",
    "diag": "numpy's diag (1-D to 2-D and back), against numpy in test_numpy_names.py",
    "logspace": "creation from scalars, against numpy in test_numpy_names.py",
    "dynamic_slice": "jax.lax's, not numpy's: compared with it in test_traced_indices.py",
}
EXTRA = ("DistArray.__getitem__", "DistArray.__setitem__")


def public_functions() -> set[str]:
    names = set()
    for prefix, module in (("", darray), ("linalg.", darray.linalg), ("fft.", darray.fft)):
        for name in dir(module):
            obj = getattr(module, name)
            if name.startswith("_") or inspect.isclass(obj) or inspect.ismodule(obj):
                continue
            if callable(obj):
                names.add(prefix + name)
    return names
