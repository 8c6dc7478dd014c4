"""darray.particles for catalogues: paint an ``(M, d)`` array of particle positions onto a grid
of any shape, and read a grid at such positions (pmesh's and nbodykit's ``paint`` /
``readout``), on distributed devices, with gradients.

Positions are in grid cells (cell ``c`` centred on ``c``, periodic box ``G``), or in box
units with ``box=L`` (cell ``c`` centred on ``c * L / n``). The block code is in
`catalogue_blocks`; the design (route each particle to its cell's owner, deposit with
``support - 1`` high-side ghosts, `halo_reduce`) is described there.
"""
from __future__ import annotations

import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.base import compat
from darray._src.base.errors import LayoutError, ParticleError
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.placing import redistribute
from darray._src.halo.api import halo, halo_reduce
from darray._src.layout.layout import Layout
from darray._src.particles import catalogue_blocks as cb
from darray._src.particles import deposit as dep
from darray._src.particles.schemes import Scheme, check_scheme
from darray._src.placement import physical
from darray._src.placement.placement import default_spec


# -- argument checks ---------------------------------------------------------------------------
def _check_pos(pos, where: str) -> DistArray:
    if not isinstance(pos, DistArray):
        raise TypeError(f"{where}: pos must be a DistArray of shape (M, d), got "
                        f"{type(pos).__name__}; place it with darray.asarray(pos, mesh=mesh, "
                        f"spec=(mesh.axis_names,))")
    if pos.ndim != 2 or pos.shape[1] < 1:
        raise ValueError(f"{where}: pos has shape {tuple(pos.shape)}; it must be (M, d): one "
                         f"row of d coordinates per particle (e.g. (M, 3))")
    if not jnp.issubdtype(pos.dtype, jnp.floating):
        raise TypeError(f"{where}: pos has dtype {pos.dtype}; positions must be real floating "
                        f"point (float32 or float64)")
    if pos.layout.parts(1) > 1:
        raise LayoutError(f"{where}: pos's coordinate axis (axis 1) is split over "
                          f"{pos.layout.split[1]}; split only the rows, e.g. "
                          f"spec=(mesh.axis_names, None)")
    return pos.unhalo() if pos.layout.has_halo else pos


def _check_weights(weights, pos: DistArray, where: str) -> DistArray:
    if not isinstance(weights, DistArray):
        raise TypeError(f"{where}: weights must be None or a DistArray of shape "
                        f"({pos.shape[0]},) split like pos's rows, got {type(weights).__name__}")
    if tuple(weights.shape) != (pos.shape[0],):
        raise ValueError(f"{where}: weights has shape {tuple(weights.shape)}; it must be "
                         f"({pos.shape[0]},), one mass per row of pos")
    if not jnp.issubdtype(weights.dtype, jnp.floating):
        raise TypeError(f"{where}: weights has dtype {weights.dtype}; it must be real floating")
    want = pos.layout.without_halo().with_shape(weights.shape)
    if weights.layout.without_halo() != want:
        raise LayoutError(f"{where}: weights is laid out as {weights.layout!r} but pos's rows "
                          f"as {want!r}; split weights like pos's axis 0 (same mesh and spec)")
    return weights.unhalo() if weights.layout.has_halo else weights


def _check_box(box, ndim: int, where: str):
    if box is None:
        return None
    values = (box,) * ndim if np.ndim(box) == 0 else tuple(box)
    ok = len(values) == ndim
    try:
        values = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(box, bool) or not all(np.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"{where}: box={box!r} must be None (positions in grid cells), a "
                         f"positive number or {ndim} positive numbers (the box's side lengths)")
    return values


def _check_capacity(capacity, where: str):
    if capacity is None:
        return None
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
        raise ValueError(f"{where}: capacity={capacity!r} must be None (sized from the data) "
                         f"or a positive int (particles one device may send to one other)")
    return int(capacity)


def _rows_layout(pos: DistArray) -> Layout:
    """pos's layout with its rows split over every mesh axis (pos's own split first): each
    device then holds distinct particles, and the exchange spans the whole mesh."""
    mesh = pos.layout.mesh
    names = pos.layout.split[0] + tuple(n for n in mesh.axis_names
                                        if n not in pos.layout.split[0])
    return Layout(tuple(pos.shape), mesh, (names, ()), ((0, 0), (0, 0)))


def _default_capacity(rows: int, ndev: int) -> int:
    """Twice the even share (rows / devices), rounded up to a power of two, at least 16:
    a uniform catalogue fits; one sorted by position (a Lagrangian grid's order) may not."""
    return max(16, 1 << max(0, (-(-2 * rows // ndev) - 1).bit_length()))


def _route(grid: Layout, rows: Layout, scheme: Scheme, capacity, scale) -> cb.Route:
    sizes = rows.mesh_shape
    names = rows.split[0]
    ghosts = tuple(scheme.support - 1 if grid.parts(a) > 1 else 0 for a in range(grid.ndim))
    chunk = rows.chunk(0)
    ndev = math.prod(sizes[n] for n in names)
    return cb.Route(grid.shape, tuple(grid.chunk(a) for a in range(grid.ndim)), grid.split,
                    ghosts, names, tuple(sizes[n] for n in names), chunk, rows.shape[0],
                    _default_capacity(chunk, ndev) if capacity is None else capacity, scale)


def _problem(where: str, route: cb.Route, most: int, bad: int) -> str | None:
    if bad != dep.NO_NAN:
        return f"{where}: pos has a non-finite coordinate in row {bad}; the result is NaN"
    if most > route.capacity:
        return (f"{where}: {most} particles head from one device to one other, more than "
                f"capacity={route.capacity}; pass capacity={most} or more to {where} (under "
                f"jit, return_needed=True returns this count). The result is NaN")
    return None


def _settle(where: str, route: cb.Route, capacity, most, bad) -> cb.Route | None:
    """Eagerly: None to keep the result, or the route to run again with (the default
    capacity overflowed: the next power of two at or above the count, so growing counts
    compile few programs); raise ParticleError for a NaN row or a capacity the user passed.
    Under a trace: print the problem from the running program (Python cannot raise on a
    traced value; a host callback that raises leaves XLA:CPU's runtime unusable)."""
    if isinstance(most, jax.core.Tracer) or isinstance(bad, jax.core.Tracer):
        def warn(most, bad):
            message = _problem(where, route, int(most), int(bad))
            if message is not None:
                print(f"ParticleError: {message}", file=sys.stderr, flush=True)
        jax.debug.callback(warn, most, bad)
        return None
    most, bad = int(most), int(bad)
    if capacity is None and bad == dep.NO_NAN and most > route.capacity:
        return cb.Route(**{**route.__dict__, "capacity": 1 << (most - 1).bit_length()})
    message = _problem(where, route, most, bad)
    if message is not None:
        raise ParticleError(message)
    return None


# -- paint -------------------------------------------------------------------------------------
@program_cache(MEDIUM)
def _paint_fn(rows: Layout, weighted: bool, grid: Layout, route: cb.Route, scheme: Scheme,
              dtype):
    haloed = grid.with_halo([(0, w) for w in route.ghosts])
    w_spec = PartitionSpec(rows.spec[0]) if weighted else PartitionSpec()

    def body(pos_b, w_b):
        return cb.paint_block(route, scheme, dtype, pos_b, w_b if weighted else None)
    mapped = compat.shard_map(body, mesh=grid.mesh, in_specs=(rows.spec, w_spec),
                              out_specs=(haloed.spec, PartitionSpec(), PartitionSpec()),
                              check_vma=False)

    def run(pos, weights):
        out, most, bad = mapped(physical.constrain(pos, rows), weights)
        return physical.constrain(out, haloed), most, bad
    return jax.jit(run), haloed


def paint_catalogue(pos, shape, *, weights=None, scheme: str = "cic", box=None, spec=None,
                    capacity: int | None = None, return_needed: bool = False):
    """The mass of a catalogue of particles on a grid of shape `shape` (any shape).

    Args:
      pos: a DistArray of shape ``(M, d)``, real floating: particle ``m`` at ``pos[m]``, in
        grid cells (cell ``c`` is centred on ``c``) or, with `box`, in box units. Periodic:
        any position is wrapped into the box. Its rows may be split over any mesh axes (e.g.
        ``spec=(mesh.axis_names,)``; M need not divide); its coordinate axis must not be.
      shape: the grid ``G`` (``d`` ints), e.g. twice the particle grid for a finer force mesh.
      weights: None (mass 1 each) or a DistArray of shape ``(M,)`` split like pos's rows.
      scheme: ``"ngp"``, ``"cic"`` or ``"tsc"``.
      box: None (positions in grid cells) or the box's side length (a number, or one per axis):
        position ``x`` is at cell ``x * n / box``, the convention of pmesh's ``BoxSize``.
      spec: the grid's split over pos's mesh (default: darray's default split for `shape`,
        e.g. a ("x", "y") pencil on a 2-D mesh).
      capacity: the most particles one device may send to one other (the exchange's buffers
        have a static shape). Default None: eagerly, sized from the data (the call runs again
        with a larger one when the first guess, twice the even share, is short); under a trace
        (jit, grad, scan) that guess, and overflow gives NaN (below).
      return_needed: also return the capacity this call needed (a 0-d int32 array, traced
        under jit): the retry pattern under jit in docs/particles.md.

    Returns:
      A DistArray of shape `shape` split as `spec` on pos's mesh (dtype: pos's and weights'
      result type), summing to the total mass; ``(grid, needed)`` with `return_needed`.

    Raises:
      ParticleError (a ValueError): a non-finite coordinate (the message names the row), or
        more particles for one device than a `capacity` you passed (the message names the
        count). Under a trace the result is NaN, its gradients with respect to `pos` and
        `weights` are NaN (never zeros), and the program prints the message to stderr.

    Layout:
      Communication: one ``all_to_all`` of ``(devices, capacity)`` positions over the whole
      mesh (and one of weights, if given), one halo reduce of ``support - 1``
      high-side ghosts (none for ngp), and a ``psum`` over mesh axes the grid is not split
      over (if any). No all-gather of the catalogue or the grid. Gradients come back in the
      layouts of `pos` and `weights`.
    """
    where = "darray.particles.paint_catalogue"
    pos = _check_pos(pos, where)
    assignment = check_scheme(scheme, where)
    if weights is not None:
        weights = _check_weights(weights, pos, where)
    shape = _check_shape(shape, pos.shape[1], where)
    scale = _check_box(box, len(shape), where)
    capacity = _check_capacity(capacity, where)
    mesh = pos.layout.mesh
    grid = Layout.create(shape, mesh, default_spec(shape, mesh) if spec is None else spec)
    rows = _rows_layout(pos)
    dtype = jnp.dtype(pos.dtype if weights is None else jnp.result_type(pos.dtype, weights.dtype))
    pos_data = redistribute(pos, rows).data
    w_data = (redistribute(weights, rows.with_shape((pos.shape[0],))).data
              if weights is not None else jnp.zeros((), dtype))
    route = _route(grid, rows, assignment, capacity, _scales(scale, shape))
    while True:
        fn, haloed = _paint_fn(rows, weights is not None, grid, route, assignment, dtype)
        data, most, bad = fn(pos_data, w_data)
        if (again := _settle(where, route, capacity, most, bad)) is None:
            break
        route = again
    out = halo_reduce(DistArray._new(data, haloed))
    return (out, most) if return_needed else out


def _check_shape(shape, ndim: int, where: str) -> tuple[int, ...]:
    try:
        out = tuple(int(n) for n in shape)
        ok = len(out) == ndim and all(n >= 1 and n == m for n, m in zip(out, shape))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{where}: shape={shape!r} must be {ndim} positive ints (pos has {ndim} "
                         f"coordinates per row)")
    return out


def _scales(box, shape):
    return None if box is None else tuple(n / b for n, b in zip(shape, box))


# -- readout -----------------------------------------------------------------------------------
@program_cache(MEDIUM)
def _readout_fn(field_layout: Layout, rows: Layout, route: cb.Route, scheme: Scheme, dtype,
                components: bool):
    out_rows = rows.with_shape((rows.shape[0],) + ((field_layout.shape[-1],) if components
                                                    else ()))

    def body(field_b, pos_b):
        values, most, bad = cb.readout_block(route, scheme, dtype, field_b, pos_b)
        return (values if components else values[:, 0]), most, bad
    mapped = compat.shard_map(body, mesh=rows.mesh, in_specs=(field_layout.spec, rows.spec),
                              out_specs=(out_rows.spec, PartitionSpec(), PartitionSpec()),
                              check_vma=False)

    def run(field, pos):
        field = physical.constrain(field, field_layout)
        out, most, bad = mapped(field, physical.constrain(pos, rows))
        return physical.constrain(out, out_rows), most, bad
    return jax.jit(run), out_rows


def readout_catalogue(field, pos, *, scheme: str = "cic", box=None, capacity: int | None = None,
                      return_needed: bool = False):
    """`field` interpolated at every particle of a catalogue (the adjoint of
    `paint_catalogue`).

    Args:
      field: a DistArray of shape ``G`` (any grid, ``d`` axes), or ``(*G, k)`` with ``k``
        components (e.g. a force; the component axis unsplit), real floating, on pos's mesh.
      pos: the positions, as in `paint_catalogue`.
      scheme, box, capacity, return_needed: as in `paint_catalogue`.

    Returns:
      A DistArray of shape ``(M,)`` (or ``(M, k)``) split like pos's rows: entry ``m`` is the
      field at ``pos[m]`` (dtype: the result type of field and pos); ``(values, needed)``
      with `return_needed`.

    Raises:
      ParticleError: as `paint_catalogue`. Under a trace the particles that did not fit read
        NaN and the gradients with respect to `field` and `pos` are NaN everywhere.

    Layout:
      pos's row split. Communication: a ``support - 1``-wide high-side halo fill of `field`,
      one ``all_to_all`` of the positions to the cells' owners and one of the values back.
      No all-gather. Gradients come back in the layouts of `field` and `pos`.
    """
    where = "darray.particles.readout_catalogue"
    pos = _check_pos(pos, where)
    assignment = check_scheme(scheme, where)
    d = pos.shape[1]
    if not isinstance(field, DistArray):
        raise TypeError(f"{where}: field must be a DistArray of {d} axes (or {d + 1} with a "
                        f"trailing component axis), got {type(field).__name__}")
    if field.ndim not in (d, d + 1):
        raise ValueError(f"{where}: field has shape {tuple(field.shape)}; pos has {d} "
                         f"coordinates per row, so field must have {d} axes (the grid) or "
                         f"{d + 1} (the grid and a trailing component axis)")
    if not jnp.issubdtype(field.dtype, jnp.floating):
        raise TypeError(f"{where}: field has dtype {field.dtype}; it must be real floating")
    components = field.ndim == d + 1
    if components and field.layout.parts(d) > 1:
        raise LayoutError(f"{where}: field's component axis (axis {d}) is split over "
                          f"{field.layout.split[d]}; split only its grid axes")
    if field.layout.mesh != pos.layout.mesh:
        raise LayoutError(f"{where}: field is on mesh {field.layout!r} but pos on "
                          f"{pos.layout!r}; put both on one mesh (darray.asarray(..., "
                          f"mesh=...))")
    scale = _check_box(box, d, where)
    capacity = _check_capacity(capacity, where)
    grid = field.layout.without_halo().with_shape(field.shape[:d])
    rows = _rows_layout(pos)
    route = _route(grid, rows, assignment, capacity, _scales(scale, grid.shape))
    field = field.unhalo() if field.layout.has_halo else field
    if any(route.ghosts):
        field = halo(field, {a: (0, w) for a, w in enumerate(route.ghosts) if w})
    dtype = jnp.dtype(jnp.result_type(field.dtype, pos.dtype))
    pos_data = redistribute(pos, rows).data
    while True:
        fn, out_rows = _readout_fn(field.layout, rows, route, assignment, dtype, components)
        data, most, bad = fn(field.data, pos_data)
        if (again := _settle(where, route, capacity, most, bad)) is None:
            break
        route = again
    # back in pos's row split (the same layout unless pos's rows skipped some mesh axes)
    values = redistribute(DistArray._new(data, out_rows),
                          pos.layout.without_halo().with_shape(out_rows.shape))
    return (values, most) if return_needed else values
