"""The case grids of test_fft_plan_rules.py: every (shape, mesh, split, axes, kind, direction)
below, planned by the greedy rule (darray/_src/plans/fft_plan.py, rules 1-2), summarised in one
line per case. GOLDEN holds a digest of the summaries of each (mesh, shape) group, taken from
the closure-based planner this grid was written against; `python3
tests/unit/greedy_plan_cases.py` prints the groups' digests again (update GOLDEN only when a
rule changes on purpose) and `... --show MESH SHAPE` prints one group's plans to compare.)

The main grid transforms each axis at its own length, axes in increasing order. The "pad"
grid (groups named "pad ...") adds what it leaves out: numpy's ``s`` padding and truncating
(the lengths change the r2c halved axis and the padding the destination rule weighs), axes in
the caller's order (reversed, rotated), split groups in either mesh-axis order, and r2c/c2r
stages that carry a padded transform's kernel."""
from __future__ import annotations

import hashlib
import itertools
import sys

from helpers import abstract_mesh

from darray._src.layout.layout import Layout
from darray._src.plans import fft_plan

MESHES = [((8,), ("x",)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y")), ((1, 8), ("x", "y")),
          ((2, 2, 2), ("x", "y", "z"))]
SHAPES = [(12, 10), (7, 9), (8, 12, 10), (13, 10, 7), (5, 6, 7), (6, 8, 4, 10)]
PAD_MESHES = [((8,), ("x",)), ((3, 2), ("x", "y")), ((2, 2, 2), ("x", "y", "z"))]
PAD_SHAPES = [(7, 9), (13, 10, 7), (3, 5, 2, 7)]


def _specs(ndim, names, both_orders=False):
    """Each mesh axis on at most one array axis (alone, or grouped in mesh order; with
    `both_orders` also in reversed mesh order)."""
    out = set()
    for assign in itertools.product(range(-1, ndim), repeat=len(names)):
        spec = [[] for _ in range(ndim)]
        for name, a in zip(names, assign):
            if a >= 0:
                spec[a].append(name)
        out.add(tuple(None if not s else (s[0] if len(s) == 1 else tuple(s)) for s in spec))
        if both_orders:
            out.add(tuple(None if not s else (s[0] if len(s) == 1 else tuple(s[::-1]))
                          for s in spec))
    return sorted(out, key=repr)


def _axes_choices(ndim):
    full = tuple(range(ndim))
    return sorted({full, full[-2:], full[-1:], (0, ndim - 1), full[1:]}, key=repr)


def _pad_axes_choices(ndim):
    full = tuple(range(ndim))
    return sorted({full, full[::-1], full[1:] + full[:1], full[-2:][::-1], (ndim - 1, 0)},
                  key=repr)


# (kind, inverse, with kernels): r2c/c2r with a kernel are a padded transform's real stages
_PAD_KINDS = (("c2c", False, False), ("c2c", True, False), ("r2c", False, False),
              ("c2r", True, False), ("r2c", False, True), ("c2r", True, True),
              ("r2r", True, True))


def _summary(plan) -> str:
    if plan is None:
        return "none"
    parts = []
    for s in plan.stages:
        if isinstance(s, fft_plan.LocalFFT):
            parts.append(f"L{s.kind}{'-i' if s.inverse else ''}{list(s.axes)}{list(s.sizes)}"
                         f"{'k' if s.kernels else ''}")
        elif isinstance(s, fft_plan.Merge):
            parts.append("M" + ",".join(f"{''.join(m.mesh_axes)}:{m.src}>{m.dst}"
                                        for m in s.moves))
        else:
            parts.append(f"T{''.join(s.mesh_axes)}:{s.src}>{s.dst}/{s.parts}")
    return " ".join(parts) + f" => {plan.out_layout.describe_split()} {plan.out_layout.shape}"


def cases(only=None):
    """(group, key, summary) for every case of both grids (of group `only` if given)."""
    yield from _main_cases(only)
    yield from _pad_cases(only)


def _main_cases(only):
    for sizes, names in MESHES:
        mesh = abstract_mesh(sizes, names)
        for shape in SHAPES:
            group = f"{sizes} {shape}"
            if only is not None and group != only:
                continue
            for spec in _specs(len(shape), names):
                layout = Layout.create(shape, mesh, spec)
                for axes in _axes_choices(len(shape)):
                    for kind, inverse in (("c2c", False), ("c2c", True), ("r2c", False),
                                          ("c2r", True), ("r2r", False)):
                        lengths = tuple(shape[a] for a in axes)
                        kernels = tuple(f"k{a}" for a in axes) if kind == "r2r" else ()
                        plan = fft_plan.greedy_plan(layout, axes, kind, inverse, lengths, kernels)
                        key = f"{sizes}{names} {shape} {spec} {axes} {kind}{'-i' * inverse}"
                        yield group, key, _summary(plan)


def _pad_cases(only):
    for sizes, names in PAD_MESHES:
        mesh = abstract_mesh(sizes, names)
        for shape in PAD_SHAPES:
            group = f"pad {sizes} {shape}"
            if only is not None and group != only:
                continue
            for spec in _specs(len(shape), names, both_orders=True):
                layout = Layout.create(shape, mesh, spec)
                for axes in _pad_axes_choices(len(shape)):
                    for grow in (True, False):
                        lengths = tuple(2 * shape[a] + 1 if grow else max(1, shape[a] - 1)
                                        for a in axes)
                        for kind, inverse, with_kernels in _PAD_KINDS:
                            kernels = tuple(f"k{a}" for a in axes) if with_kernels else ()
                            plan = fft_plan.greedy_plan(layout, axes, kind, inverse, lengths,
                                                        kernels)
                            key = (f"{sizes}{names} {shape} {spec} {axes} {lengths} "
                                   f"{kind}{'-i' * inverse}{'-k' * with_kernels}")
                            yield group, key, _summary(plan)


def digests(only=None) -> dict[str, tuple[int, str]]:
    """group -> (number of cases, sha256 prefix of its "key | summary" lines)."""
    lines: dict[str, list[str]] = {}
    for group, key, summary in cases(only):
        lines.setdefault(group, []).append(f"{key} | {summary}")
    return {g: (len(v), hashlib.sha256("\n".join(v).encode()).hexdigest()[:16])
            for g, v in lines.items()}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--show"]:
        for _, key, summary in cases(" ".join(sys.argv[2:])):
            print(f"{key} | {summary}")
    else:
        for group, (count, digest) in digests().items():
            print(f"    {group!r}: ({count}, {digest!r}),")
