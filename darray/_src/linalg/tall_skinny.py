"""Tall-skinny and short-wide factorizations that never gather the matrix (issue 50, item 1).

When the rule applies
  A matrix (or the matrix axes of a stack) whose long axis is split over the mesh and whose
  other axis is small: exactly one of the two matrix axes split, no halo, the small extent
  k <= MAX_SMALL (4096), and every block of the long axis at least k long
  (``ceil(long / parts) >= k``, i.e. long >= k * parts roughly). The row axis split is a
  tall-skinny matrix; the column axis split a short-wide one, handled as its conjugate
  transpose block by block (no data moves to transpose it). Batch axes may be split too; they
  stay local. Anything else returns None and the caller keeps the gathering path.

The algorithm (TSQR)
  Every device factors its own block, A_p = Q1_p R_p (LAPACK, k x k R_p). The R_p are
  all-gathered (P * k * k numbers, never the matrix) and every device factors the stacked
  (P k x k) matrix the same way, [R_0; ...; R_{P-1}] = Q2 R. Then A = Q R with
  Q_p = Q1_p @ Q2[p k:(p+1) k]: orthogonal to working precision like Householder QR for any
  condition number (unlike CholeskyQR, which loses orthogonality beyond 1/sqrt(eps)).
  svd is QR then the k x k SVD of R (U = Q @ U_R, applied as Q1_p @ (Q2_p @ U_R) so that no
  extra block is formed); svdvals, matrix_rank, matrix_norm and pinv follow from it.

Padding
  An uneven long axis is padded at its end. The padding is zeroed before the local QR, and
  Householder reflectors leave zero rows zero, so padding never reaches R. Zero rows stay zero
  in Q too as long as block 0 holds at least k real rows (the "every block >= k" rule): the
  zero rows of a short last block sit below row k of the stacked matrix.

Gradients
  Every step is jnp.linalg on local blocks plus an all-gather inside shard_map, so JAX's own
  rules differentiate it (the gathered R's transpose is a slice, then a psum of k x k pieces).

Layout of results
  The long factor (Q, U of a tall matrix, Vh of a wide one, pinv's transpose) is split as the
  input's long axis; the small factors (R, S, Vh of a tall matrix, U of a wide one) are
  replicated over the long axis' mesh axes; batch axes keep their split.
"""
from __future__ import annotations

import contextvars
import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.placement import physical
from darray._src.placement.physical import masked_physical

# (method, guard list) of the program being traced: "guarded" (lax.cond), "cholesky" (guards
# appended to the list, checked by run()) or "householder"; outside run(): guarded.
_QR_CONTEXT: contextvars.ContextVar = contextvars.ContextVar("tall_skinny_qr",
                                                             default=("guarded", []))
MAX_SMALL = 4096  # the small extent above which k x k pieces per device stop being "small"
HIGHEST = lax.Precision.HIGHEST  # no TF32 / bf16 passes in the small products on GPUs
GRAM_MARGIN = 0.5  # CholeskyQR2 while cond(A) < GRAM_MARGIN / sqrt(eps of the Gram dtype)


@dataclasses.dataclass(frozen=True)
class Plan:
    """How a fitting layout is factored: `wide` (the column axis is the split one), the mesh
    axes splitting the long axis (major to minor), and the matrix extents."""

    wide: bool
    names: tuple[str, ...]
    rows: int
    cols: int

    @property
    def small(self) -> int:
        return self.rows if self.wide else self.cols


def plan_for(x: DistArray) -> Plan | None:
    """The Plan for `x`, or None when the tall-skinny rule (module doc) does not apply."""
    lay = x.layout
    if lay.ndim < 2 or lay.has_halo or 0 in lay.shape:
        return None
    row_split, col_split = lay.split[-2], lay.split[-1]
    if bool(row_split) == bool(col_split):
        return None
    wide = bool(col_split)
    axis = lay.ndim - 1 if wide else lay.ndim - 2
    small = lay.shape[-2] if wide else lay.shape[-1]
    if lay.parts(axis) < 2 or small > MAX_SMALL or lay.chunk(axis) < small:
        return None
    if not (jnp.issubdtype(x.dtype, jnp.inexact) or jnp.issubdtype(x.dtype, jnp.integer)
            or x.dtype == np.bool_):
        return None
    return Plan(wide, tuple(col_split if wide else row_split), lay.shape[-2], lay.shape[-1])


def inexact(dtype) -> np.dtype:
    """The dtype jnp.linalg computes in for `dtype` (integers and bools: the default float)."""
    return np.dtype(jnp.result_type(dtype, 1.0))


# -- output layouts ------------------------------------------------------------------------------
def small_layout(x: DistArray, shape) -> Layout:
    """Batch axes as x's, the rest unsplit (the replicated small results)."""
    nb = x.ndim - 2
    return make_out_layout(x.mesh, tuple(x.shape[:nb]) + tuple(shape),
                           tuple(x.layout.split[:nb]) + ((),) * len(shape))


def long_layout(x: DistArray, plan: Plan, shape, long_at: int) -> Layout:
    """Batch axes as x's, matrix axes `shape` with the long axis (`long_at`: -2 or -1) split
    as x's long axis."""
    nb = x.ndim - 2
    split: list[tuple[str, ...]] = [(), ()]
    split[long_at] = plan.names
    return make_out_layout(x.mesh, tuple(x.shape[:nb]) + tuple(shape),
                           tuple(x.layout.split[:nb]) + tuple(split))


# -- running a block kernel ------------------------------------------------------------------------
@program_cache(MEDIUM)
def _program(kernel, in_layouts, out_layouts, static, method):
    body = functools.partial(kernel, **dict(static))
    mesh = in_layouts[0].mesh

    def flagged(*blocks):
        # the kernel's tsqr calls take `method` and report their CholeskyQR guards here
        flags: list = []
        token = _QR_CONTEXT.set((method, flags))
        try:
            outs = body(*blocks)
        finally:
            _QR_CONTEXT.reset(token)
        safe = jnp.all(jnp.stack([jnp.all(f) for f in flags])) if flags else jnp.array(True)
        return (*outs, safe[None])  # one per device: it may vary over split batch axes

    def run(*datas):
        # padding content is unspecified: zero it so it cannot reach R or a psum
        datas = [masked_physical(physical.constrain(d, lay), lay, 0)
                 for d, lay in zip(datas, in_layouts)]
        outs = compat.shard_map(flagged, mesh=mesh,
                                in_specs=tuple(lay.spec for lay in in_layouts),
                                out_specs=tuple(lay.spec for lay in out_layouts)
                                + (jax.sharding.PartitionSpec(mesh.axis_names),))(*datas)
        safe = jnp.all(outs[-1])
        return tuple(physical.constrain(o, lay) for o, lay in zip(outs, out_layouts)) + (safe,)
    return jax.jit(run)


def run(kernel, arrays, out_layouts, **static) -> tuple[DistArray, ...]:
    """kernel(*blocks, **static) on every device inside shard_map; outputs in `out_layouts`.

    Compiled once per (kernel, layouts, static); the kernel sees each array's physical block
    with its padding zeroed. Called eagerly, the QRs inside take CholeskyQR2 unguarded and the
    guard comes back to the host: only where it fails does the Householder program run (why:
    a lax.cond keeps both branches' temporaries, a Householder block QR costs 2 blocks).
    Traced (jit, grad), the guard is a lax.cond inside the one program."""
    layouts = (tuple(a.layout for a in arrays), tuple(out_layouts), tuple(sorted(static.items())))
    datas = [a.data for a in arrays]
    if compat.is_tracing() or any(compat.is_tracer(d) for d in datas):
        outs = _program(kernel, *layouts, "guarded")(*datas)[:-1]
    else:
        *outs, safe = _program(kernel, *layouts, "cholesky")(*datas)
        if not bool(safe):  # ill-conditioned or rank-deficient: Householder TSQR
            outs = _program(kernel, *layouts, "householder")(*datas)[:-1]
    return tuple(DistArray._new(o, lay) for o, lay in zip(outs, out_layouts))


# -- block kernels (inside shard_map) -----------------------------------------------------------
def ct(a):
    """Conjugate transpose of the matrix axes."""
    return jnp.conj(jnp.swapaxes(a, -1, -2))


def mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def tall_block(block, plan: Plan):
    """This device's block as a piece of a tall matrix (a wide matrix's conjugate transpose)."""
    a = block.astype(inexact(block.dtype))
    return ct(a) if plan.wide else a


CHUNK_BYTES = 512 << 10  # rows of a block streamed per step when Q1 is never formed whole
# (small: chunk buffers come from malloc arenas, which keep them; measured 4 MiB chunks left
# 0.3x the data more resident after a PCA fit than 512 KiB ones)


@dataclasses.dataclass(frozen=True)
class LocalQ:
    """This device's block of the orthogonal factor, Q_p = Q1_p @ piece, kept factored so that
    callers fold their k x k matrix into `piece` first and form one block-sized product only.

    Q1_p is `left` itself (Householder TSQR, the traced CholeskyQR2) or, when `left_inv` is
    given, ``left @ left_inv`` (eager CholeskyQR2: left is the data block A_p, left_inv R1^-1),
    which is never formed whole: it is rebuilt row chunk by row chunk (CHUNK_BYTES) where it
    is used, so that the block-sized temporaries are the results alone."""

    left: jax.Array
    left_inv: jax.Array | None
    piece: jax.Array

    def times(self, small, conj_transposed: bool = False):
        """Q_p @ small, or its conjugate transpose (``small^H Q_p^H``) when conj_transposed."""
        if self.left_inv is None:
            out = mm(self.left, mm(self.piece, small))
            return ct(out) if conj_transposed else out
        right = mm(self.piece, small)
        step = lambda c: mm(mm(c, self.left_inv), right)  # noqa: E731
        return _map_row_chunks(self.left, step, conj_transposed)

    def ct_times(self, b):
        """Q_p^H b for this device's rows b (summing over devices is the caller's)."""
        if self.left_inv is None:
            return mm(ct(self.piece), mm(ct(self.left), b))
        inv = self.left_inv
        q1_b = _sum_row_chunks(self.left, b, lambda c, bc: mm(ct(mm(c, inv)), bc))
        return mm(ct(self.piece), q1_b)


def _chunk_rows(a) -> int:
    """Rows per streamed chunk: about CHUNK_BYTES of `a`, at least k, at most the block."""
    n, k = a.shape[-2], a.shape[-1]
    per_row = max(1, a.size // max(n, 1)) * a.dtype.itemsize
    return max(1, min(n, max(k, CHUNK_BYTES // max(per_row, 1))))


def _map_row_chunks(a, step, conj_transposed):
    """step(chunk of a's rows) for every row chunk, written into one block-sized result (its
    conjugate transpose when conj_transposed). The last chunk is moved back to end at the
    block's end; rows it repeats are recomputed to the same values."""
    n, s = a.shape[-2], _chunk_rows(a)
    axis = -1 if conj_transposed else -2

    def chunk(i):
        start = jnp.minimum(i * s, n - s)
        out = step(lax.dynamic_slice_in_dim(a, start, s, axis=a.ndim - 2))
        return start, ct(out) if conj_transposed else out

    _, first = chunk(0)
    if s == n:
        return first
    shape = list(first.shape)
    shape[axis] = n
    out = lax.dynamic_update_slice_in_dim(jnp.zeros(shape, first.dtype), first, 0,
                                          axis=len(shape) + axis)

    def body(i, out):
        start, piece = chunk(i)
        return lax.dynamic_update_slice_in_dim(out, piece, start, axis=len(shape) + axis)
    return lax.fori_loop(1, -(-n // s), body, out)


def _sum_row_chunks(a, b, step):
    """The sum over row chunks of step(a chunk, b chunk) (b: None, or rows matching a's); a
    chunk moved back to end at the block's end has the rows it repeats zeroed first."""
    n, s = a.shape[-2], _chunk_rows(a)

    def chunk(i):
        start = jnp.minimum(i * s, n - s)
        fresh = (start + jnp.arange(s) >= i * s)[:, None]
        c = jnp.where(fresh, lax.dynamic_slice_in_dim(a, start, s, axis=a.ndim - 2), 0)
        if b is None:
            return step(c, None)
        return step(c, lax.dynamic_slice_in_dim(b, start, s, axis=b.ndim - 2))

    total = chunk(0)
    if s == n:
        return total
    return lax.fori_loop(1, -(-n // s), lambda i, acc: acc + chunk(i), total)


def tsqr(a, names):
    """QR of the tall matrix whose row blocks the devices hold: (LocalQ, R) with this device's
    block of Q (left factored, see LocalQ) and R (k x k) on every device.

    CholeskyQR2 (block products and k x k factorizations only) when its condition-number
    guard holds, else Householder TSQR (module doc, "The algorithm"). The guard looks at the
    first Cholesky factor only, so that no block is formed before the branch (XLA keeps a
    branch's temporaries apart from values made before it). Eagerly (run() checks the guard
    on the host) CholeskyQR2 streams Q1 = A R1^-1 by row chunks: same products, same
    rounding, no block-sized Q1."""
    method, flags = _QR_CONTEXT.get()
    if method == "householder":
        return _householder_q(a, names)
    r1, r1_inv, safe = _cholesky_guard(a, names)
    if method == "cholesky":  # run() checks the guard on the host
        flags.append(safe)
        return _streamed_cholesky_qr2(a, names, r1, r1_inv)
    q1, piece, r = lax.cond(safe, lambda: _cholesky_qr2(a, names, r1, r1_inv),
                            lambda: householder_tsqr(a, names))
    return LocalQ(q1, None, piece), r


def _householder_q(a, names):
    q1, piece, r = householder_tsqr(a, names)
    return LocalQ(q1, None, piece), r


def _gram_factor(b, names, work, eye):
    """The upper Cholesky factor of B^H B (summed over the devices) and its inverse."""
    gram = lax.psum(jnp.matmul(ct(b), b, precision=HIGHEST, preferred_element_type=work), names)
    upper = ct(jnp.linalg.cholesky(gram))
    return upper, jax.scipy.linalg.solve_triangular(upper, eye, lower=False)


def _cholesky_guard(a, names):
    """R1 = chol(A^H A), its inverse and whether CholeskyQR2 is safe (replicated: from psums).

    Why CholeskyQR2: its block work is two Gram products and one product by a k x k matrix,
    which XLA runs as matmuls; Householder QR of each block is a LAPACK call per device, and
    a multithreaded BLAS called from the device threads of a CPU mesh oversubscribes the
    cores (measured: 8192 x 32 float32 blocks on 8 devices, 29 s vs 1.1 s; scikit-learn's PCA
    on darray spent all its time there). The Grams and small factors are float64 for
    float32/complex64 data when x64 is on. Safe: every factor finite and cond(R1) (= cond(A))
    under 0.01 / eps of the data and GRAM_MARGIN / sqrt(eps) of the Gram's dtype (CholeskyQR's
    first pass errs by cond^2 eps; the second pass then restores orthogonality to working
    precision). Float32 Grams (x64 off): 0.5 / sqrt(eps) = 1450; measured at 2^20 x 32, cond
    1400: orthogonality 6e-7, singular values within 1.2e-6, as Householder's (0.1 sent
    scikit-learn's LDA data, cond 458, to the per-device LAPACK path: 13 s vs 0.4 s)."""
    k = a.shape[-1]
    work = gram_dtype(a.dtype)
    eye = jnp.broadcast_to(jnp.eye(k, dtype=work), a.shape[:-2] + (k, k))
    r1, r1_inv = _gram_factor(a, names, work, eye)
    s = jnp.linalg.svdvals(r1)
    limit = min(0.01 / float(np.finfo(a.dtype).eps),
                GRAM_MARGIN / float(np.finfo(work).eps) ** 0.5)
    safe = jnp.all(jnp.isfinite(r1_inv)) & jnp.all(s[..., -1] * limit > s[..., 0])
    return r1, r1_inv, safe


def _cholesky_qr2(a, names, r1, r1_inv):
    """Q1 = A R1^-1, R2 = chol(Q1^H Q1): Q = Q1 R2^-1 (returned as the pair), R = R2 R1."""
    eye = jnp.broadcast_to(jnp.eye(r1.shape[-1], dtype=r1.dtype), r1.shape)
    q1 = mm(a, r1_inv.astype(a.dtype))
    r2, r2_inv = _gram_factor(q1, names, r1.dtype, eye)
    r = jnp.triu(mm(r2, r1)).astype(a.dtype)
    # the branches of tsqr's cond must agree on what varies across devices
    return q1, lax.pcast(r2_inv.astype(a.dtype), names, to="varying"), r


def _streamed_cholesky_qr2(a, names, r1, r1_inv):
    """_cholesky_qr2 with Q1 = A R1^-1 made row chunk by row chunk for the second Gram and
    left factored in the LocalQ (it is rebuilt chunk by chunk where it is applied)."""
    eye = jnp.broadcast_to(jnp.eye(r1.shape[-1], dtype=r1.dtype), r1.shape)
    inv = r1_inv.astype(a.dtype)
    work = r1.dtype
    gram = _sum_row_chunks(a, None, lambda c, _: _gram_of(mm(c, inv), work))
    r2 = ct(jnp.linalg.cholesky(lax.psum(gram, names)))
    r2_inv = jax.scipy.linalg.solve_triangular(r2, eye, lower=False)
    r = jnp.triu(mm(r2, r1)).astype(a.dtype)
    return LocalQ(a, inv, r2_inv.astype(a.dtype)), r


def _gram_of(b, work):
    return jnp.matmul(ct(b), b, precision=HIGHEST, preferred_element_type=work)


def gram_dtype(dtype) -> np.dtype:
    """The dtype of the Gram matrices: float64 (complex128) for narrower data when jax has
    x64 on, else the data's own."""
    dtype = np.dtype(dtype)
    wide = np.dtype(np.complex128 if dtype.kind == "c" else np.float64)
    return wide if jax.config.read("jax_enable_x64") and dtype.itemsize < wide.itemsize else dtype


def householder_tsqr(a, names):
    """TSQR (module doc): the local blocks factored by LAPACK, then the stacked R_p."""
    k = a.shape[-1]
    q1, r1 = jnp.linalg.qr(a)
    # `invarying`: every device gets the same stacked matrix, hence the same (replicated) R
    stacked = lax.all_gather(r1, names, axis=a.ndim - 2, tiled=True, to="invarying")
    q2, r = jnp.linalg.qr(stacked)
    piece = lax.dynamic_slice_in_dim(q2, lax.axis_index(names) * k, k, axis=q2.ndim - 2)
    return q1, piece, r


def _qr_tall(block, *, plan):
    q, r = tsqr(tall_block(block, plan), plan.names)
    return q.times(jnp.eye(r.shape[-1], dtype=r.dtype)), r


def _qr_wide(block, *, plan):
    """QR of a short-wide m x n matrix as LAPACK computes it: Q from the leading m x m block
    (which block 0 holds whole), R = Q^H A block by block, exactly triangular in front."""
    a = block.astype(inexact(block.dtype))
    m = plan.rows
    first = lax.axis_index(plan.names) == 0
    lead = lax.psum(jnp.where(first, a[..., :m], 0), plan.names)  # m x m, from block 0
    q, r_lead = jnp.linalg.qr(lead)
    r = mm(ct(q), a)
    r = jnp.where(first, r.at[..., :m].set(r_lead), r)
    return q, r


def _svd(block, *, plan):
    q, r = tsqr(tall_block(block, plan), plan.names)
    u_r, s, vh_r = jnp.linalg.svd(r, full_matrices=False)
    long = q.times(u_r)                      # this block of Q @ U_R
    if plan.wide:                            # A^H = (Q U_R) S Vh_R: A = Vh_R^H S (Q U_R)^H
        return ct(vh_r), s, ct(long)
    return long, s, vh_r


def _svdvals(block, *, plan):
    _, r = tsqr(tall_block(block, plan), plan.names)
    return (jnp.linalg.svdvals(r),)


def _pinv(block, *, plan, rtol):
    # pinv(Q R) = pinv(R) Q^H; for a wide A = (Q R)^H, pinv(A) = Q pinv(R)^H
    q, r = tsqr(tall_block(block, plan), plan.names)
    p_r = jnp.linalg.pinv(r, rtol=rtol)
    return (q.times(ct(p_r), conj_transposed=not plan.wide),)


def _matrix_rank(block, *, plan, rtol):
    _, r = tsqr(tall_block(block, plan), plan.names)
    s = jnp.linalg.svdvals(r)
    return (jnp.sum(s > rtol * s[..., :1], axis=-1),)


def _matrix_norm(block, *, plan, ord, keepdims):
    _, r = tsqr(tall_block(block, plan), plan.names)
    s = jnp.linalg.svdvals(r)
    out = {2: s[..., 0], -2: s[..., -1], "nuc": jnp.sum(s, axis=-1)}[ord]
    return (out[..., None, None] if keepdims else out,)


# -- the namespace's entry points (None: the layout does not fit; keep the gathering path) ---------
def _default_rtol(plan: Plan, dtype, factor: float) -> float:
    return factor * max(plan.rows, plan.cols) * float(np.finfo(inexact(dtype)).eps)


def _static_rtol(rtol):
    """A Python float rtol, or None when rtol is an array (left to the gathering path)."""
    if isinstance(rtol, (bool, np.bool_)) or not isinstance(rtol, (int, float, np.floating,
                                                                     np.integer)):
        return None
    return float(rtol)


def qr(x: DistArray, mode: str):
    plan = plan_for(x)
    if plan is None:
        return None
    m, n = plan.rows, plan.cols
    if plan.wide:  # m < n: 'reduced' and 'complete' agree (Q is m x m)
        return run(_qr_wide, [x], (small_layout(x, (m, m)), x.layout), plan=plan)
    if mode != "reduced":  # a complete Q is m x m: numpy's answer needs the gathering path
        return None
    return run(_qr_tall, [x], (x.layout, small_layout(x, (n, n))), plan=plan)


def svd(x: DistArray, full_matrices: bool):
    plan = plan_for(x)
    if plan is None or full_matrices:  # a full U (or Vh) is long x long: gathering path
        return None
    k = plan.small
    small = small_layout(x, (k, k))
    outs = (small, small_layout(x, (k,)), x.layout) if plan.wide else \
        (x.layout, small_layout(x, (k,)), small)
    return run(_svd, [x], outs, plan=plan)


def svdvals(x: DistArray):
    plan = plan_for(x)
    if plan is None:
        return None
    return run(_svdvals, [x], (small_layout(x, (plan.small,)),), plan=plan)[0]


def pinv(x: DistArray, rtol):
    plan = plan_for(x)
    value = _default_rtol(plan, x.dtype, 10.0) if plan is not None and rtol is None \
        else _static_rtol(rtol)  # jnp's default cutoff, from the whole matrix's shape
    if plan is None or value is None:
        return None
    out = long_layout(x, plan, (plan.cols, plan.rows), -2 if plan.wide else -1)
    return run(_pinv, [x], (out,), plan=plan, rtol=value)[0]


def matrix_rank(x: DistArray, rtol):
    plan = plan_for(x)
    value = _default_rtol(plan, x.dtype, 1.0) if plan is not None and rtol is None \
        else _static_rtol(rtol)
    if plan is None or value is None:
        return None
    return run(_matrix_rank, [x], (small_layout(x, ()),), plan=plan, rtol=value)[0]


def matrix_norm(x: DistArray, ord, keepdims: bool):
    """ord 2, -2 and 'nuc' (the singular-value norms); the others are plain reductions that
    XLA partitions without a gather, so they stay on the general path (None)."""
    if isinstance(ord, str) and ord != "nuc" or not isinstance(ord, str) and ord not in (2, -2):
        return None
    plan = plan_for(x)
    if plan is None:
        return None
    out = small_layout(x, (1, 1) if keepdims else ())
    return run(_matrix_norm, [x], (out,), plan=plan, ord=ord, keepdims=bool(keepdims))[0]
