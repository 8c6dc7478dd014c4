"""darray.fft transforms: the Array API fft extension on distributed arrays, and `run_r2r`.

Each entry point checks its arguments in numpy's terms and hands one `Request` to the core
(darray._src.fft.core), which plans it and runs the plan; never an all-gather:

* A transform that can move each split to another axis runs a pure-data `Plan`
  (darray._src.plans.fft_planner, darray._src.plans.fft_plan) inside one jitted shard_map on
  the selected FFT backend (darray._src.backends); a native backend that cannot run the plan
  leaves it to the JAX executor. `run_r2r` (the DCTs and DSTs of darray._src.fft.r2r) takes
  this route too.
* Padded transforms (``padding=``, darray._src.fft.padding) run the same kind of plan with
  per-axis kernels that pad or truncate (as do the mixed transforms of darray._src.fft.mixed).
* When every axis is split there is nowhere to move a split: the transform stays on its split
  axis (darray._src.fft.split_axis: the four-step FFT, Bluestein's for other lengths), its
  all-to-alls on the selected backend's row exchanges where it has them.

Each call records the Selection of the backend that runs it (`darray.record_backends`);
`fft_plan` shows the same plan and choice before running (the core's one planning function):
its plan's `selection`, in `describe()`.

The output Layout records where the data went: k-space may be split on other axes than the
input (e.g. a slab split on axis 0 comes back split on axis 1), while the logical shape and
axis order are numpy's. The inverse transforms retrace the forward path, so ``ifftn(fftn(x))``
is back in ``x``'s layout.

Inputs and outputs are pinned to their layouts' shardings, so jit, grad, jvp, vjp, jacfwd, jacrev
and vmap keep the distribution without user annotations.
"""
from __future__ import annotations

import dataclasses

from darray._src.distarray.array import DistArray
from darray._src.fft import core
from darray._src.fft import padding as pad
from darray._src.fft.core import (
    as_dist,
    axes_and_sizes,
    check_axis,
    check_decomposition,
    check_dtype,
    check_length,
    check_norm,
    complex_of,
    real_of,
)
from darray._src.fft.request import Request
from darray._src.plans.fft_planner import no_plan_error


# -- padded (dealiasing) transforms ---------------------------------------------------------------
def _padded_request(x, request: Request, s, padding, fname) -> Request | None:
    """`request` as a padded (dealiasing) transform: its local FFTs pad or truncate
    (darray._src.fft.padding); None when every factor is 1 (the plain transform)."""
    factors = pad.check_padding(padding, len(request.axes), fname)
    if factors is None:
        return None
    s = None if s is None else tuple(check_length(n, fname, "s entry") for n in s)
    kind, inverse = request.kind, request.inverse
    coarse, fine = pad.padded_shapes(x.shape, request.axes, s, factors, kind, inverse, fname)
    kernels = pad.kernels_for(kind, inverse, coarse, fine, request.norm)
    return dataclasses.replace(request, sizes=fine if inverse else coarse, kernels=kernels)


def _padded_plan(x, request: Request, fname):
    """The plan of a padded request (the planner picks the decomposition: no native backend
    runs its kernels)."""
    found = core.plan(x.layout, request)
    if found is None:
        raise NotImplementedError(
            f"{fname}: padding on layout {x.layout!r}, where every axis is split and no plan "
            f"of local transforms exists, is not implemented; leave one axis unsplit") from None
    return found


def _padded(x, request: Request, s, padding, fname) -> DistArray:
    """A padded (dealiasing) transform, on the FFT backend in force."""
    padded = _padded_request(x, request, s, padding, fname)
    if padded is None:  # padding 1 on every axis: the plain transform
        fn = {("c2c", False): fftn, ("c2c", True): ifftn, ("r2c", False): rfftn,
              ("c2r", True): irfftn}[request.kind, request.inverse]
        return fn(x, s=s, axes=request.axes, norm=request.norm)
    padded = padded.taking(x.dtype)
    return core.execute(x, _padded_plan(x, padded, fname), padded)


def fft_plan(x: DistArray, *, axes=None, kind="c2c", inverse=False, s=None,
             decomposition="auto", padding=None, norm="backward"):
    """The plan darray would run for a transform of `x` (for inspection and tests), with the
    backend that would run it under the options in force: its `selection`, which
    `describe()` prints, says which and, for a fallback to "jax", why. It is what the
    transform runs: both come from one planning function (darray._src.fft.core.plan).

    Returns a `Plan` (padded with `padding=`, as fftn's), or where every axis is split and no
    plan exists a `SplitAxisPlan`: the split-axis stages, whose selection is that of the
    backend's row exchanges. Selecting a backend that cannot run here at all raises
    BackendUnavailableError, as the transform would.
    """
    x = as_dist(x, "fft_plan")
    axes, sizes = axes_and_sizes(x, s, axes, "fft_plan")
    if kind == "c2r" and s is None:
        sizes = sizes[:-1] + (2 * (sizes[-1] - 1),)
    decomposition = check_decomposition(decomposition, "fft_plan")
    request = Request(axes, sizes, kind, inverse, check_norm(norm, "fft_plan"))
    if padding is not None:  # as _padded: the decomposition is the planner's choice
        padded = _padded_request(x, request, s, padding, "fft_plan")
        if padded is not None:
            return _padded_plan(x, padded, "fft_plan")
    found = core.plan(x.layout, request, None, decomposition)
    if found is None:
        raise no_plan_error(x.layout, axes, "fft_plan")
    return found


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
        sizes.append(x.shape[a] if n is None else check_length(n, "r2r", "kernel.n"))
    inverse = inverse_of is not None and inverse_of is not False
    request = Request(axes, tuple(sizes), "r2r", inverse, kernels=kernels)
    found = core.plan(x.layout, request, backend, check_decomposition(decomposition, "r2r"))
    if found is None:
        return None
    return core.execute(x, found, request)


# -- complex transforms -----------------------------------------------------------------------
def _c2c(x, s, axes, norm, inverse, fname, decomposition="auto", padding=None):
    x = as_dist(x, fname)
    check_norm(norm, fname)
    check_decomposition(decomposition, fname)
    dt = check_dtype(x, fname)
    axes, sizes = axes_and_sizes(x, s, axes, fname)
    request = Request(axes, sizes, "c2c", inverse, norm, complex_of(dt))
    if padding is not None:
        return _padded(x, request, s, padding, fname)
    return core.transform(x, request, decomposition=decomposition)


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
    a = check_axis(axis, x.ndim, "fft")
    return _c2c(x, None if n is None else (check_length(n, "fft"),), (a,), norm, False, "fft")


def ifft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """One-dimensional inverse discrete Fourier transform (arguments and layout as `fft`)."""
    x = as_dist(x, "ifft")
    a = check_axis(axis, x.ndim, "ifft")
    return _c2c(x, None if n is None else (check_length(n, "ifft"),), (a,), norm, True, "ifft")


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
    check_norm(norm, "rfftn")
    check_decomposition(decomposition, "rfftn")
    dt = check_dtype(x, "rfftn", real_only=True)
    axes, sizes = axes_and_sizes(x, s, axes, "rfftn")
    request = Request(axes, sizes, "r2c", False, norm, real_of(dt))
    if padding is not None:
        return _padded(x, request, s, padding, "rfftn")
    return core.transform(x, request, decomposition=decomposition)


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
    check_norm(norm, "irfftn")
    check_decomposition(decomposition, "irfftn")
    dt = check_dtype(x, "irfftn")
    axes, sizes = axes_and_sizes(x, s, axes, "irfftn")
    if padding is not None:
        return _padded(x, Request(axes, sizes, "c2r", True, norm, complex_of(dt)), s, padding,
                       "irfftn")
    if s is None:
        sizes = sizes[:-1] + (2 * (x.shape[axes[-1]] - 1),)
        if sizes[-1] < 1:
            raise ValueError(f"irfftn: the last axis has length {x.shape[axes[-1]]}, which gives "
                             f"an output length of {sizes[-1]}; pass s explicitly")
    return core.transform(x, Request(axes, sizes, "c2r", True, norm, complex_of(dt)),
                          decomposition=decomposition)


def rfft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """One-dimensional FFT of real input along `axis` (``n//2 + 1`` outputs).

    Layout:
      As `rfftn`. When every array axis is split (e.g. a split 1D array) it runs the complex
      four-step FFT of length n (about twice the flops of a local real FFT; three all-to-alls
      of the complex data) and keeps the first ``n//2 + 1`` entries, split like `x`.
    """
    x = as_dist(x, "rfft")
    a = check_axis(axis, x.ndim, "rfft")
    return rfftn(x, s=None if n is None else (check_length(n, "rfft"),), axes=(a,), norm=norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """Inverse of `rfft`: real output of length `n` (default ``2*(m-1)``)."""
    x = as_dist(x, "irfft")
    a = check_axis(axis, x.ndim, "irfft")
    return irfftn(x, s=None if n is None else (check_length(n, "irfft"),), axes=(a,), norm=norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """FFT of a Hermitian-symmetric signal given by its first half: real output of length `n`.

    Computed as ``irfft(conj(x), n)`` with the normalisation direction swapped (numpy's
    definition). Layout as `irfft`.
    """
    x = as_dist(x, "hfft")
    check_norm(norm, "hfft")
    dt = check_dtype(x, "hfft")
    a = check_axis(axis, x.ndim, "hfft")
    size = 2 * (x.shape[a] - 1) if n is None else check_length(n, "hfft")
    if size < 1:
        raise ValueError(f"hfft: axis {a} has length {x.shape[a]}; pass n explicitly")
    return core.transform(x, Request((a,), (size,), "c2r", True, core.SWAPPED_NORM[norm],
                                     complex_of(dt), conj_in=True))


def ihfft(x, /, *, n=None, axis=-1, norm="backward") -> DistArray:
    """Inverse of `hfft`: ``conj(rfft(x, n))`` with the normalisation direction swapped."""
    x = as_dist(x, "ihfft")
    check_norm(norm, "ihfft")
    check_dtype(x, "ihfft", real_only=True)
    a = check_axis(axis, x.ndim, "ihfft")
    size = x.shape[a] if n is None else check_length(n, "ihfft")
    return core.transform(x, Request((a,), (size,), "r2c", False, core.SWAPPED_NORM[norm],
                                     conj_out=True))


__all__ = ["run_r2r", "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn",
           "hfft", "ihfft", "fft_plan"]
