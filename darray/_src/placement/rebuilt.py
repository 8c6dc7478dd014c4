"""Layouts of the DistArrays JAX rebuilds around leaves of another rank.

A DistArray is a pytree whose only leaf is the physical array and whose metadata is the Layout.
JAX transformations rebuild that pytree around leaves the Layout does not describe:

* Jacobians (`jax.jacfwd`, `jax.jacrev`, `jax.hessian`) nest pytrees: the Jacobian of a
  DistArray function of a DistArray is ``DistArray(DistArray(leaf, in_layout), out_layout)``,
  and its leaf holds the output's physical axes, then the input's (`jax.tree.transpose` of
  the per-input pieces). A Hessian nests three deep.
* Stacked outputs (`jax.vmap`, `lax.scan`'s ``ys``) and Jacobians with a plain jax input or
  output give one Layout a leaf with extra plain axes, leading or trailing.
* Under `jax.vmap` the traced leaf lacks the mapped axes (`reconcile_rank`).

`resolve` turns a nest or an extended leaf into one DistArray whose Layout matches its data:
each axis keeps the split its own Layout gave it when the data has that split and no other
axis already uses those mesh axes; otherwise the axis is unsplit, with its padding and ghost
cells sliced away (a local slice: the axis is not split). Concrete data is read as it is
sharded (no data moves when it fits); traced data (inside `jit`) follows the rule outer axes
first and is pinned to it, so a jitted Jacobian's output sharding is what its Layout says.
`settle_plan` computes that Layout alone (pure), so reading `DistArray.layout` runs nothing.

The JAX pytree behaviours this relies on, each pinned by the test of the same name in
tests/multidevice/distarray/test_pytree_contract.py (a JAX upgrade that changes one fails there):

1. test_unflatten_receives_leaves_that_are_not_arrays: `tree_unflatten` gets avals, None and
   PartitionSpecs, so it never validates (`DistArray._new` is the checked path).
2. test_jacobians_nest_output_layout_outside_input_layout_inside: the nest's shape.
3. test_stacked_outputs_get_leading_plain_axes: scan's ys / vmap's outputs.
4. test_vmap_rebuilds_the_input_around_a_tracer_without_the_mapped_axis: what
   `reconcile_rank` and `refuse_split_vmap` read (through compat.vmap_levels).
"""
from __future__ import annotations

import itertools

import jax

from darray._src.base import compat
from darray._src.base.errors import LayoutError
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.layout.layout import Layout
from darray._src.placement import physical


def _names(entry) -> tuple[str, ...]:
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _axes(components, mesh):
    """Per data axis: (logical length, split, halo, physical length) of the Layout that
    described it; (None, (), (0, 0), None) for plain axes (an int count in `components`)."""
    out = []
    for comp in components:
        if isinstance(comp, int):
            out.extend((None, (), (0, 0), None) for _ in range(comp))
            continue
        if comp.mesh != mesh:
            raise LayoutError(f"JAX combined DistArrays on two meshes into one array (a "
                              f"Jacobian of a function from {comp.mesh} to {mesh}, or the "
                              f"reverse); put both on one mesh, e.g. with darray.asarray(a, "
                              f"device=...)")
        for a in range(comp.ndim):
            out.append((comp.shape[a], comp.split[a], comp.halo[a], comp.physical_shape[a]))
    return out


def _physical(components, mesh):
    return tuple(p for _, _, _, p in _axes(components, mesh))


def place_extra(components, shape):
    """`components` with the plain axes a leaf of `shape` has beyond them (leading preferred,
    as vmap and scan stack; trailing for a Jacobian of a plain input), or None when the
    Layouts do not describe the leaf's trailing or leading axes."""
    mesh = next(c.mesh for c in components if not isinstance(c, int))
    described = tuple(p for p in _physical(components, mesh) if p is not None)
    extra = len(shape) - len(described)
    if extra < 0:
        return None
    if shape[extra:] == described:
        return ((extra,) if extra else ()) + tuple(components)
    if shape[:len(described)] == described:
        return tuple(components) + (extra,)
    return None


def plan(components, shape, spec=None):
    """(layout, source, stripped): the Layout for data of `shape` whose axes `components`
    describe in order (Layouts, and int counts of plain axes), the per-axis source Layout
    (mesh axes may repeat in it: it is only used for its arithmetic) and the axes to strip.

    spec: the data's PartitionSpec when it is concrete and on the components' mesh, read so
    that no data moves when it fits; None for traced data (the rule: earlier axes keep their
    split first)."""
    mesh = next(c.mesh for c in components if not isinstance(c, int))
    axes = _axes(components, mesh)
    entries = tuple(spec) + (None,) * (len(axes) - len(spec)) if spec is not None else None
    sizes = dict(mesh.shape)
    used: set = set()
    targets: list = [None] * len(axes)
    # first what the data has (when read), then the rule for the rest, in axis order
    for read in ((True, False) if entries is not None else (False,)):
        for a, (n, split, _, _) in enumerate(axes):
            if targets[a] is not None:
                continue
            if read:
                have = _names(entries[a])
                if n is None:  # a plain axis: any split that divides it evenly
                    parts = 1
                    for name in have:
                        parts *= sizes[name]
                    ok = not used.intersection(have) and shape[a] % parts == 0
                else:
                    ok = have in (split, ()) and not used.intersection(have)
                if ok:
                    targets[a] = have
                    used.update(have)
                continue
            keep = split if n is not None and not used.intersection(split) else ()
            targets[a] = keep
            used.update(keep)
    logical, halos, stripped = [], [], []
    for a, (n, split, halo, _) in enumerate(axes):
        if n is None:
            logical.append(shape[a])
            halos.append((0, 0))
        elif targets[a] == split:
            logical.append(n)
            halos.append(halo)
        else:
            logical.append(n)
            halos.append((0, 0))
            stripped.append(a)
    layout = Layout(tuple(logical), mesh, tuple(targets), tuple(halos))
    source = Layout(tuple(shape[a] if n is None else n for a, (n, *_) in enumerate(axes)), mesh,
                    tuple(s for _, s, _, _ in axes), tuple(h for _, _, h, _ in axes))
    return layout, source, tuple(stripped)


def _convert(data, source: Layout, stripped, layout: Layout):
    for axis in stripped:
        data = physical.strip_axis(data, source, axis)
    return physical.constrain(data, layout)


@program_cache(SMALL)
def _converter(source: Layout, stripped, layout: Layout):
    return jax.jit(lambda data: _convert(data, source, stripped, layout),
                   out_shardings=physical.sharding_of(layout))


def _concrete_spec(data, mesh):
    """The PartitionSpec of concrete data on `mesh` (None: traced, or sharded otherwise)."""
    if compat.is_tracer(data):
        return None
    sharding = getattr(data, "sharding", None)
    if not isinstance(sharding, jax.sharding.NamedSharding):
        return None
    if compat.auto_twin(sharding.mesh) != mesh:
        return None
    return sharding.spec


def settle_plan(components, data, *, pin_traced: bool):
    """(layout, move) for a leaf JAX gave the Layouts `components` (outer first): the Layout
    `resolve` gives it, and None when the data already is there, else the (source, stripped)
    that `resolve` converts it with. Pure: it reads shapes and shardings, never data, so
    `DistArray.layout` of an unsettled Jacobian runs nothing. None where `resolve` leaves the
    leaf as it is."""
    shape = getattr(data, "shape", None)
    if shape is None:
        return None
    comps = place_extra(components, tuple(shape))
    if comps is None:
        return None
    mesh = next(c.mesh for c in comps if not isinstance(c, int))
    spec = _concrete_spec(data, mesh)
    if spec is None and not pin_traced and compat.is_tracer(data):
        return None
    layout, source, stripped = plan(comps, tuple(shape), spec)
    if spec is not None and not stripped and data.sharding.is_equivalent_to(
            physical.sharding_of(layout), len(shape)):
        return layout, None  # already what the Layout says: nothing moves
    return layout, (source, stripped)


def resolve(components, data, *, pin_traced: bool):
    """(layout, data) for a leaf JAX gave the Layouts `components` (outer first), or None to
    leave it as it is: the Layouts do not describe the leaf, or it is traced, `pin_traced` is
    False and nothing needs slicing (one Layout with extra plain axes: its Layout is reconciled
    where it is read, see `reconcile_rank`, so a `jit` output keeps the sharding XLA gave it).
    A traced nest is pinned to the rule's Layout (pin_traced=True), so that the sharding of a
    jitted Jacobian is what its Layout says. The Layout is `settle_plan`'s."""
    planned = settle_plan(components, data, pin_traced=pin_traced)
    if planned is None:
        return None
    layout, move = planned
    if move is None:
        return layout, data
    source, stripped = move
    return layout, _converter(source, stripped, layout)(data)


def axis_layouts(layout: Layout) -> tuple[Layout, ...]:
    """`layout` as one 1-d Layout per axis (for placing an axis between two of them)."""
    return tuple(Layout((layout.shape[a],), layout.mesh, (layout.split[a],),
                        (layout.halo[a],)) for a in range(layout.ndim))


def join_label(components, ndim: int):
    """The Layout of a nest whose traced leaf has `ndim` axes, fewer than its Layouts
    describe (a Jacobian passed into `jax.vmap`): the rule's Layout, with the mapped axes
    reconciled where it is read."""
    axes_total = sum(c if isinstance(c, int) else c.ndim for c in components)
    shape = (0,) * axes_total  # plan reads lengths of plain axes only; there are none
    layout, _, _ = plan(tuple(components), shape)
    return layout if ndim <= layout.ndim else None


# -- the vmap view: the traced leaf lacks the mapped axes -------------------------------------
def reconcile_rank(layout: Layout, data) -> Layout:
    """The layout matching `data`'s rank.

    Under `jax.vmap` the traced data lacks the mapped axes: drop the axes vmap maps (read from
    its tracers), else the layout axes whose removal leaves exactly the data's physical shape
    (leading axes preferred; scan's slices). A traced leaf with extra
    plain axes (see `resolve`) gets them unsplit, leading or trailing.
    """
    shape = getattr(data, "shape", None)
    if shape is None or len(shape) == layout.ndim:
        return layout
    shape = tuple(shape)
    physical_shape = layout.physical_shape
    if len(shape) > layout.ndim:
        comps = place_extra((layout,), shape)
        if comps is None:
            raise ValueError(f"data of shape {shape} does not extend {layout!r}")
        return plan(comps, shape)[0]
    mapped = _mapped_axes(layout, data)  # vmap says which axes it maps: no guessing
    known = [tuple(sorted(a for a, _ in mapped))] if mapped is not None else []
    for dropped in known + list(itertools.combinations(range(layout.ndim),
                                                       layout.ndim - len(shape))):
        keep = [a for a in range(layout.ndim) if a not in dropped]
        if tuple(physical_shape[a] for a in keep) == shape:
            return Layout(tuple(layout.shape[a] for a in keep), layout.mesh,
                          tuple(layout.split[a] for a in keep), tuple(layout.halo[a] for a in keep))
    raise ValueError(f"data of shape {shape} is not {layout!r} with axes removed")


def _mapped_axes(layout: Layout, data):
    """[(layout axis, spmd_axis_name)] for the axes of `layout` that enclosing `jax.vmap`s
    map away from traced `data`, outermost first; None when `data` is not such a view."""
    levels = compat.vmap_levels(data)
    top = next((i for i, (_, _, ndim) in enumerate(levels) if ndim == layout.ndim), None)
    if top is None:
        return None  # not a vmap of this array's axes (e.g. scan's slices)
    axes = list(range(layout.ndim))
    mapped = []
    for dim, spmd, _ in reversed(levels[:top + 1]):
        if dim is not None:
            mapped.append((axes.pop(dim), spmd))
    return mapped


def refuse_split_vmap(layout: Layout, data) -> None:
    """Raise when plain `jax.vmap` maps a split axis of a DistArray without `spmd_axis_name`
    naming the mesh axes that split it. Each darray op inside would then run its `shard_map`
    with the mapped axis replicated, all-gathering it first (JAX's rule for vmap of
    shard_map); `darray.vmap` passes the split as `spmd_axis_name` and keeps it."""
    for axis, spmd in _mapped_axes(layout, data) or ():
        split = layout.split[axis]
        if split and spmd != split:
            given = ("without spmd_axis_name" if spmd is None
                     else f"with spmd_axis_name={spmd!r}")
            name = split[0] if len(split) == 1 else split
            raise ValueError(
                f"jax.vmap maps axis {axis} of a DistArray split over mesh axes {split} "
                f"({layout!r}) {given}: every darray op inside would all-gather that axis "
                f"(JAX runs vmap of shard_map with the mapped axis replicated). Use "
                f"darray.vmap(f), which keeps the batch split and runs each op within its batch "
                f"group, or jax.vmap(f, spmd_axis_name={name!r}); or map an unsplit axis.")
