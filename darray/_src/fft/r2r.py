"""Real-to-real transforms (DCT and DST, types 1-4) with scipy.fft's signatures and numbers.

Each public function validates its arguments the way scipy.fft does (with messages that name
the argument, the value and what is accepted), builds one `R2RKernel` per transform axis
(darray._src.kernels.r2r_local) and hands them to the FFT planner's `run_r2r`, which moves splits
by all-to-all so that every kernel runs on a local axis. No all-gather is ever performed.

`overwrite_x` and `workers` are accepted for scipy compatibility and do nothing: JAX arrays are
immutable and XLA chooses its own threads.
"""
from __future__ import annotations

import dataclasses
import operator

import numpy as np

from darray._src.distarray.array import DistArray
from darray._src.fft import r2r_split
from darray._src.fft.api import r2r_planned
from darray._src.fft.core import as_dist
from darray._src.fft.freq import record_spectrum_kinds
from darray._src.kernels.r2r_local import NORMS, TYPES, R2RKernel, working_dtype
from darray._src.layout.axes import normalize_axis


# -- validation (scipy's rules, darray's wording) ---------------------------------------------
def _check_type(type, fname):
    try:
        t = operator.index(type)
    except TypeError:
        raise TypeError(f"{fname}: type={type!r} must be an int; accepted: 1, 2, 3 or 4") from None
    if isinstance(type, bool) or t not in TYPES:
        raise ValueError(f"{fname}: type={type!r} is not a valid transform type; accepted: 1, 2, "
                         f"3 or 4")
    return t


def _check_norm(norm, fname):
    if norm not in NORMS:
        raise ValueError(f"{fname}: norm={norm!r} is not accepted; use None, 'backward', 'ortho' "
                         f"or 'forward'")
    return norm


def _check_flags(orthogonalize, workers, fname):
    if orthogonalize is not None and not isinstance(orthogonalize, (bool, np.bool_)):
        raise TypeError(f"{fname}: orthogonalize={orthogonalize!r} must be None, True or False")
    if workers is not None:
        try:
            w = operator.index(workers)
        except TypeError:
            raise TypeError(f"{fname}: workers={workers!r} must be None or an int") from None
        if w == 0:
            raise ValueError(f"{fname}: workers=0 is not accepted; use None or a nonzero int "
                             f"(ignored: XLA picks its own threads)")
    return None if orthogonalize is None else bool(orthogonalize)


def _check_length(n, argname, fname):
    try:
        value = operator.index(n)
    except TypeError:
        raise TypeError(f"{fname}: {argname}={n!r} must be an int") from None
    if value < 1:
        raise ValueError(f"{fname}: {argname}={value} is an invalid number of data points; "
                         f"accepted: an int >= 1")
    return value


def _check_input(x, fname) -> DistArray:
    # The default placement splits a 1-D array over every device, and a split 1-D signal
    # takes the costlier split path (r2r_split: reorders by ppermute, a four-step or
    # Bluestein FFT with its all-to-alls). Host data is not distributed yet: the argument
    # policy places it whole on every device (each computes the local transform, no
    # collective), as scipy would on one.
    one_d = not isinstance(x, DistArray) and np.ndim(x) == 1
    x = as_dist(x, fname, spec=(None,) if one_d else None)
    working_dtype(x.dtype)  # raises TypeError naming the dtype for non-numeric input
    return x


def _axes_and_lengths(x, s, axes, fname):
    """scipy.fft's dctn rules: scalar s/axes allowed; axes default to all (or the last len(s));
    an s entry of -1 keeps that axis's length."""
    ndim = x.ndim
    if s is not None:
        s = (s,) if np.ndim(s) == 0 else tuple(s)
    if axes is not None:
        axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
        axes = tuple(normalize_axis(a, ndim, "axes entry", context=f"{fname}: ") for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{fname}: axes={axes} repeats an axis; each axis may appear once")
    elif s is not None:
        if len(s) > ndim:
            raise ValueError(f"{fname}: s={s} has {len(s)} entries but x has only {ndim} axes; "
                             f"accepted: at most one entry per axis")
        axes = tuple(range(ndim - len(s), ndim))
    else:
        axes = tuple(range(ndim))
    if s is None:
        return axes, (None,) * len(axes)
    if len(s) != len(axes):
        raise ValueError(f"{fname}: s={s} and axes={axes} must have the same length")
    lengths = []
    for entry in s:
        try:
            keep = operator.index(entry) == -1
        except TypeError:
            raise TypeError(f"{fname}: s={s} must hold ints (an entry -1 keeps that axis's "
                            f"length), got {entry!r}") from None
        lengths.append(None if keep else _check_length(entry, "s entry", fname))
    return axes, tuple(lengths)


@dataclasses.dataclass(frozen=True)
class _R2RCall:
    """One scipy-style call's transform settings, checked when its kernels are made (after
    the input and the axes, as scipy checks them)."""
    family: str  # "dct" or "dst"
    inverse: bool
    type: object  # as given: checked by `kernels`
    norm: str | None
    orthogonalize: object
    workers: object
    fname: str

    def kernels(self, lengths) -> tuple[R2RKernel, ...]:
        """One kernel per transform axis, `lengths` its output length (None: the input's)."""
        t = _check_type(self.type, self.fname)
        _check_norm(self.norm, self.fname)
        orth = _check_flags(self.orthogonalize, self.workers, self.fname)
        return tuple(R2RKernel(self.family, t, n, self.norm, orth, self.inverse)
                     for n in lengths)


def _r2r(x, lengths, axes, call: _R2RCall):
    kernels = call.kernels(lengths)
    for a, k in zip(axes, kernels):
        k.check_length(k.out_length(x.shape[a]), a)  # DCT-I needs 2 points: fail before tracing
    if not axes:
        return x
    out = r2r_planned(x, tuple(axes), kernels, inverse_of=True if call.inverse else None)
    if out is None:
        # every array axis is split (a split 1-D signal): transform each axis where it lies,
        # through the distributed complex FFT (r2r_split), still never gathering
        return r2r_split.transform(x, tuple(axes), kernels)
    return out


def _one_axis(x, n, axis, call: _R2RCall):
    x = _check_input(x, call.fname)
    a = normalize_axis(axis, x.ndim, "axis", context=f"{call.fname}: ")
    length = None if n is None else _check_length(n, "n", call.fname)
    return _r2r(x, (length,), (a,), call)


def _n_axes(x, s, axes, call: _R2RCall):
    x = _check_input(x, call.fname)
    axes, lengths = _axes_and_lengths(x, s, axes, call.fname)
    out = _r2r(x, lengths, axes, call)
    if call.inverse:
        return out
    # wavenumbers(out) then gives the cosine/sine wavenumbers without kinds= (issue 53)
    return record_spectrum_kinds(out, (f"{call.family}{call.type}",) * len(axes), axes)


_LAYOUT_1D = """
    Layout:
      An unsplit `axis` needs no communication and keeps `x`'s layout. A split `axis` is moved
      to an unsplit axis and back by all-to-all (the planner's choice, as for `darray.fft.fft`);
      the output layout is recorded on the result. Never an all-gather. A DistArray whose every
      axis is split with no axis to move the split to (a split 1-D signal) is transformed in
      place through the distributed FFT of a zero-padded length ~2N (its split kept).
"""

_LAYOUT_ND = """
    Layout:
      As `darray.fft.fftn`: batch axes keep their split; split transform axes move to other
      transform axes by one all-to-all each, so the result may be split on different axes than
      `x` (recorded in its layout). The inverse transforms retrace the forward path, so
      ``{inv}({fwd}(x))`` comes back in `x`'s layout. Never an all-gather.
"""

_ARGS_1D = """
    Args:
      x: DistArray (or array, placed by darray.asarray; a 1-D array is placed whole on every
        device); real, complex (real and imaginary parts transformed separately) or integer
        (computed in float64, float32 without x64).
      type: 1, 2, 3 or 4 (scipy's definitions; default 2).
      n: transform length: `x` is truncated or zero-padded along `axis` first (default: its
        length). Type 1 DCT needs n >= 2.
      axis: the transform axis (default -1).
      norm: None or "backward" (no scaling forward, 1/F inverse), "ortho" (1/sqrt(F) both ways),
        "forward" (1/F forward); F = 2(N-1) for DCT-I, 2(N+1) for DST-I, 2N otherwise.
      overwrite_x, workers: accepted for scipy compatibility; no effect.
      orthogonalize: scipy's flag (default: norm == "ortho"): rescale the boundary entries that
        make types 1-3 orthogonal.

    Returns:
      DistArray of `x`'s shape with `n` entries along `axis`, in `x`'s precision.
"""

_ARGS_ND = """
    Args:
      x: DistArray (or array); dtypes as `dct`.
      type: 1, 2, 3 or 4 (default 2), the same on every axis.
      s: lengths per transform axis (an int for one axis; -1 keeps an axis's length); `x` is
        truncated or zero-padded to them.
      axes: axes to transform (default: all, or the last ``len(s)``); ``()`` returns `x`.
      norm, overwrite_x, workers, orthogonalize: as `dct`, on every axis.

    Returns:
      DistArray of `x`'s shape with lengths `s` along `axes`, in `x`'s precision.
"""


def _doc(summary, args, layout, **names):
    return summary + "\n" + args + layout.format(**names)


def dct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None) -> DistArray:
    return _one_axis(x, n, axis, _R2RCall("dct", False, type, norm, orthogonalize,
                                          workers, "dct"))


def idct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None) -> DistArray:
    return _one_axis(x, n, axis, _R2RCall("dct", True, type, norm, orthogonalize,
                                          workers, "idct"))


def dst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None) -> DistArray:
    return _one_axis(x, n, axis, _R2RCall("dst", False, type, norm, orthogonalize,
                                          workers, "dst"))


def idst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None) -> DistArray:
    return _one_axis(x, n, axis, _R2RCall("dst", True, type, norm, orthogonalize,
                                          workers, "idst"))


def dctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None) -> DistArray:
    return _n_axes(x, s, axes, _R2RCall("dct", False, type, norm, orthogonalize,
                                        workers, "dctn"))


def idctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None) -> DistArray:
    return _n_axes(x, s, axes, _R2RCall("dct", True, type, norm, orthogonalize,
                                        workers, "idctn"))


def dstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None) -> DistArray:
    return _n_axes(x, s, axes, _R2RCall("dst", False, type, norm, orthogonalize,
                                        workers, "dstn"))


def idstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None) -> DistArray:
    return _n_axes(x, s, axes, _R2RCall("dst", True, type, norm, orthogonalize,
                                        workers, "idstn"))


dct.__doc__ = _doc("Discrete cosine transform along one axis (scipy.fft.dct).", _ARGS_1D,
                   _LAYOUT_1D)
idct.__doc__ = _doc("Inverse discrete cosine transform along one axis (scipy.fft.idct): the DCT "
                    "of the inverse type (II <-> III) with the norm direction swapped.",
                    _ARGS_1D, _LAYOUT_1D + "      Applied to `dct`'s output it retraces the "
                    "forward path.\n")
dst.__doc__ = _doc("Discrete sine transform along one axis (scipy.fft.dst).", _ARGS_1D,
                   _LAYOUT_1D)
idst.__doc__ = _doc("Inverse discrete sine transform along one axis (scipy.fft.idst).",
                    _ARGS_1D, _LAYOUT_1D + "      Applied to `dst`'s output it retraces the "
                    "forward path.\n")
dctn.__doc__ = _doc("n-dimensional discrete cosine transform (scipy.fft.dctn).", _ARGS_ND,
                    _LAYOUT_ND, inv="idctn", fwd="dctn")
idctn.__doc__ = _doc("n-dimensional inverse discrete cosine transform (scipy.fft.idctn).",
                     _ARGS_ND, _LAYOUT_ND, inv="idctn", fwd="dctn")
dstn.__doc__ = _doc("n-dimensional discrete sine transform (scipy.fft.dstn).", _ARGS_ND,
                    _LAYOUT_ND, inv="idstn", fwd="dstn")
idstn.__doc__ = _doc("n-dimensional inverse discrete sine transform (scipy.fft.idstn).",
                     _ARGS_ND, _LAYOUT_ND, inv="idstn", fwd="dstn")

__all__ = ["dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn"]
