"""eigh, eigvalsh, svd and svdvals of a square matrix with split matrix axes, without ever
gathering it (issue 50, item 2): a parallel one-sided block Jacobi method.

When the rule applies
  A 2-D square matrix, n >= MIN_EXTENT, with its matrix axes split over at least 2 devices
  and no halo (`plan_for`). A tall-skinny or short-wide matrix goes to
  tall_skinny.py first; anything else returns None and the caller keeps the gathering path.

Layout during the work
  The devices that split the matrix axes (P = pc * pr: columns over pc, rows over pr; mesh axes
  splitting neither repeat the work) each take c = ceil(ceil(n / pc) / pr) whole columns: an
  all-to-all over the row axes (never a gather). Each device then holds its columns as two
  blocks of b = ceil(c / 2) columns ("slots"), so the P devices hold 2P blocks. Missing
  columns (c < 2b, or a short last device) are *padded columns*. Rows are extended from n to
  N = 2bP: padded column number k (in device order) is d * e_{n+k}, where d exceeds every
  singular value of the real matrix. Padded columns are thus exactly orthogonal to the real
  ones (disjoint rows) with singular value d, larger than any real one: the rotations never
  mix them with real columns (beyond rounding), and they sort apart.

The iteration (one-sided block Jacobi)
  Every device stacks its two blocks of the working matrix W (N x 2b) over the same columns
  of V (N x 2b, starting as the identity; svd only). One round: a local QR of W's pair (R only), the
  SVD of R gives the 2b x 2b unitary J that makes the pair's columns orthogonal; [W; V] <-
  [W; V] J. Then the blocks move to the next pairing of a round-robin tournament (the circle
  method: two ppermutes of one block each). 2P - 1 rounds form a sweep, after which every
  pair of blocks has met and the blocks are back in their starting slots. Sweeps repeat until
  the largest scaled off-diagonal |w_i^H w_j| / (|w_i| |w_j|) seen in a sweep is below
  tolerance, or it stops shrinking below eps^(3/4) (the rounding floor, eps * cond), or
  MAX_SWEEPS. The rotation's columns are reordered to keep each column in its slot (see
  jacobi_sweeps.py, which holds the sweeps).
  Then A V = U S with S the column norms: an SVD (U = W / S, V accumulated).

eigh
  For Hermitian A, B = A + shift I with shift = 1.5 ||A||_F is positive definite (its
  eigenvalues lie in [0.5 ||A||_F, 2.5 ||A||_F], so B's condition number is at most 5 and the
  iteration converges fast and to full accuracy); B's SVD is its eigendecomposition:
  eigenvalues S - shift (absolute error about eps ||A||_F, LAPACK's kind of bound). Its left
  and right singular vectors agree (B's polar factor is I), so the eigenvectors are W's
  normalised columns and eigh iterates on W alone, without V.

Sorting and results
  The N values are tiny: each device writes its own into a zero vector and a psum makes them
  known everywhere (no all-gather). Padded slots are recognised by their value d. The columns
  of U / V are then put in sorted order by a ring of P - 1 ppermutes of one block each (every
  device picks the columns it needs from the block passing by), landing in the working
  column map, and an all-to-all over the row axes restores the input's layout. Eigenvalues and
  singular values come back replicated; U, eigenvectors and Vh in the input's layout.

Memory
  [W; V] (svd) is about 2 input blocks per device, W alone (eigh, eigvalsh, svdvals) about
  1; a round adds the rotated slots and the moving ones, the final sort one travelling block
  (a rolled ring: unrolled, XLA kept every block of the ring alive at once). Measured
  (tests/memory/test_memory_spectral.py, temporaries per max(input, output) block, n = 203):
  eigh about 3.1 (float32 up to 4.1), svd 3.6-4.7 (float32 4.2-5.2; its block is U's and
  Vh's; 3.1 before the small-value branches below were added), eigvalsh / svdvals about 3.7
  (float32 4.3), within issue 50's 6.

Small and zero singular values (svd)
  A rotation orthogonalises a small column against a large one only to eps times their ratio,
  and a zero singular value leaves a column of W with no direction. Where such values occur,
  jacobi_sweeps.py makes the small columns orthogonal level by level and replaces those at
  most n eps s_max (numpy's matrix_rank cutoff) by an orthonormal basis of the complement of
  the others, as LAPACK's U: U always has orthonormal columns. Without small values (and for
  eigh, whose B is well conditioned) none of it runs (lax.cond).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec

from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.linalg import jacobi_sweeps, spectral_grads
from darray._src.placement import physical

MIN_EXTENT = 64   # below this the gathering path is faster than 2P - 1 rounds of messages
HIGHEST = lax.Precision.HIGHEST


@dataclasses.dataclass(frozen=True)
class Plan:
    """The sizes of the iteration.

    The input's columns are split over `col_names` (pc parts, c_in = ceil(n / pc) columns per
    part) and its rows over `row_names` (pr parts, r_in rows each). The work spreads over
    `names` = col_names + row_names (P = pc pr devices, column-part major): device (sc, sr)
    takes c = ceil(c_in / pr) of part sc's columns (an all-to-all over the row axes). Mesh
    axes that split neither matrix axis repeat the work (the input is replicated over them).
    """

    n: int
    col_names: tuple[str, ...]
    row_names: tuple[str, ...]
    pc: int
    pr: int
    sizes: tuple[int, ...]        # of `names`, in that order
    mesh_order: tuple[str, ...]   # `names` in the mesh's axis order
    # mesh axes that hold other matrices (a stack's split batch axes, stacked.py): the sweep
    # count is agreed over them too, as every device must join each collective-permute
    sync: tuple[str, ...] = ()

    def perm(self, pairs) -> list[tuple[int, int]]:
        """(source, destination) pairs of device numbers (`names` order, as axis_index
        gives them) in the numbering ppermute reads (the mesh's axis order)."""
        size = dict(zip(self.names, self.sizes))

        def jax_number(i):
            coords = dict(zip(self.names, np.unravel_index(i, self.sizes)))
            return int(np.ravel_multi_index([coords[a] for a in self.mesh_order],
                                            [size[a] for a in self.mesh_order]))
        return [(jax_number(a), jax_number(b)) for a, b in pairs]

    @property
    def names(self) -> tuple[str, ...]:
        return self.col_names + self.row_names

    @property
    def parts(self) -> int:
        return self.pc * self.pr

    @property
    def c_in(self) -> int:
        return -(-self.n // self.pc)

    @property
    def r_in(self) -> int:
        return -(-self.n // self.pr)

    @property
    def c(self) -> int:
        return -(-self.c_in // self.pr)

    @property
    def b(self) -> int:
        return -(-self.c // 2)

    @property
    def rows(self) -> int:  # N: every slot column's row space, real rows first
        return 2 * self.b * self.parts

    def columns(self, major: int, minor_parts: int, chunk: int, piece: int) -> np.ndarray:
        """Global indices (P x piece; n where there is none) that device (i, j) (i over
        `major` parts of `chunk` indices, j over `minor_parts` pieces of each) owns."""
        out = np.full((self.parts, piece), self.n, np.int32)
        for dev in range(self.parts):
            i, j = divmod(dev, minor_parts)
            for k in range(piece):
                local = j * piece + k
                if local < chunk and i * chunk + local < self.n:
                    out[dev, k] = i * chunk + local
        return out

    def work_columns(self) -> np.ndarray:
        """The input column each device's c working columns hold (n: a padded column)."""
        return self.columns(self.pc, self.pr, self.c_in, self.c)

    def vh_rows(self) -> np.ndarray:
        """The rows of Vh each device produces before the all-to-all over the column axes:
        device (sc, sr) takes piece sc of row part sr (so rows travel only over col_names)."""
        c2 = -(-self.r_in // self.pc)
        out = np.full((self.parts, c2), self.n, np.int32)
        for dev in range(self.parts):
            sc, sr = divmod(dev, self.pr)
            for k in range(c2):
                local = sc * c2 + k
                if local < self.r_in and sr * self.r_in + local < self.n:
                    out[dev, k] = sr * self.r_in + local
        return out


def plan_for(x: DistArray) -> Plan | None:
    """The Plan for a square matrix `x`, or None when the rule (module doc) does not apply."""
    return plan_for_layout(x.layout, x.dtype)


def plan_for_layout(lay: Layout, dtype) -> Plan | None:
    """`plan_for` of a 2-D layout and dtype (a stack's matrix axes: linalg/stacked.py)."""
    if lay.ndim != 2 or lay.has_halo or lay.shape[0] != lay.shape[1]:
        return None
    if not (lay.split[0] or lay.split[1]) or lay.shape[0] < MIN_EXTENT:
        return None
    if not (jnp.issubdtype(dtype, jnp.inexact) or jnp.issubdtype(dtype, jnp.integer)
            or dtype == np.bool_):
        return None
    names = tuple(lay.split[1]) + tuple(lay.split[0])
    sizes = dict(lay.mesh.shape)
    plan = Plan(lay.shape[0], tuple(lay.split[1]), tuple(lay.split[0]), lay.parts(1),
                lay.parts(0), tuple(sizes[a] for a in names),
                tuple(a for a in lay.mesh.axis_names if a in names))
    return plan if plan.parts >= 2 else None


def inexact(dtype) -> np.dtype:
    return np.dtype(jnp.result_type(dtype, 1.0))


def ct(a):
    return jnp.conj(jnp.swapaxes(a, -1, -2))


def mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


# -- inside shard_map ------------------------------------------------------------------------------
def _row_to_column_blocks(block, plan: Plan):
    """The input block (r_in x c_in) as this device's c working columns, all n rows: an
    all-to-all over the row axes (never a gather)."""
    if plan.pr > 1:
        block = jnp.pad(block, ((0, 0), (0, plan.pr * plan.c - block.shape[1])))
        block = lax.all_to_all(block, plan.row_names, 1, 0, tiled=True)
    return block[:plan.n]


def _column_to_row_blocks(cols, plan: Plan):
    """The inverse: n x c working columns back to the input's r_in x c_in block."""
    if plan.pr > 1:
        cols = jnp.pad(cols, ((0, plan.pr * plan.r_in - plan.n), (0, 0)))
        cols = lax.all_to_all(cols, plan.row_names, 0, 1, tiled=True)
    return cols[:, :plan.c_in]


def _vh_block(rows, plan: Plan):
    """Vh rows (c2 x n, this device's piece of its row part) to the input's r_in x c_in."""
    if plan.pc > 1:
        rows = jnp.pad(rows, ((0, 0), (0, plan.pc * plan.c_in - plan.n)))
        rows = lax.all_to_all(rows, plan.col_names, 1, 0, tiled=True)
    return rows[:plan.r_in]


def _setup(block, plan: Plan, shift_factor: float, vectors: bool):
    """This device's working matrix W (N x 2b; [W; V] when `vectors`), the shift and the
    scale ||A||_F. `block` is the input's block."""
    n, b, rows = plan.n, plan.b, plan.rows
    dev = lax.axis_index(plan.names)
    table = plan.work_columns()
    global_col = jnp.asarray(table)[dev]                      # (c,), n where padded
    real = jnp.asarray((table < n).sum(axis=1), jnp.int32)[dev]
    pads_before = jnp.asarray(np.concatenate([[0], np.cumsum(2 * b - (table < n).sum(axis=1))
                                              ])[:-1], jnp.int32)[dev]
    block = _row_to_column_blocks(block, plan)
    block = jnp.where(global_col[None, :] < n, block, 0)
    fro = jnp.sqrt(lax.psum(jnp.sum(jnp.abs(block) ** 2), plan.names))
    scale = jnp.where(fro > 0, fro, 1).astype(fro.dtype)
    shift = shift_factor * scale
    big = shift + 1.5 * scale  # above every real singular value (of A, or of A + shift I)
    w = jnp.zeros((rows, 2 * b), block.dtype).at[:n, :plan.c].set(block)
    r = lax.broadcasted_iota(jnp.int32, (rows, 2 * b), 0)
    k = lax.broadcasted_iota(jnp.int32, (rows, 2 * b), 1)
    # the real columns come first (global_col is increasing up to `real`), then padded ones:
    # padded number pads_before + (k - real) in device order, d e_{n + that}
    home = jnp.where(k < real, jnp.pad(global_col, (0, 2 * b - plan.c))[k],
                     n + pads_before + (k - real))
    if shift_factor:  # B = A + shift I on the real diagonal
        w = w + jnp.where((r == home) & (k < real), shift, 0).astype(w.dtype)
    w = w + jnp.where((k >= real) & (r == home), big, 0).astype(w.dtype)
    if vectors:
        # V = I, rows in the matrix's own column order (so V's first n rows are real ones)
        w = jnp.concatenate([w, (r == home).astype(w.dtype)], axis=0)
    return w, shift, scale


def _values(norms, plan: Plan):
    """Every slot's value on every device (a psum of one-hot pieces: no all-gather)."""
    dev = lax.axis_index(plan.names)
    full = jnp.zeros((plan.rows,), norms.dtype)
    full = lax.dynamic_update_slice(full, norms, (dev * 2 * plan.b,))
    return lax.psum(full, plan.names)


def _sorted_columns(block, want, plan: Plan):
    """Columns `want` (slot numbers, this device's outputs) of the slot-ordered `block`
    (... x 2b): a ring of P - 1 ppermutes, each device keeping what passes by.

    A rolled loop: unrolled, XLA's scheduler started every ppermute of the ring at once and
    kept all P travelling blocks alive; rolled, one block travels at a time."""
    p, b2 = plan.parts, 2 * plan.b
    dev = lax.axis_index(plan.names)
    ring = plan.perm([((i + 1) % p, i) for i in range(p)])

    def pick(step, travel, out):
        holder = (dev + step) % p
        here = (want // b2) == holder
        local = jnp.clip(want - holder * b2, 0, b2 - 1)
        return jnp.where(here, jnp.take(travel, local, axis=-1), out)

    def step(i, state):
        travel, out = state
        travel = lax.ppermute(travel, plan.mesh_order, ring)
        return travel, pick(i + 1, travel, out)

    out = pick(0, block, jnp.zeros(block.shape[:-1] + want.shape, block.dtype))
    _, out = lax.fori_loop(0, p - 1, step, (block, out))
    return out


def _kernel(block, *, plan: Plan, hermitian: bool, vectors: bool):
    block = block.astype(inexact(block.dtype))
    eps = float(jnp.finfo(block.dtype).eps)
    # eigh needs no V: B = A + shift I is positive definite, so its left singular vectors
    # (W's normalised columns) are its right ones, the eigenvectors (the polar factor of B
    # is I, and well conditioned: cond(B) <= 5). [W; V] would be twice the working memory.
    wv, shift, scale = _setup(block, plan, 1.5 if hermitian else 0.0,
                              vectors and not hermitian)
    rows, n = plan.rows, plan.n
    tol = float(np.sqrt(rows)) * eps
    wv = jacobi_sweeps.iterate(wv, plan, tol)
    values = _values(jnp.linalg.norm(wv[:rows], axis=0), plan)
    padded = values > shift + 1.25 * scale  # between the largest real value and d
    if vectors and not hermitian:  # small singular values: U and V orthogonal to the end
        wv = jacobi_sweeps.refine(wv, values, ~padded, plan, tol)
        values = _values(jnp.linalg.norm(wv[:rows], axis=0), plan)
    w = wv[:rows]
    norms = jnp.linalg.norm(w, axis=0)
    key = jnp.where(padded, jnp.inf, values if hermitian else -values)
    order = jnp.argsort(key, stable=True)[:n]
    out_values = values[order] - shift
    if not vectors:
        return (out_values,)
    dev = lax.axis_index(plan.names)
    mine = jnp.asarray(plan.work_columns())[dev]             # output columns here
    want = jnp.pad(order, (0, 1))[mine]  # no column (n): any slot, it lands in the padding
    if hermitian:  # B is positive definite: no column is zero
        u = w[:n] / jnp.where(norms > 0, norms, 1)
    else:
        u = jacobi_sweeps.left_vectors(w, values, ~padded, plan, eps)[:n]
    u = _sorted_columns(u, want, plan)
    if hermitian:
        return out_values, _column_to_row_blocks(u, plan)
    v = wv[rows:rows + n]
    want_vh = jnp.pad(order, (0, 1))[jnp.asarray(plan.vh_rows())[dev]]
    vec = _sorted_columns(v, want_vh, plan)
    return _column_to_row_blocks(u, plan), out_values, _vh_block(ct(vec), plan)


# -- the compiled program ------------------------------------------------------------------------
@program_cache(MEDIUM)
def _program(layout: Layout, plan: Plan, hermitian: bool, vectors: bool):
    mesh = layout.mesh
    spec = layout.spec

    def body(block):
        return _kernel(block, plan=plan, hermitian=hermitian, vectors=vectors)

    def run(data):
        values = PartitionSpec()
        specs = ((values,) if not vectors else (values, spec) if hermitian
                 else (spec, values, spec))
        data = physical.constrain(data, layout)
        outs = compat.shard_map(body, mesh=mesh, in_specs=(spec,), out_specs=specs)(data)
        return tuple(jax.lax.with_sharding_constraint(o, NamedSharding(mesh, s))
                     for o, s in zip(outs, specs))
    return jax.jit(run)


def _run(x: DistArray, plan: Plan, hermitian: bool, vectors: bool):
    n = plan.n
    values = make_out_layout(x.mesh, (n,), ((),))
    lay = x.layout
    outs = [values] if not vectors else [values, lay] if hermitian else [lay, values, lay]
    program = _program(x.layout, plan, hermitian, vectors)
    if compat.is_tracer(x.data):  # under a transformation: the derivative rule
        program = spectral_grads.differentiable(
            program, _program(x.layout, plan, hermitian, True), x.layout, hermitian, vectors)
    datas = program(x.data)
    return tuple(DistArray._new(d, o) for d, o in zip(datas, outs))


# -- entry points (None: keep the gathering path) ------------------------------------------
def eigh(x: DistArray):
    plan = plan_for(x)
    return None if plan is None else _run(x, plan, True, True)


def eigvalsh(x: DistArray):
    plan = plan_for(x)
    return None if plan is None else _run(x, plan, True, False)[0]


def svd(x: DistArray):
    plan = plan_for(x)
    return None if plan is None else _run(x, plan, False, True)


def svdvals(x: DistArray):
    plan = plan_for(x)
    return None if plan is None else _run(x, plan, False, False)[0]


kernel = _kernel  # one matrix's kernel, run per batch element by linalg/stacked.py
