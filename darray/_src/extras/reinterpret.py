"""``x.view(dtype)``: numpy's reinterpretation of an array's bytes as another dtype.

Not in the standard, but numpy code uses it (scipy's RBFInterpolator views complex data as
float pairs and back). As in numpy, the result is a view: writing it writes `x`
(engine/views.py), with the bytes reinterpreted back. The values follow numpy's (C order,
little-endian bytes as every JAX platform stores them); a dtype of another item size changes
the length of the last axis, which must then hold a whole number of the new items.
"""
from __future__ import annotations

import numpy as np

from darray._src.base import dtypes as _dt
from darray._src.distarray.array import DistArray
from darray._src.engine import views
from darray._src.engine.apply import apply_logical, run_physical
from darray._src.engine.arguments import ensure_array
from darray._src.layout.layout import Layout, make_out_layout


def _bytes_as(data, dtype):
    if data.dtype == np.bool_ and dtype != np.bool_:
        data = data.astype(np.uint8)  # jax has no bit cast from bool; True is the byte 1
    if dtype == np.bool_:
        return data.view(np.uint8) != 0 if data.dtype != np.bool_ else data
    return data.view(dtype)


def _reinterpreted(x: DistArray, dtype: np.dtype) -> DistArray:
    old, new = x.dtype.itemsize, dtype.itemsize
    lay = x.layout
    if old == new:  # cell by cell: the physical blocks as they are (padding, ghosts kept)
        return run_physical(_bytes_as, [x], lay, static=(dtype,))
    if x.ndim == 0:
        raise ValueError(f"view: a 0-d array of {x.dtype} cannot be viewed as {dtype} (item "
                         f"sizes {old} and {new} differ), as in numpy")
    last = x.shape[-1] * old
    if last % new:
        raise ValueError(f"view: the last axis of x (shape {x.shape}, {x.dtype}) holds {last} "
                         f"bytes, not a whole number of {dtype} items ({new} bytes each)")
    shape = x.shape[:-1] + (last // new,)
    if not lay.split[-1] and not lay.has_halo:
        # an unsplit last axis is whole on every device: each device reinterprets its block
        out = Layout(shape, lay.mesh, lay.split, lay.halo)
        return run_physical(_bytes_as, [x], out, static=(dtype,))
    # a split last axis: the partitioner moves the cells whose items straddle blocks
    out = make_out_layout(lay.mesh, shape, lay.split)
    return apply_logical(_bytes_as, [x], out, static=(dtype,))


def view(x: DistArray, dtype=None) -> DistArray:
    """numpy's ``x.view(dtype)``: x's bytes read as `dtype`, a view of x.

    Args:
      x: DistArray.
      dtype: a darray dtype (Python ``float`` is float64, as in numpy); None gives a view of x
        with its own dtype.

    Returns:
      A DistArray linked to x: writing it writes x (its bytes reinterpreted back).

    Layout:
      x's layout when the item size is kept (no communication), or when the last axis is
      unsplit (its length scales by the ratio of item sizes; no communication). A split last
      axis with another item size is resized by XLA's partitioner (cells move between
      neighbouring blocks).
    """
    x = ensure_array("view", x)
    if dtype is None:
        dtype = x.dtype
    dtype = _dt.as_dtype(dtype)
    if dtype == x.dtype:
        result = DistArray._make(x.data, x.layout)
    else:
        result = _reinterpreted(x, dtype)
    back = x.dtype
    same = lambda p: DistArray._make(p.data, p.layout)  # noqa: E731
    return views.make_view(result, x, views.Step(lambda p: _reinterpreted(p, dtype) if
                                                 p.dtype != dtype else same(p),
                                                 lambda p, v: _reinterpreted(v, back) if
                                                 v.dtype != back else v))
