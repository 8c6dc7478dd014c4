"""Normalising the arguments of `halo`: widths, axes and boundary rules, with actionable errors.

Pure Python; no devices, no JAX.
"""
from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence

from darray._src.base.errors import LayoutError
from darray._src.layout.axes import normalize_axes, normalize_axis

# Boundary rules, named as darray spells them, with numpy's np.pad names accepted as aliases.
BOUNDARIES = ("periodic", "constant", "edge", "reflect", "symmetric", "antisymmetric",
              "antireflect")
_ALIASES = {"wrap": "periodic"}
NUMPY_MODE = {"periodic": "wrap", "constant": "constant", "edge": "edge", "reflect": "reflect",
              "symmetric": "symmetric"}

Widths = tuple[tuple[int, int], ...]


def _halo_axes(axes, ndim: int) -> tuple[int, ...]:
    """`axes=None` means every axis (split or not); otherwise an int or a sequence of distinct
    ints, as every axis argument (layout/axes.py)."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, bool) or not isinstance(axes, (int, tuple, list)):
        raise TypeError(f"axes={axes!r} must be None, an int or a tuple of ints")
    return normalize_axes(axes, ndim, "axes")


def _pair(w, where: str) -> tuple[int, int]:
    """One axis' width: an int (both sides) or a (lo, hi) pair of non-negative ints."""
    if isinstance(w, bool):
        raise TypeError(f"width{where}={w!r} is a bool; use an int or a (lo, hi) pair of ints")
    if isinstance(w, (tuple, list)):
        if len(w) != 2:
            raise LayoutError(f"width{where}={tuple(w)!r} must be an int or a (lo, hi) pair")
        lo, hi = (_pair(v, where)[0] for v in w)
        return lo, hi
    try:
        v = operator.index(w)
    except TypeError:
        raise TypeError(f"width{where}={w!r} must be an int or a (lo, hi) pair of ints, got "
                        f"{type(w).__name__}") from None
    if v < 0:
        raise LayoutError(f"width{where}={v} is negative; ghost widths must be >= 0")
    return v, v


def normalize_width(width, axes, ndim: int) -> Widths:
    """Per-axis (lo, hi) ghost widths.

    Accepted forms: an int (every axis in `axes`); a sequence with one entry per axis in `axes`
    (or per array axis when `axes` is None), each an int or a (lo, hi) pair; a dict
    ``{axis: int | (lo, hi)}`` (then `axes` must be None). Axes not named get no ghosts.
    """
    out = [(0, 0)] * ndim
    if isinstance(width, Mapping):
        if axes is not None:
            raise TypeError(f"width={dict(width)!r} is a dict, which already names the axes; "
                            f"do not also pass axes={axes!r}")
        for axis, w in width.items():
            a = normalize_axis(axis, ndim, "width")
            out[a] = _pair(w, f"[{axis}]")
        return tuple(out)
    chosen = _halo_axes(axes, ndim)
    if isinstance(width, (tuple, list)):
        if len(width) != len(chosen):
            what = "array axis" if axes is None else "entry of axes"
            raise LayoutError(f"width={tuple(width)!r} has {len(width)} entries but needs one per "
                              f"{what} ({len(chosen)}); or pass an int for all axes")
        for a, w in zip(chosen, width):
            out[a] = _pair(w, f"[{a}]")
        return tuple(out)
    pair = _pair(width, "")
    for a in chosen:
        out[a] = pair
    return tuple(out)


def _one_boundary(b, where: str) -> str:
    if not isinstance(b, str):
        raise TypeError(f"boundary{where}={b!r} must be a string, one of {BOUNDARIES}")
    name = _ALIASES.get(b, b)
    if name not in BOUNDARIES:
        raise ValueError(f"boundary{where}={b!r} is not a known boundary rule; use one of "
                         f"{BOUNDARIES} (numpy's 'wrap' is accepted for 'periodic')")
    return name


def normalize_boundary(boundary, ndim: int) -> tuple[str, ...]:
    """One rule for all axes (a string) or one per array axis (a sequence of strings)."""
    if isinstance(boundary, str):
        return (_one_boundary(boundary, ""),) * ndim
    if isinstance(boundary, Sequence):
        if len(boundary) != ndim:
            raise ValueError(f"boundary={tuple(boundary)!r} has {len(boundary)} entries; give "
                             f"one string for all axes or one per array axis ({ndim})")
        return tuple(_one_boundary(b, f"[{i}]") for i, b in enumerate(boundary))
    raise TypeError(f"boundary={boundary!r} must be a string (one of {BOUNDARIES}) or a "
                    f"sequence of them, one per array axis")


def check_widths(widths: Widths, boundaries: Sequence[str], shape: Sequence[int]) -> None:
    """Refuse widths that no boundary rule can serve: an empty axis with ghosts, or an odd
    mirror wider than the cells it mirrors (one reflection is the Dirichlet extension; np.pad's
    repeated reflections would not flip the sign again, so there is no single meaning)."""
    for axis, ((lo, hi), n, rule) in enumerate(zip(widths, shape, boundaries)):
        if (lo or hi) and n == 0 and rule != "constant":
            raise LayoutError(f"width={(lo, hi)} on axis {axis} of length 0: there are no "
                              f"cells to fill ghosts from with boundary={rule!r}; use width 0 "
                              f"on this axis or boundary='constant'")
        room = {"antisymmetric": n, "antireflect": n - 1}.get(rule)
        if room is not None and max(lo, hi) > room:
            mirrored = ("the axis length" if rule == "antisymmetric"
                        else "the axis length - 1 (the edge node is its own mirror)")
            raise LayoutError(f"width={(lo, hi)} on axis {axis} of length {n} with "
                              f"boundary={rule!r}: the odd mirror has only {room} cell(s) to "
                              f"mirror; widths up to {mirrored} are accepted")
