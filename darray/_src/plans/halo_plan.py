"""Which cell fills each ghost cell: the static plan of a halo exchange along one axis.

Pure Python and numpy, no devices: unit-testable, cached, and shared by the JAX and NCCL halo
backends (cuDecomp's halo update computes its own exchange).

Physical block along an axis with ghosts ``(lo, hi)``, for a block owning ``e`` cells of the
``chunk`` it could hold (``e < chunk`` only for the last non-empty block of an uneven split)::

    [ lo ghosts | e owned cells | hi ghosts | chunk - e padding ]

The hi ghosts sit right after the owned cells, so a stencil that reads ``block[i - 1]`` and
``block[i + 1]`` is right for every owned cell, even in the short block. The ``lo + chunk``
window after the lo ghosts therefore still starts with the owned cells, which is all that
`physical.to_logical` / `physical_to_host` read. Empty blocks (``e == 0``) have no ghosts.

A ghost cell's source is a logical index, mapped into ``[0, n)`` by the boundary rule (as
``np.pad`` does), or nothing (constant boundary). The source lives in some block: the own block
(a local copy) or another one (a transfer). Transfers between one sender and one receiver form
a *link*; links are scheduled into *rounds*, each one `ppermute` in which every device sends and
receives at most one buffer. For an even split and widths up to the chunk that is one round per
side with face-sized buffers; wider ghosts or uneven splits simply add rounds (multi-hop).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np


def source_index(g: int, n: int, rule: str) -> int | None:
    """Logical cell that ghost position `g` (any integer) copies under `rule`, or None."""
    if 0 <= g < n:
        return g
    if rule == "periodic":
        return g % n
    if rule == "constant":
        return None
    if rule == "edge":
        return min(max(g, 0), n - 1)
    if rule == "reflect":  # mirror about the edge cells, period 2(n - 1), as np.pad
        if n == 1:
            return 0
        m = g % (2 * n - 2)
        return m if m < n else 2 * n - 2 - m
    if rule in ("symmetric", "antisymmetric"):  # mirror about the faces, period 2n
        m = g % (2 * n)
        return m if m < n else 2 * n - 1 - m
    if rule == "antireflect":  # odd mirror about the edge nodes (one reflection: spec.py)
        return source_index(g, n, "reflect")
    raise ValueError(f"unknown boundary rule {rule!r}")


# Odd mirrors: the ghost is the negated cell it mirrors (Dirichlet walls). spec.check_widths
# allows one reflection only, so every ghost beyond an end takes exactly one minus sign.
NEGATED = ("antisymmetric", "antireflect")


def negated(g: int, n: int, rule: str) -> bool:
    """Whether ghost position `g` takes the negated value of its source cell."""
    return rule in NEGATED and not 0 <= g < n


@dataclasses.dataclass(frozen=True, eq=False)
class Round:
    """One ppermute: `perm` pairs (sender block, receiver block).

    ``send[b]`` lists the interior offsets block b sends (length L, padded with 0);
    ``recv[b, j]`` is the buffer position ghost j of block b takes, or -1.
    """
    perm: tuple[tuple[int, int], ...]
    send: np.ndarray
    recv: np.ndarray

    @property
    def static_send(self) -> tuple[int, int] | None:
        """(start, stop) if every sender sends the same contiguous run, else None."""
        senders = sorted({s for s, _ in self.perm})
        rows = self.send[senders]
        if not (rows == rows[0]).all():
            return None
        r = rows[0]
        if (np.diff(r) != 1).any():
            return None
        return int(r[0]), int(r[0]) + len(r)


@dataclasses.dataclass(frozen=True, eq=False)
class SidePlan:
    """How the `width` ghosts on one side of every block are filled."""
    width: int
    rounds: tuple[Round, ...]
    local: np.ndarray | None      # [parts, width] own-block interior offset, or -1
    constant: np.ndarray | None   # [parts, width] True where the fill value goes
    negate: np.ndarray | None = None  # [parts, width] True where the copied value is negated

    def covered_by_one_round(self, nonempty: np.ndarray) -> bool:
        """True when one round fills every ghost of every non-empty block straight from its
        buffer (buffer position j -> ghost j): then no gather or select is needed."""
        if (len(self.rounds) != 1 or self.local is not None or self.constant is not None
                or self.negate is not None):
            return False
        rnd = self.rounds[0]
        want = np.arange(self.width)
        return (rnd.static_send is not None and rnd.send.shape[1] == self.width
                and all((rnd.recv[b] == want).all() for b in np.flatnonzero(nonempty)))


@dataclasses.dataclass(frozen=True, eq=False)
class AxisPlan:
    n: int
    parts: int
    chunk: int
    extent: np.ndarray   # [parts] owned cells per block
    lo: SidePlan
    hi: SidePlan

    @property
    def uneven(self) -> bool:
        """Some block owns fewer than `chunk` cells, so its hi ghosts move left."""
        return bool((self.extent != self.chunk).any())

    @property
    def nonempty(self) -> np.ndarray:
        return self.extent > 0


def _side(n, parts, chunk, extent, width, rule, side) -> SidePlan:
    windows: list[tuple[int, int] | None] = []
    for b in range(parts):
        e = int(extent[b])
        if e == 0 or width == 0:
            windows.append(None)
            continue
        windows.append((b * chunk - width if side == "lo" else b * chunk + e, width))
    return _cells(n, parts, chunk, width, rule, windows)


def _cells(n, parts, chunk, width, rule, windows) -> SidePlan:
    """The plan that fills, on every receiving block b with ``windows[b] = (first, count)``,
    slots ``0 .. count-1`` with the cells at logical positions ``first + j`` (mapped into the
    array by `rule`); blocks with ``windows[b] = None`` and slots past `count` stay empty.
    Senders are the `parts` blocks of `chunk` cells that own the array's `n` cells."""
    local = np.full((parts, width), -1, np.int64)
    constant = np.zeros((parts, width), bool)
    negate = np.zeros((parts, width), bool)
    links: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for b, window in enumerate(windows):
        if window is None:
            continue
        first, count = window
        start = b * chunk
        for j in range(count):
            src = source_index(first + j, n, rule)
            negate[b, j] = negated(first + j, n, rule)
            if src is None:
                constant[b, j] = True
            elif src // chunk == b:
                local[b, j] = src - start
            else:
                links.setdefault((src // chunk, b), []).append((j, src % chunk))
    # Same shift first, so that an even split gives one permutation per side.
    order = sorted(links, key=lambda sr: ((sr[0] - sr[1]) % parts, sr[1]))
    slots: list[dict] = []
    for sender, receiver in order:
        for slot in slots:
            if sender not in slot["senders"] and receiver not in slot["receivers"]:
                break
        else:
            slot = {"senders": set(), "receivers": set(), "links": []}
            slots.append(slot)
        slot["senders"].add(sender)
        slot["receivers"].add(receiver)
        slot["links"].append((sender, receiver))
    rounds = []
    for slot in slots:
        length = max(len(links[link]) for link in slot["links"])
        send = np.zeros((parts, length), np.int64)
        recv = np.full((parts, width), -1, np.int64)
        for sender, receiver in slot["links"]:
            cells = links[(sender, receiver)]
            offsets = [off for _, off in cells]
            send[sender] = offsets + [offsets[-1]] * (length - len(offsets))
            for k, (j, _) in enumerate(cells):
                recv[receiver, j] = k
        rounds.append(Round(tuple(sorted(slot["links"])), send, recv))
    return SidePlan(width, tuple(rounds), local if (local >= 0).any() else None,
                    constant if constant.any() else None, negate if negate.any() else None)


@functools.lru_cache(maxsize=256)
def regrid_plan(n: int, parts: int, chunk: int, lo: int, hi: int, rule: str) -> SidePlan:
    """The cells of ``np.pad(axis, (lo, hi), rule)`` cut in `parts` blocks of the padded
    axis' own chunk, ``ceil((n + lo + hi) / parts)``: a SidePlan whose width is that chunk.

    The padded array's blocks are not the input's (its chunk is larger), so each output block
    gathers its cells from up to a few input blocks: the same rounds of ppermutes as a halo
    exchange with wide ghosts, never an all-gather. Output padding stays empty. Planning walks
    the axis cell by cell (about 0.7 s for 10^6 cells on one core), once per shape: plans are
    cached."""
    total = n + lo + hi
    out_chunk = -(-total // parts)
    spans = [(q * out_chunk - lo, max(0, min(out_chunk, total - q * out_chunk)))
             for q in range(parts)]
    windows = [w if w[1] else None for w in spans]
    return _cells(n, parts, chunk, out_chunk, rule, windows)


@functools.lru_cache(maxsize=512)
def axis_plan(n: int, parts: int, chunk: int, lo: int, hi: int, rule: str) -> AxisPlan:
    """The exchange plan for one axis of length `n` cut in `parts` blocks of `chunk`."""
    extent = np.array([max(0, min(chunk, n - b * chunk)) for b in range(parts)], np.int64)
    return AxisPlan(n, parts, chunk, extent,
                    _side(n, parts, chunk, extent, lo, rule, "lo"),
                    _side(n, parts, chunk, extent, hi, rule, "hi"))
