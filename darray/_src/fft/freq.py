"""Sample frequencies and spectrum shifts: fftfreq, rfftfreq, fftshift, ifftshift."""
from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src import physical
from darray._src.api.common import apply_logical, ensure_array
from darray._src.array import DistArray
from darray._src.axes import positive_length
from darray._src.layout import Layout
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
      A 1-D vector multiplies a spectrum without communication only where it is split like
      the spectrum's axis and reshaped to size 1 on the others; `darray.fft.wavenumbers`
      builds exactly that for every axis of a spectrum (use it for k-space arithmetic).
    """
    return _freq("fft", n, d, dtype, device, mesh, spec, "fftfreq")


def rfftfreq(n, /, d=1.0, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """Sample frequencies of an `rfft` of length `n`: shape (n//2 + 1,) (as `fftfreq`; for
    k-space arithmetic see `darray.fft.wavenumbers`)."""
    return _freq("rfft", n, d, dtype, device, mesh, spec, "rfftfreq")


# -- wavenumbers laid out like a spectrum ------------------------------------------------------
@program_cache(SMALL)
def _wavenumber_fn(kind, n, d, dtype, axis, layout):
    # float64 on the host, cast once: the values are exact to the output's precision
    f = (np.fft.fftfreq if kind == "fft" else np.fft.rfftfreq)(n, d) * (2 * np.pi)
    shape = [1] * layout.ndim
    shape[axis] = f.size
    values = f.reshape(shape).astype(dtype)

    def build():
        return physical.logical_to_physical(jnp.asarray(values), layout)
    return jax.jit(build, out_shardings=physical.sharding_of(layout))


def _spacings(d, ndim):
    if np.ndim(d) == 0:
        values = (d,) * ndim
    else:
        values = tuple(d)
        if len(values) != ndim:
            raise ValueError(f"wavenumbers: d={d!r} has {len(values)} entries but the spectrum "
                             f"has {ndim} axes; accepted: a number or one spacing per axis")
    out = []
    for v in values:
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise TypeError(f"wavenumbers: d entry {v!r} is not a number") from None
        if not np.isfinite(v) or v == 0:
            raise ValueError(f"wavenumbers: d entry {v!r} is not accepted; use a finite, "
                             f"nonzero sample spacing")
        out.append(v)
    return out


def _real_lengths(k, s):
    """(real-space length, "fft" or "rfft") per axis of spectrum `k` (see `wavenumbers`)."""
    lengths = [(n, "fft") for n in k.shape]
    if s is None:
        return lengths
    if np.ndim(s) == 0:
        raise TypeError(f"wavenumbers: s={s!r} must be a sequence of ints (the real-space "
                        f"shape of the transformed axes), or None")
    s = tuple(s)
    if not 1 <= len(s) <= k.ndim:
        raise ValueError(f"wavenumbers: s={s} must have 1 to {k.ndim} entries (the last len(s) "
                         f"axes of the spectrum, of shape {k.shape})")
    first = k.ndim - len(s)
    for j, n in enumerate(s):
        axis = first + j
        n = positive_length(n, "s entry", context="wavenumbers: ")
        m = k.shape[axis]
        if axis == k.ndim - 1 and n != m and n // 2 + 1 == m:
            lengths[axis] = (n, "rfft")
        elif n != m:
            expect = (f"{m}" if axis < k.ndim - 1
                      else f"{m} (a complex transform) or {2 * (m - 1)} or {2 * m - 1} (real)")
            raise ValueError(f"wavenumbers: s={s} does not match the spectrum's shape {k.shape}: "
                             f"axis {axis} has {m} entries, so s entry {j} must be {expect}")
        else:
            lengths[axis] = (n, "fft")
    return lengths


def wavenumbers(k, s=None, *, d=1.0) -> tuple[DistArray, ...]:
    """The angular wavenumbers of a spectrum, one array per axis, laid out like `k`.

    Args:
      k: a spectrum (DistArray), e.g. the output of `fftn` or `rfftn`.
      s: the real-space shape of the last ``len(s)`` axes (as passed to `irfftn`); None: every
        axis is a complex transform of its own length. The last axis holds the half spectrum
        of a real transform when ``s[-1] // 2 + 1 == k.shape[-1] != s[-1]``.
      d: sample spacing, a number or one per axis (a box of length L and n points: L / n).

    Returns:
      A tuple of ``k.ndim`` DistArrays. Entry ``i`` has size 1 on every axis but ``i`` and holds
      ``2*pi*fftfreq(n_i, d_i)`` there (``2*pi*rfftfreq(s[-1], d)`` on a halved last axis), in
      the real precision of `k` (float32 for complex64). numpy order: zero first, the Nyquist
      entry of an even full axis negative.

    Layout:
      Axis ``i`` of entry ``i`` is split exactly as axis ``i`` of `k` (same mesh axes, same
      padding); the size-1 axes are unsplit. So ``k * kx``, ``kx**2 + ky**2`` and the like
      broadcast on every device's own block: no communication (their compiled programs hold no
      collective). Built in place on every device.
    """
    k = ensure_array("wavenumbers", k, "k")  # the argument policy (api/common.py)
    if k.ndim == 0:
        raise ValueError("wavenumbers: k is 0-d; a spectrum has at least one axis")
    layout = k.layout.without_halo()
    spacings = _spacings(d, k.ndim)
    dtype = np.dtype(jnp.zeros((), k.dtype).real.dtype)
    if dtype.kind != "f":
        dtype = _freq_dtype(None, "wavenumbers")
    out = []
    for axis, ((n, kind), step) in enumerate(zip(_real_lengths(k, s), spacings)):
        shape = [1] * k.ndim
        shape[axis] = k.shape[axis]
        spec: list[str | tuple[str, ...] | None] = [None] * k.ndim
        split = layout.split[axis]
        spec[axis] = None if not split else (split[0] if len(split) == 1 else tuple(split))
        lay = Layout.create(tuple(shape), layout.mesh, tuple(spec))
        data = _wavenumber_fn(kind, n, step, dtype, axis, lay)()
        out.append(DistArray._new(data, lay))
    return tuple(out)


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
    x = ensure_array(fname, x)
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
