"""Creation functions that start from other arrays (from_dlpack, meshgrid, tril, triu), and
numpy's logspace and diag."""
from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.api.creation import asarray, linspace
from darray._src.api.linalg import diagonal
from darray._src.api.statistical import plain
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.apply import apply_logical, apply_physical
from darray._src.engine.arguments import ensure_array
from darray._src.engine.operands import check_same_mesh
from darray._src.layout.layout import Layout, make_out_layout
from darray._src.placement import physical
from darray._src.placement.placement import make_layout


def from_dlpack(x, /, *, device=None, copy=None) -> DistArray:
    """A DistArray from any object with `__dlpack__` (numpy, jax, torch, a DistArray...).

    Layout:
      As `darray.asarray` places new data (default: one axis split over every device); each
      device receives only its block. `copy=False` is refused for non-DistArray input, since
      the data always moves onto the mesh.
    """
    if isinstance(x, (DistArray, jax.Array)):
        return asarray(x, device=device, copy=copy)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__, got {type(x).__name__}")
    return asarray(np.from_dlpack(x), device=device, copy=copy)


def _meshgrid_fn(*args):
    *arrays, indexing = args
    return tuple(jnp.meshgrid(*arrays, indexing=indexing))


def _base_to_the(exponents, base):
    return jnp.power(jnp.asarray(base, exponents.dtype), exponents)


def logspace(start, stop, /, num=50, *, endpoint=True, base=10.0, dtype=None, device=None,
             mesh=None, spec=None) -> DistArray:
    """``base ** linspace(start, stop, num)``: numpy's logspace (scalar start, stop and base).

    Args:
      start, stop: exponents of the first and last samples (Python or numpy scalars).
      num: number of samples; endpoint: include ``base ** stop``.
      base: the base of the power (default 10.0).
      dtype: result dtype; default the default floating dtype (complex for a complex start,
        stop or base). An integer dtype truncates the floating values, as numpy's.

    Layout:
      1-D as linspace places it (device/mesh/spec as there); each device computes its own
      samples: no communication.
    """
    for name, value in (("start", start), ("stop", stop), ("base", base)):
        if np.ndim(value) != 0 or isinstance(value, DistArray):
            raise TypeError(f"logspace: {name}={value!r} must be a scalar; darray's logspace "
                            "takes scalar start, stop and base (numpy's array forms are not "
                            "supported)")
    is_complex = any(isinstance(v, (complex, np.complexfloating)) for v in (start, stop, base))
    wanted = None if dtype is None else np.dtype(dtype)
    # numpy's order: samples and powers in the widest float, then the cast to `dtype`
    work = np.dtype(jnp.result_type(complex if is_complex or (wanted is not None
                                                              and wanted.kind == "c")
                                    else float))
    exponents = linspace(start.item() if isinstance(start, np.generic) else start,
                         stop.item() if isinstance(stop, np.generic) else stop, num,
                         dtype=work, endpoint=endpoint, device=device, mesh=mesh, spec=spec)
    base = base.item() if isinstance(base, np.generic) else base
    out = apply_physical(_base_to_the, (exponents, base), exponents.layout)
    if wanted is not None and wanted != out.dtype:
        out = apply_physical(_cast_to(wanted), (out,), out.layout)
    return out


@functools.cache
def _cast_to(dtype):
    return lambda data: data.astype(dtype)


def _diag_matrix(v, k):
    return jnp.diag(v, k)


def diag(v, /, k=0) -> DistArray:
    """numpy's diag: a 1-D `v` gives the square matrix with `v` on its `k`-th diagonal (zeros
    elsewhere); a 2-D `v` gives its `k`-th diagonal (darray.linalg.diagonal).

    Layout:
      1-D v: the matrix's rows are split over the mesh axes that split v (each device writes
      its rows; XLA brings it the entries of v they hold). 2-D v: as linalg.diagonal.
    """
    v = ensure_array("diag", v, "v")
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, offset=k)
    if v.ndim != 1:
        raise ValueError(f"diag: v must be 1-D (to build a matrix) or 2-D (to read a diagonal), "
                         f"got shape {v.shape}")
    n = v.shape[0] + abs(k)
    out = make_out_layout(v.mesh, (n, n), (plain(v).layout.split[0], ()))
    return apply_logical(_diag_matrix, [plain(v)], out, static=(k,))


def meshgrid(*arrays, indexing="xy") -> tuple[DistArray, ...]:
    """Coordinate grids from 1-D arrays.

    Args:
      arrays: 1-D DistArrays of one dtype.
      indexing: "xy" (Cartesian: the first two output axes swapped) or "ij" (matrix).

    Layout:
      Output axis ``i`` is split as the vector that spans it (with "xy" the first two swap),
      so vectors split over different mesh axes give grids split over all of them and each
      device broadcasts its own pieces: no communication. A vector whose mesh axes another
      vector already took is unsplit in the output (its values then move to every device).
      Unsplit vectors give the default layout of the grid. For the wavenumbers of a spectrum
      see `darray.fft.wavenumbers` (size-1 axes, no grid materialised).
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing={indexing!r}; use 'xy' or 'ij'")
    arrays = tuple(ensure_array("meshgrid", a, f"arrays[{i}]") for i, a in enumerate(arrays))
    if not arrays:  # a tuple since Array API 2025.12 (a list before: see api/versions.py)
        return ()
    arrays = tuple(check_same_mesh("meshgrid", arrays))  # the mesh rule (engine/operands.py)
    for i, a in enumerate(arrays):
        if a.ndim != 1:
            raise ValueError(f"meshgrid: arrays[{i}] must be 1-D, got shape {a.shape}")
        if a.dtype != arrays[0].dtype:
            raise TypeError(f"meshgrid: arrays[{i}] has dtype {a.dtype} but arrays[0] has "
                            f"{arrays[0].dtype}; the standard asks for one dtype")
    axis_of = list(range(len(arrays)))  # output axis spanned by each input vector
    if indexing == "xy" and len(arrays) > 1:
        axis_of[0], axis_of[1] = 1, 0
    shape = [0] * len(arrays)
    split = [()] * len(arrays)
    used: set = set()
    for a, axis in zip(arrays, axis_of):
        shape[axis] = a.shape[0]
        s = tuple(a.layout.split[0])
        if s and not used.intersection(s):
            split[axis] = s
            used.update(s)
    if not used:
        layout = make_layout(tuple(shape), mesh=arrays[0].mesh)
    else:
        spec = tuple(None if not s else (s[0] if len(s) == 1 else s) for s in split)
        layout = Layout.create(tuple(shape), arrays[0].mesh, spec)
    kept = all(a.layout.split[0] == split[axis] and not a.layout.has_halo
               for a, axis in zip(arrays, axis_of))
    if kept and used:  # every vector is split where its axis is: broadcast the blocks
        outs = _meshgrid_physical(tuple(axis_of), layout)(*[a.data for a in arrays])
        return tuple(DistArray._new(o, layout) for o in outs)
    return tuple(apply_logical(_meshgrid_fn, list(arrays), (layout,) * len(arrays),
                              static=(indexing,)))


@program_cache(SMALL)
def _meshgrid_physical(axis_of, layout):
    """Each output is its vector's physical data (padded like the output's axis, since the
    split and length are the same) broadcast along the other axes."""
    target = layout.physical_shape

    def run(*vectors):
        outs = []
        for v, axis in zip(vectors, axis_of):
            names = layout.split[axis]  # (not layout.spec: it drops trailing unsplit axes)
            entry = None if not names else (names[0] if len(names) == 1 else names)
            v = physical.constrain(v, Layout.create(v.shape, layout.mesh, (entry,)))
            shape = [1] * layout.ndim
            shape[axis] = v.shape[0]
            outs.append(physical.constrain(jnp.broadcast_to(v.reshape(shape), target), layout))
        return tuple(outs)
    return jax.jit(run)


def _triangle(data, k, upper):
    """Keep the cells on and above (upper) or on and below the k-th diagonal of the last two
    axes. k is a runtime input, so every k shares one compilation per layout."""
    rows = jax.lax.broadcasted_iota(np.int64 if data.shape[-2] > 2**31 - 1 else np.int32,
                                    data.shape, data.ndim - 2)
    cols = jax.lax.broadcasted_iota(rows.dtype, data.shape, data.ndim - 1)
    offset = cols - rows
    keep = offset >= k if upper else offset <= k
    return jnp.where(keep, data, jnp.zeros((), data.dtype))


def _triangle_apply(x, k, upper, fname):
    x = ensure_array(fname, x)
    if x.ndim < 2:
        raise ValueError(f"{fname} needs an array of rank >= 2, got shape {x.shape}")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"{fname}: k={k!r} must be an int")
    # Padding sits at the end of each split axis, so physical index = logical index and the
    # triangle mask computed on the physical array is the logical one: no communication.
    x = plain(x)
    k = int(np.clip(int(k), -2**31, 2**31 - 1))  # beyond the array either way
    return apply_physical(_triu if upper else _tril, [x, np.int32(k)], x.layout)


def _triu(data, k):
    return _triangle(data, k, True)


def _tril(data, k):
    return _triangle(data, k, False)


def tril(x, /, *, k=0) -> DistArray:
    """Zero the elements above the k-th diagonal of the last two axes.

    Layout:
      x's layout; no communication (the mask is built from each device's own indices).
    """
    return _triangle_apply(x, k, False, "tril")


def triu(x, /, *, k=0) -> DistArray:
    """Zero the elements below the k-th diagonal of the last two axes.

    Layout:
      x's layout; no communication (the mask is built from each device's own indices).
    """
    return _triangle_apply(x, k, True, "triu")
