"""The distributed FFT plan: an ordered list of stages, pure data, built without devices.

A plan turns an input Layout into an output Layout by two kinds of stage:

* `LocalFFT`: a 1D or nD FFT over array axes that are *not* split, done by each device on its
  own block (``kind`` c2c, r2c or c2r; ``sizes`` is the transform length along each axis, so a
  c2c stage also pads or truncates like numpy's ``s``). Kind r2r carries one real-to-real
  kernel per axis (``kernels``, see darray._src.fft.r2r_local) and ``sizes`` is its output
  length; the planner treats it like c2c, so DCTs/DSTs move by the very same transposes.
* `Transpose`: an all-to-all over the mesh axes ``mesh_axes`` that moves their split from array
  axis ``src`` (which becomes local) to array axis ``dst`` (which becomes split). Uneven sizes
  are handled inside the stage: ``dst`` is padded to a multiple of the parts before the
  exchange and ``src`` is sliced back to ``src_len`` after it, so padding never enters an FFT.

Why plans are data: the same plan runs on every backend (pure JAX shard_map, native cuDecomp),
and the hard part (which axis goes where) is unit-tested on an `AbstractMesh`.

Rules the planner follows:

1. Transform every local axis first, then move splits onto axes already transformed, so
   k-space stays transposed instead of paying a transpose back. When some transform axis starts
   unsplit, the splits rotate one place along the transform axes (slab: axis 0 -> 1; pencil
   (x, y, -) -> (-, x, y)): each split axis moves once, the fewest all-to-alls possible. When
   every transform axis is split, a split moves to the nearest unsplit axis (transformed ones
   first, then batch axes, then pending ones); a batch axis borrowed this way is handed back at
   the end: only transform axes change their split, batch axes keep theirs.
2. Real transforms: r2c runs first on the last axis (made local first if needed), so no complex
   copy of the real array is ever made; c2r runs last on the last axis.
3. Inverse transforms retrace the forward path: `plan_fft` looks for the layout whose forward
   plan ends in the given k-space layout and reverses that plan, so ``ifftn(fftn(x))`` ends in
   ``x``'s layout with the same number of all-to-alls as the forward transform.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import Union

from darray._src.layout import Layout

KINDS = ("c2c", "r2c", "c2r", "r2r")


@dataclasses.dataclass(frozen=True)
class LocalFFT:
    """FFT over local (unsplit) array axes. ``sizes[k]`` is the transform length for
    ``axes[k]``: c2c pads/truncates to it, r2c reads that many real points, c2r writes them."""
    axes: tuple[int, ...]
    kind: str
    inverse: bool
    sizes: tuple[int, ...]
    kernels: tuple = ()  # r2r only: kernels[k] transforms axes[k]


@dataclasses.dataclass(frozen=True)
class Transpose:
    """All-to-all over ``mesh_axes`` (``parts`` devices): ``src`` becomes local, ``dst`` split.

    ``src_len`` / ``dst_len`` are the true logical lengths of the two axes at this point."""
    mesh_axes: tuple[str, ...]
    src: int
    dst: int
    src_len: int
    dst_len: int
    parts: int

    def reversed(self) -> "Transpose":
        return Transpose(self.mesh_axes, self.dst, self.src, self.dst_len, self.src_len,
                         self.parts)


Stage = Union[LocalFFT, Transpose]


@dataclasses.dataclass(frozen=True)
class Plan:
    in_layout: Layout
    out_layout: Layout
    stages: tuple[Stage, ...]

    @property
    def n_transposes(self) -> int:
        return sum(isinstance(s, Transpose) for s in self.stages)

    def describe(self) -> str:
        lines = [f"in:  {self.in_layout!r}"]
        for s in self.stages:
            if isinstance(s, LocalFFT):
                tag = s.kind + ("-inv" if s.inverse and s.kind in ("c2c", "r2r") else "")
                lines.append(f"  local {tag} axes={s.axes} sizes={s.sizes}")
            else:
                lines.append(f"  all-to-all {s.mesh_axes}: split moves axis {s.src} -> {s.dst}")
        lines.append(f"out: {self.out_layout!r}")
        return "\n".join(lines)


class PlanError(NotImplementedError):
    """A valid request the planner cannot express as local FFTs and all-to-alls."""


def _out_lengths(shape, axes, kind, sizes):
    """Logical output length of every transform axis."""
    out = {}
    for a, n in zip(axes, sizes):
        out[a] = n // 2 + 1 if (kind == "r2c" and a == axes[-1]) else n
    return out


def _greedy(layout: Layout, axes, kind, inverse, sizes, kernels=()) -> Plan:
    """The forward rule (module docstring, rules 1-2) applied to any kind."""
    kernel_of = dict(zip(axes, kernels))
    ndim = layout.ndim
    shape = list(layout.shape)
    split = [tuple(s) for s in layout.split]
    mesh_sizes = layout.mesh_shape
    size_of = dict(zip(axes, sizes))
    last = axes[-1]
    pending = list(axes)
    done: list[int] = []
    origin = {s: a for a, s in enumerate(split) if s}  # mesh group -> axis it started on
    stages: list[Stage] = []

    def parts(group):
        p = 1
        for name in group:
            p *= mesh_sizes[name]
        return p

    def allowed(a):
        if kind == "r2c" and last in pending:
            return a == last
        if kind == "c2r" and a == last:
            return pending == [last]
        return True

    def move(src, dst):
        group = split[src]
        stages.append(Transpose(group, src, dst, shape[src], shape[dst], parts(group)))
        split[dst], split[src] = group, ()

    def nearest(src, candidates):
        # Least padding first (a halved r2c axis is rarely divisible), then the nearest axis;
        # ties go to the higher axis (slab k-space of an axis-0 slab lands on axis 1).
        p = parts(split[src])
        return min(candidates, key=lambda a: (-shape[a] % p, abs(a - src), -a),
                   default=None)

    # Rule 1 as a bijection: when some transform axis starts unsplit, the splits of the
    # transform axes rotate by one place (axes[i] -> axes[i+1], cyclically). Each split axis moves
    # exactly once (the fewest all-to-alls possible) and distinct layouts never share a k-space
    # layout, so the inverse can always retrace its way back (rule 3).
    rotation = rotation_targets(layout, axes) if kind in ("c2c", "r2c", "r2r") else None
    if kind == "r2c" and split[last]:
        rotation = None
    while pending:
        ready = [a for a in pending if not split[a] and allowed(a)]
        if ready:
            if kind == "r2c" and last in ready:
                stages.append(LocalFFT((last,), "r2c", False, (size_of[last],)))
                ready = [last]
            elif kind == "c2r" and last in ready:
                stages.append(LocalFFT((last,), "c2r", True, (size_of[last],)))
                ready = [last]
            else:
                ready = [a for a in axes if a in ready]
                stages.append(LocalFFT(tuple(ready), "r2r" if kind == "r2r" else "c2c",
                                       inverse, tuple(size_of[a] for a in ready),
                                       tuple(kernel_of[a] for a in ready) if kernels else ()))
            for a in ready:
                pending.remove(a)
                done.append(a)
                shape[a] = _out_lengths(shape, axes, kind, sizes)[a]
            continue
        # Every pending axis we may transform now is split: move one split out of the way.
        srcs = [a for a in pending if split[a] and allowed(a)]
        src = max(srcs)
        unsplit = [a for a in range(ndim) if not split[a] and a != src]
        dst = None
        if rotation:
            movable = [a for a in srcs if rotation[a] in done and not split[rotation[a]]]
            if movable:
                src = max(movable)
                move(src, rotation[src])
                continue
        for pool in ([a for a in unsplit if a in done], [a for a in unsplit if a not in axes],
                     [a for a in unsplit if a in pending]):
            if dst is None:
                dst = nearest(src, pool)
        if dst is None:
            raise PlanError(
                f"cannot transform axes {tuple(axes)} of an array with layout {layout!r}: every "
                f"array axis is split, so there is no unsplit axis to move a split into. Leave "
                f"one axis unsplit (e.g. split one axis over several mesh axes with "
                f"spec=(('x', 'y'), None, ...)) or add a batch axis; a 1D array must be "
                f"unsplit to transform (darray.asarray(x, spec=(None,))): the distributed "
                f"four-step 1D FFT is not implemented")
        move(src, dst)

    # Hand borrowed batch axes back: only transform axes may change their split.
    for a in range(ndim):
        if split[a] and a not in axes and origin.get(split[a]) != a:
            home = origin.get(split[a])
            if home is None or split[home]:  # home taken: any free transform axis will do
                home = nearest(a, [b for b in axes if not split[b]])
            if home is not None:
                move(a, home)

    out = Layout.create(tuple(shape), layout.mesh, _spec(split))
    return Plan(layout, out, tuple(stages))


def rotation_targets(layout: Layout, axes) -> dict[int, int] | None:
    """Where each split transform axis sends its split under the rotation rule, or None when
    every transform axis is split (then there is no free slot to rotate through)."""
    order = sorted(axes)
    if all(layout.split[a] for a in order):
        return None
    return {a: order[(i + 1) % len(order)] for i, a in enumerate(order) if layout.split[a]}


def _rotate_back(layout: Layout, axes, out_shape) -> Layout:
    order = sorted(axes)
    split = [tuple(s) if a not in axes else () for a, s in enumerate(layout.split)]
    for i, a in enumerate(order):
        split[order[i - 1]] = layout.split[a]
    return Layout.create(out_shape, layout.mesh, _spec(split))


def _spec(split):
    return tuple(None if not s else (s[0] if len(s) == 1 else s) for s in split)


def _reverse(plan: Plan, kind: str, sizes=None, kernels=None) -> Plan:
    """The inverse of a forward plan: stages in reverse order, each undone. For r2r the local
    stages run the inverse call's own kernels and output lengths (`kernels`, `sizes` keyed
    by axis)."""
    stages = []
    for s in reversed(plan.stages):
        if isinstance(s, Transpose):
            stages.append(s.reversed())
        elif s.kind == "r2r":
            stages.append(LocalFFT(s.axes, "r2r", True, tuple(sizes[a] for a in s.axes),
                                   tuple(kernels[a] for a in s.axes)))
        elif s.kind == "r2c":
            stages.append(LocalFFT(s.axes, "c2r", True, s.sizes))
        else:
            stages.append(LocalFFT(s.axes, "c2c", True, s.sizes))
    return Plan(plan.out_layout, plan.in_layout, tuple(stages))


def _preimages(layout: Layout, axes, out_shape):
    """Layouts of shape `out_shape` that differ from `layout` only by which transform axis
    holds each split of a transform axis (batch axes keep their split)."""
    groups = [layout.split[a] for a in axes if layout.split[a]]
    base = [tuple(s) if a not in axes else () for a, s in enumerate(layout.split)]
    seen = set()
    for targets in itertools.permutations(axes, len(groups)):
        split = list(base)
        for g, t in zip(groups, targets):
            split[t] = g
        key = tuple(split)
        if key not in seen:
            seen.add(key)
            yield Layout.create(out_shape, layout.mesh, _spec(split))


@functools.lru_cache(maxsize=512)
def plan_fft(layout: Layout, axes: tuple[int, ...], kind: str, inverse: bool,
             sizes: tuple[int, ...], kernels: tuple = ()) -> Plan:
    """Plan a transform of `layout` over `axes` (distinct, non-negative, in the caller's order).

    Args:
      layout: input layout (no halo, natural axis order).
      axes: the transform axes; for r2c/c2r the last entry is the halved axis.
      kind: "c2c", "r2c", "c2r" or "r2r".
      inverse: direction for c2c; for r2r, True asks to retrace a forward r2r plan (idct of
        a dct's output returns to the dct's input layout); r2c is always forward, c2r inverse.
      sizes: transform length per axis (numpy's ``s``; for c2r the real output length; for
        r2r the output length of each kernel).
      kernels: r2r only, one hashable kernel per axis of `axes`.

    Returns:
      A `Plan`; ``plan.out_layout`` is the layout of the result.

    Raises:
      PlanError (a NotImplementedError) when no unsplit axis exists to transpose into.
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}; expected one of {KINDS}")
    if layout.has_halo or layout.order != tuple(range(layout.ndim)):
        raise PlanError(f"plan_fft needs a layout without halo in natural order, got {layout!r}")
    axes, sizes, kernels = tuple(axes), tuple(sizes), tuple(kernels)
    if (kind == "r2r") != bool(kernels) or (kernels and len(kernels) != len(axes)):
        raise ValueError(f"kernels={kernels!r}: r2r needs one kernel per axis of {axes}, "
                         f"other kinds none")
    if kind == "c2r" or (kind in ("c2c", "r2r") and inverse):
        reverse = _plan_as_reverse(layout, axes, kind, sizes, kernels)
        if reverse is not None:
            return reverse
    return _greedy(layout, axes, kind, inverse, sizes, kernels)


def _plan_as_reverse(layout, axes, kind, sizes, kernels=()):
    """Rule 3: reverse the forward plan of the layout this one came from, if there is one."""
    out_shape = list(layout.shape)
    for a, n in zip(axes, sizes):
        out_shape[a] = n
    forward_kind = {"c2r": "r2c", "c2c": "c2c", "r2r": "r2r"}[kind]
    # An r2r forward call may have changed lengths (kernel.n): its output lengths are this
    # layout's, its input lengths this call's output lengths.
    forward_sizes = tuple(layout.shape[a] for a in axes) if kind == "r2r" else sizes
    best = None
    candidates = itertools.chain([_rotate_back(layout, axes, tuple(out_shape))],
                                 _preimages(layout, axes, tuple(out_shape)))
    for candidate in candidates:
        try:
            forward = _greedy(candidate, axes, forward_kind, False, forward_sizes, kernels)
        except PlanError:
            continue
        if forward.out_layout != layout:
            continue
        if best is None or forward.n_transposes < best.n_transposes:
            best = forward
    if best is None:
        return None
    return _reverse(best, kind, dict(zip(axes, sizes)), dict(zip(axes, kernels)))
