"""Two-operand contractions that never gather an operand (issue 50 item 2, issue 49 item 2).

`contract(a, b, ta, tb, out)` computes ``einsum(f"{ta},{tb}->{out}", a, b)`` on the devices'
blocks inside one shard_map, choosing by the splits of the operands one of these plans:

``local``
  No contracted label is split and every output label keeps its operand's split: each device
  contracts its own blocks, no communication.
``psum``
  The one split contracted label k is split the same way in both operands, or in one operand
  only over mesh axes that split no output axis of the other: a local partial product (the
  unsplit operand sliced to the matching piece of k) and one all-reduce over k's mesh axes
  (X.T @ X of a row-split X, vecdot along a split axis). The output is replicated over them.
``ring_a`` / ``ring_b``
  k is split in one operand only, over mesh axes that also split the other operand's output
  axes (A row-split @ B row-split): the split operand's k-blocks travel around a ring of
  collective-permutes over those mesh axes; at each step a device multiplies the block it
  holds with the matching piece of its own (unsplit-k) operand and accumulates its output.
``ring_n``
  No contracted label split, but a free label of b is split over mesh axes that an output axis
  of a already uses (a batched matmul with rows and columns over the same mesh axis): b's
  blocks of that label travel around a ring and each device writes the output columns of the
  block it holds; that output axis comes back unsplit. A contracted label k split as the psum
  plan allows (``tensordot(a, b, axes=([0], [0]))`` of two (x, y)-split matrices: k over x,
  b's columns over y) joins in (`Plan.summed`): both operands are cut to the same piece of k,
  the ring runs on the pieces, and one all-reduce over k's mesh axes adds the partial outputs.
  A device then holds its output block, one block of b in flight and one slab: about 2 blocks
  of temporaries, where a SUMMA with a whole label held b's panels whole (8.9 blocks, 1.7x
  XLA's time on (1021, 1031) float32 on 2x4; now 2.2 blocks and XLA's time).
``summa``
  k is split in both operands over different mesh axes (A and B split over rows and columns of
  a 2-D mesh), or k is split where the psum plan cannot sum it and a label of b must come
  back unsplit: a panel loop over
  a's k-blocks. Panel t of a is broadcast over a's k mesh axes by a masked psum (the owner
  contributes, the others add zeros), the matching rows of b are cut from whichever devices
  along b's k mesh axes hold them (a masked local gather, then a psum over those axes), and
  every device accumulates its own output block. Panels are as
  wide as the narrower of the two operands' k-blocks. With a label of b that the output wants
  unsplit (einsum's rule: a mesh axis serves the first label that splits it), b's panel is
  also assembled whole along that label (`Plan.whole`).

Every plan holds at most one operand block, one panel and the output block at a time: no
all-gather, a few blocks of temporaries. Padding of uneven splits holds garbage (NaN even):
the kernels zero the padding cells of the contracted label where they read them, so they
never reach a sum (padding of the other labels only reaches the output's padding).

Anything else (a label split in one operand's batch and differently in the other's, broadcast
labels of extent 1, repeated labels, two split contracted labels, a split label summed within
one operand, halos) returns None: the caller keeps its general path. Small problems return
None too (`MIN_ELEMENTS`, `MIN_STEP_WORK`): one XLA program is faster there.

Output layout: each output label keeps the split it has in its operand (a's first); a label of
b whose mesh axes a's output labels already use comes back unsplit. For a matmul that is
darray's rule: rows split as a's rows, columns as b's columns, batch axes as the batch. A
caller may pass the layout it promises (`target`): labels of b may then come back unsplit
where b splits them (ring_n, or SUMMA with a whole label).

Gradients: JAX differentiates the shard_map (the transpose of a ring of ppermutes is the
reverse ring, of a psum broadcast a psum), so `jax.grad` through these programs equals
single-device jax's and the cotangents keep the operands' layouts.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.base import compat
from darray._src.base.program_cache import MEDIUM, program_cache
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout
from darray._src.placement import physical

# Size thresholds below which XLA's single program on the logical arrays is faster (measured
# with benchmarks/bench_matmul.py on 8 CPU devices, where every collective step is a
# rendezvous of all device threads): the one-collective plans (local, psum) need this many
# elements in both operands and the output together ...
MIN_ELEMENTS = 1 << 15
# ... and the loop plans (rings, SUMMA) this many multiply-adds per device and step: a ring of
# 512^2 row blocks over 8 devices (2^21 per step) ran 3x slower than XLA's gather, 4096x1024
# (2^26) 1.8x faster, SUMMA of 384^2 on 2x4 (2^21) already 1.2x faster.
MIN_STEP_WORK = 1 << 23


@dataclasses.dataclass(frozen=True)
class Plan:
    """How one contraction runs: the plan kind (module doc), the block-level einsum, the
    contracted label k that is split (or the ring label of b for ring_n), the layouts, and
    for SUMMA the label of b assembled whole in each panel, for ring_n the split contracted
    label summed after the ring (None: none)."""

    kind: str
    subscripts: str
    label: str  # '' for the local plan
    a_layout: Layout
    b_layout: Layout
    out_layout: Layout
    conj_a: bool
    dtype: np.dtype
    whole: str | None = None  # summa: a label of b split in b, unsplit in the output
    summed: str | None = None  # ring_n: a split contracted label, summed by a psum


@functools.lru_cache(maxsize=1024)  # plain data; read on every eager call (about 50 us)
def _plan_for(la: Layout, lb: Layout, dtype_a, dtype_b, ta: str, tb: str, to: str,
              conj_a: bool, min_elements: int, target, min_step_work: int) -> Plan | None:
    mesh = la.mesh
    if lb.mesh != mesh or la.has_halo or lb.has_halo or mesh.size < 2:
        return None
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or len(set(to)) != len(to):
        return None
    if not set(to) <= set(ta) | set(tb) or len(ta) != la.ndim or len(tb) != lb.ndim:
        return None
    if 0 in la.shape or 0 in lb.shape:
        return None
    dtype = np.dtype(jnp.result_type(dtype_a, dtype_b))
    if dtype == np.bool_ or not (jnp.issubdtype(dtype, jnp.number)):
        return None
    sa = dict(zip(ta, la.split))
    sb = dict(zip(tb, lb.split))
    na = dict(zip(ta, la.shape))
    nb = dict(zip(tb, lb.shape))
    shared = [lab for lab in ta if lab in sb]
    for lab in shared:
        if na[lab] != nb[lab]:
            return None  # broadcasting (extent 1 against n): the general path
        if lab in to and sa[lab] != sb[lab]:
            return None  # a batch label split differently: the general path moves one
    # labels summed within one operand must be local
    for lab in ta:
        if lab not in to and lab not in sb and sa[lab]:
            return None
    for lab in tb:
        if lab not in to and lab not in sa and sb[lab]:
            return None
    contracted = [lab for lab in shared if lab not in to]
    split_k = [lab for lab in contracted if sa[lab] or sb[lab]]
    if len(split_k) > 1:
        return None
    # output splits: a's labels first, b's where their mesh axes are still free (or as the
    # caller's `target` asks: a's labels as a's, b's as b's or unsplit)
    used_a = {name for lab in to if lab in sa for name in sa[lab]}
    out_split, ring_n = [], []
    for i, lab in enumerate(to):
        want = None if target is None else tuple(target[i])
        have = tuple(sa[lab]) if lab in sa else tuple(sb[lab])
        if want is None:
            want = () if lab not in sa and set(have) & used_a else have
        if want != have and (lab in sa or want):
            return None
        out_split.append(want)
        if want != have:
            ring_n.append(lab)
    shape = tuple(na[lab] if lab in na else nb[lab] for lab in to)
    out_layout = Layout(shape, mesh, tuple(tuple(s) for s in out_split), ((0, 0),) * len(to))
    if math.prod(la.shape) + math.prod(lb.shape) + math.prod(shape) < min_elements:
        return None
    subscripts = f"{ta},{tb}->{to}"
    make = lambda kind, label: Plan(kind, subscripts, label, la, lb, out_layout,  # noqa: E731
                                    conj_a, dtype)
    if len(ring_n) > 1:
        return None
    # a ring over mesh axes the output does not split is not planned (with a summed label,
    # they could split a's k, whose piece must stay put while b's blocks travel)
    ring_fits = bool(ring_n) and set(sb[ring_n[0]]) <= used_a
    if ring_n and split_k:
        k = split_k[0]
        if ring_fits and _choose(make, split_k, [], sa, sb, to, out_split).kind == "psum":
            # k's partial sums meet in one psum after a ring that writes the output slabs
            plan = dataclasses.replace(make("ring_n", ring_n[0]), summed=k)
        else:
            plan = dataclasses.replace(make("summa", k), whole=ring_n[0])
    elif ring_n and not ring_fits:
        return None
    else:
        plan = _choose(make, split_k, ring_n, sa, sb, to, out_split)
    if plan.kind in ("local", "psum") or not min_elements:
        return plan
    return plan if _step_work(plan) >= min_step_work else None


def _choose(make, split_k, ring_n, sa, sb, to, out_split) -> Plan:
    if ring_n:
        return make("ring_n", ring_n[0])
    if not split_k:
        return make("local", "")
    k = split_k[0]
    ga, gb = tuple(sa[k]), tuple(sb[k])
    out_a = {n for lab in to if lab in sa for n in sa[lab]}
    out_b = {n for lab, s in zip(to, out_split) if lab not in sa for n in s}
    if ga == gb:
        return make("psum", k)
    if not gb:
        return make("psum" if not set(ga) & out_b else "ring_a", k)
    if not ga:
        return make("psum" if not set(gb) & out_a else "ring_b", k)
    return make("summa", k)


def _step_work(plan: Plan) -> int:
    """Multiply-adds per device in one step of a loop plan: the product of the extents of
    every label in the blocks one step multiplies."""
    ta, rest = plan.subscripts.split(",")
    tb = rest.split("->")[0]
    la, lb = plan.a_layout, plan.b_layout
    extent = {lab: lb.chunk(i) for i, lab in enumerate(tb)}
    extent.update({lab: la.chunk(i) for i, lab in enumerate(ta)})
    if plan.kind == "summa":
        k = plan.label
        extent[k] = min(la.chunk(ta.index(k)), lb.chunk(tb.index(k)))
        if plan.whole:
            extent[plan.whole] = lb.shape[tb.index(plan.whole)]
    elif plan.kind == "ring_b":
        extent[plan.label] = lb.chunk(tb.index(plan.label))
    elif plan.summed:  # each operand cut to the narrower piece of k
        k = plan.summed
        extent[k] = min(la.chunk(ta.index(k)), lb.chunk(tb.index(k)))
    return math.prod(extent.values())


# -- block helpers (inside shard_map) -----------------------------------------------------------
def _block_index(names, mesh):
    """This device's block number over the mesh axes `names` (major first, as Layout counts)."""
    sizes = dict(mesh.shape)
    index = 0
    for name in names:
        index = index * sizes[name] + lax.axis_index(name)
    return index


def _zero_padding(x, axis: int, layout: Layout):
    """x's block with the padding cells of `axis` (split in `layout`) set to zero: they hold
    garbage (NaN even), and the other operand's zeros would not cancel it."""
    c = x.shape[axis]
    if layout.parts(axis) * c == layout.shape[axis]:
        return x
    cells = _block_index(layout.split[axis], layout.mesh) * c + jnp.arange(c)
    mask = (cells < layout.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)])
    return jnp.where(mask, x, jnp.zeros((), x.dtype))


def _padded(x, axis: int, length: int):
    if x.shape[axis] >= length:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, length - x.shape[axis])
    return jnp.pad(x, widths)


def _ring_pairs(parts: int):
    # block j+1 sends to block j: after s steps block j holds block (j + s) % parts
    return [((j + 1) % parts, j) for j in range(parts)]


def _kernel(a, b, *, plan: Plan):
    ta, rest = plan.subscripts.split(",")
    tb, to = rest.split("->")
    a = a.astype(plan.dtype)
    b = b.astype(plan.dtype)
    if plan.conj_a:
        a = jnp.conj(a)

    def product(x, y):
        return jnp.einsum(plan.subscripts, x, y, preferred_element_type=plan.dtype)

    if plan.kind == "local":
        return product(a, b)
    k = plan.label
    if plan.kind == "psum":
        a, b, names = _cut_to_piece(a, b, plan, ta, tb, k)
        return lax.psum(product(a, b), names)
    if plan.kind in ("ring_a", "ring_b"):
        return _ring_k(a, b, plan, ta, tb, product)
    if plan.kind == "ring_n":
        if plan.summed is None:
            return _ring_n(a, b, plan, tb, to, product)
        a, b, names = _cut_to_piece(a, b, plan, ta, tb, plan.summed)
        return lax.psum(_ring_n(a, b, plan, tb, to, product), names)
    return _summa(a, b, plan, ta, tb, product)


def _ring_k(a, b, plan: Plan, ta: str, tb: str, product):
    """The operand whose k is split travels around the ring of those of its k mesh axes that
    split the output; over the others (which leave the output replicated) each device sums
    what its ring saw and a psum adds the rings' partial sums."""
    mesh = plan.a_layout.mesh
    sizes = dict(mesh.shape)
    k = plan.label
    ia, ib = ta.index(k), tb.index(k)
    moving_a = plan.kind == "ring_a"
    lay, at = (plan.a_layout, ia) if moving_a else (plan.b_layout, ib)
    names = lay.split[at]
    used = set(plan.out_layout.used_mesh_axes)
    ring = tuple(n for n in names if n in used)
    rest = tuple(n for n in names if n not in used)
    parts = math.prod(sizes[n] for n in ring)
    c = (a if moving_a else b).shape[at]
    staying = _padded(b, ib, lay.parts(at) * c) if moving_a else \
        _padded(a, ia, lay.parts(at) * c)
    axis = ib if moving_a else ia
    me = _block_index(ring, mesh)
    pairs = _ring_pairs(parts)

    def held(s):
        """The k-block this device holds after s steps of the ring."""
        r, digits = (me + s) % parts, {}
        for n in reversed(ring):
            r, digits[n] = r // sizes[n], r % sizes[n]
        index = 0
        for n in names:
            index = index * sizes[n] + (digits[n] if n in digits else lax.axis_index(n))
        return index

    def step(s, buf):
        piece = lax.dynamic_slice_in_dim(staying, held(s) * c, c, axis=axis)
        return product(buf, piece) if moving_a else product(piece, buf)

    def body(s, carry):
        acc, buf = carry
        buf = compat.ppermute_blocks(buf, ring, pairs, mesh)
        return acc + step(s, buf), buf

    moving = _zero_padding(a, ia, plan.a_layout) if moving_a else \
        _zero_padding(b, ib, plan.b_layout)
    acc, _ = lax.fori_loop(1, parts, body, (step(0, moving), moving))
    return _summed(acc, rest)


def _cut_to_piece(a, b, plan: Plan, ta: str, tb: str, k: str):
    """(a, b, mesh axes): both operands' blocks over the same piece of the split contracted
    label `k` (an unsplit side cut to the split one's piece, the padding zeroed), and the
    mesh axes that split it (a's where both do), over which the partial products are
    summed: the psum plan, and ring_n's `Plan.summed`."""
    mesh = plan.a_layout.mesh
    ia, ib = ta.index(k), tb.index(k)
    ga, gb = plan.a_layout.split[ia], plan.b_layout.split[ib]
    if ga:
        a = _zero_padding(a, ia, plan.a_layout)
    if gb:
        b = _zero_padding(b, ib, plan.b_layout)
    if ga and not gb:
        c = a.shape[ia]
        b = lax.dynamic_slice_in_dim(_padded(b, ib, plan.a_layout.parts(ia) * c),
                                     _block_index(ga, mesh) * c, c, axis=ib)
    elif gb and not ga:
        c = b.shape[ib]
        a = lax.dynamic_slice_in_dim(_padded(a, ia, plan.b_layout.parts(ib) * c),
                                     _block_index(gb, mesh) * c, c, axis=ia)
    return a, b, tuple(ga or gb)


def _ring_n(a, b, plan: Plan, tb: str, to: str, product):
    """b's blocks of the label n (unsplit in the output) travel around their ring; each device
    writes the output slab of the block it holds."""
    mesh = plan.a_layout.mesh
    n = plan.label
    ib, io = tb.index(n), to.index(n)
    names = plan.b_layout.split[ib]
    parts = plan.b_layout.parts(ib)
    c = b.shape[ib]
    me = _block_index(names, mesh)
    pairs = _ring_pairs(parts)
    first = product(a, b)
    shape = list(first.shape)
    shape[io] = parts * c
    acc = lax.dynamic_update_slice_in_dim(jnp.zeros(shape, first.dtype), first, me * c, axis=io)

    def body(s, carry):
        acc, buf = carry
        buf = compat.ppermute_blocks(buf, names, pairs, mesh)
        slab = product(a, buf)
        return lax.dynamic_update_slice_in_dim(acc, slab, ((me + s) % parts) * c, axis=io), buf

    acc, _ = lax.fori_loop(1, parts, body, (acc, b))
    return lax.slice_in_dim(acc, 0, plan.out_layout.shape[io], axis=io)


def _piece_of(x, axis: int, names, start, width: int, extent: int, mesh):
    """The cells [start, start + width) of the contracted axis that this device's block holds
    (zeros elsewhere, and past the logical `extent`): summed over the mesh axes `names` that
    split the axis, the pieces give the whole panel (a masked broadcast, never an all-gather).
    """
    c = x.shape[axis]
    cells = start + jnp.arange(width)
    rows = cells - _block_index(names, mesh) * c
    valid = (rows >= 0) & (rows < c) & (cells < extent)
    piece = jnp.take(x, jnp.clip(rows, 0, c - 1), axis=axis)
    mask = valid.reshape([-1 if i == axis else 1 for i in range(x.ndim)])
    return jnp.where(mask, piece, jnp.zeros((), x.dtype))


def _summed(x, names):
    return lax.psum(x, tuple(names)) if names else x


def _summa(a, b, plan: Plan, ta: str, tb: str, product):
    """Panels of k as wide as the smaller of the two operands' k-blocks, each assembled on
    every device from the devices holding it (a over a's k mesh axes, b over b's; with
    `plan.whole`, b's pieces are also placed at their offset along that label and summed over
    its mesh axes, so that the panel holds all of it)."""
    mesh = plan.a_layout.mesh
    k = plan.label
    ia, ib = ta.index(k), tb.index(k)
    ga, gb = plan.a_layout.split[ia], plan.b_layout.split[ib]
    width = min(a.shape[ia], b.shape[ib])
    extent = plan.a_layout.shape[ia]
    count = -(-extent // width)
    whole = plan.whole
    if whole:
        iw = tb.index(whole)
        names_w = plan.b_layout.split[iw]
        cw = b.shape[iw]
        offset = _block_index(names_w, mesh) * cw

    def b_panel(start):
        piece = _piece_of(b, ib, gb, start, width, extent, mesh)
        if not whole:
            return _summed(piece, gb)
        shape = list(piece.shape)
        shape[iw] = plan.b_layout.parts(iw) * cw
        placed = lax.dynamic_update_slice_in_dim(jnp.zeros(shape, piece.dtype), piece, offset,
                                                 axis=iw)
        placed = _summed(placed, tuple(gb) + tuple(names_w))
        return lax.slice_in_dim(placed, 0, plan.b_layout.shape[iw], axis=iw)

    def panel(t):
        start = t * width
        return product(_summed(_piece_of(a, ia, ga, start, width, extent, mesh), ga),
                       b_panel(start))

    return lax.fori_loop(1, count, lambda t, acc: acc + panel(t), panel(0))


# -- running ------------------------------------------------------------------------------------
@program_cache(MEDIUM)
def _program(plan: Plan):
    mesh = plan.a_layout.mesh
    lays = (plan.a_layout, plan.b_layout)

    def body(a, b):
        return _kernel(a, b, plan=plan)

    def run(a, b):
        # the kernels zero the padding of the contracted axis (the only one that reaches a
        # sum) block by block, where they read it
        a, b = (physical.constrain(d, lay) for d, lay in zip((a, b), lays))
        out = compat.shard_map(body, mesh=mesh, in_specs=(lays[0].spec, lays[1].spec),
                               out_specs=plan.out_layout.spec)(a, b)
        return physical.constrain(out, plan.out_layout)
    return jax.jit(run)


def plan_contraction(a: DistArray, b: DistArray, ta: str, tb: str, to: str, *,
                     conj_a: bool = False, min_elements: int | None = None,
                     target=None) -> Plan | None:
    """The Plan for ``einsum(f"{ta},{tb}->{to}", a, b)`` (a conjugated if `conj_a`), or None
    when the layouts do not fit one (module doc) or the problem is small: below
    `min_elements` (default MIN_ELEMENTS) elements, or a loop plan below MIN_STEP_WORK
    multiply-adds per step. ``min_elements=0`` turns both size thresholds off. `target`: the
    output split the caller promises (one tuple of mesh axes per output label); a label of b
    split in b may come back unsplit there, anything else must equal its operand's split."""
    if target is not None:
        target = tuple(tuple(s) for s in target)
    return _plan_for(a.layout, b.layout, np.dtype(a.dtype), np.dtype(b.dtype), ta, tb, to,
                     bool(conj_a), MIN_ELEMENTS if min_elements is None else min_elements,
                     target, MIN_STEP_WORK)


def run_plan(plan: Plan, a: DistArray, b: DistArray) -> DistArray:
    """Run a Plan made for these operands' layouts."""
    return DistArray._new(_program(plan)(a.data, b.data), plan.out_layout)


def contract(a: DistArray, b: DistArray, ta: str, tb: str, to: str, *, conj_a: bool = False,
             min_elements: int | None = None, target=None) -> DistArray | None:
    """``einsum(f"{ta},{tb}->{to}", conj(a) if conj_a else a, b)`` without gathering either
    operand, or None where no plan fits (the caller keeps its general path)."""
    plan = plan_contraction(a, b, ta, tb, to, conj_a=conj_a, min_elements=min_elements,
                            target=target)
    if plan is None:
        return None
    return DistArray._new(_program(plan)(a.data, b.data), plan.out_layout)


def matmul_terms(nd1: int, nd2: int) -> tuple[str, str, str] | None:
    """The einsum labels of ``matmul`` for operands of ranks nd1, nd2 whose batch axes align
    right-to-left (broadcasting of extent-1 axes is refused later by the plan); None for a 0-d
    operand."""
    if nd1 == 0 or nd2 == 0:
        return None
    nb = max(nd1 - 2, nd2 - 2, 0)
    batch = "abcdefghij"[:nb]
    t1 = batch[nb - (nd1 - 2):] + "mk" if nd1 >= 2 else "k"
    t2 = batch[nb - (nd2 - 2):] + "kn" if nd2 >= 2 else "k"
    out = batch + ("m" if nd1 >= 2 else "") + ("n" if nd2 >= 2 else "")
    return t1, t2, out


def distributed_matmul(a: DistArray, b: DistArray, *, min_elements: int = 0) -> DistArray:
    """``a @ b`` for distributed operands of rank >= 2 without gathering either (for the
    factorizations built on matmul: blocked Cholesky, LU, QDWH).

    Args:
      a: (..., M, K) DistArray, any split of its matrix axes.
      b: (..., K, N) DistArray on the same mesh, batch axes equal to a's and split alike.
      min_elements: below this many elements the general path is taken (default 0: never).

    Returns:
      The (..., M, N) product: rows split as a's rows, columns as b's columns (unsplit where
      a's rows use the same mesh axes), batch axes as the operands'.

    Raises:
      ValueError: where no plan fits (batch axes split differently, broadcasting); callers
        then use `darray.matmul`.
    """
    terms = matmul_terms(a.ndim, b.ndim)
    out = None if terms is None or a.ndim < 2 or b.ndim < 2 else \
        contract(a, b, *terms, min_elements=min_elements)
    if out is None:
        raise ValueError(f"distributed_matmul: no gather-free plan for layouts {a.layout} and "
                         f"{b.layout}; use darray.matmul")
    return out
