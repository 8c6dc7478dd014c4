"""einsum and interp on distributed arrays.

* `einsum` runs on the physical blocks. Every label gets one split (the first operand that
  splits it decides; a mesh axis serves one label), operands are brought to it (usually they
  already are), padding is zeroed, and `jnp.einsum` runs with the output pinned: a
  contraction over a split label is a local partial contraction plus one all-reduce over
  that label's mesh axes (a reduce-scatter when the output is split over them); the operands
  are never gathered.
* `interp` applies a small replicated 1-D table to every element of a distributed array: an
  elementwise program, no communication.
"""
from __future__ import annotations

import functools
import string
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.api.creation import redistribute
from darray._src.api.statistical import plain
from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import run_physical
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_same_mesh
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.linalg import contraction
from darray._src.placement import physical


# -- einsum -----------------------------------------------------------------------------------
def _parse(subscripts: str, ndims) -> tuple[list[str], str]:
    """Explicit per-operand labels and output labels, with '...' spelled out as letters (the
    broadcast axes, right-aligned as numpy aligns them) and numpy's implicit output."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts={subscripts!r} must be a string such as "
                        "'ij,jk->ik' (numpy's interleaved operand/sublist form is not accepted)")
    s = subscripts.replace(" ", "")
    ins, arrow, out = s.partition("->")
    terms = ins.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: subscripts={subscripts!r} name {len(terms)} operand(s) but "
                         f"{len(ndims)} were given")
    for t in terms + [out]:
        bad = set(t.replace("...", "")) - set(string.ascii_letters)
        if bad:
            raise ValueError(f"einsum: subscripts={subscripts!r} holds {sorted(bad)}; labels "
                             "are letters, with '...' for broadcast axes")
    spare = [c for c in string.ascii_letters if c not in s]
    widths = [nd - (len(t) - 3) for t, nd in zip(terms, ndims) if "..." in t]
    ell = "".join(spare[:max(widths, default=0)])
    expanded = []
    for t, nd in zip(terms, ndims):
        if "..." in t:
            t = t.replace("...", ell[len(ell) - (nd - (len(t) - 3)):])
        if len(t) != nd:
            raise ValueError(f"einsum: operand term {t!r} has {len(t)} labels but the operand "
                             f"has {nd} axes")
        expanded.append(t)
    if arrow:
        if ell and "..." not in out:
            raise ValueError(f"einsum: subscripts={subscripts!r} has broadcast axes ('...') "
                             "in the operands but not in the output; write '...' in the "
                             "output too (numpy refuses this form as well)")
        out = out.replace("...", ell)
    else:
        counts = Counter("".join(expanded))
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    missing = set(out) - set("".join(expanded))
    if missing or len(set(out)) != len(out):
        raise ValueError(f"einsum: the output of subscripts={subscripts!r} names "
                         f"{sorted(missing) or 'a label twice'}; each output label must appear "
                         "once and in some operand")
    return expanded, out


def _label_splits(ops, terms):
    """One split per label: the first operand that splits it decides, a mesh axis serves one
    label, and labels repeated inside an operand (diagonals) or broadcast stay unsplit."""
    extents: dict[str, set] = {}
    for op, t in zip(ops, terms):
        for lab, n in zip(t, op.shape):
            extents.setdefault(lab, set()).add(n)
    unsplit = {lab for lab, ns in extents.items() if len(ns) > 1}
    for lab, ns in extents.items():
        if len(ns - {1}) > 1:
            raise ValueError(f"einsum: label {lab!r} has extents {sorted(ns)} in different "
                             "operands; they must match (or be 1)")
    for t in terms:
        unsplit |= {lab for lab, k in Counter(t).items() if k > 1}
    splits: dict[str, tuple] = {}
    claimed: set = set()
    for op, t in zip(ops, terms):
        for lab, names in zip(t, op.layout.split):
            if lab in splits or lab in unsplit or not names or claimed & set(names):
                continue
            splits[lab] = tuple(names)
            claimed |= set(names)
    return splits


def _einsum_kernel(*args):
    *datas, subscripts, layouts = args
    masked = [physical.masked_physical(d, lay, 0) for d, lay in zip(datas, layouts)]
    return jnp.einsum(subscripts, *masked)


def einsum(subscripts, /, *operands) -> DistArray:
    """numpy's ``np.einsum`` in its string form (``'ij,jk->ik'``, implicit output, ``...``).

    Args:
      subscripts: the labels of each operand's axes, comma-separated, and optionally ``->``
        and the output's labels.
      *operands: DistArrays (0-d jax/numpy scalars too).

    Returns:
      The contraction, of the operands' result dtype.

    Layout:
      Each output axis keeps the split its label has in the operands (the first operand
      that splits a label decides; a mesh axis serves one label; labels repeated within one
      operand or broadcast from 1 are unsplit). Operands split otherwise are moved to those
      splits first (one resharding each; none in the usual case; a diagonal of split axes
      or a mesh axis claimed by two labels moves that operand). A contraction over a split
      label is a local partial contraction plus one all-reduce over its mesh axes; the
      operands are never all-gathered. Two operands take the gather-free plans of
      darray/_src/linalg/contraction.py where they fit (same layout): operands split
      differently along the contracted label (a SUMMA panel loop, a ring) are then not moved.
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts={subscripts!r} must be a string such as "
                        "'ij,jk->ik' (numpy's interleaved operand/sublist form is not accepted)")
    if not operands:
        raise TypeError("einsum needs at least one operand")
    ops = [ensure_array("einsum", op, f"operands[{i}]") for i, op in enumerate(operands)]
    ops = check_same_mesh("einsum", ops, ", ".join(f"operands[{i}]" for i in range(len(ops))))
    terms, out = _parse(subscripts, [op.ndim for op in ops])
    mesh = next((op.mesh for op in ops if op.ndim), ops[0].mesh)
    splits = _label_splits(ops, terms)
    if len(ops) == 2:  # a gather-free plan (SUMMA, rings, psum) giving the same layout
        fast = contraction.contract(ops[0], ops[1], terms[0], terms[1], out,
                                    target=[splits.get(lab, ()) for lab in out])
        if fast is not None:
            return fast
    placed = []
    for op, t in zip(ops, terms):
        target = tuple(splits.get(lab, ()) for lab in t)
        op = plain(op)
        if op.layout.split != target or op.mesh != mesh:
            nd = op.ndim
            op = redistribute(op, Layout(op.shape, mesh, target, ((0, 0),) * nd), None)
        placed.append(op)
    sizes = {lab: n for op, t in zip(placed, terms) for lab, n in zip(t, op.shape) if n != 1}
    shape = tuple(sizes.get(lab, 1) for lab in out)
    out_layout = make_out_layout(mesh, shape, [splits.get(lab, ()) for lab in out])
    normalized = ",".join(terms) + "->" + out
    return run_physical(_einsum_kernel, placed, out_layout,
                        static=(normalized, tuple(op.layout for op in placed)))


# -- interp -----------------------------------------------------------------------------------
def _table(v, name: str) -> np.ndarray | object:
    """A 1-D table as a host or jax array (a DistArray table is small: read it whole)."""
    if isinstance(v, DistArray):
        v = v.to_jax()
    if np.ndim(v) != 1:
        raise ValueError(f"interp: {name} must be 1-D, got shape {np.shape(v)}")
    return v


@program_cache(SMALL)
def _interp_fn(layout: Layout, left, right, period):
    def run(data, xp, fp):
        data = physical.constrain(data, layout)
        # the table stays whole on every device (pinned replicated, whatever its length)
        xp = compat.constrain(xp, layout.mesh, PartitionSpec())
        fp = compat.constrain(fp, layout.mesh, PartitionSpec())
        if not layout.used_mesh_axes or not data.size:
            out = jnp.interp(data, xp, fp, left=left, right=right, period=period)
            return physical.constrain(out, layout)
        # per device, in pieces (a loop): jnp.interp's search indices and the gathered table
        # values exist for one piece at a time (for the whole block they were 3 blocks and
        # more); padding cells are interpolated too and left as garbage, as padding is
        out = compat.shard_map(functools.partial(_interp_block, left=left, right=right,
                                                 period=period),
                               mesh=layout.mesh, in_specs=(layout.spec, PartitionSpec(),
                                                           PartitionSpec()),
                               out_specs=layout.spec, check_vma=False)(data, xp, fp)
        return physical.constrain(out, layout)
    return jax.jit(run)


_INTERP_PIECES = 8


def _interp_block(block, xp, fp, *, left, right, period):
    flat = block.reshape(-1)
    n = flat.shape[0]
    size = max(1, -(-n // _INTERP_PIECES))
    dtype = jnp.result_type(jnp.interp(flat[:1], xp, fp, left=left, right=right,
                                       period=period))

    def piece(t, out):
        first = jnp.minimum(t * size, n - size)  # the last piece ends at the block's end
        v = jax.lax.dynamic_slice(flat, (first,), (size,))
        got = jnp.interp(v, xp, fp, left=left, right=right, period=period).astype(dtype)
        return jax.lax.dynamic_update_slice(out, got, (first,))

    out = jax.lax.fori_loop(0, -(-n // size), piece, jnp.zeros((n,), dtype))
    return out.reshape(block.shape)


def _scalar(v, name: str):
    if v is None:
        return None
    if np.ndim(v) != 0:
        raise ValueError(f"interp: {name}={v!r} must be a scalar or None")
    return complex(v) if np.iscomplexobj(v) else float(v)


def interp(x, xp, fp, left=None, right=None, period=None) -> DistArray:
    """numpy's ``np.interp``: the piecewise-linear interpolant of the points (xp, fp) at x.

    Args:
      x: DistArray of real values (any rank, any layout).
      xp: increasing 1-D x-coordinates (a host, jax or small DistArray array); with
        `period`, any order.
      fp: 1-D values at xp, same length (real or complex).
      left, right: values for x < xp[0] and x > xp[-1] (default fp[0], fp[-1]).
      period: a period for periodic x-coordinates (then left/right are ignored).

    Returns:
      A DistArray of x's shape, of the float (or complex) result dtype of ``jnp.interp``.

    Layout:
      x's layout. The table is replicated on every device and applied elementwise: no
      communication (a DistArray table is read whole first).
    """
    x = ensure_array("interp", x)
    if x.dtype.kind == "c":
        raise TypeError(f"interp: x has dtype {x.dtype}; x must be real")
    xp, fp = _table(xp, "xp"), _table(fp, "fp")
    if np.shape(xp) != np.shape(fp):
        raise ValueError(f"interp: xp and fp must have the same length, got {np.shape(xp)} and "
                         f"{np.shape(fp)}")
    if np.shape(xp)[0] == 0:
        raise ValueError("interp: xp and fp must not be empty")
    period = _scalar(period, "period")
    if period == 0:
        raise ValueError("interp: period=0 must be non-zero")
    x = plain(x)
    fn = _interp_fn(x.layout, _scalar(left, "left"), _scalar(right, "right"), period)
    return DistArray._new(fn(x.data, jnp.asarray(xp), jnp.asarray(fp)), x.layout)
