"""The core of darray.fft: check the arguments, plan one `Request`, run the plan.

Every transform goes through here: the numpy-style entry points (fft/api.py), the padded and
mixed transforms, `run_r2r` and the jaxDecomp shim. Each builds one `Request` (fft/request.py)
and calls `transform`, or `plan` and `execute` where it must handle "no plan" itself.

`plan` is the one planning function: `fft_plan` shows what it returns and the transform runs
it. It picks the route and resolves the backend once per call:

* a `Plan` (darray._src.plans) that moves each split out of a transform axis's way, run inside
  one jitted shard_map on the selected FFT backend (a native backend that cannot run the plan
  leaves it to "jax", and the selection says why);
* where every array axis is split and the request has no kernels, a `SplitAxisPlan` that
  transforms each axis where it lies (split_axis.py), its all-to-alls on the selected
  backend's row exchanges where it has them.

The plan carries its `selection`; `execute` records it (`darray.record_backends`) and hands
it down, so no cached program selects a backend again.
"""
from __future__ import annotations

import dataclasses
import typing

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.backends.registry import FFT_EXECUTORS, Selection, record, select_exchanges
from darray._src.base import compat, config
from darray._src.base.program_cache import FFT, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array
from darray._src.fft import split_axis
from darray._src.fft.request import Request
from darray._src.kernels import fftw
from darray._src.layout.axes import normalize_axis, positive_length
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.plans.fft_plan import Plan
from darray._src.plans.fft_planner import find_plan
from darray._src.plans.split_plan import SplitAxisPlan

NORMS = ("backward", "ortho", "forward")
SWAPPED_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
DECOMPOSITIONS = ("auto", "pencil")
_SPLIT_KINDS = ("c2c", "r2c", "c2r")  # the kinds the split-axis route transforms


# -- argument checks, in numpy's terms ----------------------------------------------------------
def as_dist(x, fname: str, spec=None) -> DistArray:
    """`x` as a DistArray by the argument policy (arguments.ensure_array), ghost cells dropped:
    they are not part of the array, so a transform reads its interior."""
    x = ensure_array(fname, x, spec=spec)
    if x.layout.has_halo:
        x = x.unhalo()
    return x


def check_norm(norm, fname: str) -> str:
    if norm not in NORMS:
        raise ValueError(f"{fname}: norm={norm!r} is not accepted; use one of {NORMS}")
    return norm


def check_decomposition(decomposition, fname: str) -> str:
    if decomposition not in DECOMPOSITIONS:
        raise ValueError(f"{fname}: decomposition={decomposition!r} is not accepted; use one "
                         f"of {DECOMPOSITIONS} ('auto': the cheapest plan, e.g. a pencil "
                         f"input merged into one slab over all devices; 'pencil': one "
                         f"all-to-all per split axis over its own mesh axes)")
    return decomposition


def check_dtype(x, fname: str, *, real_only=False) -> np.dtype:
    dt = np.dtype(x.dtype)
    if real_only and dt.kind != "f":
        raise TypeError(f"{fname}: x must have a real floating-point dtype, got {dt}")
    if dt.kind not in "fc":
        raise TypeError(f"{fname}: x must have a floating-point dtype (real or complex), got "
                        f"{dt}; convert with darray.astype(x, darray.float64) first")
    return dt


_SINGLE = (np.float16, np.float32, np.complex64)  # transformed in single precision (jax.numpy)


def complex_of(dt) -> np.dtype:
    return np.dtype(np.complex64) if dt in _SINGLE else np.dtype(np.complex128)


def real_of(dt) -> np.dtype:
    return np.dtype(np.float32) if dt in _SINGLE else np.dtype(np.float64)


def check_axis(axis, ndim: int, fname: str, argname="axis") -> int:
    return normalize_axis(axis, ndim, argname, context=f"{fname}: ")


def check_length(n, fname: str, argname="n") -> int:
    return positive_length(n, argname, context=f"{fname}: ")


def axes_and_sizes(x, s, axes, fname: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """numpy's rules: axes default to all (or the last len(s)); s defaults to the input sizes."""
    ndim = x.ndim
    if s is not None:
        if isinstance(s, (int, np.integer)):
            raise TypeError(f"{fname}: s={s!r} must be a sequence of ints, one per transform axis")
        s = tuple(s)
    if axes is None:
        axes = tuple(range(ndim - len(s), ndim)) if s is not None else tuple(range(ndim))
    else:
        if isinstance(axes, (int, np.integer)):
            raise TypeError(f"{fname}: axes={axes!r} must be a sequence of ints")
        axes = tuple(check_axis(a, ndim, fname, "axes entry") for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{fname}: axes={axes} repeats an axis; each axis may appear once")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{fname}: s={s} and axes={axes} must have the same length")
    if not axes:
        raise ValueError(f"{fname}: no axes to transform (axes={axes}, rank {ndim})")
    sizes = (tuple(x.shape[a] for a in axes) if s is None
             else tuple(check_length(n, fname, "s entry") for n in s))
    return axes, sizes


# -- the one planning function ------------------------------------------------------------------
def strategy_for(backend: str, decomposition: str, request: Request) -> str:
    """The planner's strategy. cuDecomp runs pencil transposes, not merged or folded ones, so
    under it "auto" means "pencil"; a request with kernels runs on "jax" whatever is asked
    (no native backend runs kernels), so there the planner picks freely."""
    if backend == "cudecomp" and decomposition == "auto" and not request.kernels:
        return "pencil"
    return decomposition


def plan(layout: Layout, request: Request, backend: str | None = None,
         decomposition: str = "auto") -> Plan | SplitAxisPlan | None:
    """The plan that runs `request` on `layout`, with the `selection` of the backend that runs
    it (the options in force, or `backend`): a `Plan`, else (every array axis split, no
    kernels) a `SplitAxisPlan`, else None. Selecting a backend that cannot run here raises
    BackendUnavailableError."""
    name = FFT_EXECUTORS.requested(backend)
    found = find_plan(layout, request.axes, request.kind, request.inverse, request.sizes,
                      request.kernels, strategy_for(name, decomposition, request))
    if found is not None:
        return dataclasses.replace(found, selection=FFT_EXECUTORS.select(name, found))
    if request.kernels or request.kind not in _SPLIT_KINDS:
        return None
    split = split_axis.split_plan(layout, request)
    return dataclasses.replace(
        split, selection=select_exchanges("FFT split-axis", FFT_EXECUTORS, name))


# -- running a plan -----------------------------------------------------------------------------
def execute(x: DistArray, plan: Plan | SplitAxisPlan, request: Request) -> DistArray:
    """Run `plan` (from `plan`, its selection set) on `x`, recording the selection. A plan's
    local FFTs run on the provider of option ``local_fft``: where it is not the default, the
    selection says which one ran (``local_fft='fftw'`` or ``'xla'``, e.g. "auto" without FFTW);
    the split-axis route's FFTs are always XLA's."""
    selection = typing.cast(Selection, plan.selection)
    if isinstance(plan, Plan) and config.get_config("local_fft") != "xla":
        dtype = request.cast if request.cast is not None else x.dtype
        ran = "fftw" if fftw.usable_for(dtype) else "xla"  # raises for "fftw" without FFTW
        selection = dataclasses.replace(selection,
                                        settings=selection.settings + (("local_fft", ran),))
    selection = record(selection)
    if isinstance(plan, SplitAxisPlan):
        return split_axis.run(x, plan, request)
    # An eager call (its program holds this op alone) may end on the backend's own reorders;
    # the pure-JAX program is the same either way, so it keeps one entry for eager and jitted.
    standalone = selection.backend != "jax" and not compat.is_tracer(x.data)
    out = _compiled(plan, request, selection, standalone)(x.data)
    return DistArray._new(out, plan.out_layout)


@program_cache(FFT)
def _compiled(plan: Plan, request: Request, selection, standalone: bool):
    execute_plan = selection.impl  # "jax"'s where the backend asked for cannot run the plan

    def run(data):
        data = physical.constrain(data, plan.in_layout)
        if request.cast is not None:
            data = data.astype(request.cast)
        if request.conj_in:
            data = jnp.conj(data)
        out = execute_plan(plan, data, request.norm, standalone)
        if request.conj_out:
            out = jnp.conj(out)
        return physical.constrain(out, plan.out_layout)
    return jax.jit(run)


def transform(x: DistArray, request: Request, backend: str | None = None,
              decomposition: str = "auto") -> DistArray:
    """The transform `request` of `x` (no halo): planned, or for an input without elements
    numpy's zeros. x.layout has the rank of x.data even under jax.vmap (DistArray reconciles
    it), so a vmapped call plans on the unmapped axes and JAX batches the shard_map."""
    request = request.taking(x.dtype)
    if x.size == 0:
        return _empty_input(x, request)
    found = plan(x.layout, request, backend, decomposition)
    assert found is not None, request  # every c2c, r2c and c2r request has a route
    return execute(x, found, request)


def _empty_input(x: DistArray, request: Request) -> DistArray:
    """numpy's answer for an input without elements: an empty axis padded to `n` is zeros, and
    so is its transform (scipy.signal.envelope reaches fft(x, n) of a length-0 axis). The
    result keeps x's split on every axis."""
    axes, sizes = request.axes, request.sizes
    shape = list(x.shape)
    for a, n in zip(axes, sizes):
        shape[a] = n
    if request.kind == "r2c":
        shape[axes[-1]] = sizes[-1] // 2 + 1
    dt = np.dtype(request.cast if request.cast is not None else x.dtype)
    dt = real_of(dt) if request.kind == "c2r" else complex_of(dt)
    layout = Layout.create(tuple(shape), x.mesh, x.layout.spec)
    return DistArray._new(physical.filled(layout, 0, dt), layout)


__all__ = ["DECOMPOSITIONS", "NORMS", "SWAPPED_NORM", "Request", "as_dist", "axes_and_sizes",
           "check_axis", "check_decomposition", "check_dtype", "check_length", "check_norm",
           "complex_of", "execute", "plan", "real_of", "strategy_for", "transform"]
