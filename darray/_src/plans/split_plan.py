"""The plan of a transform along axes that stay split: one typed stage per axis, pure data.

Where every array axis is split there is no unsplit axis to move a split to, so no `Plan` of
local FFTs and all-to-alls exists; darray._src.fft.split_axis then transforms each axis where it
lies. Its plan is a `SplitAxisPlan` whose stages say how each axis is done:

* `LocalAxisStage`: the axis lies whole on every device (a size-1 mesh axis): a local FFT.
* `FourStepStage`: the four-step FFT of ``size = n1 * n2``, the device count dividing both:
  three all-to-alls.
* `BluesteinStage`: any other length, as a convolution of the padded length ``m1 * m2`` that
  the four-step takes: four all-to-alls (five when a caller's jit builds its tables).

The split stages carry an `AxisCut`: where the axis's entries lie before and after. The plan
`fft_plan` shows is the very object the compiled program is built from (and keyed by), so what
is shown is what runs.
"""
from __future__ import annotations

import dataclasses

from darray._src.layout.layout import Layout
from darray._src.plans.fft_plan import selection_lines


@dataclasses.dataclass(frozen=True)
class AxisCut:
    """How one transform axis is cut over its devices, before and after the transform."""
    mesh_axes: tuple[str, ...]
    parts: int
    in_chunk: int   # input entries per device (the last device's block padded to it)
    valid: int      # input entries read; those beyond are zeros (numpy's padding to `size`)
    out_len: int    # logical output length (size // 2 + 1 for r2c)
    out_chunk: int  # output entries per device

    @property
    def axis_name(self):
        """The axis name collectives take: one mesh axis, or the tuple of several."""
        return self.mesh_axes[0] if len(self.mesh_axes) == 1 else self.mesh_axes


@dataclasses.dataclass(frozen=True)
class LocalAxisStage:
    """An axis over a size-1 mesh axis: transformed whole by each device, no exchange."""
    axis: int
    kind: str
    inverse: bool
    size: int
    parts = 1
    factors = ()
    exchanges = 0


@dataclasses.dataclass(frozen=True)
class FourStepStage:
    """The four-step FFT of ``size = n1 * n2`` along a split axis (the axis viewed as rows of
    n2 entries: n1 rows, each device holding n2 / parts columns after the first exchange)."""
    axis: int
    kind: str
    inverse: bool
    size: int
    cut: AxisCut
    n1: int
    n2: int
    exchanges = 3

    @property
    def parts(self) -> int:
        return self.cut.parts

    @property
    def factors(self) -> tuple[int, int]:
        return (self.n1, self.n2)


@dataclasses.dataclass(frozen=True)
class BluesteinStage:
    """Bluestein's chirp-z FFT of length `size` along a split axis, as a circular convolution
    of the padded length ``m1 * m2`` run by the four-step form (darray._src.fft.bluestein)."""
    axis: int
    kind: str
    inverse: bool
    size: int
    cut: AxisCut
    m1: int
    m2: int
    exchanges = 4

    @property
    def parts(self) -> int:
        return self.cut.parts

    @property
    def factors(self) -> tuple[int, int]:
        return (self.m1, self.m2)


SplitStage = LocalAxisStage | FourStepStage | BluesteinStage


@dataclasses.dataclass(frozen=True)
class SplitAxisPlan:
    """A transform along axes that stay split (no `Plan` exists: every array axis is split):
    what `fft_plan` returns there and what the split-axis program runs, with the `selection`
    of the backend whose exchanges run it, as `Plan`'s (not compared, not hashed)."""
    in_layout: Layout
    out_layout: Layout
    stages: tuple[SplitStage, ...]
    selection: object = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def n_transposes(self) -> int:
        return sum(s.exchanges for s in self.stages)

    def describe(self) -> str:
        header, on = selection_lines(self.selection)
        lines = [f"in:  {self.in_layout!r}"] + header
        for s in self.stages:
            tag = s.kind + ("-inv" if s.inverse and s.kind == "c2c" else "")
            if isinstance(s, LocalAxisStage):
                lines.append(f"  local {tag} axis={s.axis} size={s.size}")
                continue
            how = "Bluestein on" if isinstance(s, BluesteinStage) else "four-step"
            a, b = s.factors
            lines.append(f"  split {tag} axis={s.axis} size={s.size} over {s.parts} devices: "
                         f"{how} {a * b} = {a} x {b}, {s.exchanges} all-to-alls{on}")
        lines.append(f"out: {self.out_layout!r}")
        return "\n".join(lines)


__all__ = ["AxisCut", "BluesteinStage", "FourStepStage", "LocalAxisStage", "SplitAxisPlan",
           "SplitStage"]
