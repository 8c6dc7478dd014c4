"""Sample frequencies and spectrum shifts: fftfreq, rfftfreq, fftshift, ifftshift."""
from __future__ import annotations

import operator
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import apply_logical
from darray._src.engine.arguments import ensure_array
from darray._src.fft import shift
from darray._src.layout.axes import positive_length
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.placement.placement import make_layout


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
_R2R = ("dct1", "dct2", "dct3", "dct4", "dst1", "dst2", "dst3", "dst4")
_KINDS = ("fft", "rfft") + _R2R

# The kinds a spectrum was made with, per axis (None: not transformed), by id: `transformn`,
# `dctn` and `dstn` record them, so that `wavenumbers` of a cosine/sine spectrum cannot silently
# answer Fourier values (issue 53). Held weakly, and valid only for the array's version at
# recording: an in-place write (``k[...] = v``) may replace the spectrum.
_SPECTRUM_KINDS: dict[int, tuple] = {}


def record_spectrum_kinds(out: DistArray, kinds, axes) -> DistArray:
    """Record that `out` is a spectrum of `kinds` along `axes` (forward transforms only)."""
    per_axis: list[str | None] = [None] * out.ndim
    for kind, axis in zip(kinds, axes):
        per_axis[operator.index(axis) % out.ndim] = kind
    key = id(out)

    def forget(_ref, key=key) -> None:  # the array is gone: its id may be reused
        _SPECTRUM_KINDS.pop(key, None)
    ref = weakref.ref(out, forget)
    _SPECTRUM_KINDS[key] = (ref, out._version, tuple(per_axis))
    return out


def _recorded_kinds(k: DistArray):
    entry = _SPECTRUM_KINDS.get(id(k))
    if entry is None or entry[0]() is not k or entry[1] != k._version:
        return None
    return entry[2]


def _with_recorded_kinds(k: DistArray, kinds):
    """`kinds` for `wavenumbers`: the recorded ones where the caller gave none; a given
    `kinds` that contradicts the recorded ones raises (a wrong wavenumber gives a wrong
    Laplacian with no error)."""
    recorded = _recorded_kinds(k)
    if recorded is None or all(r in (None, "fft") for r in recorded):
        return kinds
    if kinds is None:
        return tuple(r or "fft" for r in recorded)
    given = _trailing(kinds, "kinds", k)
    first = k.ndim - len(given)
    for j, kind in enumerate(given):
        want = recorded[first + j]
        if want is not None and kind != want:
            raise ValueError(f"wavenumbers: kinds entry {j} is {kind!r}, but k was made with "
                             f"{want!r} along axis {first + j} (k's kinds: {recorded}); "
                             f"pass kinds={tuple(r or 'fft' for r in recorded)} or leave "
                             f"kinds out")
    return kinds


def angular_wavenumbers(kind: str, n: int, d: float) -> np.ndarray:
    """Float64 angular wavenumbers of the `n` entries of a `kind` transform of an axis of `n`
    real-space samples (spectrum entries for "rfft": n // 2 + 1) with spacing `d`.

    Fourier: ``2*pi*fftfreq`` / ``2*pi*rfftfreq`` (numpy's). Real-to-real (scipy.fft's
    kernels): entry ``k`` is the coefficient of ``cos(K x_j)`` or ``sin(K x_j)`` over the
    kind's sample positions ``x_j``: ``j d`` (dct1, dct3), ``(j + 1) d`` (dst1, dst3),
    ``(j + 1/2) d`` (dct2, dct4, dst2, dst4). So dct1: ``K = pi k / ((n-1) d)``; dct2:
    ``pi k / (n d)``; dst1: ``pi (k + 1) / ((n+1) d)``; dst2: ``pi (k + 1) / (n d)``; dct3,
    dct4, dst3, dst4: ``pi (k + 1/2) / (n d)``. (Tested against scipy's transform matrices.)"""
    k = np.arange(n, dtype=np.float64)
    if kind == "fft":
        return np.fft.fftfreq(n, d) * (2 * np.pi)
    if kind == "rfft":
        return np.fft.rfftfreq(n, d) * (2 * np.pi)
    if kind == "dct1":
        return np.pi * k / (max(n - 1, 1) * d)
    if kind == "dct2":
        return np.pi * k / (n * d)
    if kind == "dst1":
        return np.pi * (k + 1) / ((n + 1) * d)
    if kind == "dst2":
        return np.pi * (k + 1) / (n * d)
    return np.pi * (k + 0.5) / (n * d)     # dct3, dct4, dst3, dst4


@program_cache(SMALL)
def _wavenumber_fn(kind, n, d, dtype, axis, layout):
    # float64 on the host, cast once: the values are exact to the output's precision
    f = angular_wavenumbers(kind, n, d)
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


def _trailing(value, name: str, k) -> tuple:
    if isinstance(value, str) or np.ndim(value) == 0:
        raise TypeError(f"wavenumbers: {name}={value!r} must be a sequence (one entry per "
                        f"transformed axis: the last len({name}) axes of the spectrum), or None")
    value = tuple(value)
    if not 1 <= len(value) <= k.ndim:
        raise ValueError(f"wavenumbers: {name}={value} must have 1 to {k.ndim} entries (the "
                         f"last len({name}) axes of the spectrum, of shape {k.shape})")
    return value


_ASK = ("pass s=<the real-space shape> (as given to irfftn) for an fftn or rfftn spectrum, and "
        "kinds=<transformn's kinds> for a transformn spectrum")


def real_lengths(k, s, kinds):
    """(real-space length, kind) per axis of spectrum `k` (see `wavenumbers`)."""
    if s is None and kinds is None:
        raise TypeError(f"wavenumbers: k of shape {k.shape} came with neither s= nor kinds=, "
                        "and its shape alone cannot tell an fftn spectrum from an rfftn one "
                        "(whose halved last axis may come from an even or odd length) or "
                        f"from a cosine/sine transform's; {_ASK}")
    lengths: list[tuple[int | None, str]] = [(None, "fft") for _ in k.shape]
    if kinds is not None:
        kinds = _trailing(kinds, "kinds", k)
        first = k.ndim - len(kinds)
        for j, kind in enumerate(kinds):
            if kind not in _KINDS:
                raise ValueError(f"wavenumbers: kinds entry {j} is {kind!r}; accepted: "
                                 f"{', '.join(map(repr, _KINDS))}")
            lengths[first + j] = (None, kind)
        if sum(kind == "rfft" for kind in kinds) > 1:
            raise ValueError(f"wavenumbers: kinds={kinds} has more than one 'rfft' axis")
    elif np.dtype(k.dtype).kind != "c":
        raise TypeError(f"wavenumbers: k is real ({k.dtype}), so not an fftn or rfftn spectrum; "
                        "pass kinds=<transformn's kinds> (e.g. ('dst1', 'fft', 'rfft')) for "
                        "the cosine/sine wavenumbers")
    if s is not None:
        s = _trailing(s, "s", k)
        first = k.ndim - len(s)
        for j, n in enumerate(s):
            axis = first + j
            n = positive_length(n, "s entry", context="wavenumbers: ")
            m = k.shape[axis]
            kind = lengths[axis][1]
            if kinds is None and axis == k.ndim - 1 and n != m and n // 2 + 1 == m:
                kind = "rfft"
            elif kinds is None and axis == k.ndim - 1 and n == m == 2:
                raise ValueError(f"wavenumbers: s={s} with a last axis of 2 entries fits both "
                                 "an fftn spectrum (Nyquist entry -pi/d) and an rfftn one "
                                 "(+pi/d); pass kinds=('fft',) or kinds=('rfft',) to say which")
            if kind == "rfft":
                if n // 2 + 1 != m:
                    raise ValueError(f"wavenumbers: s={s} does not match the spectrum's shape "
                                     f"{k.shape}: axis {axis} is an rfft axis of {m} entries, "
                                     f"so s entry {j} must be {2 * (m - 1)} or {2 * m - 1}")
            elif n != m:
                expect = (f"{m}" if axis < k.ndim - 1 or kinds is not None
                          else f"{m} (a complex transform) or {2 * (m - 1)} or {2 * m - 1} "
                               f"(real)")
                raise ValueError(f"wavenumbers: s={s} does not match the spectrum's shape "
                                 f"{k.shape}: axis {axis} has {m} entries, so s entry {j} must "
                                 f"be {expect}")
            lengths[axis] = (n, kind)
    out = []
    for axis, (n, kind) in enumerate(lengths):
        if n is None and kind == "rfft":
            raise ValueError(f"wavenumbers: axis {axis} is an 'rfft' axis of {k.shape[axis]} "
                             f"entries, from a real length {2 * (k.shape[axis] - 1)} or "
                             f"{2 * k.shape[axis] - 1}: pass s= (the real-space shape) to say "
                             "which")
        out.append((k.shape[axis] if n is None else n, kind))
    return out


def wavenumbers(k, s=None, *, d=1.0, kinds=None) -> tuple[DistArray, ...]:
    """The angular wavenumbers of a spectrum, one array per axis, laid out like `k`.

    Args:
      k: a spectrum (DistArray), e.g. the output of `fftn`, `rfftn` or `transformn`.
      s: the real-space shape of the last ``len(s)`` axes (as passed to `irfftn`). Without
        `kinds`, the last axis holds the half spectrum of a real transform when
        ``s[-1] // 2 + 1 == k.shape[-1] != s[-1]``, and every other axis is a complex one.
      d: sample spacing, a number or one per axis (a box of length L and n points: L / n).
      kinds: the transform of each of the last ``len(kinds)`` axes, as given to `transformn`:
        "fft", "rfft" (needs `s` for that axis: its real length may be even or odd),
        "dct1".."dct4", "dst1".."dst4"; earlier axes are "fft". A spectrum returned by
        `transformn`, `dctn` or `dstn` (not yet written in place) carries its kinds: they are
        used when `kinds` is left out, and a `kinds` that contradicts them raises. Arrays
        computed from it (``k * g``) do not carry them: pass `kinds` for those.

      One of `s` and `kinds` is required: the spectrum's shape alone cannot tell an `fftn`
      spectrum from an `rfftn` one (nor an even real length from an odd one), and a guess
      would give wrong wavenumbers without an error. Ambiguous cases raise (a last axis of 2
      entries with only `s`: pass ``kinds=("fft",)`` or ``("rfft",)``).

    Returns:
      A tuple of ``k.ndim`` DistArrays. Entry ``i`` has size 1 on every axis but ``i`` and holds
      there, in the real precision of `k` (float32 for complex64): ``2*pi*fftfreq(n_i, d_i)``
      on a complex axis (numpy order: zero first, the Nyquist entry of an even axis
      negative); ``2*pi*rfftfreq(s[-1], d)`` on a halved axis (its Nyquist entry positive);
      on a cosine/sine axis of n samples, mode ``k``'s K in scipy.fft's kernel ``cos(K x_j)``
      / ``sin(K x_j)``, ``x_j`` the kind's sample positions (``j d`` for dct1/dct3, ``(j+1) d``
      for dst1/dst3, ``(j+1/2) d`` for the others): dct1 ``pi k/((n-1) d)``, dct2
      ``pi k/(n d)``, dst1 ``pi (k+1)/((n+1) d)``, dst2 ``pi (k+1)/(n d)``, dct3/dct4/dst3/dst4
      ``pi (k+1/2)/(n d)``. So ``-K**2`` is the second derivative's eigenvalue of each mode.

    Layout:
      Axis ``i`` of entry ``i`` is split exactly as axis ``i`` of `k` (same mesh axes, same
      padding); the size-1 axes are unsplit. So ``k * kx``, ``kx**2 + ky**2`` and the like
      broadcast on every device's own block: no communication (their compiled programs hold no
      collective). Built in place on every device.
    """
    k = ensure_array("wavenumbers", k, "k")  # the argument policy (engine/arguments.py)
    if k.ndim == 0:
        raise ValueError("wavenumbers: k is 0-d; a spectrum has at least one axis")
    kinds = _with_recorded_kinds(k, kinds)
    layout = k.layout.without_halo()
    spacings = _spacings(d, k.ndim)
    dtype = np.dtype(jnp.zeros((), k.dtype).real.dtype)
    if dtype.kind != "f":
        dtype = _freq_dtype(None, "wavenumbers")
    out = []
    for axis, ((n, kind), step) in enumerate(zip(real_lengths(k, s, kinds), spacings)):
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
    if shift.splits_a_shifted_axis(x.layout, axes):
        return DistArray._new(shift.shifted(x.data, x.layout, axes, inverse), x.layout)
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
      Same layout as `x`. A shift along an unsplit axis is local; along a split axis the blocks
      move by collective-permutes (neighbour exchange, no all-gather): where one shifted axis
      is split, darray's own roll (fft/shift.py: about 2 blocks of temporaries on uneven
      splits too), where several are, XLA's partitioner.
    """
    return _shift(x, axes, False, "fftshift")


def ifftshift(x, /, *, axes=None) -> DistArray:
    """Inverse of `fftshift` (arguments and layout as `fftshift`)."""
    return _shift(x, axes, True, "ifftshift")
