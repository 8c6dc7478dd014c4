"""The distributed FFT plan: an ordered list of stages, pure data, built without devices.

A plan turns an input Layout into an output Layout by two kinds of stage:

* `LocalFFT`: a 1D or nD FFT over array axes that are *not* split, done by each device on its
  own block (``kind`` c2c, r2c or c2r; ``sizes`` is the transform length along each axis, so a
  c2c stage also pads or truncates like numpy's ``s``). Kind r2r carries one real-to-real
  kernel per axis (``kernels``, see darray._src.kernels.r2r_local) and ``sizes`` is its output
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
3. Inverse transforms retrace the forward path: the planner (planner.py) looks for the layout
   whose forward plan ends in the given k-space layout and reverses that plan, so
   ``ifftn(fftn(x))`` ends in ``x``'s layout with the same number of all-to-alls.

This module holds the plan data and the greedy rule above; planner.py (the search, one floor up)
adds merged and folded plans, the cost model that picks among them, the retrace and `plan_fft`.
"""
from __future__ import annotations

import dataclasses

from darray._src.base.errors import PlanError as PlanError
from darray._src.layout.layout import Layout

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

    ``src_len`` / ``dst_len`` are the true logical lengths of the two axes at this point.
    A fold (planner.py) moves a group onto an axis that is already split (``dst_keep`` > 1
    parts before the move; the group becomes the minor part of its split) or off an axis
    that stays split by ``src_keep`` parts (its major part); then src is local only within
    the remaining split. The planner only folds where the padded chunks line up."""
    mesh_axes: tuple[str, ...]
    src: int
    dst: int
    src_len: int
    dst_len: int
    parts: int
    src_keep: int = 1
    dst_keep: int = 1

    def reversed(self) -> Transpose:
        return Transpose(self.mesh_axes, self.dst, self.src, self.dst_len, self.src_len,
                         self.parts, self.dst_keep, self.src_keep)

    @property
    def src_local_len(self) -> int:
        """Length of `src` in each block after the move."""
        return -(-self.src_len // self.src_keep)


@dataclasses.dataclass(frozen=True)
class Merge:
    """Several transposes done by ONE all-to-all over the union of their mesh axes.

    Either every move shares its ``dst`` (splits of several axes merge onto one axis, in the
    order of `moves`: a (x, y, -) pencil becomes a (-, -, (x, y)) slab over all devices), or
    every move shares its ``src`` (the reverse: one merged split is dealt out to several axes).
    One exchange over P devices instead of one per group: same bytes, fewer rounds."""
    moves: tuple[Transpose, ...]

    @property
    def mesh_axes(self) -> tuple[str, ...]:
        return tuple(name for m in self.moves for name in m.mesh_axes)

    @property
    def parts(self) -> int:
        p = 1
        for m in self.moves:
            p *= m.parts
        return p

    @property
    def gathers(self) -> bool:
        """True when the moves share their destination (merge), False when their source."""
        return len({m.dst for m in self.moves}) == 1

    def reversed(self) -> Merge:
        return Merge(tuple(m.reversed() for m in self.moves))


Stage = LocalFFT | Transpose | Merge


def apply_stage(split: list, stage) -> None:
    """Update `split` (one mesh-axis tuple per array axis) in place for a communication stage;
    raises ValueError if the stage does not fit the split (the plan invariants)."""
    moves = [stage] if isinstance(stage, Transpose) else list(stage.moves)
    if isinstance(stage, Merge) and not stage.gathers:
        moves = moves[::-1]  # dealing out a merged split: its minor part leaves first
    for m in moves:
        g = tuple(m.mesh_axes)
        if tuple(split[m.src][len(split[m.src]) - len(g):]) != g:
            raise ValueError(f"{m} does not match split {split}")
        split[m.src] = tuple(split[m.src][:len(split[m.src]) - len(g)])
        split[m.dst] = tuple(split[m.dst]) + g


def selection_lines(selection) -> tuple[list[str], str]:
    """(header lines, suffix of each exchange line) for a plan's `selection`: the backends
    Selection (backends/registry.py; duck-typed, this floor is below it) of the backend that
    runs the plan, or None where none was chosen (a plan straight from the planner)."""
    if selection is None:
        return [], ""
    return [f"  backend: {selection!r}"], f" on {selection.backend!r}"


@dataclasses.dataclass(frozen=True)
class Plan:
    """A transform as stages. `selection` is not part of the plan (it neither compares nor
    hashes): `darray._src.fft.api.fft_plan` sets it to the Selection of the backend that would
    run the plan under the options in force, fallback and reason included."""
    in_layout: Layout
    out_layout: Layout
    stages: tuple[Stage, ...]
    selection: object = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def n_transposes(self) -> int:
        """Number of all-to-all exchanges (a Merge is one)."""
        return sum(isinstance(s, (Transpose, Merge)) for s in self.stages)

    def describe(self) -> str:
        header, on = selection_lines(self.selection)
        lines = [f"in:  {self.in_layout!r}"] + header
        for s in self.stages:
            if isinstance(s, LocalFFT):
                tag = s.kind + ("-inv" if s.inverse and s.kind in ("c2c", "r2r") else "")
                extra = " with per-axis kernels" if s.kernels and s.kind != "r2r" else ""
                lines.append(f"  local {tag} axes={s.axes} sizes={s.sizes}{extra}")
            elif isinstance(s, Merge):
                moved = ", ".join(f"{m.mesh_axes}: {m.src} -> {m.dst}" for m in s.moves)
                lines.append(f"  all-to-all {s.mesh_axes}: splits move {moved}{on}")
            else:
                lines.append(f"  all-to-all {s.mesh_axes}: split moves axis {s.src} -> "
                             f"{s.dst}{on}")
        lines.append(f"out: {self.out_layout!r}")
        return "\n".join(lines)


def _out_lengths(shape, axes, kind, sizes):
    """Logical output length of every transform axis."""
    out = {}
    for a, n in zip(axes, sizes):
        out[a] = n // 2 + 1 if (kind == "r2c" and a == axes[-1]) else n
    return out


def greedy_plan(layout: Layout, axes, kind, inverse, sizes, kernels=()) -> Plan | None:
    """The forward rule (module docstring, rules 1-2) applied to any kind; None where it gets
    stuck: every array axis is split, so no split can move out of a pending axis's way."""
    return GreedyPlanner(layout, axes, kind, inverse, sizes, kernels).plan()


class GreedyPlanner:
    """One greedy plan in the making. The state is the split of every array axis, the axis
    lengths, the transform axes still pending and those done, and the stages so far; each
    rule of the module docstring is one method, tested alone in
    tests/unit/test_fft_plan_rules.py."""

    def __init__(self, layout: Layout, axes, kind, inverse, sizes, kernels=()):
        self.layout, self.axes, self.kind, self.inverse = layout, tuple(axes), kind, inverse
        self.sizes, self.kernels = tuple(sizes), tuple(kernels)
        self.kernel_of = dict(zip(self.axes, self.kernels))
        self.size_of = dict(zip(self.axes, self.sizes))
        self.last = self.axes[-1]
        self.shape = list(layout.shape)
        self.split = [tuple(s) for s in layout.split]
        self.pending = list(self.axes)
        self.done: list[int] = []
        self.origin = {s: a for a, s in enumerate(self.split) if s}  # group -> its first axis
        self.stages: list[Stage] = []
        self.rotation = self.rotation_rule()

    # -- the rules ---------------------------------------------------------------------------
    def parts(self, group) -> int:
        p = 1
        for name in group:
            p *= self.layout.mesh_shape[name]
        return p

    def allowed(self, axis: int) -> bool:
        """Rule 2: r2c transforms the last axis before any other; c2r transforms it last."""
        if self.kind == "r2c" and self.last in self.pending:
            return axis == self.last
        if self.kind == "c2r" and axis == self.last:
            return self.pending == [self.last]
        return True

    def rotation_rule(self) -> dict[int, int] | None:
        """Rule 1 as a bijection: when some transform axis starts unsplit, the splits of the
        transform axes rotate by one place (axes[i] -> axes[i+1], cyclically). Each split
        axis moves exactly once (the fewest all-to-alls possible) and distinct layouts never
        share a k-space layout, so the inverse can always retrace its way back (rule 3). Not
        for c2r (it retraces), nor for r2c whose last axis starts split."""
        if self.kind not in ("c2c", "r2c", "r2r"):
            return None
        if self.kind == "r2c" and self.split[self.last]:
            return None
        return rotation_targets(self.layout, self.axes)

    def nearest(self, src: int, candidates) -> int | None:
        """Least padding first (a halved r2c axis is rarely divisible), then the nearest axis;
        ties go to the higher axis (slab k-space of an axis-0 slab lands on axis 1)."""
        p = self.parts(self.split[src])
        return min(candidates, key=lambda a: (-self.shape[a] % p, abs(a - src), -a),
                   default=None)

    def destination(self, src: int) -> int | None:
        """Rule 1 when nothing rotates: the nearest unsplit axis, transformed ones first,
        then batch axes, then pending ones; None when every other axis is split."""
        unsplit = [a for a in range(self.layout.ndim) if not self.split[a] and a != src]
        for pool in ([a for a in unsplit if a in self.done],
                     [a for a in unsplit if a not in self.axes],
                     [a for a in unsplit if a in self.pending]):
            dst = self.nearest(src, pool)
            if dst is not None:
                return dst
        return None

    # -- the stages --------------------------------------------------------------------------
    def move(self, src: int, dst: int) -> None:
        group = self.split[src]
        self.stages.append(Transpose(group, src, dst, self.shape[src], self.shape[dst],
                                     self.parts(group)))
        self.split[dst], self.split[src] = group, ()

    def transform_local(self, ready: list[int]) -> None:
        """One local stage over the ready axes (rule 2's real axis alone)."""
        kind, last = self.kind, self.last
        if kind in ("r2c", "c2r") and last in ready:
            self.stages.append(LocalFFT((last,), kind, kind == "c2r", (self.size_of[last],),
                                        real_kernel(self.kernel_of, last)))
            ready = [last]
        else:
            ready = [a for a in self.axes if a in ready]
            self.stages.append(LocalFFT(
                tuple(ready), "r2r" if kind == "r2r" else "c2c", self.inverse,
                tuple(self.size_of[a] for a in ready),
                tuple(self.kernel_of[a] for a in ready) if self.kernels else ()))
        lengths = _out_lengths(self.shape, self.axes, kind, self.sizes)
        for a in ready:
            self.pending.remove(a)
            self.done.append(a)
            self.shape[a] = lengths[a]

    def make_room(self) -> bool:
        """Every pending axis that may be transformed now is split: move one split away (by
        the rotation if it applies, else to `destination`). False when stuck."""
        srcs = [a for a in self.pending if self.split[a] and self.allowed(a)]
        if self.rotation:
            movable = [a for a in srcs if self.rotation[a] in self.done
                       and not self.split[self.rotation[a]]]
            if movable:
                src = max(movable)
                self.move(src, self.rotation[src])
                return True
        src = max(srcs)
        dst = self.destination(src)
        if dst is None:
            return False
        self.move(src, dst)
        return True

    def hand_back(self) -> None:
        """Rule 1's last clause: only transform axes may change their split, so a batch axis
        that borrowed a split returns it home (or, home taken, to any free transform axis)."""
        for a in range(self.layout.ndim):
            if self.split[a] and a not in self.axes and self.origin.get(self.split[a]) != a:
                home = self.origin.get(self.split[a])
                if home is None or self.split[home]:
                    home = self.nearest(a, [b for b in self.axes if not self.split[b]])
                if home is not None:
                    self.move(a, home)

    def plan(self) -> Plan | None:
        while self.pending:
            ready = [a for a in self.pending if not self.split[a] and self.allowed(a)]
            if ready:
                self.transform_local(ready)
            elif not self.make_room():
                return None
        self.hand_back()
        out = Layout.create(tuple(self.shape), self.layout.mesh, spec_of(self.split))
        return Plan(self.layout, out, tuple(self.stages))


def real_kernel(kernel_of, axis) -> tuple:
    """The kernel an r2c/c2r stage on `axis` runs instead of a plain real FFT (a padded
    transform's, darray._src.fft.padding), as a stage's `kernels`; () for none."""
    kernel = kernel_of.get(axis) if kernel_of else None
    return () if kernel is None else (kernel,)


def rotation_targets(layout: Layout, axes) -> dict[int, int] | None:
    """Where each split transform axis sends its split under the rotation rule, or None when
    every transform axis is split (then there is no free slot to rotate through)."""
    order = sorted(axes)
    if all(layout.split[a] for a in order):
        return None
    return {a: order[(i + 1) % len(order)] for i, a in enumerate(order) if layout.split[a]}


def spec_of(split):
    return tuple(None if not s else (s[0] if len(s) == 1 else s) for s in split)


def reverse_plan(plan: Plan, kind: str, sizes=None, kernels=None) -> Plan:
    """The inverse of a forward plan: stages in reverse order, each undone. For r2r the local
    stages run the inverse call's own kernels and output lengths (`kernels`, `sizes` keyed
    by axis)."""
    stages: list[Stage] = []
    for s in reversed(plan.stages):
        if isinstance(s, (Transpose, Merge)):
            stages.append(s.reversed())
        elif s.kind == "r2r":
            stages.append(LocalFFT(s.axes, "r2r", True, tuple(sizes[a] for a in s.axes),
                                   tuple(kernels[a] for a in s.axes)))
        elif s.kernels:  # a mixed transform's complex stage: the inverse call's kernels
            stages.append(LocalFFT(s.axes, "c2c", True, s.sizes,
                                   tuple(kernels[a] for a in s.axes)))
        elif s.kind == "r2c":
            stages.append(LocalFFT(s.axes, "c2r", True, s.sizes,
                                   real_kernel(kernels or {}, s.axes[0])))
        else:
            stages.append(LocalFFT(s.axes, "c2c", True, s.sizes))
    return Plan(plan.out_layout, plan.in_layout, tuple(stages))
