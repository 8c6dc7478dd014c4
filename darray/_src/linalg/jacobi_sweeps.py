"""The sweeps of jacobi.py's one-sided block Jacobi method, and what makes U orthonormal when
singular values are small or zero (issue 50: numpy's U always has orthonormal columns).

Sweeps
  `iterate` runs rounds of `rotate` (each device orthogonalises the two blocks of columns it
  holds) and `next_pairing` (the circle method moves the blocks) until the columns are
  orthogonal (jacobi.py's module doc). A rotation comes from the SVD of the pair's R, which is
  accurate to eps times the pair's largest column only: a column far smaller than its partner
  (a small singular value) is made orthogonal to it only to eps * (largest / its norm). So
  columns below WEAK times the pair's largest do not count for convergence (they would keep
  the sweeps going to MAX_SWEEPS); `refine` orthogonalises them afterwards.

Small singular values (`refine`, svd only, run only where some value is below WEAK s_max)
  Level by level, the columns below `cut` (starting at WEAK s_max, then WEAK times the
  largest column of the level before) are projected off the larger ones (twice: classical
  Gram-Schmidt needs two passes; a ring of the larger columns' blocks, never a gather) and
  iterated among themselves, the larger ones frozen (`rotate`'s `frozen`: they neither move
  nor mix). [W; V] rotate together, so A V = W still holds; the projection changes a column
  by its error only (eps s_max). A column then is orthogonal to the others to about
  eps / WEAK relative to itself.

Zero singular values (`left_vectors`)
  Columns of W at most n eps s_max (numpy's matrix_rank cutoff) carry no direction: A V = U S
  leaves their U columns free. They are replaced by an orthonormal basis of the complement of
  the other columns (`complete`): random candidates (the same on every run), projected off
  the others twice, then iterated among themselves with the others frozen.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

MAX_SWEEPS = 30   # quadratic convergence: 6-12 sweeps in practice
MAX_LEVELS = 8    # refine's levels: WEAK^8 = eps^2, below every cutoff
HIGHEST = lax.Precision.HIGHEST


def weak(dtype) -> float:
    """The ratio below which a column is too small for its rotations (eps^(1/4): the
    larger columns' rotations then keep them orthogonal to eps^(3/4), 2e-12 in float64)."""
    return float(np.finfo(dtype).eps) ** 0.25


def ct(a):
    return jnp.conj(jnp.swapaxes(a, -1, -2))


def mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def rotate(top, bot, rows: int, frozen=None):
    """Orthogonalise the pair of blocks this device holds: [W; V] <- [W; V] J, the two
    slots kept as separate arrays (a joined copy of [W; V] would cost two more blocks).

    `frozen` (2b bools): columns that stay as they are and take no part (the larger columns
    while `refine` works on the smaller ones)."""
    b = top.shape[-1]
    pair = jnp.concatenate([top[:rows], bot[:rows]], axis=1)
    if frozen is not None:
        pair = jnp.where(frozen[None, :], 0, pair)
    r = jnp.linalg.qr(pair, mode="r")
    g = mm(ct(r), r)
    d = jnp.sqrt(jnp.abs(jnp.real(jnp.diagonal(g))))
    small = d <= weak(d.dtype) * jnp.max(d)  # not resolvable here (module doc): not counted
    d = jnp.where(d > 0, d, 1)
    scaled = jnp.abs(g) / (d[:, None] * d[None, :])
    ignore = jnp.eye(g.shape[0], dtype=bool) | small[:, None] | small[None, :]
    off = jnp.max(jnp.where(ignore, 0, scaled))
    _, _, vh = jnp.linalg.svd(r)
    rot = ct(vh)
    # The SVD sorts the pair's columns by size; left so, the large columns would gather in
    # the top slots and never meet each other. Keep each column where it was instead: J is
    # close to a permutation once nearly converged; undo it (column j to the row of its
    # largest entry), so that columns keep their slots and every pair meets each sweep.
    if frozen is None:
        rot = rot[:, jnp.argsort(jnp.argmax(jnp.abs(rot), axis=0))]
    else:
        rot = _keep_frozen(rot, frozen)
    new_top = mm(top, rot[:b, :b]) + mm(bot, rot[b:, :b])
    new_bot = mm(top, rot[:b, b:]) + mm(bot, rot[b:, b:])
    return new_top, new_bot, off


def _keep_frozen(rot, frozen):
    """The rotation's columns for a pair with `frozen` columns (zeroed in the pair): its first
    m columns (the m largest values span the m live columns) go to the live slots, each
    toward the slot of its largest entry, and the frozen slots keep the identity (rounding
    would otherwise leak eps-sized pieces between them)."""
    k = rot.shape[-1]
    j = jnp.arange(k)
    peak = jnp.argmax(jnp.where(frozen[:, None], -1, jnp.abs(rot)), axis=0)
    key = jnp.where(j < jnp.sum(~frozen), peak, k + j)
    dest = jnp.argsort(frozen, stable=True)  # live slots first, then the frozen ones
    rot = jnp.zeros_like(rot).at[:, dest].set(rot[:, jnp.argsort(key)])
    fixed = frozen[:, None] | frozen[None, :]
    return jnp.where(fixed, jnp.eye(k, dtype=rot.dtype), rot)


def next_pairing(top, bot, plan):
    """The circle method: slot 0 of device 0 stays; top slots move right, the last top slot
    drops to the bottom row, bottom slots move left, device 0's bottom slot rises to device 1.
    """
    p = plan.parts
    dev = lax.axis_index(plan.names)
    send = jnp.where(dev == 0, bot, top)
    right = lax.ppermute(send, plan.mesh_order, plan.perm([(i, i + 1) for i in range(p - 1)]))
    left = lax.ppermute(bot, plan.mesh_order, plan.perm([(i + 1, i) for i in range(p - 1)]))
    return jnp.where(dev == 0, top, right), jnp.where(dev == p - 1, top, left)


def iterate(wv, plan, tol: float, frozen=None):
    """Sweeps until converged (jacobi.py's module doc); `frozen` (2b bools per device): the
    columns that take no part (`rotate`). Returns [W; V] with its slots where they began."""
    rows, b = plan.rows, plan.b

    def one(_, state):
        top, bot, masks, off = state
        top, bot, o = rotate(top, bot, rows, None if masks is None else
                             jnp.concatenate(masks))
        top, bot = next_pairing(top, bot, plan)
        if masks is not None:
            masks = next_pairing(*masks, plan)  # a block's frozen columns travel with it
        return top, bot, masks, jnp.maximum(off, o)

    def sweep(state):
        top, bot, masks, off, _, count = state
        zero = jnp.abs(top[0, 0]) * 0  # varying over the devices, like each round's value
        top, bot, masks, new = lax.fori_loop(0, 2 * plan.parts - 1, one,
                                             (top, bot, masks, zero))
        new = jnp.where(new == new, new, 0)  # a NaN (padding of a stack) stops no one
        new = lax.pmax(new, plan.names + plan.sync)
        return top, bot, masks, new, off, count + 1

    floor = float(np.finfo(wv.dtype).eps) ** 0.75  # 2e-12 in float64: residuals far below 1e-10

    def going(state):
        *_, off, before, count = state
        # converged, or stuck at the rounding floor (no longer shrinking quadratically)
        stalled = (off < floor) & (off > 0.25 * before)
        return (count < MAX_SWEEPS) & (off > tol) & ~stalled

    # varying over the mesh axes as the sweeps' pmax is
    start = lax.pmax(jnp.abs(wv[0, 0]) * 0 + 1, plan.names + plan.sync)
    masks = None if frozen is None else (frozen[:b], frozen[b:])
    top, bot, *_ = lax.while_loop(going, sweep, (wv[:, :b], wv[:, b:], masks, start,
                                                 2 * start, jnp.zeros((), jnp.int32)))
    return jnp.concatenate([top, bot], axis=1)


def project_out(c, u, plan):
    """c minus its components along every column of u (all devices' slots; orthonormal or
    zero columns): u's blocks travel a ring of P - 1 ppermutes, one at a time."""
    p = plan.parts
    ring = plan.perm([((i + 1) % p, i) for i in range(p)])

    def drop(travel, c):
        return c - mm(travel, mm(ct(travel), c))

    def step(_, state):
        travel, c = state
        travel = lax.ppermute(travel, plan.mesh_order, ring)
        return travel, drop(travel, c)

    _, c = lax.fori_loop(0, p - 1, step, (u, drop(u, c)))
    return c


def _unit(w, norms):
    return w / jnp.where(norms > 0, norms, 1)


def _anywhere(flag, plan):
    """`flag` (replicated over the matrix's devices) true on any device of a stack: every
    device must join a branch's collectives, or none."""
    flag = flag.astype(jnp.int32)
    return (lax.pmax(flag, plan.sync) if plan.sync else flag) > 0


def refine(wv, values, real, plan, tol: float):
    """[W; V] with the columns below WEAK s_max made orthogonal level by level (module doc);
    `values`: every slot's column norm, `real`: which slots are real columns."""
    rows = plan.rows
    dtype = jnp.finfo(wv.dtype).dtype
    ratio = weak(dtype)
    top = jnp.max(jnp.where(real, values, 0))
    limit = plan.n * float(np.finfo(dtype).eps) * top

    def level(state):
        wv, cut, count = state
        w = wv[:rows]
        norms = jnp.linalg.norm(w, axis=0)
        final = norms > cut                     # padded slots (value d) among them
        live = ~final & (norms > limit)
        kept = jnp.where(final[None, :], _unit(w, norms), 0)
        moved = jnp.where(live[None, :], w, 0)
        for _ in range(2):
            moved = project_out(moved, kept, plan)
        w = jnp.where(live[None, :], moved, w)
        wv = iterate(jnp.concatenate([w, wv[rows:]]), plan, tol, frozen=~live)
        # this level resolved its columns down to WEAK times its largest: the next starts there
        # (rank-deficient matrices: one level for all the rounding-sized columns)
        largest = jnp.max(jnp.where(live, jnp.linalg.norm(wv[:rows], axis=0), 0))
        return wv, ratio * lax.pmax(largest, plan.names), count + 1

    def going(state):
        _, cut, count = state
        # agreed over a stack's devices (a padding element's NaN values decide nothing)
        below = jnp.any(real & (values <= cut) & (values > limit)) & (cut > limit)
        return _anywhere(below, plan) & (count < MAX_LEVELS)

    need = _anywhere(jnp.any(real & (values <= ratio * top) & (values > limit)), plan)
    start = (wv, ratio * top, jnp.zeros((), jnp.int32))
    return lax.cond(need, lambda: lax.while_loop(going, level, start)[0], lambda: wv)


def left_vectors(w, values, real, plan, eps: float):
    """U's columns in slot order (N x 2b): W's normalised columns, and where the value is at
    most n eps s_max an orthonormal basis of the complement of the others (`complete`, run
    only where there is such a column)."""
    norms = jnp.linalg.norm(w, axis=0)
    top = jnp.max(jnp.where(real, values, 0))
    limit = plan.n * eps * top
    deficient = norms <= limit  # a padded slot's value d exceeds it
    u = jnp.where(deficient[None, :], 0, _unit(w, norms))
    need = _anywhere(jnp.any(real & (values <= limit)), plan)
    return lax.cond(need, lambda: complete(u, deficient, plan, eps), lambda: u)


def complete(u, deficient, plan, eps: float):
    """`u`'s deficient (zero) columns filled with an orthonormal basis of the complement of
    its other columns (module doc); rows from n on stay zero in them."""
    dev = lax.axis_index(plan.names)
    real_dtype = jnp.finfo(u.dtype).dtype
    key = jax.random.fold_in(jax.random.key(50), dev)
    c = jax.random.normal(key, u.shape, real_dtype).astype(u.dtype)
    rows = lax.broadcasted_iota(jnp.int32, u.shape, 0)
    c = jnp.where(deficient[None, :] & (rows < plan.n), c, 0)
    for _ in range(2):  # twice is enough (Gram-Schmidt's re-orthogonalisation)
        c = project_out(c, u, plan)
    c = _unit(c, jnp.linalg.norm(c, axis=0))
    c = iterate(c, plan, tol=float(np.sqrt(plan.rows)) * eps, frozen=~deficient)
    return jnp.where(deficient[None, :], _unit(c, jnp.linalg.norm(c, axis=0)), u)
