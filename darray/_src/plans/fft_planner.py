"""Choosing the cheapest FFT plan: candidate plans, a cost model, and exact retracing.

plan.py builds one plan by a fixed rule (the pencil rotation). This module builds every plan
shape that moves data only by all-to-alls and picks the cheapest by a cost model:

* **greedy** (plan.py): one all-to-all per split transform axis, each over its own mesh group.
* **merged**: when some transform axes are unsplit, transform those first, then move the splits
  of *all* split transform axes onto one of them in a single all-to-all over the union of
  their mesh axes (a (x, y, -) pencil becomes a (-, -, (x, y)) slab over every device), then
  transform the rest. One exchange instead of one per group; needs the target axis at least
  as long as the device count (else the pencil stays).
* **fold**: when every array axis is split (a 2-D array on a 2-D mesh) there is no free axis.
  The split of one axis is folded onto another as the minor part of its split (a (x, y) layout
  becomes ((x, y), -)), the transform runs as above, and the fold is undone: the output keeps
  the input's layout. Only where the padded chunks line up (`_fold_fits`); otherwise the caller
  runs the four-step / Bluestein FFT in place (split_axis.py).

Cost: bytes through the network, i.e. for each exchange the global array size at that point
(real arrays count half), then the number of exchanges.

Inverse transforms retrace: for a layout K, every layout P that differs only by where the
transform axes' mesh axes sit (splits may be dealt out of a merged group) is planned forward;
among the (P, plan) pairs that end in K the cheapest wins, ties to P with splits on the
lowest axes (a leading-axis slab, then a pencil over the leading axes). A forward plan other
than the greedy one is only chosen when that retrace finds it, so ``ifftn(fftn(x))`` always
comes back to ``x``'s layout.

Mesh axes of size 1 (a one-device mesh, or a (1, n) mesh) split nothing: under "auto" they are
set aside, the plan is made for the layout without them, and they are put back where they
were (`_without_size_one`). A 3-D FFT on one device is then ONE local FFT, as jnp.fft.fftn,
instead of two local stages around an exchange over size-1 axes (measured 1.3-1.4x jnp's time
on an H100). "pencil" keeps them as real splits: the cuDecomp backend is exercised on one GPU
through exactly those transposes.
"""
from __future__ import annotations

import functools
import itertools

from darray._src.layout.layout import Layout
from darray._src.plans.fft_plan import (
    LocalFFT,
    Merge,
    Plan,
    PlanError,
    Transpose,
    apply_stage,
    greedy_plan,
    real_kernel,
    reverse_plan,
    spec_of,
)

STRATEGIES = ("auto", "pencil")
_FORWARD_KIND = {"c2r": "r2c", "c2c": "c2c", "r2r": "r2r"}


def _parts(layout: Layout, group) -> int:
    p = 1
    for name in group:
        p *= layout.mesh_shape[name]
    return p


def _out_len(kind, axes, a, size):
    return size // 2 + 1 if kind == "r2c" and a == axes[-1] else size


# -- the cost model ---------------------------------------------------------------------------
def cost(plan: Plan) -> tuple:
    """(elements sent through all-to-alls, number of exchanges); real data counts half."""
    shape = list(plan.in_layout.shape)
    real = _starts_real(plan)
    volume = 0
    for s in plan.stages:
        if isinstance(s, LocalFFT):
            for a, n in zip(s.axes, s.sizes):
                shape[a] = n // 2 + 1 if s.kind == "r2c" else n
            if s.kind == "r2c":
                real = False
            elif s.kind == "c2r":
                real = True
        else:
            elements = 1
            for n in shape:
                elements *= n
            volume += elements // 2 if real else elements
    return (volume, plan.n_transposes)


def _starts_real(plan: Plan) -> bool:
    return any(isinstance(s, LocalFFT) and s.kind in ("r2c", "r2r") for s in plan.stages)


# -- candidate plans --------------------------------------------------------------------------
def _local(axes_in_order, kind, inverse, size_of, kernel_of):
    k = "r2r" if kind == "r2r" else "c2c"
    return LocalFFT(tuple(axes_in_order), k, inverse,
                    tuple(size_of[a] for a in axes_in_order),
                    tuple(kernel_of[a] for a in axes_in_order) if kernel_of else ())


def _merged(layout: Layout, axes, kind, inverse, sizes, kernels) -> list[Plan]:
    if kind not in ("c2c", "r2c", "r2r"):
        return []
    split = [tuple(s) for s in layout.split]
    free = [a for a in axes if not split[a]]
    busy = sorted(a for a in axes if split[a])
    if len(busy) < 2 or not free or (kind == "r2c" and axes[-1] not in free):
        return []
    size_of, kernel_of = dict(zip(axes, sizes)), dict(zip(axes, kernels))
    group = tuple(name for a in busy for name in split[a])
    total = _parts(layout, group)
    first = []
    if kind == "r2c":
        last = axes[-1]
        first.append(LocalFFT((last,), "r2c", False, (size_of[last],),
                              real_kernel(kernel_of, last)))
        rest = [a for a in axes if a in free and a != last]
        if rest:
            first.append(_local(rest, kind, inverse, size_of, kernel_of))
    else:
        first.append(_local([a for a in axes if a in free], kind, inverse, size_of, kernel_of))
    plans = []
    for t in free:
        t_len = _out_len(kind, axes, t, size_of[t])
        if t_len < total:
            continue  # a slab cannot exist on this axis: the pencil stays
        shape = list(layout.shape)
        for a in free:
            shape[a] = _out_len(kind, axes, a, size_of[a])
        moves = tuple(Transpose(split[s], s, t, shape[s], t_len, _parts(layout, split[s]))
                      for s in busy)
        out_split = list(split)
        for s in busy:
            out_split[s] = ()
            shape[s] = size_of[s]
        out_split[t] = group
        last_stage = _local([a for a in axes if a in busy], kind, inverse, size_of, kernel_of)
        out = Layout.create(tuple(shape), layout.mesh, spec_of(out_split))
        plans.append(Plan(layout, out, tuple(first) + (Merge(moves), last_stage)))
    return plans


def _fold_fits(n: int, keep: int, parts: int) -> bool:
    """Does a (keep)-split axis of length n hold exactly `parts` chunks of the (keep*parts)
    split in each block? Then a fold moves whole chunks and padding never shifts."""
    return -(-n // keep) == parts * -(-n // (keep * parts))


def _folded(layout: Layout, axes, kind, inverse, sizes, kernels) -> list[Plan]:
    split = [tuple(s) for s in layout.split]
    ndim = layout.ndim
    if ndim < 2 or not all(split):
        return []
    size_of = dict(zip(axes, sizes))
    plans = []
    for a in sorted(axes, key=lambda b: -layout.shape[b]) + [b for b in range(ndim)
                                                              if b not in axes]:
        for h in range(ndim):
            if h == a:
                continue
            g, keep = split[a], layout.parts(h)
            p = _parts(layout, g)
            lengths = {layout.shape[h]}
            if h in axes:
                lengths.add(_out_len(kind, axes, h, size_of[h]))
                if kind == "c2r" and h == axes[-1]:
                    lengths.add(size_of[h])
            if not all(_fold_fits(n, keep, p) and n >= keep * p for n in lengths):
                continue
            fold = Transpose(g, a, h, layout.shape[a], layout.shape[h], p, 1, keep)
            mid_split = list(split)
            apply_stage(mid_split, fold)
            mid = Layout.create(layout.shape, layout.mesh, spec_of(mid_split))
            inner = greedy_plan(mid, axes, kind, inverse, sizes, kernels)
            if inner is None:
                continue
            back = _hand_back(inner.out_layout, mid_split)
            if back is None:
                continue
            shape = inner.out_layout.shape
            unfold = Transpose(g, h, a, shape[h], shape[a], p, keep, 1)
            out = Layout.create(shape, layout.mesh, layout.spec)
            plans.append(Plan(layout, out, (fold,) + inner.stages + back + (unfold,)))
    return plans


def _hand_back(layout: Layout, target_split) -> tuple | None:
    """Whole-group transposes from `layout` back to `target_split`, or None if stuck."""
    split = [tuple(s) for s in layout.split]
    stages: list[Transpose] = []
    for _ in range(layout.ndim + 1):
        if split == list(target_split):
            return tuple(stages)
        for b in range(layout.ndim):
            want = tuple(target_split[b])
            if want and not split[b]:
                src = next((c for c in range(layout.ndim) if split[c] == want and
                            tuple(target_split[c]) != want), None)
                if src is not None:
                    stages.append(Transpose(want, src, b, layout.shape[src], layout.shape[b],
                                            _parts(layout, want)))
                    split[b], split[src] = want, ()
                    break
        else:
            return None
    return None


def candidates(layout, axes, kind, inverse, sizes, kernels, strategy) -> list[Plan]:
    """Every plan of the shapes above for this request, cheapest first (stable on ties)."""
    plans = []
    greedy = greedy_plan(layout, axes, kind, inverse, sizes, kernels)
    if greedy is not None:
        plans.append(greedy)
    if strategy == "auto":
        plans += _merged(layout, axes, kind, inverse, sizes, kernels)
        plans += _folded(layout, axes, kind, inverse, sizes, kernels)
    return sorted(plans, key=cost)


# -- retracing (inverse transforms) -----------------------------------------------------------
def _preimages(layout: Layout, axes, out_shape):
    """Layouts of shape `out_shape` whose transform axes hold the same mesh axes as `layout`'s
    (in the same major-to-minor order per group, groups possibly dealt out to several axes);
    batch axes keep their split."""
    groups = [tuple(layout.split[a]) for a in axes if layout.split[a]]
    base = [tuple(s) if a not in axes else () for a, s in enumerate(layout.split)]
    seen = set()
    cuts_per_group = [[c for r in range(len(g)) for c in itertools.combinations(
        range(1, len(g)), r)] for g in groups]
    for cuts in itertools.product(*cuts_per_group):
        pieces = []
        for g, c in zip(groups, cuts):
            edges = (0,) + tuple(c) + (len(g),)
            pieces += [g[edges[i]:edges[i + 1]] for i in range(len(edges) - 1)]
        if len(pieces) > len(axes):
            continue
        for targets in itertools.permutations(axes, len(pieces)):
            split = list(base)
            for piece, t in zip(pieces, targets):
                split[t] = piece
            key = tuple(split)
            if key not in seen:
                seen.add(key)
                yield Layout.create(out_shape, layout.mesh, spec_of(split))


def _preference(layout: Layout) -> tuple:
    """Ties between preimages go to splits on the lowest axes (slab on axis 0 first)."""
    return tuple(a for a, s in enumerate(layout.split) if s)


def _retrace(layout, axes, kind, sizes, kernels, strategy):
    """(preimage, forward plan) ending in `layout`, cheapest then preferred; or None."""
    out_shape = list(layout.shape)
    for a, n in zip(axes, sizes):
        out_shape[a] = n
    forward_kind = _FORWARD_KIND[kind]
    # An r2r forward call may have changed lengths (kernel.n): its output lengths are this
    # layout's, its input lengths this call's output lengths. c2c/c2r keep numpy's sizes.
    forward_sizes = tuple(layout.shape[a] for a in axes) if kind == "r2r" else sizes
    if kernels and kind in ("c2c", "c2r"):
        # a mixed or padded transform: its kernels may change lengths (padding), so the
        # forward call's lengths are this layout's; the r2c axis's is its real length
        forward_sizes = tuple(layout.shape[a] for a in axes)
        if kind == "c2r":
            last = kernels[-1]
            forward_sizes = forward_sizes[:-1] + (getattr(last, "coarse", sizes[-1]),)
    padded = any(getattr(k, "coarse", None) != getattr(k, "fine", None) for k in kernels)
    best = None
    for candidate in _preimages(layout, axes, tuple(out_shape)):
        for forward in candidates(candidate, axes, forward_kind, False, forward_sizes,
                                  kernels, strategy):
            if forward.out_layout != layout:
                continue
            # A padded transform changes lengths, so preimages' byte costs differ by where the
            # truncation falls, not by how the user laid out the data: rank those by the
            # number of exchanges, as the unpadded transform's equal costs would.
            rank = ((forward.n_transposes,) if padded else cost(forward),
                    _preference(candidate))
            if best is None or rank < best[0]:
                best = (rank, forward)
            break  # candidates are sorted by cost: the first match is this preimage's best
    return None if best is None else best[1]


def _verified(plan: Plan, axes, kind, sizes, kernels, strategy) -> bool:
    """Would the inverse of `plan`'s output retrace to `plan`'s input layout?"""
    inv_kind = {"c2c": "c2c", "r2c": "c2r", "r2r": "r2r"}.get(kind)
    if inv_kind is None:
        return True
    out = plan.out_layout
    inv_sizes = (tuple(plan.in_layout.shape[a] for a in axes)
                 if kind in ("r2c", "r2r") or kernels else tuple(out.shape[a] for a in axes))
    found = _retrace(out, axes, inv_kind, inv_sizes, kernels, strategy)
    return found is not None and found.in_layout.split == plan.in_layout.split


# -- mesh axes of size 1 ----------------------------------------------------------------------
def _size_one_names(layout: Layout) -> frozenset:
    return frozenset(name for group in layout.split for name in group
                     if layout.mesh_shape[name] == 1)


def _sets_aside_size_one(layout: Layout) -> bool:
    """Can the size-1 mesh axes of `layout` be set aside and put back exactly?

    They are put back major-most on the array axis that held them (a (1, c) split stays (1, c),
    the k-space axis receiving c gets (1, c) too). That keeps the layout exactly for layouts
    whose size-1 names already come first on every axis, and ``ifftn(fftn(x))`` then ends in
    ``x``'s layout because the inverse sets aside and puts back by the same rule. Other layouts
    ((c, 1) splits) keep the plain plan: size-1 names there move with their group, so the
    inverse (planned plainly too) still retraces exactly."""
    ones = _size_one_names(layout)
    if not ones:
        return False
    for group in layout.split:
        flags = [name in ones for name in group]
        if flags != sorted(flags, reverse=True):  # a size-1 name after a real one
            return False
    return True


def _without_size_one(layout: Layout, axes, kind, inverse, sizes, kernels) -> Plan | None:
    """The plan for `layout` with its size-1 mesh axes set aside, then put back."""
    ones = _size_one_names(layout)
    kept = [tuple(n for n in group if n not in ones) for group in layout.split]
    held = [tuple(n for n in group if n in ones) for group in layout.split]
    bare = Layout.create(layout.shape, layout.mesh, spec_of(kept))
    inner = find_plan(bare, axes, kind, inverse, sizes, kernels, "auto")
    if inner is None:
        return None
    # Stages name only real mesh axes; with the size-1 names major-most, every stage still
    # takes its group from the end of the source axis's split (plan.apply_stage's rule).
    out_split = [h + tuple(s) for h, s in zip(held, inner.out_layout.split)]
    out = Layout.create(inner.out_layout.shape, layout.mesh, spec_of(out_split))
    return Plan(layout, out, inner.stages)


@functools.lru_cache(maxsize=512)
def find_plan(layout: Layout, axes, kind, inverse, sizes, kernels=(),
              strategy="auto") -> Plan | None:
    """The plan for a transform (arguments as `plan_fft`), or None where none exists: a layout
    with halo, or every array axis split with no fold that fits (a split 1-D array). The FFT
    entry points then run the four-step FFT (split_axis.py); the ones that must return a plan
    raise `PlanError` (`plan_fft`). Invalid arguments (an unknown kind or strategy, missing
    kernels) raise ValueError."""
    if kind not in ("c2c", "r2c", "c2r", "r2r"):
        raise ValueError(f"kind={kind!r}; expected one of ('c2c', 'r2c', 'c2r', 'r2r')")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is not accepted; use one of {STRATEGIES}")
    if layout.has_halo:
        return None
    if (kind == "r2r" and not kernels) or (kernels and len(kernels) != len(axes)):
        raise ValueError(f"kernels={kernels!r}: r2r needs one kernel per axis of {axes}; "
                         f"other kinds none, or one per axis (a mixed transform: the c2c "
                         f"stages run them, the r2c/c2r axis's entry is unused)")
    if strategy == "auto" and _sets_aside_size_one(layout):
        return _without_size_one(layout, axes, kind, inverse, sizes, kernels)
    if kind == "c2r" or (kind in ("c2c", "r2r") and inverse):
        forward = _retrace(layout, axes, kind, sizes, kernels, strategy)
        if forward is not None:
            return reverse_plan(forward, kind, dict(zip(axes, sizes)), dict(zip(axes, kernels)))
    plans = candidates(layout, axes, kind, inverse, sizes, kernels, strategy)
    if not plans:
        return None
    if inverse and kind != "r2r" or kind == "c2r":
        return plans[0]
    for p in plans:
        if _verified(p, axes, kind, sizes, kernels, strategy):
            return p
    return plans[0]


__all__ = ["STRATEGIES", "candidates", "cost", "find_plan", "no_plan_error", "plan_fft"]


def plan_fft(layout: Layout, axes: tuple[int, ...], kind: str, inverse: bool,
             sizes: tuple[int, ...], kernels: tuple = (), strategy: str = "auto") -> Plan:
    """Plan a transform of `layout` over `axes` (distinct, non-negative, in the caller's order).

    Args:
      layout: input layout (no halo).
      axes: the transform axes; for r2c/c2r the last entry is the halved axis.
      kind: "c2c", "r2c", "c2r" or "r2r".
      inverse: direction for c2c; for r2r, True asks to retrace a forward r2r plan (idct of
        a dct's output returns to the dct's input layout); r2c is always forward, c2r inverse.
      sizes: transform length per axis (numpy's ``s``; for c2r the real output length; for
        r2r the output length of each kernel).
      kernels: one hashable kernel per axis of `axes`: required for r2r; for c2c, r2c and
        c2r optional (a mixed transform, darray._src.fft.mixed: the complex stages run the
        kernels instead of an FFT; the r2c/c2r axis's own entry is not used).
      strategy: "auto" (the cheapest plan by the cost model in planner.py: merged slabs,
        folds) or "pencil" (only the one-group-at-a-time rotation of rule 1).

    Returns:
      A `Plan`; ``plan.out_layout`` is the layout of the result.

    Raises:
      PlanError (a NotImplementedError) when no plan of local FFTs and all-to-alls exists
      (e.g. a split 1D array). `find_plan` is the same search returning None instead: the
      FFT entry points use it and run the four-step FFT (split_axis.py) then.
    """
    axes, sizes, kernels = tuple(axes), tuple(sizes), tuple(kernels)
    found = find_plan(layout, axes, kind, bool(inverse), sizes, kernels, strategy)
    if found is None:
        raise no_plan_error(layout, axes)
    return found


def no_plan_error(layout: Layout, axes, what: str = "plan_fft") -> PlanError:
    """The PlanError for a request `find_plan` has no plan for, saying why and what to do."""
    axes = tuple(axes)
    if layout.has_halo:
        return PlanError(f"{what}: a plan needs a layout without halo, got {layout!r}; drop "
                         f"the halo first (x.unhalo())")
    return PlanError(
        f"{what}: no plan of local transforms and all-to-alls transforms axes {axes} of an "
        f"array with layout {layout!r}: every array axis is split (and no fold of one split "
        f"into another fits the block lengths), so no split can move out of a transform "
        f"axis's way. darray.fft's transforms still run on this layout, by the distributed "
        f"four-step FFT along the split axis, which has no Plan; leave one axis unsplit "
        f"(e.g. spec=(('x', 'y'), None, ...)) or add a batch axis to get one")

