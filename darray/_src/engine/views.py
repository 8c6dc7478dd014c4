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

Other results (advanced indexing, arithmetic, ``asarray(x, copy=True)``, ``x.copy()``) are
copies, as in numpy.
"""
from __future__ import annotations

import weakref

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
    read at."""
    __slots__ = ("base", "steps", "seen", "seen_layout")

    def __init__(self, base: DistArray, steps: tuple, seen: int):
        self.base, self.steps, self.seen = weakref.ref(base), steps, seen
        self.seen_layout = base._layout

    def refresh(self, view: DistArray) -> None:
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
        if base is not None and base._version != self.seen:
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
