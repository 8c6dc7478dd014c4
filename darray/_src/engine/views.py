"""Views: results of basic indexing, `permute_dims` and `reshape` that write through to their
base, as numpy's views do.

darray's data are immutable jax arrays, so ``v = x[2:5]`` holds its own copy. Without views,
``v += 1`` or ``v[...] = y`` would change `v` and silently leave `x` as it was, although numpy
code (and array-API code that sees ``is_writeable_array(x)``) expects `x` to change. The rule:

- ``x[basic key]`` (ints, slices, ``...``, None; not a key of ints only, which numpy answers
  with a scalar), ``permute_dims`` / ``x.T`` / ``x.mT`` / ``swapaxes`` / ``transpose`` and
  ``reshape`` without ``copy=True`` return a *view*: a DistArray (its own layout, its own data)
  linked to its base.
- Writing a view (``v[k] = y``, ``v += y``) writes the base: the new value of `v` is written
  back through each step to the base, under the base's lock.
- Reading a view after its base was written reads the base again, so ``x[0] = 5`` shows in
  ``v = x[0:2]``.
- A view of a view links to the first base (as numpy's ``.base``), through the composed steps.
  The base is held weakly: a view does not keep its base's memory alive; once nothing else
  holds the base, no one can read it, so no write is lost.
- Under tracing (``jax.jit``) results are plain arrays: a traced program is functional.
- An eager axis permutation (``x.T``) is *unread* until its data is read: it computes nothing,
  holds its source strongly (``(A @ B).T`` must still read A @ B) and reads it at the first
  read (so a write of the source before then shows). matmul, tensordot and vecdot contract
  the source of an unread permutation directly, with its labels permuted (api/linalg.py), so
  scikit-learn's ``U.T @ y`` never makes a transposed copy of U. Once read, it is a view as
  any other (its base held weakly).

Other results (advanced indexing, arithmetic, ``asarray(x, copy=True)``, ``x.copy()``) are
copies, as in numpy.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable

import jax

from darray._src.base import compat
from darray._src.distarray.array import DistArray, mutation_lock


class Step:
    """One view step: ``read(parent) -> child`` and ``write(parent, child) -> new parent``,
    both plain functions of DistArrays that make no views."""
    __slots__ = ("read", "write")

    def __init__(self, read, write):
        self.read, self.write = read, write


class ViewLink:
    """What a view knows of its base (a view's `_pending` state, see `DistArray._sync`): a
    weak reference, the steps from it, and the base's version and Layout the view's data was
    read at. An unread permutation also holds `source` (strongly) and `axes`: its value is
    ``permute_dims(source, axes)``, computed as ``read_source(source, axes)`` at the first
    read."""
    __slots__ = ("base", "steps", "seen", "seen_layout", "source", "axes", "read_source")

    def __init__(self, base: DistArray, steps: tuple, seen: int):
        self.base, self.steps, self.seen = weakref.ref(base), steps, seen
        self.seen_layout = base._layout
        self.source: DistArray | None = None
        self.axes: tuple[int, ...] = ()
        self.read_source: Callable[[DistArray, tuple], DistArray] | None = None

    def _read_unread(self, view: DistArray) -> None:
        """The first read of an unread permutation: compute it from its source (under its
        base's lock, so that no write of the base interleaves), then drop the strong
        reference. (The base is the source, or the base of a view the source is: that base
        may be gone, then the source is all there is to read.)"""
        base = self.base()
        with mutation_lock(base if base is not None else view):
            source, read = self.source, self.read_source
            if source is None or read is None:  # another thread read it first
                return
            value = read(source, self.axes)
            view._stored, view._layout = value._data, value.layout
            if base is not None:
                self.seen, self.seen_layout = base._version, base._layout
            self.source = self.read_source = None

    def refresh(self, view: DistArray) -> None:
        if self.source is not None:
            self._read_unread(view)
            return
        base = self.base()
        if base is None or base._version == self.seen:
            return
        with mutation_lock(base):
            seen, seen_layout = base._version, base._layout
            value = base
            for step in self.steps:
                value = step.read(value)
            view._stored, view._layout = value._data, value.layout
            self.seen, self.seen_layout = seen, seen_layout

    def layout_of(self, view: DistArray):
        """The view's Layout, read without refreshing it: the steps map the base's Layout to
        the view's alone, so a base written in place (same Layout) leaves it as it is. Only a
        base rebound to another Layout (``x += y`` that moved it) is read again (a compiled
        read: the split of the view is not known otherwise)."""
        base = self.base()
        if base is not None and (base._version != self.seen or self.source is not None):
            layout = base._layout
            if layout is not self.seen_layout and layout != self.seen_layout:
                self.refresh(view)
        return view._layout

    def write_back(self, view: DistArray) -> None:
        """Write the view's current value into its base, through every step."""
        base = self.base()
        if base is None:
            return
        with mutation_lock(base):
            parents = [base]
            for step in self.steps[:-1]:
                parents.append(step.read(parents[-1]))
            value = DistArray._make(view._stored, view._layout)
            for step, parent in zip(reversed(self.steps), reversed(parents)):
                value = step.write(parent, value)
            base._rebind(value)
            self.seen, self.seen_layout = base._version, base._layout
            self.source = self.read_source = None  # the view's data is its own now


def make_view(result: DistArray, parent: DistArray, step: Step) -> DistArray:
    """`result` (read from `parent` by `step`) linked to `parent`'s base as a view."""
    if compat.is_tracer(result._stored) or compat.is_tracer(parent._stored):
        return result
    link = parent._pending if isinstance(parent._pending, ViewLink) else None
    root = link.base() if link is not None else None
    if link is not None and root is not None:
        base, steps = root, link.steps + (step,)
    else:
        base, steps = parent, (step,)
    result._pending = ViewLink(base, steps, base._version)
    return result


def make_unread_permutation(parent: DistArray, layout, axes: tuple, step: Step,
                            read) -> DistArray | None:
    """The permutation ``permute_dims(parent, axes)`` (of Layout `layout`) as an unread view:
    nothing is computed until its data is read (``read(source, axes)`` then computes it, for
    the source and axes of `unread_permutation`). None for traced or rebuilt operands (the
    caller computes it at once)."""
    stored = parent._stored
    link = parent._pending
    if compat.is_tracer(stored) or (link is not None and not isinstance(link, ViewLink)):
        return None
    source, source_axes = parent, tuple(axes)
    unread = (link.source, link.axes) if isinstance(link, ViewLink) else (None, ())
    if unread[0] is not None:  # x.T.T: compose
        source, source_axes = unread[0], tuple(unread[1][a] for a in axes)
    elif not isinstance(stored, jax.Array):
        return None
    placeholder = jax.ShapeDtypeStruct(layout.physical_shape, parent.dtype)
    view = make_view(DistArray._make(placeholder, layout), parent, step)
    new_link = view._pending
    if not isinstance(new_link, ViewLink):
        return None
    new_link.source, new_link.axes, new_link.read_source = source, source_axes, read
    return view


def unread_permutation(x: DistArray) -> tuple[DistArray, tuple[int, ...]] | None:
    """(source, axes) of an unread permutation x (``x == permute_dims(source, axes)``, and
    nothing computed yet), for contractions that read the source with permuted labels instead
    of x; None for any other array. The source's Layout, permuted, is x's (else None)."""
    link = x._pending
    if not isinstance(link, ViewLink):
        return None
    source, axes = link.source, link.axes
    if source is None:
        return None
    lay, src = x.layout, source.layout  # x.layout may read x (its base moved): look again
    if link.source is None or lay.shape != tuple(src.shape[a] for a in axes) or \
            lay.split != tuple(src.split[a] for a in axes) or src.has_halo:
        return None
    return source, axes
