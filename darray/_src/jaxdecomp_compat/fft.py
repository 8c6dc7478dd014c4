"""pfft3d / pifft3d / prfft3d / pirfft3d / fftfreq3d / rfftfreq3d with jaxDecomp's layouts.

jaxDecomp 0.3.1 (transpose_axis_contiguous=True, its default) returns the spectrum of an
(X, Y, Z) array as ``fftn(x).transpose(1, 2, 0)``, shape (Y, Z, X), and `pifft3d` maps such a
(Y, Z, X) spectrum back by ``ifftn(k).transpose(2, 0, 1)``. Output specs follow
`specs.fft_output_spec`. darray computes the same values with its own distributed FFT and
picks, among the plans it could run (transposing before or after, pencil or merged
decompositions), one whose output already has jaxDecomp's layout, so no redistribution is
added: on a 2-D mesh, darray's pencil plan is jaxDecomp's algorithm.

A 4-D input is a batch of 3-D transforms over the leading axis, as in jaxDecomp.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.lax import FftType
from jax.sharding import NamedSharding, PartitionSpec

from darray._src.api.manipulation import permute_dims
from darray._src.backends.jax.fft_exec import run_stages
from darray._src.base import compat
from darray._src.fft import core as fft_core
from darray._src.fft.request import Request
from darray._src.jaxdecomp_compat import deferred, placement, specs
from darray._src.jaxdecomp_compat.config import comm_options, config, darray_backend
from darray._src.layout.layout import Layout
from darray._src.plans.fft_plan import PlanError
from darray._src.plans.fft_planner import plan_fft

NORMS = ("backward", "ortho", "forward")


def _complex_dtype(dt) -> np.dtype:
    dt = np.dtype(dt)
    if dt in (np.float64, np.complex128):
        return np.dtype(np.complex128)
    if dt in (np.float32, np.complex64) or dt.kind == "f":
        return np.dtype(np.complex64)
    return np.dtype(jnp.result_type(complex))  # integers: jax's default complex type


def _order(fft_type) -> tuple[int, int, int]:
    """How the spatial axes of the output are ordered (read from jaxDecomp's config)."""
    if not config.transpose_axis_contiguous:
        return (0, 1, 2)
    return (1, 2, 0) if fft_type in specs.FORWARD else (2, 0, 1)


def _half_spec(spec3, fft_type) -> tuple:
    """prfft3d's layout: pfft3d's, with the split of the halved axis (Z // 2 + 1 cells, rarely
    divisible by its devices) moved to the first spatial axis that has none."""
    spec3 = list(spec3)
    half = _order(fft_type).index(2)
    if spec3[half] is not None:
        free = next((i for i in range(3) if spec3[i] is None), None)
        if free is not None:
            spec3[free], spec3[half] = spec3[half], None
    return tuple(spec3)


def _contract(fft_type, batch):
    """The spec jaxDecomp expects of the input: the mesh axes in order for a forward transform,
    the forward transform's output spec for an inverse one."""
    def contract(mesh):
        natural = specs.natural_spec(mesh)
        if fft_type in specs.INVERSE:
            natural = specs.fft_output_spec(FftType.FFT, specs.decomposition(mesh), natural)
            if fft_type == FftType.IRFFT:
                natural = _half_spec(natural, FftType.RFFT)
        return (None,) * batch + tuple(natural)
    contract.__doc__ = ("the mesh axes in order" if fft_type in specs.FORWARD
                        else "as the forward transform returns it")
    return contract


def _local(a, fft_type, norm, order, batch, real_size):
    axes = tuple(range(batch, batch + 3))
    perm = tuple(range(batch)) + tuple(batch + i for i in order)
    if fft_type == FftType.FFT:
        return jnp.fft.fftn(a.astype(_complex_dtype(a.dtype)), axes=axes, norm=norm
                            ).transpose(perm)
    if fft_type == FftType.IFFT:
        return jnp.fft.ifftn(a.astype(_complex_dtype(a.dtype)), axes=axes, norm=norm
                             ).transpose(perm)
    if fft_type == FftType.RFFT:
        return jnp.fft.rfftn(a, axes=axes, norm=norm).transpose(perm)
    spectrum = a.transpose(perm)  # IRFFT: back to (X, Y, Z//2+1) first
    return jnp.fft.irfftn(spectrum, s=(spectrum.shape[batch], spectrum.shape[batch + 1],
                                       real_size), axes=axes, norm=norm)


def _candidates(shape, fft_type, order, batch, real_size):
    """Every way of computing the result: transpose the spatial axes by some permutation,
    transform all of them, transpose into jaxDecomp's order. (The transforms commute with
    transposes; which one is free of extra communication depends on where darray's plan leaves
    the split.) Each is (pre-permutation, axes, sizes, kind, inverse, post-permutation).

    Axes are tracked by label, the input's original axis (0, 1, 2 = X, Y, Z): a forward input
    is (X, Y, Z) and its output is ordered by `order`; an inverse input is in the forward
    output's order and its output is (X, Y, Z). Z is the halved axis of real transforms."""
    nd, lead = len(shape), tuple(range(batch))
    forward_order = _order(FftType.FFT)
    if fft_type in specs.FORWARD:
        in_labels, out_labels = (0, 1, 2), tuple(order)
    else:
        in_labels, out_labels = tuple(forward_order), (0, 1, 2)
    kind = {FftType.FFT: "c2c", FftType.IFFT: "c2c", FftType.RFFT: "r2c",
            FftType.IRFFT: "c2r"}[fft_type]
    inverse = fft_type in specs.INVERSE
    out = []
    for q in itertools.permutations(range(3)):
        labels = tuple(in_labels[i] for i in q)  # the labels of the pre-permuted axes
        pre = lead + tuple(batch + i for i in q)
        sizes = [shape[batch + i] for i in q]
        if kind == "c2c":
            axes = tuple(range(batch, nd))
        else:
            z = labels.index(2)
            axes = tuple(batch + i for i in range(3) if i != z) + (batch + z,)
            if kind == "c2r":
                sizes[z] = real_size
            sizes = [sizes[a - batch] for a in axes]
        post = lead + tuple(batch + labels.index(lab) for lab in out_labels)
        out.append((pre, axes, tuple(sizes), kind, inverse, post))
    # the plain order first: transform in place, then transpose
    out.sort(key=lambda c: c[0] != tuple(range(nd)))
    return out


def _permuted_layout(layout: Layout, perm) -> Layout:
    return Layout.create(tuple(layout.shape[p] for p in perm), layout.mesh,
                         tuple(layout.split[p] or None for p in perm))


def _choose(layout: Layout, candidates, target: Layout):
    """The first candidate whose plan ends in `target`'s split (else the first that plans):
    (pre, axes, sizes, kind, inverse, post, strategy, plan)."""
    chosen = None
    for pre, axes, sizes, kind, inverse, post in candidates:
        start = _permuted_layout(layout, pre)
        for strategy in ("pencil", "auto"):
            try:
                plan = plan_fft(start, axes, kind, inverse, sizes, strategy=strategy)
            except PlanError:
                continue
            end = _permuted_layout(plan.out_layout, post)
            option = (pre, axes, sizes, kind, inverse, post, strategy, plan)
            if chosen is None:
                chosen = option
            if placement.effective_split(end) == placement.effective_split(target):
                return option
    if chosen is None:  # every order and strategy raised PlanError (was: unpacking None)
        raise PlanError(f"cannot plan a 3-D FFT of an array with layout {layout!r} in any "
                        f"axis order by local FFTs and all-to-alls")
    return chosen


def _run(x, candidates, target: Layout, norm, cast, backend):
    pre, axes, sizes, kind, inverse, post, strategy, _ = _choose(x.layout, candidates, target)
    if pre != tuple(range(x.ndim)):
        x = permute_dims(x, pre)
    y = fft_core.transform(x, Request(axes, sizes, kind, inverse, norm, cast), backend,
                           strategy)
    if post != tuple(range(y.ndim)):
        y = permute_dims(y, post)
    return y


def _out_spec(fft_type, mesh, spec, batch, backend) -> tuple:
    """jaxDecomp's output spec for an input sharded `spec` (batch entries kept)."""
    decomp = specs.decomposition(mesh)
    if fft_type == FftType.IRFFT:  # back to the layout forward transforms take
        out_spatial = specs.natural_spec(mesh)
    else:
        out_spatial = specs.fft_output_spec(fft_type, decomp, spec[batch:], backend)
        if fft_type == FftType.RFFT:
            out_spatial = _half_spec(out_spatial, fft_type)
    return tuple(spec[:batch]) + placement.padded(out_spatial, 3)


@dataclasses.dataclass(frozen=True)
class DeferredFFT:
    """pfft3d and its kin as a partition-time op (deferred.py): the settings of the call."""
    fft_type: FftType
    norm: str
    contiguous: bool
    real_size: int | None

    def local(self, a):
        with specs.contiguity(self.contiguous):
            order = _order(self.fft_type)
        return _local(a, self.fft_type, self.norm, order, a.ndim - 3, self.real_size)

    def partition(self, mesh, shape, spec):
        batch = len(shape) - 3
        twin = compat.auto_twin(mesh)
        with specs.contiguity(self.contiguous):
            if not any(placement.effective_entries(mesh, spec[batch:])):  # distribute it
                spec = placement.padded(_contract(self.fft_type, batch)(mesh), len(shape))
            target_spec = _out_spec(self.fft_type, mesh, spec, batch, "jax")
            candidates = _candidates(shape, self.fft_type, _order(self.fft_type), batch,
                                     self.real_size)
        target = Layout.create(_out_shape(shape, candidates[0]), twin, target_spec)
        pre, _, _, _, _, post, _, plan = _choose(Layout.create(shape, twin, spec), candidates,
                                                 target)
        end = _permuted_layout(plan.out_layout, post)
        out_spec = placement.full_spec(end)
        # jaxDecomp's layout where the plan ends elsewhere (prfft3d: its halved axis unsplit)
        fixup = deferred.moves(mesh, target.shape, out_spec, target_spec)
        if fixup:
            out_spec = target_spec
        norm, ident = self.norm, tuple(range(len(shape)))

        def body(block):
            if pre != ident:
                block = block.transpose(pre)
            block = run_stages(block, plan, norm)
            if post != ident:
                block = block.transpose(post)
            return deferred.run_moves(block, fixup or ())
        return spec, out_spec, body

    def spec_map(self, mesh, ndim):
        batch = ndim - 3
        with specs.contiguity(self.contiguous):
            natural = placement.padded(_contract(self.fft_type, batch)(mesh), ndim)
            out = _out_spec(self.fft_type, mesh, natural, batch, "jax")
        return deferred.natural_map(natural, out)


def _pfft(a, fft_type, norm, backend, fname, real_size=None):
    a = placement.as_array(a, fname)
    if norm not in NORMS:
        raise ValueError(f"{fname}: norm={norm!r} is not accepted; use one of {NORMS}")
    backend = darray_backend(backend, fname)
    if a.ndim not in (3, 4):
        raise ValueError(f"{fname}: the input must be 3-D (X, Y, Z), or 4-D with a leading batch "
                         f"axis, got shape {tuple(a.shape)}")
    batch = a.ndim - 3
    if fft_type in (FftType.RFFT,) and np.dtype(a.dtype).kind not in "fiub":
        raise TypeError(f"{fname}: a must be real, got {a.dtype}")
    order = _order(fft_type)
    if fft_type == FftType.IRFFT:
        z_len = a.shape[batch + _order(FftType.FFT).index(2)]
        real_size = 2 * (z_len - 1) if real_size is None else int(real_size)
        if real_size < 1:
            raise ValueError(f"{fname}: the half-spectrum axis has length {z_len}; pass s")
    if fft_type == FftType.RFFT and np.dtype(a.dtype).kind != "f":
        a = a.astype(jnp.result_type(float))
    cast = None if fft_type == FftType.RFFT else _complex_dtype(a.dtype)
    mesh, spec = placement.locate(a, fname, _contract(fft_type, batch), backend)
    if mesh is placement.DEFERRED:
        if cast is not None:
            a = a.astype(cast)
        return deferred.apply(a, DeferredFFT(fft_type, norm, bool(config.transpose_axis_contiguous),
                                             real_size))
    if mesh is None:
        return _local(a, fft_type, norm, order, batch, real_size)
    out_spec = _out_spec(fft_type, mesh, spec, batch, backend)
    x = placement.wrap(a, mesh, spec)
    candidates = _candidates(x.shape, fft_type, order, batch, real_size)
    out_shape = _out_shape(x.shape, candidates[0])
    target = Layout.create(out_shape, x.layout.mesh, out_spec)
    with comm_options(backend):
        y = _run(x, candidates, target, norm, cast, backend)
    return placement.unwrap(y, mesh, out_spec)


def _out_shape(shape, candidate):
    pre, axes, sizes, kind, _, post = candidate
    shape = [shape[p] for p in pre]
    for a, n in zip(axes, sizes):
        shape[a] = n
    if kind == "r2c":
        shape[axes[-1]] = sizes[-1] // 2 + 1
    return tuple(shape[p] for p in post)


def pfft3d(a, norm="backward", backend="JAX"):
    """3-D FFT of `a` (X, Y, Z), returned as jaxDecomp returns it: shape (Y, Z, X)
    (``fftn(a).transpose(1, 2, 0)``; numpy's order with ``config.transpose_axis_contiguous =
    False``), complex, sharded per `get_output_specs`. A 4-D input is a batch over axis 0."""
    return _pfft(a, FftType.FFT, norm, backend, "pfft3d")


def pifft3d(a, norm="backward", backend="JAX"):
    """Inverse of `pfft3d`: a (Y, Z, X) spectrum back to (X, Y, Z), complex, in the layout the
    forward transform started from."""
    return _pfft(a, FftType.IFFT, norm, backend, "pifft3d")


def prfft3d(a, norm="backward", backend="JAX"):
    """3-D FFT of real `a` (X, Y, Z) with the last axis halved: shape (Y, Z//2 + 1, X). Laid out
    as `pfft3d`'s output except that the halved axis is not split: its mesh axes move to the
    first unsplit axis (on a (p0, p1) mesh: P(x, None, y)). jaxDecomp 0.3.1 declares this
    function and raises "Not implemented"; darray computes it."""
    return _pfft(a, FftType.RFFT, norm, backend, "prfft3d")


def pirfft3d(a, norm="backward", backend="JAX", *, s=None):
    """Inverse of `prfft3d`: real (X, Y, Z) with ``Z = 2 * (m - 1)`` for a half axis of length m,
    or ``Z = s`` (pass it for odd Z), split by the mesh axes in order (the layout the forward
    transforms take)."""
    return _pfft(a, FftType.IRFFT, norm, backend, "pirfft3d", real_size=s)


def _freqs(k_array, d, fname, real):
    shape = tuple(k_array.shape)
    if len(shape) != 3:
        raise ValueError(f"{fname}: k_array must be 3-D, got shape {shape}")
    dtype = np.dtype(k_array.dtype)
    if dtype.kind != "c":
        raise TypeError(f"{fname}: k_array must be complex (a spectrum from pfft3d), got "
                        f"{dtype}")
    real_dt = jnp.float32 if dtype == np.complex64 else jnp.float64
    two_pi = 2 * jnp.pi
    k0 = jnp.fft.fftfreq(shape[0], d=d, dtype=real_dt) * two_pi
    k1 = (jnp.fft.rfftfreq if real else jnp.fft.fftfreq)(shape[1], d=d, dtype=real_dt) * two_pi
    k2 = jnp.fft.fftfreq(shape[2], d=d, dtype=real_dt) * two_pi
    k0, k1, k2 = (_split_like(v, axis, k_array, real, fname)
                  for axis, v in enumerate((k0, k1, k2)))
    # jaxDecomp's order: the frequencies of axis 2, then axis 0, then axis 1 of the spectrum,
    # which for pfft3d's (Y, Z, X) output is the input's (X, Y, Z) order.
    return k2, k0, k1


def _split_like(values, axis, k_array, real, fname):
    """The frequencies of spectrum axis `axis`, shaped to broadcast against the spectrum and,
    under a trace on Auto mesh axes, split as that axis is: built in place on every device, so
    ``k * (kx**2 + ky**2 + kz**2)`` multiplies block by block. Left unconstrained, XLA built the
    sum replicated and all-gathered it into the spectrum's layout (an [N/2, N] all-gather,
    issue 53)."""
    shape = [1, 1, 1]
    shape[axis] = values.shape[0]
    values = values.reshape(shape)
    if not compat.is_tracer(k_array):
        return values  # eager: jax places the (uncommitted) vectors where the spectrum is
    fft_type = FftType.RFFT if real else FftType.FFT

    def spectrum_spec(mesh):
        return _out_spec(fft_type, mesh, placement.padded(specs.natural_spec(mesh), 3), 0,
                         "jax")
    try:  # the spectrum's spec: in its type (Explicit axes), else jaxDecomp's output spec
        mesh, spec = placement.locate(k_array, fname, spectrum_spec, "cudecomp")
    except ValueError:
        return values  # no mesh in context: nothing to align with
    if mesh is None or compat.is_explicit(mesh):
        return values  # one device; or Explicit axes, whose types carry the sharding already
    entry = spec[axis]
    names = placement.effective_entries(mesh, (entry,))[0]
    if not names or values.shape[axis] % math.prod(mesh.shape[n] for n in names):
        return values
    want = [None, None, None]
    want[axis] = entry
    return jax.lax.with_sharding_constraint(values, NamedSharding(mesh, PartitionSpec(*want)))


def fftfreq3d(k_array, d=1.0):
    """Angular frequencies ``2 pi fftfreq(n, d)`` of a `pfft3d` spectrum (Y, Z, X), returned in
    the input's (X, Y, Z) order, each shaped to broadcast against the spectrum."""
    return _freqs(k_array, d, "fftfreq3d", real=False)


def rfftfreq3d(k_array, d=1.0):
    """As `fftfreq3d`, with `rfftfreq` on the spectrum's axis 1 (jaxDecomp 0.3.1's rule: the
    length of that axis is taken as the real length)."""
    return _freqs(k_array, d, "rfftfreq3d", real=True)
