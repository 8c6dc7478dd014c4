"""Binning, padding, derivatives, contractions: bincount, histogram, pad, gradient, einsum,
interp (darray/_src/extras/binning.py, stencils.py, numerical.py) against numpy."""
from __future__ import annotations

import diff_support as ds
import numpy as np
from diff_registry import Case, Example, one_array, register
from hypothesis import strategies as st

import darray

F = ds.FLOATS
PAD_MODES = ("constant", "edge", "wrap", "reflect", "symmetric")


# -- pad --------------------------------------------------------------------------------------
def _pad_params(draw, shape):
    widths = tuple((draw(st.integers(0, 3)), draw(st.integers(0, 15 if draw(st.booleans())
                                                                  else 3)))
                   for _ in shape)
    modes = PAD_MODES if all(shape) else ("constant",)  # numpy refuses to extend empty axes
    return {"pad_width": widths, "mode": draw(st.sampled_from(modes))}


# -- gradient ---------------------------------------------------------------------------------
@st.composite
def _gradient_example(draw):
    mesh = draw(ds.meshes)
    shape = draw(st.lists(st.sampled_from((13, 3, 5, 7, 17)), min_size=1, max_size=3))
    x = draw(ds.operand(mesh, tuple(shape), draw(st.sampled_from(ds.REAL)), "real"))
    edge_order = draw(st.sampled_from([1, 2]))
    axis = draw(st.sampled_from([None] + list(range(len(shape)))))
    if axis is None:
        return Example(mesh, [x], {"edge_order": edge_order}, scale=4)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    spacing = (np.cumsum(rng.uniform(0.5, 1.5, shape[axis])) if draw(st.booleans())
               else draw(st.sampled_from([1.0, 0.5, 3.0])))
    return Example(mesh, [x, spacing], {"axis": axis, "edge_order": edge_order}, scale=8)


# -- einsum -----------------------------------------------------------------------------------
@st.composite
def _matmul_example(draw):
    mesh = draw(ds.meshes)
    m, k, n = (draw(ds.extents(allow_zero=False)) for _ in range(3))
    dtype = draw(st.sampled_from(F))
    a = draw(ds.operand(mesh, (m, k), dtype))
    b = draw(ds.operand(mesh, (k, n), dtype))
    return Example(mesh, [draw(st.sampled_from(["ij,jk->ik", "ij,jk", "ij,jk->ki", "ij,jk->"])),
                          a, b], scale=k * 4)


_ONE = {1: ("i->", "i", "i->i"), 2: ("ij->", "ij->j", "ji", "ij->i"),
        3: ("ijk->k", "ijk->ki", "i...->...", "...k->k...", "ijk->jik")}


@st.composite
def _one_operand_example(draw):
    mesh = draw(ds.meshes)
    shape = draw(ds.shapes(1, 3, allow_zero=False))
    x = draw(ds.operand(mesh, shape, draw(st.sampled_from(F))))
    return Example(mesh, [draw(st.sampled_from(_ONE[len(shape)])), x], scale=int(np.prod(shape)))


# -- interp -----------------------------------------------------------------------------------
XP = np.array([-2.0, -0.5, 0.0, 0.25, 1.0, 2.5])
FP = np.array([1.0, -1.0, 0.5, 2.0, 0.0, 3.0])


def _interp_params(draw, shape):
    return {"xp": XP, "fp": FP, **draw(st.sampled_from([{}, {"left": -7.0, "right": 9.0},
                                                       {"period": 3.0}]))}


# -- binning ----------------------------------------------------------------------------------
@st.composite
def _bincount_weights_example(draw):
    mesh = draw(ds.meshes)
    shape = draw(ds.shapes(1, 3, allow_zero=False))  # numpy: empty + weights gives int64
    x = draw(ds.operand(mesh, shape, draw(st.sampled_from(ds.INTS)), "pos"))
    w = draw(ds.operand(mesh, shape, "float64"))
    return Example(mesh, [x, w], {"minlength": draw(st.sampled_from([0, 3, 9]))}, scale=8)


def _histogram_params(draw, shape):
    how = draw(st.sampled_from(["int", "range", "edges"]))
    if how == "int":
        return {"bins": draw(st.sampled_from([1, 4, 10]))}
    if how == "range":
        return {"bins": draw(st.sampled_from([3, 7])), "range": (-1.0, 1.5)}
    return {"bins": np.array([-3.0, -1.0, -0.25, 0.0, 0.0, 0.5, 2.0])}


def _np_bincount(x, weights=None, minlength=0):
    return np.bincount(np.ravel(x), None if weights is None else np.ravel(weights), minlength)


def _dist_bincount(x, weights=None, minlength=0):
    return darray.bincount(x, weights=weights, minlength=minlength)


register(
    Case("pad", one_array(ds.NUMERIC, "int", params=_pad_params), darray.pad, np.pad, None),
    Case("gradient", _gradient_example(), darray.gradient, np.gradient),
    Case("einsum[matmul]", _matmul_example(), darray.einsum, np.einsum, covers=("einsum",)),
    Case("einsum[one operand]", _one_operand_example(), darray.einsum, np.einsum,
         covers=("einsum",)),
    Case("interp", one_array(F, params=_interp_params), darray.interp, np.interp),
    Case("bincount", one_array(ds.INTS, "pos"), _dist_bincount, _np_bincount, None,
         covers=("bincount",)),
    # numpy's weighted bincount is float64 whatever the weights; darray keeps the weights'
    # dtype as jnp.bincount does (float64 weights here, so the dtypes agree)
    Case("bincount[weights]", _bincount_weights_example(), _dist_bincount, _np_bincount,
         covers=("bincount",)),
    # bins are decided on the native dtype's values: compare with numpy on the native dtypes
    Case("histogram", one_array(ds.REAL, "real", params=_histogram_params, allow_zero=False),
         darray.histogram, np.histogram, widen=False),
)
