"""Sample frequencies and spectrum shifts: fftfreq, rfftfreq, fftshift, ifftshift."""
from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src import physical
from darray._src.api.common import apply_logical
from darray._src.axes import positive_length
from darray._src.array import DistArray
from darray._src.placement import make_layout
from darray._src.program_cache import SMALL, program_cache


def _freq_length(n, fname) -> int:
    return positive_length(n, context=f"{fname}: ")


def _freq_dtype(dtype, fname):
    if dtype is None:
        return np.dtype(jnp.zeros((), float).dtype)  # the default real floating dtype
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{fname}: dtype={dtype!r} is not a dtype") from None
    if dt.kind != "f":
        raise TypeError(f"{fname}: dtype={dt} is not accepted; use a real floating dtype "
                        f"(float32 or float64)")
    return np.dtype(jax.dtypes.canonicalize_dtype(dt))


@program_cache(SMALL)
def _freq_fn(kind, n, d, dtype, layout):
    def build():
        f = (jnp.fft.fftfreq if kind == "fft" else jnp.fft.rfftfreq)(n, d, dtype=dtype)
        return physical.logical_to_physical(f, layout)
    return jax.jit(build, out_shardings=physical.sharding_of(layout))


def _freq(kind, n, d, dtype, device, mesh, spec, fname):
    n = _freq_length(n, fname)
    dtype = _freq_dtype(dtype, fname)
    length = n if kind == "fft" else n // 2 + 1
    layout = make_layout((length,), mesh, spec, device)
    return DistArray._new(_freq_fn(kind, n, float(d), dtype, layout)(), layout)


def fftfreq(n, /, d=1.0, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """Sample frequencies of an `fft` of length `n` with sample spacing `d`.

    Args:
      n: window length.
      d: sample spacing (the result is in cycles per unit of `d`).
      dtype: real floating dtype (default: the default floating dtype).
      device, mesh, spec: placement, as for `darray.asarray`.

    Returns:
      DistArray of shape (n,): ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -n//2, ..., -1] / (d*n)``.

    Layout:
      Created in place on every device (no communication); default: split over all devices.
    """
    return _freq("fft", n, d, dtype, device, mesh, spec, "fftfreq")


def rfftfreq(n, /, d=1.0, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """Sample frequencies of an `rfft` of length `n`: shape (n//2 + 1,) (as `fftfreq`)."""
    return _freq("rfft", n, d, dtype, device, mesh, spec, "rfftfreq")


def _shift_axes(x, axes, fname):
    if axes is None:
        return tuple(range(x.ndim))
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = []
    for a in axes:
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"{fname}: axes entry {a!r} must be an int") from None
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"{fname}: axes entry {a} is out of range for rank {x.ndim}")
        out.append(a % x.ndim)
    return tuple(out)


def _shift(x, axes, inverse, fname):
    if not isinstance(x, DistArray):
        raise TypeError(f"{fname}: x must be a DistArray, got {type(x).__name__}")
    axes = _shift_axes(x, axes, fname)
    fn = jnp.fft.ifftshift if inverse else jnp.fft.fftshift
    return apply_logical(_ShiftFn(fn, axes), (x,), x.layout.without_halo())


class _ShiftFn:
    """Hashable callable, so apply_logical's compile cache sees equal shifts as equal."""

    def __init__(self, fn, axes):
        self.fn, self.axes = fn, axes

    def __call__(self, a):
        return self.fn(a, axes=self.axes)

    def __eq__(self, other):
        return isinstance(other, _ShiftFn) and (self.fn, self.axes) == (other.fn, other.axes)

    def __hash__(self):
        return hash((self.fn, self.axes))


def fftshift(x, /, *, axes=None) -> DistArray:
    """Move the zero-frequency entry to the centre of `axes` (default: all axes).

    Layout:
      Same layout as `x`. A shift along an unsplit axis is local; along a split axis XLA moves
      the blocks with collective-permutes (neighbour exchange, no all-gather, for evenly split
      axes).
    """
    return _shift(x, axes, False, "fftshift")


def ifftshift(x, /, *, axes=None) -> DistArray:
    """Inverse of `fftshift` (arguments and layout as `fftshift`)."""
    return _shift(x, axes, True, "ifftshift")
