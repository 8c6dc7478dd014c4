"""darray.vmap (jax.vmap that keeps a split batch axis split) and darray.grad /
darray.value_and_grad (jax.grad for losses that are 0-d DistArrays).

`jax.vmap` of a function that runs `shard_map` (every distributed darray op does) treats the
mapped axis as replicated inside the region unless it is told which mesh axis splits it
(`spmd_axis_name`); without that, XLA all-gathers the batch axis first. darray knows the split
from the Layout, so `darray.vmap` passes it, and gives the outputs a Layout whose batch axis is
split the same way. The all-to-alls of an FFT then run within each batch group.
"""
from __future__ import annotations

import functools

import jax

from darray._src.base import compat
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout
from darray._src.placement import rebuilt


def _not_a_jax_value(x) -> str:
    return (f"{x!r} is a darray DistArray, not a JAX value. For jax.grad of a darray loss use "
            f"darray.grad(f) / darray.value_and_grad(f), or return loss.to_jax() (the logical "
            f"jax.Array) from f.")


# jax.grad(lambda a: darray.sum(...)) looks its DistArray loss up as a JAX type: make
# that lookup say what to do instead (JAX raises its own error from this one).
compat.refuse_as_jax_value(DistArray, _not_a_jax_value)


def _is_dist(x):
    return isinstance(x, DistArray)


def _batch_mesh_axes(args, in_axes):
    """The mesh axes splitting the mapped axis of every DistArray argument (must agree)."""
    if not isinstance(in_axes, (tuple, list)):
        in_axes = (in_axes,) * len(args)
    found = set()
    for arg, axis in zip(args, in_axes):
        for leaf in jax.tree_util.tree_leaves(arg, is_leaf=_is_dist):
            if _is_dist(leaf) and axis is not None:
                found.add(leaf.layout.split[axis % leaf.ndim])
    if len(found) > 1:
        raise ValueError(f"darray.vmap: the mapped axes of the DistArray arguments are split "
                         f"differently ({sorted(found)}); redistribute them to one split first")
    names = found.pop() if found else ()
    return names


def _with_batch_axis(out, names, out_axes):
    """Give DistArray outputs the mapped axis in their Layout, split over `names`. `out_axes`
    is an int, None, or a pytree prefix of the outputs (as for jax.vmap)."""
    def fix_subtree(out_axis, sub):
        if out_axis is None:  # not mapped: the output is what one batch member gave
            return sub
        return jax.tree_util.tree_map(lambda leaf: _with_batch_axis_leaf(leaf, names, out_axis),
                                      sub, is_leaf=_is_dist)
    return jax.tree_util.tree_map(fix_subtree, out_axes, out, is_leaf=lambda v: v is None)


def _with_batch_axis_leaf(leaf, names, out_axes):
    """One output leaf with the mapped axis (out_axes: an int) in its Layout, split over
    `names` when they divide it. jax.vmap rebuilt the leaf around data with the extra axis
    (a Jacobian nests several Layouts: see darray/_src/placement/rebuilt.py); the rebuilt array
    is read raw, then given one Layout that matches its data (pinned to it under tracing)."""
    if not _is_dist(leaf):
        return leaf
    axes, data = [], leaf
    while _is_dist(data):
        axes.extend(rebuilt.axis_layouts(data._layout))
        data = data._stored
    if getattr(data, "ndim", None) != len(axes) + 1:
        return leaf
    axis = out_axes % data.ndim
    mesh = leaf._layout.mesh
    parts = 1
    for name in names:
        parts *= mesh.shape[name]
    split = names if names and data.shape[axis] % parts == 0 else ()
    axes.insert(axis, Layout((data.shape[axis],), mesh, (split,), ((0, 0),)))
    resolved = rebuilt.resolve(tuple(axes), data, pin_traced=True)
    if resolved is None:
        return leaf
    return DistArray._make(resolved[1], resolved[0])


def vmap(fun, in_axes=0, out_axes=0, *, spmd_axis_name=None):
    """`jax.vmap` for functions of DistArrays that keeps a split batch axis distributed.

    Args:
      fun, in_axes, out_axes: as for `jax.vmap` (out_axes: an int, None, or a pytree prefix
        of the outputs).
      spmd_axis_name: mesh axis (or tuple) splitting the batch axis; default: read from the
        Layouts of the DistArray arguments.

    Returns:
      The vectorised function. Its DistArray outputs carry the batch axis in their Layout, split
      over the same mesh axes as the inputs' batch axis.

    Layout:
      Each op inside runs once per batch group: collectives stay within the devices of one
      batch group (e.g. an FFT's all-to-alls), the batch axis is never gathered.

    Example:
      >>> mesh = jax.make_mesh((2, 2, 2), ("c", "x", "y"))
      >>> x = darray.zeros((2, 16, 16, 16), mesh=mesh, spec=("c", "x", "y"))
      >>> k = darray.vmap(darray.fft.fftn)(x)      # like darray.fft.fftn(x, axes=(1, 2, 3))
    """

    @functools.wraps(fun)
    def wrapped(*args):
        names = spmd_axis_name
        if names is None:
            names = _batch_mesh_axes(args, in_axes)
        elif isinstance(names, str):
            names = (names,)
        names = tuple(names)
        mapped = jax.vmap(fun, in_axes=in_axes, out_axes=out_axes,
                          spmd_axis_name=(names[0] if len(names) == 1 else names) if names
                          else None)
        return _with_batch_axis(mapped(*args), names, out_axes)
    return wrapped


# -- grad / value_and_grad ---------------------------------------------------------------------
# darray's reductions return 0-d DistArrays (so array-API code can mix them with arrays), but
# jax.grad accepts only a jax scalar as the loss: it refuses pytrees ("Gradient only defined for
# scalar-output functions") and `__jax_array__` during abstractification, on jax 0.10 and 0.12.
# These wrappers unwrap the loss to its jax scalar and hand everything else to JAX unchanged.


def _loss_to_jax(out, fname):
    if isinstance(out, DistArray):
        if out.ndim != 0:
            raise TypeError(f"darray.{fname}: the function must return a 0-d (scalar) loss, "
                            f"got a DistArray of shape {out.shape}; reduce it first, e.g. "
                            "with darray.sum")
        return out.to_jax(), out.layout
    return out, None


def _unwrapping(fun, has_aux, fname, seen_layout):
    """fun with its loss unwrapped; the loss's 0-d Layout (static) is stored in seen_layout."""
    @functools.wraps(fun)
    def unwrapped(*args, **kwargs):
        out = fun(*args, **kwargs)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"darray.{fname} with has_aux=True needs the function to return "
                                f"a pair (loss, aux), got {type(out).__name__}")
            loss, layout = _loss_to_jax(out[0], fname)
            seen_layout[:] = [layout]
            return loss, out[1]
        loss, layout = _loss_to_jax(out, fname)
        seen_layout[:] = [layout]
        return loss
    return unwrapped


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """`jax.grad` for a loss that is a 0-d DistArray (what darray's reductions return).

    Args, Returns: as for `jax.grad` (argnums, has_aux, holomorphic, allow_int). The loss may
    also be a plain jax scalar. Gradients of DistArray arguments are DistArrays in the
    arguments' layouts; an aux output is returned as the function gave it (DistArrays stay
    DistArrays).

    Layout:
      The gradient of each DistArray argument has that argument's layout; the communication is
      that of the ops' transposes (JAX's reverse mode through darray's pinned ops).

    Example:
      >>> g = darray.grad(lambda a: darray.sum(a * a))(x)   # 2 * x, laid out like x
    """
    return jax.grad(_unwrapping(fun, has_aux, "grad", []), argnums=argnums, has_aux=has_aux,
                    holomorphic=holomorphic, allow_int=allow_int)


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """`jax.value_and_grad` for a loss that is a 0-d DistArray.

    Args: as for `jax.value_and_grad`.

    Returns:
      A function returning ``(value, grad)`` or ``((value, aux), grad)`` as JAX does; the value
      is a 0-d DistArray on the loss's mesh when the loss was one (else the jax scalar).

    Layout: as for `darray.grad`.
    """
    seen_layout: list = []
    inner = jax.value_and_grad(_unwrapping(fun, has_aux, "value_and_grad", seen_layout),
                               argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                               allow_int=allow_int)

    def rewrap(value):
        layout = seen_layout[0] if seen_layout else None
        return value if layout is None else DistArray._make(value, layout)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        out, grads = inner(*args, **kwargs)
        if has_aux:
            return (rewrap(out[0]), out[1]), grads
        return rewrap(out), grads
    return wrapped


# -- control flow: a carry or branch output in another layout ----------------------------------
# lax.scan / while_loop / fori_loop compare the carry's pytree metadata (the Layout) going in
# and coming out, cond / switch the branches' outputs. A layout cannot be brought back behind
# the user's back (the loop is traced before darray sees the mismatch), so JAX's error gets the
# one-line fix, with the layout to restore written out.


def _layout_mismatches(first, second):
    """(path, layout_a, layout_b) for DistArrays at one path whose layouts differ only in
    placement (same shape): what a reshard fixes."""
    flat_a, _ = jax.tree_util.tree_flatten_with_path(first, is_leaf=_is_dist)
    flat_b, _ = jax.tree_util.tree_flatten_with_path(second, is_leaf=_is_dist)
    found = []
    for (path_a, a), (path_b, b) in zip(flat_a, flat_b):
        if path_a == path_b and _is_dist(a) and _is_dist(b):
            la, lb = a._layout, b._layout
            if la != lb and la.shape == lb.shape:
                found.append((path_a, la, lb))
    return found


def _restore_hint(layout: Layout) -> str:
    hint = f"here spec={tuple(layout.spec)!r}"
    if layout.has_halo:
        hint += f", then .halo({[tuple(h) for h in layout.halo]!r}) for its ghost cells"
    return hint


def _describe(layout: Layout) -> str:
    mesh = ", ".join(f"{n}:{s}" for n, s in layout.mesh.shape.items())
    halo = f", halo {layout.halo}" if layout.has_halo else ""
    return f"split {layout.describe_split()} on mesh ({mesh}){halo}"


def _explain_layout_mismatch(kind, names, first, second) -> str:
    lines = []
    for path, la, lb in _layout_mismatches(first, second):
        where = f" at {jax.tree_util.keystr(path)}" if path else ""
        if kind == "carry":
            lines.append(
                f"darray: the carry{where} enters the loop body {_describe(la)} and leaves it "
                f"{_describe(lb)}. A loop carry keeps its layout: return "
                f"`darray.asarray(new, device=c.device, spec=c.layout.spec)`, c being the carry "
                f"the body received ({_restore_hint(la)}).")
        else:
            lines.append(
                f"darray: {names[0]} returns{where} an array {_describe(la)}, {names[1]} one "
                f"{_describe(lb)}. Both branches must return one layout: in {names[1]}, return "
                f"`darray.asarray(r, device=mesh, spec=spec)` with {names[0]}'s mesh and spec "
                f"({_restore_hint(la)}).")
    return "\n".join(lines)


compat.explain_structure_mismatch(_explain_layout_mismatch)
