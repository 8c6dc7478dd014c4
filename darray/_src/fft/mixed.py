"""Mixed per-axis transforms: Fourier on some axes, cosine or sine on others, in one plan.

`transformn(x, ("fft", "dct1", "rfft"))` is what a channel-flow solver needs (Fourier in x and
z, Chebyshev in y: a DCT-I on the Gauss-Lobatto points), and ("dst2", "dct2", "dst4") what a
box with Dirichlet and Neumann walls needs. The values are those of scipy's 1-D transforms
applied along each axis: the real-to-real ones and the real FFT on the real input first, then
the complex FFTs (every one of these is linear over the complex numbers and they act on
different axes, so only the real FFT's place matters: it must see real data).

One plan does it all (darray._src.plans.fft_planner, the plan of `fftn`): the planner is asked for
a c2c plan (r2c with an "rfft" axis, r2r when every kind is real-to-real) whose complex
stages carry one kernel per axis, a `FFTKernel` or an `R2RKernel`
(darray._src.kernels.r2r_local), and the pure-JAX executor runs each local stage's real kernels
then its FFT kernels as one multi-axis FFT (fft_exec.apply_mixed_stage). Splits move by the
very exchanges `fftn` would make (pencil, slab, merged or folded, never an all-gather), and
the inverse retraces the forward path back to the input's layout.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from darray._src.distarray.array import DistArray
from darray._src.fft import api, core
from darray._src.fft.freq import record_spectrum_kinds
from darray._src.fft.request import Request
from darray._src.kernels.r2r_local import R2RKernel
from darray._src.layout.axes import normalize_axis

KINDS = ("fft", "rfft", "dct1", "dct2", "dct3", "dct4", "dst1", "dst2", "dst3", "dst4")


@dataclasses.dataclass(frozen=True)
class FFTKernel:
    """A complex FFT along one axis of a mixed transform (hashable: it keys compilations)."""

    inverse: bool
    norm: str
    is_fft = True  # read by fft_exec.apply_mixed_stage: run with the stage's other FFTs

    def __call__(self, block, axis):
        import jax.numpy as jnp
        fn = jnp.fft.ifft if self.inverse else jnp.fft.fft
        return fn(block, axis=axis, norm=self.norm)


def _check_kinds(kinds, ndim, axes, fname):
    if isinstance(kinds, str) or not hasattr(kinds, "__iter__"):
        raise TypeError(f"{fname}: kinds={kinds!r} must be a sequence of kinds, one per "
                        f"transform axis, e.g. ('fft', 'dct1', 'rfft'); accepted kinds: {KINDS}")
    kinds = tuple(kinds)
    if not kinds:
        raise ValueError(f"{fname}: kinds=() names no transform; give one kind per axis from "
                         f"{KINDS}")
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"{fname}: kinds entry {kind!r} is not a known transform; accepted: "
                             f"{KINDS}")
    if kinds.count("rfft") > 1:
        raise ValueError(f"{fname}: kinds={kinds} has {kinds.count('rfft')} 'rfft' axes; at most "
                         f"one axis may be 'rfft' (the others of a real input are 'fft')")
    if axes is None:
        if len(kinds) > ndim:
            raise ValueError(f"{fname}: kinds={kinds} has {len(kinds)} entries but x has "
                             f"{ndim} axes")
        axes = tuple(range(ndim - len(kinds), ndim))
    else:
        if isinstance(axes, (int, np.integer)):
            axes = (axes,)
        axes = tuple(normalize_axis(a, ndim, "axes entry", context=f"{fname}: ") for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{fname}: axes={axes} repeats an axis; each axis may appear once")
        if len(axes) != len(kinds):
            raise ValueError(f"{fname}: kinds={kinds} and axes={axes} must have the same length")
    return kinds, axes


def _kernel(kind, norm, inverse):
    if kind == "fft":
        return FFTKernel(inverse, norm)
    if kind == "rfft":
        return None  # the r2c/c2r stage of the plan: no kernel
    return R2RKernel(kind[:3], int(kind[3]), None, norm, None, inverse)


def _in_order(kinds, axes):
    """Kinds and axes with the "rfft" axis last (where the planner's r2c/c2r axis sits)."""
    pairs = list(zip(kinds, axes))
    pairs.sort(key=lambda p: p[0] == "rfft")  # stable: the others keep their order
    return tuple(k for k, _ in pairs), tuple(a for _, a in pairs)


def _plan_kind(kinds, inverse):
    if "rfft" in kinds:
        return "c2r" if inverse else "r2c"
    if "fft" in kinds:
        return "c2c"
    return "r2r"


def _request(kinds, axes, sizes, norm, inverse) -> Request:
    """The request of one plan whose local stages run a kernel per axis."""
    kernels = tuple(_kernel(k, norm, inverse) for k in kinds)
    for a, k, n in zip(axes, kernels, sizes):
        if isinstance(k, R2RKernel):
            k.check_length(n, a)
    return Request(axes, sizes, _plan_kind(kinds, inverse), inverse, norm, kernels=kernels)


def _run(x, kinds, axes, sizes, norm, inverse):
    """Plan and run; None when no plan of local stages exists (every axis split)."""
    request = _request(kinds, axes, sizes, norm, inverse)
    plan = core.plan(x.layout, request)
    if plan is None:
        return None
    # per-axis kernels run inside each backend's local stages; cuDecomp's refuse them and
    # the plan then runs on "jax" (recorded)
    return core.execute(x, plan, request)


def _one_axis_at_a_time(x, kinds, axes, sizes, norm, inverse):
    """Where no plan exists (a layout with every axis split whose chunks cannot fold): each
    axis by its own distributed 1-D transform (the four-step / split r2r paths), in the order
    that keeps the real transforms on real data."""
    from darray._src.fft import r2r
    order = ([i for i, k in enumerate(kinds) if k not in ("fft", "rfft")]
             + [i for i, k in enumerate(kinds) if k == "rfft"]
             + [i for i, k in enumerate(kinds) if k == "fft"])
    if inverse:
        order = order[::-1]
    for i in order:
        kind, a, n = kinds[i], axes[i], sizes[i]
        if kind == "fft":
            x = (api.ifft if inverse else api.fft)(x, axis=a, norm=norm)
        elif kind == "rfft":
            x = api.irfft(x, n=n, axis=a, norm=norm) if inverse else api.rfft(x, axis=a,
                                                                              norm=norm)
        else:
            fn = getattr(r2r, ("i" if inverse else "") + kind[:3])
            x = fn(x, type=int(kind[3]), axis=a, norm=norm)
    return x


def _prepare(x, kinds, axes, norm, fname):
    x = core.as_dist(x, fname)
    core.check_norm(norm, fname)
    core.check_dtype(x, fname)
    kinds, axes = _check_kinds(kinds, x.ndim, axes, fname)
    return x, kinds, axes


def transformn(x, kinds, *, axes=None, norm="backward") -> DistArray:
    """A different 1-D transform along each axis: Fourier, real Fourier, cosine or sine.

    Args:
      x: DistArray, real or complex floating point. Complex input has its real and imaginary
        parts transformed by the real-to-real kinds (scipy's rule; the transforms are linear)
        and may not have an "rfft" axis.
      kinds: one kind per transform axis: "fft", "rfft" (at most one axis), "dct1".."dct4",
        "dst1".."dst4" (scipy.fft's definitions).
      axes: the transform axes (default: the last ``len(kinds)``).
      norm: "backward", "ortho" or "forward", on every axis (scipy's meaning per kind).

    Returns:
      DistArray: what scipy's 1-D transforms give applied along each axis, the real ones
      (r2r, then rfft) first. The "rfft" axis keeps ``n//2 + 1`` entries; the result is complex
      when any kind is "fft" or "rfft", else in `x`'s dtype.

    Layout:
      One plan with the exchanges `fftn` makes on this layout (slab, pencil, merged or
      folded; all-to-alls, never an all-gather); the result may be split on other axes than
      `x` (recorded in its layout). `itransformn` retraces the path back to `x`'s layout.
    """
    x, kinds, axes = _prepare(x, kinds, axes, norm, "transformn")
    if "rfft" in kinds and np.dtype(x.dtype).kind == "c":
        raise TypeError(f"transformn: kinds={kinds} has an 'rfft' axis but x is complex "
                        f"({x.dtype}); 'rfft' needs real input: use 'fft' there")
    kinds_o, axes_o = _in_order(kinds, axes)
    sizes = tuple(x.shape[a] for a in axes_o)
    out = _run(x, kinds_o, axes_o, sizes, norm, False)
    if out is None:
        out = _one_axis_at_a_time(x, kinds_o, axes_o, sizes, norm, False)
    # wavenumbers(out) then knows its cosine/sine axes (issue 53)
    return record_spectrum_kinds(out, kinds, axes)


def transformn_plan(x, kinds, *, axes=None, norm="backward", backend=None):
    """The plan `transformn(x, kinds, axes=axes, norm=norm)` would run (for inspection and
    tests), its `selection` the backend that would run it under the options in force (or
    `backend`), fallback and reason included, as `fft_plan`'s; None where no plan exists
    (every axis split: transformn then runs one axis at a time, each a split-axis route)."""
    x, kinds, axes = _prepare(x, kinds, axes, norm, "transformn_plan")
    kinds_o, axes_o = _in_order(kinds, axes)
    request = _request(kinds_o, axes_o, tuple(x.shape[a] for a in axes_o), norm, False)
    return core.plan(x.layout, request, backend)


def itransformn(y, kinds, *, s=None, axes=None, norm="backward") -> DistArray:
    """The inverse of `transformn` with the same `kinds`, `axes` and `norm`.

    Args:
      y: the output of `transformn` (or any spectrum of that shape).
      kinds, axes, norm: as given to `transformn`.
      s: the real-space length of each transform axis (only the "rfft" axis's may differ from
        `y`'s shape: default ``2 * (m - 1)``, as `irfftn`); None keeps the others.

    Returns:
      DistArray: scipy's inverses (ifft, irfft, idct, idst of each type) along each axis, the
      complex ones first. Real when a kind is "rfft" (the irfft runs last), complex when a kind
      is "fft", else `y`'s dtype.

    Layout:
      Retraces `transformn`'s plan: applied to ``transformn(x, kinds)`` it returns in `x`'s
      layout with as many all-to-alls.
    """
    y, kinds, axes = _prepare(y, kinds, axes, norm, "itransformn")
    sizes = [y.shape[a] for a in axes]
    if s is not None:
        if isinstance(s, (int, np.integer)):
            raise TypeError(f"itransformn: s={s!r} must be a sequence of ints, one per axis")
        s = tuple(s)
        if len(s) != len(axes):
            raise ValueError(f"itransformn: s={s} and axes={axes} must have the same length")
        for j, (kind, n) in enumerate(zip(kinds, s)):
            n = core.check_length(n, "itransformn", "s entry")
            if kind != "rfft" and n != sizes[j]:
                raise ValueError(f"itransformn: s entry {j} is {n} but axis {axes[j]} "
                                 f"({kind!r}) has {sizes[j]} entries; only the 'rfft' axis's "
                                 f"real length may differ from y's shape")
            if kind == "rfft" and n // 2 + 1 != sizes[j]:
                raise ValueError(f"itransformn: s entry {j} is {n}, but the 'rfft' axis "
                                 f"{axes[j]} holds {sizes[j]} entries: s entry must be "
                                 f"{2 * (sizes[j] - 1)} or {2 * sizes[j] - 1}")
            sizes[j] = n
    elif "rfft" in kinds:
        j = kinds.index("rfft")
        sizes[j] = 2 * (sizes[j] - 1)
        if sizes[j] < 1:
            raise ValueError(f"itransformn: the 'rfft' axis {axes[j]} has length 1; pass s")
    order = sorted(range(len(kinds)), key=lambda j: kinds[j] == "rfft")
    kinds_o = tuple(kinds[j] for j in order)
    axes_o = tuple(axes[j] for j in order)
    sizes_o = tuple(sizes[j] for j in order)
    out = _run(y, kinds_o, axes_o, sizes_o, norm, True)
    return out if out is not None else _one_axis_at_a_time(y, kinds_o, axes_o, sizes_o, norm,
                                                           True)


__all__ = ["KINDS", "FFTKernel", "itransformn", "transformn", "transformn_plan"]
