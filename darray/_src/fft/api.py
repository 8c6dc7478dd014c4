"""darray.fft transforms: the Array API fft extension on distributed arrays, and `run_r2r`.

Three routes, never an all-gather:

* A transform that can move each split to another axis builds a pure-data `Plan`
  (darray._src.plans.fft_planner, darray._src.plans.fft_plan) from the input Layout and runs
  it inside one jitted shard_map (`_compiled`) on the selected FFT backend
  (darray._src.backends); a native backend that cannot run the plan leaves it to the JAX
  executor. `run_r2r` (the DCTs and DSTs of darray._src.fft.r2r) takes this route too.
* Padded transforms (``padding=``, darray._src.fft.padding) run the same kind of plan with
  per-axis kernels that pad or truncate, on the selected backend where it runs such kernels
  (as do the mixed transforms of darray._src.fft.mixed, through `_run_plan`).
* When every axis is split there is nowhere to move a split: the transform stays on its split
  axis (darray._src.fft.split_axis: the four-step FFT, Bluestein's for other lengths), its
  all-to-alls on the selected backend's row exchanges where it has them.

Each call records the Selection of the backend that runs it (`darray.record_backends`);
`fft_plan` shows the same choice before running: its plan's `selection`, in `describe()`.

The output Layout records where the data went: k-space may be split on other axes than the
input (e.g. a slab split on axis 0 comes back split on axis 1), while the logical shape and
axis order are numpy's. The inverse transforms retrace the forward path, so ``ifftn(fftn(x))``
is back in ``x``'s layout.

Inputs and outputs are pinned to their layouts' shardings, so jit, grad, jvp, vjp, jacfwd, jacrev
and vmap keep the distribution without user annotations.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.backends.jax import fft_exec
from darray._src.backends.registry import FFT_EXECUTORS, record, select_exchanges
from darray._src.base import compat
from darray._src.base.program_cache import FFT, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.common import ensure_array
from darray._src.fft import split_axis
from darray._src.layout.axes import normalize_axis, positive_length
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.plans.fft_planner import find_plan, no_plan_error

NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


# -- validation -------------------------------------------------------------------------------
def as_dist(x, fname: str, spec=None) -> DistArray:
    """`x` as a DistArray by the argument policy (common.ensure_array), ghost cells dropped:
    they are not part of the array, so a transform reads its interior."""
    x = ensure_array(fname, x, spec=spec)
    if x.layout.has_halo:
        x = x.unhalo()
    return x


def _check_norm(norm, fname):
    if norm not in NORMS:
        raise ValueError(f"{fname}: norm={norm!r} is not accepted; use one of {NORMS}")
    return norm


def _check_dtype(x, fname, *, real_only=False):
    dt = np.dtype(x.dtype)
    if real_only and dt.kind != "f":
        raise TypeError(f"{fname}: x must have a real floating-point dtype, got {dt}")
    if dt.kind not in "fc":
        raise TypeError(f"{fname}: x must have a floating-point dtype (real or complex), got "
                        f"{dt}; convert with darray.astype(x, darray.float64) first")
    return dt


_SINGLE = (np.float16, np.float32, np.complex64)  # transformed in single precision (jax.numpy)


def _complex_of(dt) -> np.dtype:
    return np.dtype(np.complex64) if dt in _SINGLE else np.dtype(np.complex128)


def _real_of(dt) -> np.dtype:
    return np.dtype(np.float32) if dt in _SINGLE else np.dtype(np.float64)


def _axis(axis, ndim, fname, argname="axis") -> int:
    return normalize_axis(axis, ndim, argname, context=f"{fname}: ")


def _length(n, fname, argname="n") -> int:
    return positive_length(n, argname, context=f"{fname}: ")


def _axes_and_sizes(x, s, axes, fname):
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
        axes = tuple(_axis(a, ndim, fname, "axes entry") for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{fname}: axes={axes} repeats an axis; each axis may appear once")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{fname}: s={s} and axes={axes} must have the same length")
    if not axes:
        raise ValueError(f"{fname}: no axes to transform (axes={axes}, rank {ndim})")
    sizes = (tuple(x.shape[a] for a in axes) if s is None
             else tuple(_length(n, fname, "s entry") for n in s))
    return axes, sizes


# -- the one core path ------------------------------------------------------------------------
def _run_plan(plan, norm, cast, conj_in, conj_out, backend, data):
    """Run `plan` on the backend in force (`backend`, else the options), recording the
    Selection (`darray.record_backends`): a backend that cannot run the plan leaves it to
    "jax", and the record says why."""
    chosen = record(FFT_EXECUTORS.select(FFT_EXECUTORS.requested(backend), plan))
    # An eager call (its program holds this op alone) may end on the backend's own reorders
    # (fft_exec.STANDALONE); the pure-JAX backend's program is the same either way, so it
    # keeps one cache entry for eager and jitted calls.
    standalone = chosen.requested != "jax" and not compat.is_tracer(data)
    return _compiled(plan, norm, cast, conj_in, conj_out, chosen.requested, standalone)(data)


@program_cache(FFT)
def _compiled(plan, norm, cast, conj_in, conj_out, backend, standalone=False):
    execute = FFT_EXECUTORS.select(backend, plan).impl  # "jax" where backend can't run plan

    def run(data):
        data = physical.constrain(data, plan.in_layout)
        if cast is not None:
            data = data.astype(cast)
        if conj_in:
            data = jnp.conj(data)
        token = fft_exec.STANDALONE.set(standalone)
        try:
            out = execute(plan, data, norm)
        finally:
            fft_exec.STANDALONE.reset(token)
        if conj_out:
            out = jnp.conj(out)
        return physical.constrain(out, plan.out_layout)
    return jax.jit(run)


DECOMPOSITIONS = ("auto", "pencil")


def _check_decomposition(decomposition, fname):
    if decomposition not in DECOMPOSITIONS:
        raise ValueError(f"{fname}: decomposition={decomposition!r} is not accepted; use one "
                         f"of {DECOMPOSITIONS} ('auto': the cheapest plan, e.g. a pencil "
                         f"input merged into one slab over all devices; 'pencil': one "
                         f"all-to-all per split axis over its own mesh axes)")
    return decomposition


def _transform(x: DistArray, axes, sizes, kind, inverse, norm, cast=None, *, conj_in=False,
               conj_out=False, backend=None, decomposition="auto") -> DistArray:
    # x.layout has the rank of x.data even under jax.vmap (DistArray reconciles it), so a
    # vmapped call plans on the unmapped axes and JAX batches the shard_map.
    layout, data = x.layout, x.data
    if x.size == 0:
        return _empty_input(x, axes, sizes, kind, cast)
    if cast is not None and np.dtype(cast) == np.dtype(x.dtype):
        cast = None
    backend = FFT_EXECUTORS.requested(backend)
    if backend == "cudecomp" and decomposition == "auto":
        decomposition = "pencil"  # cuDecomp runs pencil transposes, not merged or folded ones
    plan = find_plan(layout, tuple(axes), kind, inverse, tuple(sizes), (), decomposition)
    if plan is None:  # a split 1-D array, or chunks that cannot fold: four-step in place
        return split_axis.transform(x, axes, sizes, kind, inverse, norm, cast, conj_in=conj_in,
                                    conj_out=conj_out, fname="darray.fft", backend=backend)
    out = _run_plan(plan, norm, None if cast is None else np.dtype(cast), conj_in, conj_out,
                    backend, data)
    return DistArray._new(out, plan.out_layout)


def _empty_input(x: DistArray, axes, sizes, kind, cast) -> DistArray:
    """numpy's answer for an input without elements: an empty axis padded to `n` is zeros, and
    so is its transform (scipy.signal.envelope reaches fft(x, n) of a length-0 axis). The
    result keeps x's split on every axis."""
    shape = list(x.shape)
    for a, n in zip(axes, sizes):
        shape[a] = n
    if kind == "r2c":
        shape[axes[-1]] = sizes[-1] // 2 + 1
    dt = np.dtype(cast if cast is not None else x.dtype)
    dt = _real_of(dt) if kind == "c2r" else _complex_of(dt)
    layout = Layout.create(tuple(shape), x.mesh, x.layout.spec)
    return DistArray._new(physical.filled(layout, 0, dt), layout)


def _padded_plan(x, s, axes, kind, inverse, norm, padding, fname):
    """The plan of a padded (dealiasing) transform: the unpadded plan whose local FFTs pad or
    truncate (darray._src.fft.padding); None when every factor is 1 (the plain transform)."""
    from darray._src.fft import padding as pad
    factors = pad.check_padding(padding, len(axes), fname)
    s = None if s is None else tuple(_length(n, fname, "s entry") for n in s)
    if factors is None:
        return None
    coarse, fine = pad.padded_shapes(x.shape, axes, s, factors, kind, inverse, fname)
    kernels = pad.kernels_for(kind, inverse, coarse, fine, norm)
    sizes = fine if inverse else coarse
    plan = find_plan(x.layout, tuple(axes), kind, inverse, tuple(sizes), kernels)
    if plan is None:
        raise NotImplementedError(
            f"{fname}: padding on layout {x.layout!r}, where every axis is split and no plan "
            f"of local transforms exists, is not implemented; leave one axis unsplit") from None
    return plan


def _padded(x, s, axes, kind, inverse, norm, padding, cast, fname) -> DistArray:
    """A padded (dealiasing) transform (`_padded_plan`), on the FFT backend in force."""
    s = None if s is None else tuple(_length(n, fname, "s entry") for n in s)
    plan = _padded_plan(x, s, axes, kind, inverse, norm, padding, fname)
    if plan is None:  # padding 1 on every axis: the plain transform
        fn = {("c2c", False): fftn, ("c2c", True): ifftn, ("r2c", False): rfftn,
              ("c2r", True): irfftn}[kind, inverse]
        return fn(x, s=s, axes=axes, norm=norm)
    if cast is not None and np.dtype(cast) == np.dtype(x.dtype):
        cast = None
    out = _run_plan(plan, norm, None if cast is None else np.dtype(cast), False, False, None,
                    x.data)
    return DistArray._new(out, plan.out_layout)


def fft_plan(x: DistArray, *, axes=None, kind="c2c", inverse=False, s=None,
             decomposition="auto", padding=None, norm="backward", backend=None):
    """The plan darray would run for a transform of `x` (for inspection and tests), with the
    backend that would run it under the options in force (or `backend`): its `selection`,
    which `describe()` prints, says which and, for a fallback to "jax", why.

    Returns a `Plan` (padded with `padding=`, as fftn's), or where every axis is split and no
    plan exists a `SplitAxisPlan`: the split-axis stages, whose selection is that of the
    backend's row exchanges. Selecting a backend that cannot run here at all raises
    BackendUnavailableError, as the transform would.
    """
    x = as_dist(x, "fft_plan")
    axes, sizes = _axes_and_sizes(x, s, axes, "fft_plan")
    if kind == "c2r" and s is None:
        sizes = sizes[:-1] + (2 * (sizes[-1] - 1),)
    decomposition = _check_decomposition(decomposition, "fft_plan")
    _check_norm(norm, "fft_plan")
    name = FFT_EXECUTORS.requested(backend)
    plan = None
    if padding is not None:  # as _padded: the decomposition is the planner's choice
        plan = _padded_plan(x, s, axes, kind, bool(inverse), norm, padding, "fft_plan")
    if plan is None:
        if name == "cudecomp" and decomposition == "auto":
            decomposition = "pencil"  # as _transform
        plan = find_plan(x.layout, tuple(axes), kind, bool(inverse), tuple(sizes), (),
                         decomposition)
    if plan is None:
        if kind not in ("c2c", "r2c", "c2r"):
            raise no_plan_error(x.layout, axes, "fft_plan")
        split = split_axis.split_plan(x.layout, axes, kind, bool(inverse), sizes, "fft_plan")
        return dataclasses.replace(
            split, selection=select_exchanges("FFT split-axis", FFT_EXECUTORS, name))
    return dataclasses.replace(plan, selection=FFT_EXECUTORS.select(name, plan))


# -- real-to-real transforms (the kernels live in darray._src.kernels.r2r_local) ----------------
def run_r2r(x: DistArray, axes: tuple[int, ...], kernels: tuple, inverse_of=None, *,
            backend=None, decomposition="auto") -> DistArray:
    """Distributed real-to-real transform: ``kernels[k]`` runs along ``axes[k]``.

    Args:
      x: DistArray without halo.
      axes: distinct non-negative transform axes.
      kernels: one hashable kernel per axis (``r2r_local.R2RKernel``, or a callable
        ``kernel(block, axis)``); ``kernel.n`` (if not None) is the output length.
      inverse_of: None for a forward transform. Anything else (True, or the forward kernels)
        marks an inverse call (idct, idst...): given the output layout of a forward call it
        retraces that call's transposes back to the forward input's layout, as ifftn does.

    Returns:
      DistArray with the kernels' output lengths along `axes`.

    Layout:
      Exactly as `fftn`'s plan: each kernel runs on a local axis; split transform axes move by
      all-to-all (never a gather), k-space may stay transposed (recorded in the layout).

    Raises:
      PlanError (a NotImplementedError) when every array axis is split and no plan of local
      kernels exists (a split 1-D array); darray.fft.dctn and its siblings run such layouts
      by the distributed complex FFT instead (r2r_split.py).
    """
    out = r2r_planned(x, axes, kernels, inverse_of, backend=backend,
                       decomposition=decomposition)
    if out is None:
        raise no_plan_error(x.layout, tuple(int(a) for a in axes), "run_r2r")
    return out


def r2r_planned(x: DistArray, axes, kernels, inverse_of=None, *, backend=None,
                 decomposition="auto") -> DistArray | None:
    """run_r2r, or None where no plan of local kernels exists."""
    x = as_dist(x, "r2r")
    axes, kernels = tuple(int(a) for a in axes), tuple(kernels)
    if len(axes) != len(kernels):
        raise ValueError(f"r2r: axes={axes} and kernels (len {len(kernels)}) must have the "
                         f"same length")
    sizes = []
    for a, k in zip(axes, kernels):
        n = getattr(k, "n", None)
        sizes.append(x.shape[a] if n is None else _length(n, "r2r", "kernel.n"))
    plan = find_plan(x.layout, axes, "r2r", inverse_of is not None and inverse_of is not False,
                     tuple(sizes), kernels, _check_decomposition(decomposition, "r2r"))
    if plan is None:
        return None
    out = _run_plan(plan, "backward", None, False, False, backend, x.data)
    return DistArray._new(out, plan.out_layout)


# -- complex transforms -----------------------------------------------------------------------
def _c2c(x, s, axes, norm, inverse, fname, decomposition="auto", padding=None):
    x = as_dist(x, fname)
    _check_norm(norm, fname)
    _check_decomposition(decomposition, fname)
    dt = _check_dtype(x, fname)
    axes, sizes = _axes_and_sizes(x, s, axes, fname)
    if padding is not None:
        return _padded(x, s, axes, "c2c", inverse, norm, padding, _complex_of(dt), fname)
    return _transform(x, axes, sizes, "c2c", inverse, norm, _complex_of(dt),
                      decomposition=decomposition)


def fftn(x, /, *, s=None, axes=None, norm="backward", decomposition="auto",
         padding=None) -> DistArray:
    """n-dimensional discrete Fourier transform.

    Args:
      x: input DistArray (real or complex floating point; real input is promoted).
      s: transform length along each axis of `axes` (zero-pad or truncate, as numpy).
      axes: axes to transform (default: all, or the last ``len(s)``).
      norm: "backward" (no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n).
      decomposition: "auto" (default: the cheapest plan by bytes moved and exchanges) or
        "pencil" (one all-to-all per split transform axis, each over its own mesh axes).
      padding: dealiasing (the 3/2 rule: 1.5), a number >= 1 or one per axis: `x` is on the
        fine grid ``floor(padding * s_i)`` and the result is its spectrum truncated to the
        coarse shape `s` (default ``round(x.shape / padding)``); see docs/fft.md for the
        Nyquist rule and the scaling (the coarse transform of the same band-limited field).

    Returns:
      Complex DistArray of the logical shape numpy gives.

    Layout:
      Batch axes (not transformed) keep their split. Split transform axes move onto
      transformed axes by all-to-alls; the result may be split on other axes than `x` (a
      slab on axis 0 comes back split on axis 1). A pencil input merges its splits onto one
      axis in a single all-to-all over all their mesh axes when that axis is at least as long
      as the device count ((x, y, -) -> (-, -, (x, y))), else one all-to-all per split axis.
      When every array axis is split (a 2-D array on a 2-D mesh) one split is folded onto
      another for the transform and the input's layout comes back (four all-to-alls), or,
      where chunks cannot fold (and for split 1-D arrays), the four-step FFT runs in place.
      Uneven sizes are padded per split axis; no all-gather is ever performed.
    """
    return _c2c(x, s, axes, norm, False, "fftn", decomposition, padding)


def ifftn(x, /, *, s=None, axes=None, norm="backward", decomposition="auto",
          padding=None) -> DistArray:
    """n-dimensional inverse discrete Fourier transform (arguments as `fftn`).

    With `padding`, `x` is a spectrum of the coarse shape `s` (default its shape) and the
    result is the same band-limited field on the fine grid ``floor(padding * s_i)``.

    Layout:
      Retraces the forward path: applied to the output of ``fftn(x)`` it returns in ``x``'s
      layout with as many all-to-alls as the forward transform used.
    """
    return _c2c(x, s, axes, norm, True, "ifftn", decomposition, padding)


def fft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """One-dimensional discrete Fourier transform along `axis` (length `n`).

    Layout:
      A split `axis` is moved to another axis and back (two all-to-alls): the layout of `x` is
      kept. An unsplit `axis` needs no communication. When every array axis is split (e.g. a
      1D array on its default placement) the distributed four-step FFT runs in place: three
      all-to-alls, layout kept, when P*P divides the length for P devices on `axis`; any
      other length runs Bluestein's chirp-z form on a padded length (nine all-to-alls).
    """
    x = as_dist(x, "fft")
    a = _axis(axis, x.ndim, "fft")
    return _c2c(x, None if n is None else (_length(n, "fft"),), (a,), norm, False, "fft")


def ifft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """One-dimensional inverse discrete Fourier transform (arguments and layout as `fft`)."""
    x = as_dist(x, "ifft")
    a = _axis(axis, x.ndim, "ifft")
    return _c2c(x, None if n is None else (_length(n, "ifft"),), (a,), norm, True, "ifft")


# -- real transforms --------------------------------------------------------------------------
def rfftn(x, /, *, s=None, axes=None, norm="backward", decomposition="auto",
          padding=None) -> DistArray:
    """n-dimensional FFT of real input; the last transform axis keeps ``n//2 + 1`` entries.

    With `padding` (as `fftn`), `x` is on the fine grid ``floor(padding * s_i)`` and the result
    is the coarse spectrum of shape `s` (``s[-1]//2 + 1`` on the last axis).

    Layout:
      The real-to-complex stage runs first on the last axis (made local first if it is split),
      so no complex copy of the real input is made. Then as `fftn`.
    """
    x = as_dist(x, "rfftn")
    _check_norm(norm, "rfftn")
    _check_decomposition(decomposition, "rfftn")
    dt = _check_dtype(x, "rfftn", real_only=True)
    axes, sizes = _axes_and_sizes(x, s, axes, "rfftn")
    if padding is not None:
        return _padded(x, s, axes, "r2c", False, norm, padding, _real_of(dt), "rfftn")
    return _transform(x, axes, sizes, "r2c", False, norm, _real_of(dt),
                      decomposition=decomposition)


def irfftn(x, /, *, s=None, axes=None, norm="backward", decomposition="auto",
           padding=None) -> DistArray:
    """Inverse of `rfftn`. ``s[-1]`` is the real output length (default ``2*(m-1)``).

    With `padding` (as `fftn`), `x` is a coarse half spectrum of the real shape `s` and the
    result is the same band-limited real field on the fine grid ``floor(padding * s_i)``:
    ``rfftn(irfftn(k1, s=s, padding=1.5) * irfftn(k2, s=s, padding=1.5), s=s, padding=1.5)``
    is the alias-free spectrum of the product.

    Layout:
      Retraces the path of `rfftn`; the complex-to-real stage runs last, on a local axis.
    """
    x = as_dist(x, "irfftn")
    _check_norm(norm, "irfftn")
    _check_decomposition(decomposition, "irfftn")
    dt = _check_dtype(x, "irfftn")
    axes, sizes = _axes_and_sizes(x, s, axes, "irfftn")
    if padding is not None:
        return _padded(x, s, axes, "c2r", True, norm, padding, _complex_of(dt), "irfftn")
    if s is None:
        sizes = sizes[:-1] + (2 * (x.shape[axes[-1]] - 1),)
        if sizes[-1] < 1:
            raise ValueError(f"irfftn: the last axis has length {x.shape[axes[-1]]}, which gives "
                             f"an output length of {sizes[-1]}; pass s explicitly")
    return _transform(x, axes, sizes, "c2r", True, norm, _complex_of(dt),
                      decomposition=decomposition)


def rfft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """One-dimensional FFT of real input along `axis` (``n//2 + 1`` outputs).

    Layout:
      As `rfftn`. When every array axis is split (e.g. a split 1D array) it runs the complex
      four-step FFT of length n (about twice the flops of a local real FFT; three all-to-alls
      of the complex data) and keeps the first ``n//2 + 1`` entries, split like `x`.
    """
    x = as_dist(x, "rfft")
    a = _axis(axis, x.ndim, "rfft")
    return rfftn(x, s=None if n is None else (_length(n, "rfft"),), axes=(a,), norm=norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """Inverse of `rfft`: real output of length `n` (default ``2*(m-1)``)."""
    x = as_dist(x, "irfft")
    a = _axis(axis, x.ndim, "irfft")
    return irfftn(x, s=None if n is None else (_length(n, "irfft"),), axes=(a,), norm=norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """FFT of a Hermitian-symmetric signal given by its first half: real output of length `n`.

    Computed as ``irfft(conj(x), n)`` with the normalisation direction swapped (numpy's
    definition). Layout as `irfft`.
    """
    x = as_dist(x, "hfft")
    _check_norm(norm, "hfft")
    dt = _check_dtype(x, "hfft")
    a = _axis(axis, x.ndim, "hfft")
    size = 2 * (x.shape[a] - 1) if n is None else _length(n, "hfft")
    if size < 1:
        raise ValueError(f"hfft: axis {a} has length {x.shape[a]}; pass n explicitly")
    return _transform(x, (a,), (size,), "c2r", True, _SWAP[norm], _complex_of(dt), conj_in=True)


def ihfft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """Inverse of `hfft`: ``conj(rfft(x, n))`` with the normalisation direction swapped."""
    x = as_dist(x, "ihfft")
    _check_norm(norm, "ihfft")
    _check_dtype(x, "ihfft", real_only=True)
    a = _axis(axis, x.ndim, "ihfft")
    size = x.shape[a] if n is None else _length(n, "ihfft")
    return _transform(x, (a,), (size,), "r2c", False, _SWAP[norm], conj_out=True)


__all__ = ["run_r2r", "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn",
           "hfft", "ihfft", "fft_plan"]
