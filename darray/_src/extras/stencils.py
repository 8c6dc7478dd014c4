"""pad and gradient: numpy's functions on distributed arrays, built on the halo exchange.

Both need cells of neighbouring blocks along split axes. They use the halo machinery
(`darray/_src/plans/halo_plan.py` plans, `darray/_src/backends/jax/halo_exchange.py` executes),
never an all-gather, with the face moves on the halo backend in force: `gradient` fills its
ghosts through the halo registry; `pad`'s regrid rounds run on that backend's exchanges when it
offers them (JAX's ppermute, MPI_Sendrecv), else on JAX's, recorded
(`darray.record_backends`):

* `pad` grows the axes, which changes the blocking of a split axis (its chunk grows), so each
  output block gathers its cells, boundary cells included, by the rounds of
  `plan.regrid_plan`; unsplit axes are padded locally.
* `gradient` fills ghosts of width `edge_order` along the differentiated axis and applies a
  three-point stencil whose weights depend on the global index (one-sided at the ends, the
  non-uniform formulas where coordinates are given), exactly numpy's formulas.
"""
from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from darray._src.api.creation import asarray
from darray._src.api.statistical import plain
from darray._src.backends.jax import halo_exchange
from darray._src.backends.registry import EXCHANGES, HALO_FILLS, record, select_exchanges
from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import ensure_array
from darray._src.layout.axes import normalize_axes
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.placement import physical

# numpy's pad modes -> the halo's boundary rules
PAD_MODES = {"constant": "constant", "edge": "edge", "wrap": "periodic", "reflect": "reflect",
             "symmetric": "symmetric"}


# -- pad --------------------------------------------------------------------------------------
def _pairs(value, ndim: int, name: str, integer: bool) -> np.ndarray:
    """numpy's broadcasting of pad_width / constant_values to one (before, after) per axis."""
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(f"{name}={value!r} must be a number, a (before, after) pair or one "
                        f"pair per axis")
    try:
        arr = np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(f"{name}={value!r} must be a number, a (before, after) pair or one "
                         f"(before, after) pair per axis ({ndim} axes)") from None
    if integer:
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name}={value!r} must hold integers")
        if (arr < 0).any():
            raise ValueError(f"{name}={value!r} must be non-negative")
    return arr


@program_cache(SMALL)
def _pad_fn(in_layout: Layout, out_layout: Layout, widths, rules, exchanges: str):
    def run(data, values):
        data = physical.constrain(data, in_layout)
        out = halo_exchange.pad(data, values, in_layout=in_layout, out_layout=out_layout,
                                widths=widths, rules=rules, permute=_chained_permute(exchanges))
        return physical.constrain(out, out_layout)
    return jax.jit(run)


def pad(x, pad_width, mode="constant", *, constant_values=0) -> DistArray:
    """numpy's ``np.pad`` for the modes "constant", "edge", "wrap", "reflect" and "symmetric".

    Args:
      x: DistArray.
      pad_width: cells added before and after each axis: an int, a (before, after) pair, or one
        pair per axis (numpy's broadcasting).
      mode: one of "constant", "edge", "wrap", "reflect", "symmetric" (np.pad's meaning,
        widths wider than the axis included).
      constant_values: for mode="constant": a scalar, a (before, after) pair or one per axis.

    Returns:
      The padded DistArray, of x's dtype.

    Layout:
      x's split, each axis longer by its widths. An unsplit axis is padded locally. A split
      axis is re-blocked (the padded axis has a larger chunk): every output block gathers its
      cells, boundary cells included, from the blocks that hold them with rounds of face
      moves planned like a halo exchange (on the halo backend's: `lax.ppermute`,
      MPI_Sendrecv); never an all-gather.
    """
    x = ensure_array("pad", x)
    if not isinstance(mode, str) or mode not in PAD_MODES:
        raise ValueError(f"pad: mode={mode!r} is not supported; use one of "
                         f"{tuple(PAD_MODES)}")
    if x.ndim == 0:
        raise ValueError("pad needs an array of rank >= 1, got a 0-d array")
    widths = tuple((int(lo), int(hi)) for lo, hi in _pairs(pad_width, x.ndim, "pad_width", True))
    rule = PAD_MODES[mode]
    for axis, ((lo, hi), n) in enumerate(zip(widths, x.shape)):
        if (lo or hi) and n == 0 and rule != "constant":
            raise ValueError(f"pad: cannot extend the empty axis {axis} with mode={mode!r}; "
                             "use mode='constant'")
    kind = np.result_type(x.dtype, np.float32).kind  # values of the constant rule
    values = _pairs(constant_values, x.ndim, "constant_values", False).astype(
        np.complex128 if kind == "c" else np.float64) if mode == "constant" else np.zeros(
        (x.ndim, 2))
    x = plain(x)
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, widths))
    out = make_out_layout(x.mesh, shape, x.layout.split)
    if 0 in x.shape:  # nothing to exchange: the result is the constant (numpy's rule)
        host = np.pad(np.asarray(x), widths, mode="constant",
                      constant_values=values.astype(x.dtype))
        return asarray(host, mesh=out.mesh, spec=out.spec)
    # the face moves run on the halo backend in force when it offers them (MPI), else JAX's
    chosen = record(select_exchanges("pad", HALO_FILLS))
    fn = _pad_fn(x.layout, out, widths, (rule,) * x.ndim, chosen.backend)
    return DistArray._new(fn(x.data, jnp.asarray(values)), out)


# -- gradient ---------------------------------------------------------------------------------
def _weights(n: int, spacing, edge_order: int) -> np.ndarray:
    """(2 * edge_order + 1, n) stencil weights: row k multiplies the cell at offset
    k - edge_order. numpy's formulas: central differences inside, one-sided of order
    `edge_order` at the ends; `spacing` is a scalar or the n coordinates."""
    w = edge_order
    t = np.zeros((2 * w + 1, n))
    if np.ndim(spacing) == 0:
        h = float(spacing)
        t[w - 1, 1:-1], t[w + 1, 1:-1] = -0.5 / h, 0.5 / h
        if edge_order == 1:
            t[w, 0], t[w + 1, 0] = -1 / h, 1 / h
            t[w - 1, -1], t[w, -1] = -1 / h, 1 / h
        else:
            t[w, 0], t[w + 1, 0], t[w + 2, 0] = -1.5 / h, 2 / h, -0.5 / h
            t[w - 2, -1], t[w - 1, -1], t[w, -1] = 0.5 / h, -2 / h, 1.5 / h
        return t
    dx = np.diff(np.asarray(spacing, np.float64))
    d1, d2 = dx[:-1], dx[1:]
    t[w - 1, 1:-1] = -d2 / (d1 * (d1 + d2))
    t[w, 1:-1] = (d2 - d1) / (d1 * d2)
    t[w + 1, 1:-1] = d1 / (d2 * (d1 + d2))
    if edge_order == 1:
        t[w, 0], t[w + 1, 0] = -1 / dx[0], 1 / dx[0]
        t[w - 1, -1], t[w, -1] = -1 / dx[-1], 1 / dx[-1]
    else:
        a, b = dx[0], dx[1]
        t[w, 0] = -(2 * a + b) / (a * (a + b))
        t[w + 1, 0] = (a + b) / (a * b)
        t[w + 2, 0] = -a / (b * (a + b))
        a, b = dx[-2], dx[-1]
        t[w - 2, -1] = b / (a * (a + b))
        t[w - 1, -1] = -(a + b) / (a * b)
        t[w, -1] = (2 * b + a) / (b * (a + b))
    return t


def _chained_permute(exchanges: str):
    """`permute` for halo_exchange.pad: the backend's face move, one chain per program."""
    chain: list = []

    def permute(x, names, pairs, mesh):
        if not chain:  # first move of the program: its exchanges start here
            chain.append(EXCHANGES[exchanges](mesh))
        return chain[0].permute(x, names, pairs, mesh)
    return permute


def _gradient_backend(f, axis: int, edge_order: int) -> str:
    """The halo backend that fills gradient's ghosts (recorded; see _gradient_fn)."""
    widths = tuple((edge_order, edge_order) if a == axis else (0, 0) for a in range(f.ndim))
    key = (f.layout, f.layout.with_halo(widths), ("constant",) * f.ndim)
    return record(HALO_FILLS.select(None, key)).requested


@program_cache(SMALL)
def _gradient_fn(layout: Layout, axis: int, edge_order: int, dtype, backend: str):
    w = edge_order
    widths = tuple((w, w) if a == axis else (0, 0) for a in range(layout.ndim))
    haloed = layout.with_halo(widths)
    chunk = layout.chunk(axis)
    names = layout.split[axis]
    table_spec = PartitionSpec(None, names if names else None)
    rules = ("constant",) * layout.ndim  # ghosts past the ends get weight 0
    fill = HALO_FILLS.select(backend, (layout, haloed, rules)).impl

    def stencil(block, table):
        shape = [1] * block.ndim
        shape[axis] = chunk
        out = None
        for k in range(2 * w + 1):
            term = table[k].reshape(shape) * jax.lax.slice_in_dim(block, k, k + chunk, axis=axis)
            out = term if out is None else out + term
        return out

    def run(data, table):
        data = physical.constrain(data, layout).astype(dtype)
        filled = fill(data, None, in_layout=layout, out_layout=haloed, rules=rules)
        out = compat.shard_map(stencil, mesh=layout.mesh, in_specs=(haloed.spec, table_spec),
                               out_specs=layout.spec)(filled, table)
        return physical.constrain(out, layout)
    return jax.jit(run)


def _spacings(varargs, axes, x: DistArray):
    """numpy's spacing arguments: none (1 per axis), one scalar for all axes, or one per
    axis, each a scalar or a 1-D coordinate array as long as the axis."""
    if len(varargs) == 0:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return [varargs[0]] * len(axes)
    if len(varargs) != len(axes):
        raise TypeError(f"gradient: give no spacing, one scalar, or one spacing per axis in "
                        f"axis ({len(axes)}); got {len(varargs)}")
    out = []
    for a, s in zip(axes, varargs):
        if isinstance(s, DistArray):
            s = np.asarray(s)
        if np.ndim(s) == 0:
            out.append(s)
            continue
        s = np.asarray(s)
        if s.ndim != 1 or s.shape[0] != x.shape[a]:
            raise ValueError(f"gradient: the coordinates for axis {a} must be 1-D of length "
                             f"{x.shape[a]} (the axis), got shape {s.shape}")
        dx = np.diff(s.astype(np.float64))
        out.append(dx[0] if dx.size and (dx == dx[0]).all() else s)  # numpy's uniform shortcut
    return out


def gradient(f, *varargs, axis=None, edge_order=1):
    """numpy's ``np.gradient``: second-order central differences inside, one-sided differences
    of order `edge_order` at the ends.

    Args:
      f: DistArray.
      *varargs: the spacing: none (1), one scalar for every axis, or one per differentiated
        axis, each a scalar or the axis' 1-D coordinates (non-uniform grids).
      axis: None (every axis), an int or a tuple of ints.
      edge_order: 1 or 2.

    Returns:
      One DistArray when one axis is differentiated (also for ``axis=(a,)``, as numpy), else a
      tuple of them (one per axis, in order), of f's float dtype
      (integer input gives the default float dtype).

    Layout:
      f's layout, for each result. Along a split axis the neighbours come from a halo
      exchange of width `edge_order` (`lax.ppermute` of face-sized slabs); along an unsplit
      axis the stencil is local. No all-gather.
    """
    f = ensure_array("gradient", f, "f")
    if f.ndim == 0:
        raise ValueError("gradient needs an array of rank >= 1, got a 0-d array")
    axes = tuple(range(f.ndim)) if axis is None else normalize_axes(axis, f.ndim, "axis")
    try:
        edge_order = operator.index(edge_order)
    except TypeError:
        raise TypeError(f"gradient: edge_order={edge_order!r} must be 1 or 2") from None
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order={edge_order} must be 1 or 2")
    for a in axes:
        if f.shape[a] < edge_order + 1:
            raise ValueError(f"gradient: axis {a} has {f.shape[a]} cells; at least "
                             f"edge_order + 1 = {edge_order + 1} are required")
    spacings = _spacings(varargs, axes, f)
    dtype = f.dtype if f.dtype.kind in "fc" else _dt.default_float()
    real = np.dtype(jnp.finfo(dtype).dtype)
    f = plain(f)
    results = []
    for a, s in zip(axes, spacings):
        table = _weights(f.shape[a], s, edge_order)
        padded = f.layout.padded_shape[a]
        table = np.pad(table, ((0, 0), (0, padded - f.shape[a]))).astype(real)
        fn = _gradient_fn(f.layout, a, edge_order, np.dtype(dtype),
                          _gradient_backend(f, a, edge_order))
        results.append(DistArray._new(fn(f.data, table), f.layout))
    return results[0] if len(results) == 1 else tuple(results)  # numpy's rule
