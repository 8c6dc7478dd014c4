"""darray.particles: paint particles onto a distributed grid, read a grid at the particles, and
the k-space window of each mass-assignment scheme.

JaxPM's convention: ``disp`` has shape ``(*G, d)`` and is split like the grid over its leading
axes; particle ``i`` (a Lagrangian cell) sits at ``i + disp[i]`` in the periodic box ``G``
(cell units, cell centres at integers). The block functions live in `deposit`.
"""
from __future__ import annotations

import dataclasses
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.api.blocks import block_info_of
from darray._src.base import compat
from darray._src.base.errors import LayoutError
from darray._src.base.errors import ParticleError as ParticleError
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.extras.blockwise import fromfunction
from darray._src.halo.api import halo, halo_reduce
from darray._src.layout.layout import Layout
from darray._src.particles import deposit as dep
from darray._src.particles.schemes import Scheme, check_scheme, window_1d
from darray._src.placement import physical


# -- argument checks ---------------------------------------------------------------------------
def _check_disp(disp, where: str) -> DistArray:
    if not isinstance(disp, DistArray):
        raise TypeError(f"{where}: disp must be a DistArray of shape (*G, d), got "
                        f"{type(disp).__name__}; place it with darray.asarray(disp, mesh=..., "
                        f"spec=...)")
    if disp.ndim < 2 or disp.shape[-1] != disp.ndim - 1:
        raise ValueError(f"{where}: disp has shape {disp.shape}; it must be (*G, d) with d = "
                         f"len(G) components on its last axis (e.g. (n, n, n, 3))")
    if not jnp.issubdtype(disp.dtype, jnp.floating):
        raise TypeError(f"{where}: disp has dtype {disp.dtype}; displacements must be real "
                        f"floating point (float32 or float64), in cell units")
    if disp.layout.split[-1] and disp.layout.parts(disp.ndim - 1) > 1:
        raise LayoutError(f"{where}: disp's component axis (last) is split over "
                          f"{disp.layout.split[-1]}; split only the grid axes, e.g. "
                          f"spec=('x', 'y')")
    return disp.unhalo() if disp.layout.has_halo else disp


def _grid_layout(disp: DistArray) -> Layout:
    return disp.layout.without_halo().with_shape(disp.shape[:-1])


def _check_on_grid(arr, grid: Layout, name: str, where: str, extra_axis: bool) -> DistArray:
    if not isinstance(arr, DistArray):
        raise TypeError(f"{where}: {name} must be a DistArray on disp's grid, got "
                        f"{type(arr).__name__}")
    shape = tuple(arr.shape)
    ok_shape = shape == grid.shape or (extra_axis and len(shape) == grid.ndim + 1
                                       and shape[:-1] == grid.shape)
    if not ok_shape:
        accepted = f"{grid.shape}" + (f" or {grid.shape + ('k',)}" if extra_axis else "")
        raise ValueError(f"{where}: {name} has shape {shape}; disp's grid is {grid.shape}, so "
                         f"{name} must have shape {accepted}")
    want = grid if len(shape) == grid.ndim else grid.with_shape(shape)
    got = arr.layout.without_halo()
    if got != want:
        raise LayoutError(f"{where}: {name} is laid out as {got!r} but disp's grid as "
                          f"{want!r}; put {name} on the same mesh and split (darray.asarray("
                          f"{name}, mesh=..., spec=...))")
    if not (jnp.issubdtype(arr.dtype, jnp.floating)):
        raise TypeError(f"{where}: {name} has dtype {arr.dtype}; it must be real floating")
    return arr.unhalo() if arr.layout.has_halo else arr


def _geometry(grid: Layout, scheme: Scheme, reach, capacity, where: str) -> dep.Geometry:
    need = scheme.support - 1
    if reach is None:
        reach = scheme.support + 1
    if isinstance(reach, bool) or not isinstance(reach, (int, np.integer)) or reach < need:
        raise ValueError(f"{where}: reach={reach!r} must be an int >= {need} (the {scheme.name} "
                         f"stencil spans {scheme.support} cells)")
    parts = tuple(grid.parts(a) for a in range(grid.ndim))
    chunk = tuple(grid.chunk(a) for a in range(grid.ndim))
    ndev = math.prod(parts)
    if capacity is None:
        capacity = max(32, -(-math.prod(chunk) // ndev))
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
        raise ValueError(f"{where}: capacity={capacity!r} must be a positive int (strays per "
                         f"destination device)")
    ghosts = tuple(int(reach) if p > 1 else 0 for p in parts)
    names = tuple(name for s in grid.split for name in s)
    return dep.Geometry(grid.shape, chunk, parts, ghosts, names, int(capacity))


def _problem(where: str, geom: dep.Geometry, most: int, first_nan: int) -> str | None:
    if first_nan != dep.NO_NAN:
        index = tuple(int(i) for i in np.unravel_index(first_nan, geom.shape))
        return (f"{where}: disp has a non-finite displacement at particle {index} (flat index "
                f"{first_nan}); the result is NaN")
    if most > geom.capacity:
        return (f"{where}: {most} particles on one device moved beyond reach="
                f"{max(geom.ghosts)} ghost cells into one other device's block, more than "
                f"capacity={geom.capacity} (strays per destination device); pass "
                f"capacity={most} or more, or a larger reach=, to {where}. The result is NaN")
    return None


def _report(where: str, geom: dep.Geometry, most, first_nan) -> None:
    """Raise for overflow or a NaN displacement when the values are concrete (eager calls).

    Under a trace (jit, grad, scan) no Python exception can be raised from a value: the
    affected result is NaN and the program prints the same message to stderr when it runs.
    (An exception raised inside a host callback leaves XLA:CPU's runtime unusable, so the
    callback only prints.)"""
    def warn(most, first_nan):
        message = _problem(where, geom, int(most), int(first_nan))
        if message is not None:
            print(f"ParticleError: {message}", file=sys.stderr, flush=True)
    if isinstance(most, jax.core.Tracer) or isinstance(first_nan, jax.core.Tracer):
        jax.debug.callback(warn, most, first_nan)
        return
    message = _problem(where, geom, int(most), int(first_nan))
    if message is not None:
        raise ParticleError(message)


def _resized(geom: dep.Geometry, capacity, most) -> dep.Geometry | None:
    """Eagerly, with the default ``capacity=None``: the geometry to run again with when the
    strays overflowed the default bound (capacity: the next power of two >= the count, so a
    simulation whose strays grow compiles a few programs, not one per step). None: keep the
    result (a capacity the user passed, a trace, or no overflow)."""
    if capacity is not None or isinstance(most, jax.core.Tracer):
        return None
    most = int(most)
    if most <= geom.capacity:
        return None
    return dataclasses.replace(geom, capacity=1 << (most - 1).bit_length())


# -- paint -------------------------------------------------------------------------------------
@program_cache(MEDIUM)
def _paint_fn(disp_layout: Layout, weights_layout, geom: dep.Geometry, scheme: Scheme, dtype):
    grid = disp_layout.with_shape(geom.shape)
    haloed = grid.with_halo([(w, w) for w in geom.ghosts])

    def body(disp_b, weights_b):
        info = block_info_of(grid)
        owned = info.owned_mask(ghosts=False)
        finite = jnp.all(jnp.isfinite(disp_b), axis=-1)
        ok = owned & finite
        pos = dep.positions(geom, disp_b, info.start, ok)
        mass = (jnp.ones(geom.chunk, dtype) if weights_b is None
                else jnp.where(ok, weights_b, 0).astype(dtype)).ravel()
        ok = ok.ravel()
        st = dep.classify(geom, scheme, pos, info.start, info.extent)
        block = dep.scatter(geom, scheme, st, mass, ok & st.in_reach, dtype)
        most = jnp.int32(0)
        if geom.ndev > 1:
            stray = ok & ~st.in_reach
            b = dep.bucket(geom, st.dest, stray)
            most = jax.lax.pmax(b.most, geom.names)

            def strays(_):
                buf_pos = dep.exchange(geom, dep.pack(geom, b, jnp.stack(pos, axis=-1)))
                buf_mass = dep.exchange(geom, dep.pack(geom, b, mass))
                buf_ok = dep.exchange(geom, dep.pack(geom, b, b.sent))
                got = dep.received_stencils(geom, scheme, buf_pos, info.start, info.extent)
                valid = buf_ok.ravel() & got.in_reach
                return dep.scatter(geom, scheme, got, buf_mass.ravel(), valid, dtype)
            any_stray = jax.lax.psum(jnp.sum(stray, dtype=jnp.int32), geom.names) > 0
            block = block + jax.lax.cond(any_stray, strays, jnp.zeros_like, block)
        first_nan = jnp.min(jnp.where(owned.ravel() & ~finite.ravel(),
                                      dep.global_flat_index(geom, info.start), dep.NO_NAN))
        if geom.names:
            first_nan = jax.lax.pmin(first_nan, geom.names)
        poisoned = (most > geom.capacity) | (first_nan != dep.NO_NAN)
        # NaN, and a NaN derivative w.r.t. disp and weights (never a silent zero gradient)
        deps = (disp_b,) if weights_b is None else (disp_b, weights_b)
        block = dep.poison(poisoned, poisoned, block, *deps)
        return block.reshape(geom.block_shape), most, first_nan

    has_weights = weights_layout is not None
    in_specs = (disp_layout.spec, weights_layout.spec if has_weights else None)
    mapped = compat.shard_map(
        lambda d, w: body(d, w if has_weights else None), mesh=grid.mesh,
        in_specs=tuple(s if s is not None else PartitionSpec() for s in in_specs),
        out_specs=(haloed.spec, PartitionSpec(), PartitionSpec()), check_vma=False)

    def run(disp, weights):
        disp = physical.constrain(disp, disp_layout)
        if has_weights:
            weights = physical.constrain(weights, weights_layout)
        else:
            weights = jnp.zeros((), dtype)
        out, most, first_nan = mapped(disp, weights)
        return physical.constrain(out, haloed), most, first_nan
    return jax.jit(run), haloed


def paint(disp, *, weights=None, scheme: str = "cic", reach: int | None = None,
          capacity: int | None = None) -> DistArray:
    """The mass of particles on the grid: particle ``i`` at Lagrangian cell ``i + disp[i]``.

    Args:
      disp: a DistArray of shape ``(*G, d)`` (``d = len(G)``), real floating, split over its
        leading grid axes (its last axis unsplit). Particle ``i`` sits at cell ``i + disp[i]``
        in the periodic box ``G`` (cell units; cell centres at integers). JaxPM's convention.
      weights: None (each particle has mass 1) or a DistArray of shape ``G`` in the grid's
        layout (disp's layout without its last axis): a mass per particle.
      scheme: ``"ngp"`` (nearest grid point), ``"cic"`` (cloud in cell) or ``"tsc"``
        (triangular shaped cloud).
      reach: ghost cells per side on split axes (default ``support + 1``: 2, 3, 4 for ngp, cic,
        tsc). A particle whose stencil stays within `reach` cells of its own block deposits
        locally; any other (a *stray*) is sent to the device owning its cell.
      capacity: the most strays one device may send to one other device in a call. The
        exchange is bounded so that its buffers have a static shape. Default None: eagerly,
        sized from the data (``max(32, cells per block / devices)``, and if more strays head
        for one device, the call runs again with the next power of two at or above their
        count), so eager code never sets it; under a trace (``jax.jit``, ``grad``, ``scan``)
        that first bound, with overflow giving NaN (below). `needed_capacity` gives the count
        a traced call needs (docs/particles.md shows the retry pattern).

    Returns:
      A DistArray of shape ``G`` in the grid's layout (dtype: disp's and weights' result type);
      it sums to the total mass exactly (up to rounding).

    Raises:
      ParticleError (a ValueError): a displacement is NaN or infinite (the message names the
        particle's index), or more than `capacity` strays head from one device to another
        with a `capacity` you passed (the message names the count needed and the argument
        that raises the bound). Eagerly this raises at the call. Under a trace (``jax.jit``,
        ``jax.grad``, ``lax.scan``) the result is NaN, its gradients with respect to `disp`
        and `weights` are NaN (never zeros), and the program prints the same message to
        stderr when it runs. Nothing is ever dropped silently.

    Layout:
      The grid's layout. Communication: one halo reduce of ``reach``-wide faces
      (``ppermute``), and, only when some particle moved beyond `reach`, three ``all_to_all``
      of ``(devices, capacity)`` buffers over the grid's mesh axes. No all-gather. Gradients
      with respect to `disp` and `weights` come back in their layouts (readout is the adjoint).
    """
    where = "darray.particles.paint"
    disp = _check_disp(disp, where)
    assignment = check_scheme(scheme, where)
    grid = _grid_layout(disp)
    if weights is not None:
        weights = _check_on_grid(weights, grid, "weights", where, extra_axis=False)
        dtype = jnp.result_type(disp.dtype, weights.dtype)
    else:
        dtype = disp.dtype
    geom = _geometry(grid, assignment, reach, capacity, where)
    args = (disp.data, None if weights is None else weights.data)
    while True:
        fn, haloed = _paint_fn(disp.layout, None if weights is None else weights.layout, geom,
                               assignment, jnp.dtype(dtype))
        data, most, first_nan = fn(*args)
        if (resized := _resized(geom, capacity, most)) is None:
            break
        geom = resized
    _report(where, geom, most, first_nan)
    return halo_reduce(DistArray._new(data, haloed))


# -- readout -----------------------------------------------------------------------------------
@program_cache(MEDIUM)
def _readout_fn(field_layout: Layout, disp_layout: Layout, geom: dep.Geometry, scheme: Scheme,
                dtype):
    grid = disp_layout.with_shape(geom.shape)
    components = field_layout.ndim > geom.ndim
    out_layout = field_layout.without_halo()

    def body(field_b, disp_b):
        info = block_info_of(grid)
        owned = info.owned_mask(ghosts=False)
        finite = jnp.all(jnp.isfinite(disp_b), axis=-1)
        ok = owned & finite
        pos = dep.positions(geom, disp_b, info.start, ok)
        ok = ok.ravel()
        flat = field_b.reshape(math.prod(geom.block_shape), -1).astype(dtype)
        st = dep.classify(geom, scheme, pos, info.start, info.extent)
        local = ok & st.in_reach
        values = dep.gather(geom, scheme, st, flat, local)
        lost = jnp.zeros(ok.shape, bool)
        most = jnp.int32(0)
        if geom.ndev > 1:
            stray = ok & ~st.in_reach
            b = dep.bucket(geom, st.dest, stray)
            most = jax.lax.pmax(b.most, geom.names)

            def strays(_):
                buf_pos = dep.exchange(geom, dep.pack(geom, b, jnp.stack(pos, axis=-1)))
                buf_ok = dep.exchange(geom, dep.pack(geom, b, b.sent))
                got = dep.received_stencils(geom, scheme, buf_pos, info.start, info.extent)
                found = dep.gather(geom, scheme, got, flat, buf_ok.ravel() & got.in_reach)
                back = dep.exchange(geom, found.reshape(geom.ndev, geom.capacity, -1))
                return back[b.row.clip(0, geom.ndev - 1), b.slot]
            any_stray = jax.lax.psum(jnp.sum(stray, dtype=jnp.int32), geom.names) > 0
            far = jax.lax.cond(any_stray, strays, jnp.zeros_like, values)
            values = jnp.where(local[:, None], values, jnp.where(b.sent[:, None], far, 0))
            lost = stray & ~b.sent
        first_nan = jnp.min(jnp.where(owned.ravel() & ~finite.ravel(),
                                      dep.global_flat_index(geom, info.start), dep.NO_NAN))
        if geom.names:
            first_nan = jax.lax.pmin(first_nan, geom.names)
        # the particles that did not fit (or have a NaN displacement) read NaN; on any such
        # particle the derivative w.r.t. field and disp is NaN everywhere (never finite garbage)
        poisoned = (most > geom.capacity) | (first_nan != dep.NO_NAN)
        values = dep.poison((lost | (owned.ravel() & ~finite.ravel()))[:, None], poisoned,
                            values, field_b, disp_b)
        shape = geom.chunk + ((values.shape[-1],) if components else ())
        return values.reshape(shape), most, first_nan

    mapped = compat.shard_map(body, mesh=grid.mesh, in_specs=(field_layout.spec, disp_layout.spec),
                              out_specs=(out_layout.spec, PartitionSpec(), PartitionSpec()),
                              check_vma=False)

    def run(field, disp):
        field = physical.constrain(field, field_layout)
        disp = physical.constrain(disp, disp_layout)
        out, most, first_nan = mapped(field, disp)
        return physical.constrain(out, out_layout), most, first_nan
    return jax.jit(run), out_layout


def readout(field, disp, *, scheme: str = "cic", reach: int | None = None,
            capacity: int | None = None) -> DistArray:
    """`field` interpolated at every particle (the adjoint of `paint`).

    Args:
      field: a DistArray of shape ``G`` (or ``(*G, k)``: k components, e.g. a force) in the
        grid's layout (disp's layout without its last axis; a component axis unsplit).
      disp: the displacements, as in `paint`.
      scheme, reach, capacity: as in `paint`.

    Returns:
      A DistArray of shape ``G`` (or ``(*G, k)``) in `field`'s layout: entry ``i`` is the
      field at particle ``i``. Its dtype is the result type of field and disp.

    Raises:
      ParticleError: as `paint` (NaN displacement with its particle index; capacity overflow);
        under a trace the affected particles read NaN and the gradients with respect to
        `field` and `disp` are NaN everywhere.

    Layout:
      `field`'s layout. Communication: one ``reach``-wide halo fill of `field`; only when some
      particle moved beyond `reach`, three ``all_to_all`` of ``(devices, capacity)`` buffers.
      No all-gather. Gradients with respect to `field` and `disp` come back in their layouts.
    """
    where = "darray.particles.readout"
    disp = _check_disp(disp, where)
    assignment = check_scheme(scheme, where)
    grid = _grid_layout(disp)
    field = _check_on_grid(field, grid, "field", where, extra_axis=True)
    geom = _geometry(grid, assignment, reach, capacity, where)
    dtype = jnp.dtype(jnp.result_type(field.dtype, disp.dtype))
    if any(geom.ghosts):
        field = halo(field, {a: w for a, w in enumerate(geom.ghosts) if w})
    while True:
        fn, out_layout = _readout_fn(field.layout, disp.layout, geom, assignment, dtype)
        data, most, first_nan = fn(field.data, disp.data)
        if (resized := _resized(geom, capacity, most)) is None:
            break
        geom = resized
    _report(where, geom, most, first_nan)
    return DistArray._new(data, out_layout)


# -- needed capacity ---------------------------------------------------------------------------
@program_cache(MEDIUM)
def _needed_fn(disp_layout: Layout, geom: dep.Geometry, scheme: Scheme):
    grid = disp_layout.with_shape(geom.shape)

    def body(disp_b):
        info = block_info_of(grid)
        ok = info.owned_mask(ghosts=False) & jnp.all(jnp.isfinite(disp_b), axis=-1)
        pos = dep.positions(geom, disp_b, info.start, ok)
        st = dep.classify(geom, scheme, pos, info.start, info.extent)
        stray = ok.ravel() & ~st.in_reach
        onehot = (st.dest[:, None] == jnp.arange(geom.ndev, dtype=jnp.int32)) & stray[:, None]
        return jax.lax.pmax(jnp.max(onehot.sum(axis=0, dtype=jnp.int32)), geom.names)

    mapped = compat.shard_map(body, mesh=grid.mesh, in_specs=(disp_layout.spec,),
                              out_specs=PartitionSpec(), check_vma=False)
    return jax.jit(lambda disp: mapped(physical.constrain(disp, disp_layout)))


def needed_capacity(disp, *, scheme: str = "cic", reach: int | None = None) -> jax.Array:
    """The smallest `capacity` with which `paint` / `readout` of `disp` fit: the most strays
    (particles beyond `reach`) that one device sends to one other device.

    Eager `paint` and `readout` size capacity themselves; under ``jax.jit`` a capacity must be
    static, so compute this (inside or outside the jitted function) and rerun with a bigger
    one when it exceeds the capacity used (the retry pattern in docs/particles.md).

    Args:
      disp, scheme, reach: as in `paint`.

    Returns:
      A 0-d int32 jax.Array (``int(...)`` it eagerly; a traced value under a trace); 0 on a
      one-device grid. Communication: one scalar all-reduce (max).
    """
    where = "darray.particles.needed_capacity"
    disp = _check_disp(disp, where)
    assignment = check_scheme(scheme, where)
    geom = _geometry(_grid_layout(disp), assignment, reach, None, where)
    if geom.ndev == 1:
        return jnp.zeros((), jnp.int32)
    return _needed_fn(disp.layout, geom, assignment)(disp.data)


# -- window ------------------------------------------------------------------------------------
def window(shape, scheme: str = "cic", *, real: bool = True, like=None, dtype=None) -> DistArray:
    """The k-space window of `scheme` on the FFT grid of a real-space grid of `shape`.

    ``W(k) = prod_a sinc(f_a) ** p`` with ``f_a`` numpy's ``fftfreq(n_a)`` (cycles per cell)
    and ``p`` = 1, 2, 3 for ngp, cic, tsc. Painting multiplies a field's Fourier modes by W
    (and aliases); compensate with ``darray.fft.rfftn(rho) / window(rho.shape, "cic",
    like=rho_k)``, and a readout after a paint by ``W ** 2``.

    Args:
      shape: the real-space grid shape ``G``.
      scheme: "ngp", "cic" or "tsc".
      real: True: the `rfftn` half grid (last axis ``n // 2 + 1``); False: the `fftn` grid.
      like: a DistArray with that k-space shape (e.g. ``rfftn``'s output): the window takes its
        mesh and split, so it divides it with no data movement. Default: darray's default
        placement.
      dtype: real floating dtype (default: ``like``'s real dtype, else the default float).

    Returns:
      A real DistArray of the k-space shape.

    Layout:
      ``like``'s mesh and split (no halo); no communication (each device computes its block).
    """
    where = "darray.particles.window"
    sch = check_scheme(scheme, where)
    shape = tuple(int(n) for n in shape)
    kshape = shape[:-1] + (shape[-1] // 2 + 1,) if real else shape
    mesh = spec = None
    if like is not None:
        if not isinstance(like, DistArray) or tuple(like.shape) != kshape:
            raise ValueError(f"{where}: like must be a DistArray of the k-space shape {kshape} "
                             f"(the {'rfftn' if real else 'fftn'} grid of {shape}), got "
                             f"{getattr(like, 'shape', type(like).__name__)}")
        mesh, spec = like.layout.mesh, like.layout.spec
        if dtype is None:
            dtype = jnp.finfo(like.dtype).dtype
    dtype = jnp.dtype(dtype) if dtype is not None else jnp.dtype(float)

    def fn(*index):
        out = None
        for axis, (i, n) in enumerate(zip(index, shape)):
            half = real and axis == len(shape) - 1
            freq = (i if half else jnp.where(i < (n + 1) // 2, i, i - n)) / n
            w = window_1d(sch, freq)
            out = w if out is None else out * w
        return out.astype(dtype)
    return fromfunction(fn, kshape, dtype=dtype, mesh=mesh, spec=spec)
