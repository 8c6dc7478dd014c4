"""Small shared pieces for the shape-changing families (manipulation, indexing, sorting, sets,
linalg): axis normalisation with clear errors, output-layout construction, and a physical apply
path whose output layout may differ from its input layouts (common.apply_physical keeps one).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import numpy as np

from darray._src import compat, physical
from darray._src.array import DistArray
from darray._src.axes import AxisError, normalize_axis  # noqa: F401 (re-exported here)
from darray._src.layout import Layout
from darray._src.program_cache import MEDIUM, program_cache


def normalize_axes(axes, ndim: int, argname: str = "axis") -> tuple[int, ...]:
    """Non-negative, distinct axes from an int or a sequence of ints."""
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = tuple(normalize_axis(a, ndim, argname) for a in axes)
    if len(set(out)) != len(out):
        raise AxisError(f"{argname}={tuple(axes)!r} repeats an axis; give each axis once")
    return out


def is_plain(layout: Layout) -> bool:
    """No ghosts and natural axis order: physical index i along any axis is logical index i
    (padding sits at the end of each split axis), so physical kernels may index directly."""
    return not layout.has_halo and layout.order == tuple(range(layout.ndim))


def make_out_layout(mesh, shape, split) -> Layout:
    """A layout on `mesh` with the given per-axis split; a mesh axis used twice keeps only its
    first use (the later axis goes unsplit), so rules may propose freely."""
    seen: set[str] = set()
    clean = []
    for s in split:
        s = tuple(s)
        if any(name in seen for name in s):
            s = ()
        seen.update(s)
        clean.append(s)
    n = len(shape)
    return Layout(tuple(int(d) for d in shape), mesh, tuple(clean), ((0, 0),) * n, tuple(range(n)))


def default_layout(shape, like: Layout) -> Layout:
    """Layout for a result whose shape has no axis-by-axis relation to its input (advanced
    indexing, unique values): a slab, the longest axis split over every mesh axis the input
    used (so the result is spread as widely as the input was)."""
    shape = tuple(int(n) for n in shape)
    names = like.used_mesh_axes
    split: list[tuple[str, ...]] = [()] * len(shape)
    if shape and names and max(shape) > 1:
        split[int(np.argmax(shape))] = names
    return make_out_layout(like.mesh, shape, split)


def check_same_mesh(fname: str, arrays: Sequence[DistArray], argname: str = "arrays") -> list:
    """The mesh rule (operands.check_operand_meshes) for the arrays of the public function
    `fname` (a sequence argument, or several named by a comma-separated `argname`): the
    arrays, placed on one mesh."""
    from darray._src.api.operands import check_operand_meshes
    names = [n.strip() for n in argname.split(",")]
    if len(names) == len(arrays):
        named = list(zip(arrays, names))
    else:
        named = [(a, f"{argname}[{i}]") for i, a in enumerate(arrays)]
    return list(check_operand_meshes(fname, *named))


def run_physical(fn: Callable, arrays: Sequence[DistArray], out_layouts, static=()):
    """fn(*physical_datas, *static) compiled once; inputs pinned to their layouts, outputs to
    `out_layouts` (a Layout or a tuple of Layouts). `fn` must not read padding into logical
    cells. No communication beyond what `fn` itself asks for."""
    in_layouts = tuple(a.layout for a in arrays)
    compiled = _physical_fn(fn, in_layouts, out_layouts, static)
    outs = compiled(*[a.data for a in arrays])
    if isinstance(out_layouts, Layout):
        return DistArray._new(outs, out_layouts)
    return tuple(DistArray._new(o, lay) for o, lay in zip(outs, out_layouts))


@program_cache(MEDIUM)
def _physical_fn(fn, in_layouts, out_layouts, static):
    def run(*datas):
        datas = [physical.constrain(d, lay) for d, lay in zip(datas, in_layouts)]
        out = fn(*datas, *static)
        if isinstance(out_layouts, Layout):
            return physical.constrain(out, out_layouts)
        return tuple(physical.constrain(o, lay) for o, lay in zip(out, out_layouts))
    return jax.jit(run)


def settle(data):
    """Bound eager in-flight collective programs (jax 0.10 CPU deadlock; see
    compat.bound_in_flight). DistArray._new applies it to every result already."""
    return compat.bound_in_flight(data)


def is_tracing(*arrays) -> bool:
    return any(isinstance(a, DistArray) and isinstance(a.data, jax.core.Tracer) for a in arrays)
