"""Column panels: the layout the blocked square factorizations work in (issue 50, item 2).

Why column panels
  A right-looking blocked factorization walks the matrix one column panel at a time: the
  owner of panel k factors it, broadcasts it (one block), and every device updates its own
  columns. With the columns split over every mesh axis (P devices, panel width c), row swaps
  and trailing updates are local, and only one panel is ever in flight.

Getting there without gathering (the movers)
  An operand split any way over the mesh (rows over mesh axes R, columns over C, replicated
  over the rest U) reaches column panels in at most one all-to-all, inside the kernel's
  shard_map:

  * the columns of a C block are cut, nested, in pu pieces (one per U device: a local slice,
    no data moves) and each of those in pr pieces (one per R device);
  * an all-to-all over R swaps the row split for that column split (``tiled`` along a leading
    axis, so every device sends pr equal pieces of its block).

  The flattened mesh order of the panels is C, then U, then R (``Side.names``). Panel q holds
  ``cf`` columns; the nesting leaves padding columns inside the matrix (the end of each C
  block), not only at its end. `Side.positions` maps every real column to its place among
  the ``P * cf`` panel columns, an increasing map, so the real columns keep their order.

Padding, and why it is harmless
  A square operand is embedded with the same map on its rows and its columns, padding rows
  and columns holding the identity: a symmetric permutation of ``[[A, 0], [0, I]]`` that
  keeps the real indices in order. Cholesky and LU (partial pivoting) of it leave the
  padding's rows and columns as the identity and the real part equal to the factors of A
  (a padding row is 0 in every real column, so it is never chosen as a pivot while a real
  row has a non-zero there). Right-hand sides are embedded on their rows with the square
  operand's map (their padding rows are 0, so the padding part of the solution is 0).

The way back
  The inverse moves: un-embed the rows (a static gather), an all-to-all over R back to the
  row split, and over U an all-gather of the output block's pieces (an operand replicated
  over U wants a replicated result there: that gather is the output's own size, never the
  matrix's unless the output is that big on every device).
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

HIGHEST = lax.Precision.HIGHEST  # no TF32 / bf16 passes in the updates on GPUs


@dataclasses.dataclass(frozen=True)
class Side:
    """How one 2-D operand (or a vector, as one column) moves to column panels.

    rows/cols/free: the mesh axes splitting its rows, its columns, and those it is
    replicated over; nrows/ncols: logical extents; the chunks follow the layout's rule
    (ceil division; the last blocks may be short or empty).
    """

    rows: tuple[str, ...]
    cols: tuple[str, ...]
    free: tuple[str, ...]
    nrows: int
    ncols: int
    pr: int   # parts of the row split
    pc: int   # parts of the column split
    pu: int   # devices the operand is replicated over
    vector: bool

    @property
    def names(self) -> tuple[str, ...]:
        """The mesh axes in panel order (panel q = linear index over these, major first)."""
        return self.cols + self.free + self.rows

    @property
    def parts(self) -> int:
        return self.pr * self.pc * self.pu

    @property
    def cr(self) -> int:
        """Rows of a physical block."""
        return -(-self.nrows // self.pr)

    @property
    def cc(self) -> int:
        """Columns of a physical block."""
        return -(-self.ncols // self.pc)

    @property
    def cu(self) -> int:
        return -(-self.cc // self.pu)

    @property
    def cf(self) -> int:
        """Columns of a panel."""
        return -(-self.cu // self.pr)

    @property
    def width(self) -> int:
        """All panel columns, padding included."""
        return self.parts * self.cf

    def positions(self) -> np.ndarray:
        """Panel column of every real column (increasing)."""
        g = np.arange(self.ncols)
        j, rem = np.divmod(g, self.cc)
        u, rem = np.divmod(rem, self.cu)
        r, lane = np.divmod(rem, self.cf)
        return ((j * self.pu + u) * self.pr + r) * self.cf + lane


def side_of(layout: Layout) -> Side | None:
    """The Side of a 1-D or 2-D layout (None with ghosts: the gathering path keeps those)."""
    if layout.has_halo or layout.ndim not in (1, 2):
        return None
    used = layout.used_mesh_axes
    free = tuple(n for n in layout.mesh.axis_names if n not in used)
    sizes = layout.mesh_shape
    rows = layout.split[0]
    cols = layout.split[1] if layout.ndim == 2 else ()
    return Side(rows, cols, free, layout.shape[0], layout.shape[1] if layout.ndim == 2 else 1,
                layout.parts(0), layout.parts(1) if layout.ndim == 2 else 1,
                math.prod(sizes[n] for n in free), layout.ndim == 1)


# -- movers (inside shard_map) ------------------------------------------------------------------
def _pad(x, axis, length):
    extra = length - x.shape[axis]
    if extra <= 0:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return jnp.pad(x, widths)


def _exchange(x, names):
    """Piece i of the leading axis goes to device i of `names`; piece i back came from i."""
    return lax.all_to_all(x, names, split_axis=0, concat_axis=0, tiled=True)


def row_embedding(pos: np.ndarray, width: int, real_rows: int):
    """(source row of every panel row, which panel rows are real) for an embedding `pos`."""
    src = np.zeros(width, np.int32)
    src[pos] = np.arange(real_rows, dtype=np.int32)
    real = np.zeros(width, bool)
    real[pos] = True
    return src, real


def to_panels(block, side: Side, pos: np.ndarray, width: int):
    """This device's physical block of an operand of `side` -> its panel: (width, cf), rows
    embedded by `pos` (the square operand's map; padding rows 0), padding columns 0."""
    a = block[:, None] if side.vector else block
    if side.pu > 1:  # replicated over `free`: keep this device's nested piece of the columns
        a = _pad(a, 1, side.pu * side.cu)
        a = lax.dynamic_slice_in_dim(a, lax.axis_index(side.free) * side.cu, side.cu, axis=1)
    if side.pr > 1:
        a = _pad(a, 1, side.pr * side.cf)
        a = jnp.moveaxis(a.reshape(side.cr, side.pr, side.cf), 1, 0)
        a = _exchange(a, side.rows).reshape(side.pr * side.cr, side.cf)
    a = _pad(a, 1, side.cf)  # a short C block with no split below it
    src, real_row = row_embedding(pos, width, side.nrows)
    real_col = own_columns(real_columns(side), side)[None, :]
    a = jnp.take(a, jnp.asarray(src), axis=0)
    return jnp.where(jnp.asarray(real_row)[:, None] & real_col, a, jnp.zeros((), a.dtype))


def from_panels(a, side: Side, pos: np.ndarray):
    """The inverse of `to_panels`: a panel (width, cf) -> this device's physical block of an
    operand of `side` (its padding holds whatever the panels had there)."""
    src = np.zeros(side.pr * side.cr, np.int32)
    src[:side.nrows] = pos
    a = jnp.take(a, jnp.asarray(src), axis=0)          # (pr * cr, cf): rows in logical order
    if side.pr > 1:
        a = _exchange(a.reshape(side.pr, side.cr, side.cf), side.rows)
        a = jnp.moveaxis(a, 0, 1).reshape(side.cr, side.pr * side.cf)
    a = a[:, :side.cu]
    if side.pu > 1:
        a = lax.all_gather(a, side.free, axis=1, tiled=True, to="invarying")
    a = _pad(a[:, :side.cc], 1, side.cc)
    return a[:, 0] if side.vector else a


def real_columns(side: Side) -> np.ndarray:
    """Which of the `width` panel columns are real."""
    real = np.zeros(side.width, bool)
    real[side.positions()] = True
    return real


def own_columns(values: np.ndarray, side: Side):
    """This device's `cf` entries of a per-panel-column constant."""
    return lax.dynamic_slice_in_dim(jnp.asarray(values), lax.axis_index(side.names) * side.cf,
                                    side.cf)


def square_embedding(a, side: Side):
    """A square operand's panel with the identity on its padding diagonal."""
    q = lax.axis_index(side.names)
    rows = lax.broadcasted_iota(jnp.int32, a.shape, 0)
    cols = q * side.cf + lax.broadcasted_iota(jnp.int32, a.shape, 1)
    pad = ~own_columns(real_columns(side), side)
    return jnp.where((rows == cols) & pad[None, :], jnp.ones((), a.dtype), a)


def transpose_panels(a, side: Side):
    """Panels of the conjugate transpose (one all-to-all of c x c tiles)."""
    p, c = side.parts, side.cf
    tiles = _exchange(a.reshape(p, c, c), side.names)
    return jnp.conj(jnp.swapaxes(tiles, 1, 2)).reshape(p * c, c)


def broadcast(x, owner, q, names):
    """`x` of device `owner` on every device (a masked all-reduce: one panel moves)."""
    return lax.psum(jnp.where(q == owner, x, jnp.zeros((), x.dtype)), names)


def mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def inexact(dtype) -> np.dtype:
    """The dtype jnp.linalg computes in for `dtype` (integers and bools: the default float)."""
    return np.dtype(jnp.result_type(dtype, 1.0))


# -- running a kernel ---------------------------------------------------------------------------
@program_cache(MEDIUM)
def _program(kernel, in_layouts, out_layouts, static):
    return jitted_shard_map(functools.partial(kernel, **dict(static)), in_layouts, out_layouts)


def jitted_shard_map(body, in_layouts, out_layouts):
    """`body(*blocks)` in one shard_map over the layouts' mesh, inputs and outputs pinned to
    their layouts' specs, jitted (shared by the 2-D paths here and linalg/stacked.py)."""
    mesh = in_layouts[0].mesh

    def run(*datas):
        datas = [compat.constrain(d, mesh, lay.spec) for d, lay in zip(datas, in_layouts)]
        # check_vma off: the panel steps end in an optimization barrier, through which jax
        # 0.10's replication check cannot see, so an output replicated over a mesh axis the
        # matrix leaves free (a (1, 8) mesh split over its second axis) was refused; every
        # device of a free axis runs the same steps on the same blocks
        outs = compat.shard_map(body, mesh=mesh, in_specs=tuple(lay.spec for lay in in_layouts),
                                out_specs=tuple(lay.spec for lay in out_layouts),
                                check_vma=False)(*datas)
        return tuple(compat.constrain(o, mesh, lay.spec) for o, lay in zip(outs, out_layouts))
    return jax.jit(run)


def run(kernel, arrays, out_layouts, **static) -> tuple[DistArray, ...]:
    """kernel(*blocks, **static) inside one shard_map over the whole mesh; outputs in
    `out_layouts` (physical blocks). Compiled once per (kernel, layouts, static)."""
    compiled = _program(kernel, tuple(a.layout for a in arrays), tuple(out_layouts),
                        tuple(sorted(static.items())))
    outs = compiled(*[a.data for a in arrays])
    return tuple(DistArray._new(o, lay) for o, lay in zip(outs, out_layouts))
