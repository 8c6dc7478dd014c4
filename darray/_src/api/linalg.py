"""Linear algebra: the main-namespace functions (matmul, tensordot, vecdot, matrix_transpose) and
the Array API `linalg` extension.

Every function runs on the logical arrays (XLA's SPMD partitioner) with the output pinned to a
layout derived from the inputs: batch axes keep their split (so a stack of matrices split
along the batch is processed with no communication), matrix axes are unsplit in the results of
factorizations. Where a matrix axis is split on input, XLA's partitioner decides the
communication (for matmul a contraction over a split axis is a partial product plus an
all-reduce / reduce-scatter; for factorizations it gathers the matrix axes of each batch
element). Exception: a tall-skinny or short-wide matrix (one matrix axis split, the other
small: darray/_src/linalg/tall_skinny.py states the rule) goes to the TSQR path for qr, svd
(full_matrices=False), svdvals, pinv, matrix_rank and matrix_norm (2, -2, 'nuc'), which never
gathers the matrix and returns the long factor split like the input's long axis. And matmul,
tensordot and vecdot over split matrix or contracted axes run the gather-free plans of
darray/_src/linalg/contraction.py (SUMMA panels, rings of collective-permutes, partial products
plus a psum) where the layout fits and the arrays are not small; XLA's path otherwise. A
square 2-D matrix with a split matrix axis goes to the blocked column-panel path for cholesky
(darray/_src/linalg/blocked_cholesky.py) and for solve, inv, det and slogdet (a blocked LU with
partial pivoting, darray/_src/linalg/blocked_lu.py): no all-gather of the matrix, results in
the input's layout (solve: the right-hand side's). A square 2-D matrix with a split matrix
axis (n >= 64) goes to the one-sided block Jacobi path for eigh, eigvalsh, svd and svdvals
(darray/_src/linalg/jacobi.py), which never gathers the matrix either and returns
eigenvectors, U and Vh in the input's layout (the values replicated). A stack whose matrix
axes are split runs these 2-D paths one batch element at a time (darray/_src/linalg/stacked.py;
under jax.jit too; derivatives of eigh / eigvalsh / svd / svdvals stacks gather the stack).
"""
from __future__ import annotations

import functools
import operator
import string
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api import linalg_adjoints as adjoints
from darray._src.api.manipulation import matrix_transpose
from darray._src.distarray.array import DistArray
from darray._src.engine import views
from darray._src.engine.apply import apply_logical
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_same_mesh
from darray._src.layout.axes import normalize_axes, normalize_axis
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.linalg import (
    blocked_cholesky,
    blocked_lu,
    contraction,
    jacobi,
    stacked,
    tall_skinny,
)
from darray._src.linalg.least_squares import LstsqResult as LstsqResult
from darray._src.linalg.least_squares import lstsq as lstsq


class EighResult(NamedTuple):
    eigenvalues: DistArray
    eigenvectors: DistArray


class EigResult(NamedTuple):
    eigenvalues: DistArray
    eigenvectors: DistArray


class QRResult(NamedTuple):
    Q: DistArray
    R: DistArray


class SlogdetResult(NamedTuple):
    sign: DistArray
    logabsdet: DistArray


class SVDResult(NamedTuple):
    U: DistArray
    S: DistArray
    Vh: DistArray


# -- plumbing ---------------------------------------------------------------------------------
def _invoke(*args):
    """Module-level (hence cacheable) call of jnp.linalg.<name>(*arrays, **kwargs)."""
    *arrays, name, kwargs, array_kwargs = args
    kw = dict(kwargs)
    if array_kwargs:
        kw.update(zip(array_kwargs, arrays[-len(array_kwargs):]))
        arrays = arrays[:-len(array_kwargs)]
    out = getattr(jnp.linalg, name)(*arrays, **kw)
    return tuple(out) if isinstance(out, tuple) else out


def _shapes(fn, arrays, static):
    # (True, shape, dtype) for a DistArray: a cache key cheaper to build than a
    # jax.ShapeDtypeStruct (eager calls on small arrays pay for every microsecond)
    key = tuple((True, a.shape, a.dtype) if isinstance(a, DistArray) else (False, a)
                for a in arrays)
    try:
        # eval_shape traces (~0.5 ms per eager call); x64 changes result dtypes
        return _cached_shapes(fn, key, static, bool(jax.config.jax_enable_x64))
    except TypeError:  # an unhashable operand
        return _eval_shapes(fn, key, static)


def _eval_shapes(fn, key, static):
    specs = [jax.ShapeDtypeStruct(k[1], k[2]) if k[0] else k[1] for k in key]
    return jax.eval_shape(lambda *xs: fn(*xs, *static), *specs)


@functools.lru_cache(maxsize=1024)
def _cached_shapes(fn, key, static, x64):
    del x64  # part of the cache key only
    return _eval_shapes(fn, key, static)


def _batch_layout(template: DistArray, shape, nbatch: int) -> Layout:
    """Leading `nbatch` axes keep `template`'s split where their extent matches; others unsplit."""
    split = [template.layout.split[i] if i < nbatch and i < template.ndim
             and shape[i] == template.shape[i] else () for i in range(len(shape))]
    return make_out_layout(template.mesh, shape, split)


def _batched(name, arrays, core: int, *, kwargs=(), array_kwargs=()):
    """jnp.linalg.<name> with every output keeping the batch split of the first array."""
    if arrays[0].ndim < core:
        raise ValueError(f"linalg.{name} needs an array of rank >= {core}, got shape "
                         f"{arrays[0].shape}")
    where = [i for i, a in enumerate(arrays) if isinstance(a, DistArray)]
    arrays = list(arrays)
    for i, a in zip(where, check_same_mesh(name, [arrays[i] for i in where])):
        arrays[i] = a
    x = arrays[0]
    static = (name, tuple(kwargs), tuple(array_kwargs))
    result = _shapes(_invoke, arrays, static)
    nbatch = x.ndim - core
    outs: Layout | tuple[Layout, ...]
    if isinstance(result, tuple):
        outs = tuple(_batch_layout(x, r.shape, nbatch) for r in result)
    else:
        outs = _batch_layout(x, result.shape, nbatch)
    return apply_logical(_invoke, list(arrays), outs, static=static)


def _matrix(fname: str, x, name="x") -> DistArray:
    x = ensure_array(fname, x, name)
    if x.ndim < 2:
        raise ValueError(f"{name} must have rank >= 2 (a stack of matrices), got shape {x.shape}")
    return x


def _square(fname: str, x, name="x") -> DistArray:
    x = _matrix(fname, x, name)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name} must be a stack of square matrices, got shape {x.shape}")
    return x


def _two_d_or_stacked(two_d, stack, *args):
    """The 2-D distributed path's result, else the stacked one's (linalg/stacked.py), else
    None (the gathering path). Compared with None: a result's truth value would be read."""
    out = two_d(*args)
    return stack(*args) if out is None else out


def _rtol_operand(rtol):
    if rtol is None or isinstance(rtol, (int, float)):
        return (("rtol", rtol),), ()
    return (), ("rtol",)


# -- main namespace ---------------------------------------------------------------------------
def _matmul(a, b):
    return jnp.matmul(a, b)


def matmul(x1, x2, /) -> DistArray:
    """Matrix product with numpy broadcasting of batch axes (1-D operands as vectors).

    Layout:
      Batch axes keep x1's split (x2's where x1 broadcasts), the row axis keeps x1's row split,
      the column axis x2's column split (unsplit where x1's rows use the same mesh axes). No
      communication when only batch, row and column axes are split. Split matrix axes take a
      gather-free plan (darray/_src/linalg/contraction.py): a SUMMA panel loop for 2-D
      splits, a ring of collective-permutes when the contracted axis of one operand is split
      (row-split @ row-split), a partial product plus a psum when the contracted axis alone
      is split (X.T @ X), both when x2's columns also ride a ring over x1's row mesh axes
      ((x, y) @ (y, x)). Below a size threshold, and where batch axes broadcast or are split
      differently, XLA partitions the product (it may gather an operand there).
    """
    x1 = ensure_array("matmul", x1, "x1")
    x2 = ensure_array("matmul", x2, "x2")
    x1, x2 = check_same_mesh("matmul", [x1, x2], "x1, x2")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"matmul needs operands of rank >= 1, got shapes {x1.shape}, {x2.shape}")
    if x1.shape[-1] != x2.shape[-2 if x2.ndim > 1 else 0]:
        raise ValueError(f"matmul: contraction extents differ for shapes {x1.shape} and "
                         f"{x2.shape}")
    shape = _shapes(_matmul, [x1, x2], ()).shape
    nd = len(shape)
    split = [()] * nd
    rows = x1.ndim >= 2
    cols = x2.ndim >= 2
    nb = nd - rows - cols
    for x, nmat in ((x1, 2), (x2, 2)):
        batch = x.shape[:-nmat] if x.ndim >= 2 else ()
        for i in range(1, len(batch) + 1):
            if nb - i >= 0 and not split[nb - i] and batch[-i] == shape[nb - i]:
                split[nb - i] = x.layout.split[x.ndim - nmat - i]
    if rows:
        split[nb] = x1.layout.split[-2]
    if cols:
        split[nd - 1] = x2.layout.split[-1]
    out = make_out_layout(x1.mesh, shape, split)
    return _contracted(x1, x2, contraction.matmul_terms(x1.ndim, x2.ndim), out, _matmul, ())


def _contracted(x1, x2, terms, out: Layout, fn, static, conj_a: bool = False) -> DistArray:
    """``fn(x1, x2, *static)`` (the einsum `terms`, x1 conjugated if `conj_a`) in the layout
    `out`: the gather-free plan (linalg/contraction.py) when one fits and gives `out`, else
    XLA's path. An unread permutation (``U.T``: engine/views.py) is read as its source with
    its labels permuted (a dot_general with swapped dimensions), so no transposed copy of
    it is made; its splits are the source's, so the plan and `out` are those of the copy."""
    if terms is None:
        return apply_logical(fn, [x1, x2], out, static=static)
    (a, ta, pa), (b, tb, pb) = _source_of(x1, terms[0]), _source_of(x2, terms[1])
    plan = contraction.plan_contraction(a, b, ta, tb, terms[2], conj_a=conj_a, target=out.split)
    if plan is not None and plan.out_layout == out:
        return contraction.run_plan(plan, a, b)
    if pa is None and pb is None:
        return apply_logical(fn, [x1, x2], out, static=static)
    return apply_logical(_permuted_then, [a, b], out, static=(fn, pa, pb) + tuple(static))


def _source_of(x: DistArray, labels: str):
    """(array, its einsum labels, axes): x's source and labels when x is an unread
    permutation ``permute_dims(source, axes)``, else (x, labels, None)."""
    found = views.unread_permutation(x)
    if found is None:
        return x, labels, None
    source, axes = found
    source_labels = [""] * len(axes)
    for i, a in enumerate(axes):
        source_labels[a] = labels[i]
    return source, "".join(source_labels), axes


def _permuted_then(a, b, fn, axes_a, axes_b, *static):
    """fn of the operands permuted first (inside the one program, where XLA folds the
    permutation into the dot's dimensions)."""
    a = a if axes_a is None else jnp.transpose(a, axes_a)
    b = b if axes_b is None else jnp.transpose(b, axes_b)
    return fn(a, b, *static)


def _tensordot(a, b, axes):
    return jnp.tensordot(a, b, axes=axes)


def tensordot(x1, x2, /, *, axes=2) -> DistArray:
    """Sum of products over `axes` (an int: last/first axes; or two sequences of axes).

    Layout: the free axes of x1 then of x2, each keeping its split (x2's unsplit where x1's
    free axes use its mesh axes). A contraction over one split axis takes the gather-free
    plans of matmul (darray/_src/linalg/contraction.py); over two or more split axes, XLA's
    partitioner.
    """
    x1 = ensure_array("tensordot", x1, "x1")
    x2 = ensure_array("tensordot", x2, "x2")
    x1, x2 = check_same_mesh("tensordot", [x1, x2], "x1, x2")
    if isinstance(axes, (int, np.integer)):
        k = operator.index(axes)
        if k < 0 or k > min(x1.ndim, x2.ndim):
            raise ValueError(f"axes={k} must be between 0 and min(x1.ndim, x2.ndim)")
        a1, a2 = tuple(range(x1.ndim - k, x1.ndim)), tuple(range(k))
    else:
        a1 = normalize_axes(tuple(axes[0]), x1.ndim, "axes[0]")
        a2 = normalize_axes(tuple(axes[1]), x2.ndim, "axes[1]")
        if len(a1) != len(a2):
            raise ValueError(f"axes={axes!r} must name as many axes of x1 as of x2")
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(f"tensordot: x1 axis {i} (extent {x1.shape[i]}) and x2 axis {j} "
                             f"(extent {x2.shape[j]}) differ")
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [j for j in range(x2.ndim) if j not in a2]
    shape = [x1.shape[i] for i in free1] + [x2.shape[j] for j in free2]
    split = [x1.layout.split[i] for i in free1] + [x2.layout.split[j] for j in free2]
    out = make_out_layout(x1.mesh, shape, split)
    t1 = string.ascii_letters[:x1.ndim]
    t2 = list(string.ascii_letters[x1.ndim:x1.ndim + x2.ndim])
    for i, j in zip(a1, a2):
        t2[j] = t1[i]
    terms = (t1, "".join(t2), "".join([t1[i] for i in free1] + [t2[j] for j in free2]))
    return _contracted(x1, x2, terms, out, _tensordot, ((a1, a2),))


def _vecdot(a, b, axis):
    return jnp.vecdot(a, b, axis=axis)


def vecdot(x1, x2, /, *, axis=-1) -> DistArray:
    """Dot product of vectors along `axis` (x1 conjugated), broadcasting the other axes.

    Layout: the remaining axes keep x1's split (x2's where x1 broadcasts); reducing a split
    axis costs one all-reduce of the result (a partial product plus a psum; where x1 and x2
    split that axis differently, a panel loop: darray/_src/linalg/contraction.py).
    """
    x1 = ensure_array("vecdot", x1, "x1")
    x2 = ensure_array("vecdot", x2, "x2")
    x1, x2 = check_same_mesh("vecdot", [x1, x2], "x1, x2")
    nd = max(x1.ndim, x2.ndim)
    axis = normalize_axis(axis, nd)
    full1 = (1,) * (nd - x1.ndim) + x1.shape
    full2 = (1,) * (nd - x2.ndim) + x2.shape
    if full1[axis] != full2[axis]:
        raise ValueError(f"vecdot: axis {axis - nd} has extent {full1[axis]} in x1 and "
                         f"{full2[axis]} in x2")
    shape = np.broadcast_shapes(full1, full2)
    split = []
    for i in range(nd):
        if i == axis:
            continue
        s = ()
        for x, full in ((x1, full1), (x2, full2)):
            j = i - (nd - x.ndim)
            if not s and j >= 0 and full[i] == shape[i]:
                s = x.layout.split[j]
        split.append(s)
    out = make_out_layout(x1.mesh, [n for i, n in enumerate(shape) if i != axis], split)
    labels = string.ascii_letters[:nd]
    terms = (labels[nd - x1.ndim:], labels[nd - x2.ndim:],
             "".join(c for i, c in enumerate(labels) if i != axis))
    return _contracted(x1, x2, terms, out, _vecdot, (axis - nd,), conj_a=True)


# -- linalg extension -------------------------------------------------------------------------
def _cholesky_distributed(x: DistArray, upper: bool) -> DistArray | None:
    return _two_d_or_stacked(blocked_cholesky.cholesky, stacked.cholesky, x, upper)


def cholesky(x, /, *, upper=False) -> DistArray:
    """Cholesky factor of Hermitian positive-definite matrices (lower, or upper if asked).

    Layout: a 2-D matrix with a split matrix axis is factored by blocked column panels and
    the factor keeps its layout (no gather); so does a stack with split matrix axes (per
    batch element); other stacks keep their batch split, matrix axes unsplit.
    """
    x = _square("cholesky", x)
    distributed = functools.partial(_cholesky_distributed, upper=bool(upper))
    if adjoints.reverse_mode(x) and adjoints.applies(distributed, [x]):
        backward = adjoints.cholesky_backward(solve, matmul, bool(upper))
        return adjoints.with_adjoint(distributed, backward, [x])
    fast = distributed(x)
    if fast is not None:
        return fast
    return _batched("cholesky", [x], 2, kwargs=(("upper", bool(upper)),))


def cross(x1, x2, /, *, axis=-1) -> DistArray:
    """Cross product of 3-vectors along `axis`. Layout: x1's split on the other axes."""
    x1 = ensure_array("cross", x1, "x1")
    x2 = ensure_array("cross", x2, "x2")
    return _batched("cross", [x1, x2], 0, kwargs=(("axis", int(axis)),))


def det(x, /) -> DistArray:
    """Determinants of a stack of square matrices. Layout: batch axes keep their split (a 2-D
    matrix with a split matrix axis: a blocked LU, no gather; the result replicated)."""
    x = _square("det", x)
    fast = _two_d_or_stacked(blocked_lu.det, stacked.det, x)
    if fast is not None:
        return fast
    return _batched("det", [x], 2)


def diagonal(x, /, *, offset=0) -> DistArray:
    """The `offset` diagonal of each matrix. Layout: batch axes keep their split."""
    return _batched("diagonal", [_matrix("diagonal", x)], 2,
                    kwargs=(("offset", operator.index(offset)),))


def eigh(x, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices.

    Layout: batch axes keep their split; matrix axes unsplit. A 2-D matrix with a split
    matrix axis (n >= 64): eigenvectors in x's layout, eigenvalues replicated, never gathered.
    """
    x = _square("eigh", x)
    vectors = functools.partial(_two_d_or_stacked, jacobi.eigh, stacked.eigh)
    fast = adjoints.distributed(x, vectors, adjoints.eigh_backward(matmul, True))
    if fast is not None:
        return EighResult(*fast)
    return EighResult(*_batched("eigh", [x], 2))


def eigvalsh(x, /) -> DistArray:
    """Eigenvalues (ascending) of Hermitian matrices. Layout: batch axes keep their split
    (replicated for a 2-D matrix with a split matrix axis, computed without gathering it)."""
    x = _square("eigvalsh", x)
    vectors = functools.partial(_two_d_or_stacked, jacobi.eigh, stacked.eigh)
    values = functools.partial(_two_d_or_stacked, jacobi.eigvalsh, stacked.eigvalsh)
    fast = adjoints.distributed(x, values, adjoints.eigh_backward(matmul, False),
                                adjoints.vectors_saved(vectors, 0))
    if fast is not None:
        return fast
    return _batched("eigvalsh", [x], 2)


def eig(x, /) -> EigResult:
    """Eigenvalues and eigenvectors of general square matrices (complex results).

    Layout: batch axes keep their split; matrix axes unsplit. CPU only (as jax.numpy).
    """
    return EigResult(*_batched("eig", [_square("eig", x)], 2))


def eigvals(x, /) -> DistArray:
    """Eigenvalues of general square matrices. Layout: batch axes keep their split."""
    return _batched("eigvals", [_square("eigvals", x)], 2)


def inv(x, /) -> DistArray:
    """Inverses of a stack of square matrices. Layout: batch axes keep their split; a 2-D
    matrix with a split matrix axis is inverted by a blocked LU, in its own layout (no gather).
    """
    x = _square("inv", x)
    distributed = functools.partial(_two_d_or_stacked, blocked_lu.inv, stacked.inv)
    if adjoints.reverse_mode(x) and adjoints.applies(distributed, [x]):
        return adjoints.with_adjoint(distributed, adjoints.inv_backward(matmul), [x])
    fast = distributed(x)
    if fast is not None:
        return fast
    return _batched("inv", [x], 2)


def matrix_norm(x, /, *, keepdims=False, ord="fro") -> DistArray:
    """Matrix norms ('fro', 'nuc', 1, 2, inf, -1, -2, -inf). Layout: batch axes keep their split."""
    x = _matrix("matrix_norm", x)
    fast = tall_skinny.matrix_norm(x, ord, bool(keepdims))
    if fast is not None:
        return fast
    return _batched("matrix_norm", [x], 2,
                    kwargs=(("keepdims", bool(keepdims)), ("ord", ord)))


def matrix_power(x, n, /) -> DistArray:
    """`x` raised to the integer power `n` (negative n inverts). Layout: as x's batch axes."""
    return _batched("matrix_power", [_square("matrix_power", x)], 2,
                    kwargs=(("n", operator.index(n)),))


def matrix_rank(x, /, *, rtol=None) -> DistArray:
    """Numerical rank (singular values above rtol * largest). Layout: batch axes keep split."""
    x = _matrix("matrix_rank", x)
    fast = tall_skinny.matrix_rank(x, rtol)
    if fast is not None:
        return fast
    kwargs, array_kwargs = _rtol_operand(rtol)
    extra = [rtol] if array_kwargs else []
    return _batched("matrix_rank", [x, *extra], 2, kwargs=kwargs,
                    array_kwargs=array_kwargs)


def outer(x1, x2, /) -> DistArray:
    """Outer product of two vectors. Layout: rows split as x1, columns as x2 (no communication)."""
    x1 = ensure_array("outer", x1, "x1")
    x2 = ensure_array("outer", x2, "x2")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer needs 1-D arrays, got shapes {x1.shape} and {x2.shape}")
    x1, x2 = check_same_mesh("outer", [x1, x2], "x1, x2")
    out = make_out_layout(x1.mesh, (x1.shape[0], x2.shape[0]),
                          (x1.layout.split[0], x2.layout.split[0]))
    return apply_logical(_invoke, [x1, x2], out, static=("outer", (), ()))


def pinv(x, /, *, rtol=None) -> DistArray:
    """Moore-Penrose pseudo-inverse. Layout: batch axes keep their split."""
    x = _matrix("pinv", x)
    fast = tall_skinny.pinv(x, rtol)
    if fast is not None:
        return fast
    kwargs, array_kwargs = _rtol_operand(rtol)
    extra = [rtol] if array_kwargs else []
    return _batched("pinv", [x, *extra], 2, kwargs=kwargs,
                    array_kwargs=array_kwargs)


def qr(x, /, *, mode="reduced") -> QRResult:
    """QR factorization ('reduced' or 'complete'). Layout: batch axes keep their split."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode={mode!r} is not accepted; use 'reduced' or 'complete'")
    x = _matrix("qr", x)
    fast = tall_skinny.qr(x, mode)
    if fast is not None:
        return QRResult(*fast)
    return QRResult(*_batched("qr", [x], 2, kwargs=(("mode", mode),)))


def slogdet(x, /) -> SlogdetResult:
    """Sign and log of the absolute determinant. Layout: batch axes keep their split (a 2-D
    matrix with a split matrix axis: a blocked LU, no gather; results replicated)."""
    x = _square("slogdet", x)
    fast = _two_d_or_stacked(blocked_lu.slogdet, stacked.slogdet, x)
    if fast is not None:
        return SlogdetResult(*fast)
    return SlogdetResult(*_batched("slogdet", [x], 2))


def _distributed_solve(x1: DistArray, x2: DistArray) -> DistArray | None:
    fast = blocked_lu.solve(x1, x2) if x2.ndim in (1, 2) else None
    if fast is None and x1.ndim >= 3:
        fast = stacked.solve(x1, x2)
    return fast


def solve(x1, x2, /) -> DistArray:
    """Solve x1 @ y = x2 for y (x2 a stack of matrices, or a vector).

    Layout: batch split kept. A 2-D x1 with a split matrix axis and a 1-D or 2-D x2 go to the
    blocked LU (no gather): y comes back in x2's layout.
    """
    x1 = _square("solve", x1, "x1")
    x2 = ensure_array("solve", x2, "x2")
    if x2.ndim in (1, 2) or x2.ndim == x1.ndim:
        x1, x2 = check_same_mesh("solve", [x1, x2], "x1, x2")
        if adjoints.reverse_mode(x1, x2) and adjoints.applies(_distributed_solve, [x1, x2]):
            return adjoints.with_adjoint(_distributed_solve,
                                         adjoints.solve_backward(solve, matmul), [x1, x2])
        fast = _distributed_solve(x1, x2)
        if fast is not None:
            return fast
    return _batched("solve", [x1, x2], 2)


def svd(x, /, *, full_matrices=True) -> SVDResult:
    """Singular value decomposition x = U @ diag(S) @ Vh. Layout: batch axes keep their split."""
    x = _matrix("svd", x)
    fast = tall_skinny.svd(x, bool(full_matrices))
    if fast is None and x.shape[-1] == x.shape[-2]:  # square: full and reduced agree
        vectors = functools.partial(_two_d_or_stacked, jacobi.svd, stacked.svd)
        fast = adjoints.distributed(x, vectors, adjoints.svd_backward(matmul, True))
    if fast is not None:
        return SVDResult(*fast)
    return SVDResult(*_batched("svd", [x], 2,
                               kwargs=(("full_matrices", bool(full_matrices)),)))


def svdvals(x, /) -> DistArray:
    """Singular values (descending). Layout: batch axes keep their split."""
    x = _matrix("svdvals", x)
    fast = tall_skinny.svdvals(x)
    if fast is None and x.shape[-1] == x.shape[-2]:
        vectors = functools.partial(_two_d_or_stacked, jacobi.svd, stacked.svd)
        values = functools.partial(_two_d_or_stacked, jacobi.svdvals, stacked.svdvals)
        fast = adjoints.distributed(x, values, adjoints.svd_backward(matmul, False),
                                    adjoints.vectors_saved(vectors, 1))
    if fast is not None:
        return fast
    return _batched("svdvals", [x], 2)


def trace(x, /, *, offset=0, dtype=None) -> DistArray:
    """Sum of the `offset` diagonal of each matrix. Layout: batch axes keep their split."""
    dtype = None if dtype is None else np.dtype(dtype)
    return _batched("trace", [_matrix("trace", x)], 2,
                    kwargs=(("offset", operator.index(offset)), ("dtype", dtype)))


def _vector_norm(a, axis, keepdims, ord):
    return jnp.linalg.vector_norm(a, axis=axis, keepdims=keepdims, ord=ord)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2) -> DistArray:
    """Vector norm over `axis` (all axes by default).

    Layout: the remaining axes keep their split (kept unit axes are unsplit); a reduced split
    axis costs one all-reduce of the result.
    """
    x = ensure_array("vector_norm", x)
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim)
    if keepdims:
        shape = [1 if i in axes else n for i, n in enumerate(x.shape)]
        split = [() if i in axes else s for i, s in enumerate(x.layout.split)]
    else:
        shape = [n for i, n in enumerate(x.shape) if i not in axes]
        split = [s for i, s in enumerate(x.layout.split) if i not in axes]
    out = make_out_layout(x.mesh, shape, split)
    ax = None if axis is None else (axes if not isinstance(axis, (int, np.integer)) else axes[0])
    return apply_logical(_vector_norm, [x], out, static=(ax, bool(keepdims), ord))


__all__ = [
    "EighResult", "EigResult", "LstsqResult", "QRResult", "SlogdetResult", "SVDResult",
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
    "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
    "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]
