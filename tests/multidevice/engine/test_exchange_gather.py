"""Covers: darray/_src/engine/exchange_gather.py, darray/_src/api/indexing.py
Covers: darray/_src/api/taking.py, darray/_src/extras/at.py

Integer-array indexing along a split axis by a ring of ppermutes (issue 49, item 2): `take`,
``x[..., i]``, `take_along_axis`, ``x.at[i].<op>`` and ``x[i] = v`` never gather x. Values
against numpy in float64 (x64 on; the stored dtype otherwise), with random, repeated and
negative indices, index arrays split, unsplit or split over two mesh axes, uneven shapes on
the 8, 2x4 and 4x2 meshes; output layouts asserted (the ones the old path gave), and the
compiled programs checked for all-gathers. The ring's size threshold is lowered to 0 here so
that small shapes take it; one test checks that the threshold keeps small arrays on the old
path with the same answers.
"""
import jax
import numpy as np
import pytest
from helpers import assert_layout, canonical_dtype, collective_count, compiled_hlo, mesh_of

import darray
from darray._src.engine import exchange_gather
from darray._src.layout.layout import default_layout


@pytest.fixture(autouse=True)
def _ring_for_every_size(monkeypatch):
    monkeypatch.setattr(exchange_gather, "MIN_RING_CELLS", 0)


def _x(shape, mesh, spec, seed=0, dtype=np.float64):
    host = np.random.default_rng(seed).standard_normal(shape).astype(canonical_dtype(dtype))
    return host, darray.asarray(host, mesh=mesh, spec=spec)


def _idx(n, shape, seed=1):
    """Random indices in [-n, n): repeats and negatives (numpy reads both)."""
    return np.random.default_rng(seed).integers(-n, n, shape).astype(canonical_dtype(np.int64))


def _no_gather(fn, *args):
    assert collective_count(compiled_hlo(fn, *args), "all-gather") == 0


# (mesh shape, x shape, x spec, axis, index length, index spec)
TAKE = [
    ((8,), (1001,), ("x",), 0, 777, "x"),
    ((8,), (1001,), ("x",), 0, 5, None),
    ((8,), (5, 203, 3), (None, "x", None), 1, 300, "x"),
    ((2, 4), (103, 5), (("x", "y"), None), 0, 64, ("x", "y")),
    ((2, 4), (37, 203), ("x", "y"), 1, 99, None),
    ((2, 4), (37, 203), ("x", "y"), 0, 99, "y"),
    ((4, 2), (61, 25), ("x", "y"), 0, 200, "x"),
    ((4, 2), (61, 25), ("y", "x"), 1, 3, "x"),
    ((8,), (3, 2), ("x", None), 0, 50, None),  # 3 rows over 8 blocks: empty trailing blocks
]


@pytest.mark.parametrize("mshape,shape,spec,axis,m,ispec", TAKE)
def test_take_along_a_split_axis(mshape, shape, spec, axis, m, ispec):
    mesh = mesh_of(mshape)
    xh, x = _x(shape, mesh, spec)
    ih = _idx(shape[axis], (m,))
    idx = darray.asarray(ih, mesh=mesh, spec=(ispec,))
    y = darray.take(x, idx, axis=axis)
    np.testing.assert_array_equal(np.asarray(y), np.take(xh.astype(np.float64), ih, axis=axis))
    out_shape = list(shape)
    out_shape[axis] = m
    assert_layout(y, split=x.layout.split, shape=out_shape)
    _no_gather(lambda a, i: darray.take(a, i, axis=axis), x, idx)


def test_take_clamps_out_of_range_indices_as_before(monkeypatch):
    """Out-of-range DistArray indices: wrapped once, then clamped, on both paths."""
    mesh = mesh_of((2, 4))
    xh, x = _x((41, 6), mesh, (("x", "y"), None))
    ih = np.array([-100, -42, -41, -1, 0, 40, 41, 1000], canonical_dtype(np.int64))
    idx = darray.asarray(ih, mesh=mesh, spec=("x",))
    ring = np.asarray(darray.take(x, idx, axis=0))
    monkeypatch.setattr(exchange_gather, "MIN_RING_CELLS", 1 << 62)
    old = np.asarray(darray.take(x, idx, axis=0))
    np.testing.assert_array_equal(ring, old)
    np.testing.assert_array_equal(ring, xh[np.clip(np.where(ih < 0, ih + 41, ih), 0, 40)])


# (mesh shape, x shape, x spec, axis, index shape, index spec)
GETITEM = [
    ((8,), (5, 203, 3), (None, "x", None), 1, (13, 7), None),
    ((8,), (5, 203, 3), (None, "x", None), 1, (13, 7), ("x", None)),
    ((2, 4), (41, 67, 5), ("x", "y", None), 0, (100,), ("y",)),
    ((2, 4), (41, 67, 5), ("x", "y", None), 1, (13, 7), ("x", None)),
    ((2, 4), (41, 67, 5), ("x", "y", None), 1, (57, 3), (("x", "y"), None)),
    ((4, 2), (61, 205), ("y", "x"), 1, (13, 7), None),
    ((4, 2), (61, 205), ("x", "y"), 0, (300,), (("x", "y"),)),
]


@pytest.mark.parametrize("mshape,shape,spec,axis,ishape,ispec", GETITEM)
def test_getitem_with_one_index_array(mshape, shape, spec, axis, ishape, ispec):
    mesh = mesh_of(mshape)
    xh, x = _x(shape, mesh, spec)
    ih = _idx(shape[axis], ishape)
    idx = darray.asarray(ih, mesh=mesh, spec=ispec)
    key = (slice(None),) * axis + (idx,)
    y = x[key]
    ref = xh.astype(np.float64)[(slice(None),) * axis + (ih,)]
    np.testing.assert_array_equal(np.asarray(y), ref)
    # x keeps its split, as take does: the index's first axis takes the split of x's axis
    split = x.layout.split
    want = split[:axis] + (split[axis],) + ((),) * (len(ishape) - 1) + split[axis + 1:]
    assert_layout(y, split=want, shape=ref.shape, mesh=mesh)
    _no_gather(lambda a, i: a[(slice(None),) * axis + (i,)], x, idx)


def test_getitem_host_indices_and_ellipsis():
    mesh = mesh_of((2, 4))
    xh, x = _x((9, 50, 4), mesh, (None, ("x", "y"), None))
    ih = _idx(50, (31,))
    y = x[:, ih]
    np.testing.assert_array_equal(np.asarray(y), xh[:, ih])
    z = x[..., ih.tolist(), :]
    np.testing.assert_array_equal(np.asarray(z), xh[..., ih, :])
    assert_layout(y, default_layout((9, 31, 4), x.layout))


@pytest.mark.parametrize("mshape,shape,spec,axis,k", [
    ((8,), (5, 203, 3), (None, "x", None), 1, 203),
    ((8,), (5, 203, 3), (None, "x", None), 1, 17),
    ((2, 4), (41, 67, 5), ("x", "y", None), 0, 17),
    ((2, 4), (41, 67, 5), ("x", "y", None), 1, 67),
    ((4, 2), (61, 25), ("y", "x"), 1, 40),
])
def test_take_along_a_split_axis_with_take_along_axis(mshape, shape, spec, axis, k):
    mesh = mesh_of(mshape)
    xh, x = _x(shape, mesh, spec)
    ishape = list(shape)
    ishape[axis] = k
    ih = _idx(shape[axis], tuple(ishape))
    idx = darray.asarray(ih, mesh=mesh, spec=spec)
    y = darray.take_along_axis(x, idx, axis=axis)
    ref = np.take_along_axis(xh.astype(np.float64), np.where(ih < 0, ih + shape[axis], ih),
                             axis=axis)
    np.testing.assert_array_equal(np.asarray(y), ref)
    assert_layout(y, split=(x if tuple(ishape) == shape else idx).layout.split, shape=ishape)
    _no_gather(lambda a, i: darray.take_along_axis(a, i, axis=axis), x, idx)


# take_along_axis split over 8 devices moves the split onto another axis (all-to-alls, one
# local gather) where one fits: (mesh shape, x shape, x spec, axis, index length, axis it moves
# onto). Uneven blocks, the other axis before or after the indexed one, padded to a multiple
# of 8 (37 -> 40, 41 -> 48), fewer or more index rows than x's, n over 256 (uint16 indices)
REORIENT = [
    ((8,), (203, 37), ("x", None), 0, 203, 1),
    ((8,), (203, 37), ("x", None), 0, 67, 1),
    ((8,), (300, 37), ("x", None), 0, 401, 1),
    ((8,), (67, 5, 41), ("x", None, None), 0, 67, 2),
    ((8,), (33, 203), (None, "x"), 1, 99, 0),
    ((8,), (5, 203, 16), (None, "x", None), 1, 203, 2),
    ((2, 4), (203, 37), (("x", "y"), None), 0, 150, 1),
]


@pytest.mark.parametrize("mshape,shape,spec,axis,k,other", REORIENT)
def test_take_along_axis_reoriented(monkeypatch, mshape, shape, spec, axis, k, other):
    mesh = mesh_of(mshape)
    xh, x = _x(shape, mesh, spec)
    assert exchange_gather.reorient_axis(x.layout, axis) == other
    ishape = list(shape)
    ishape[axis] = k
    ih = _idx(shape[axis], tuple(ishape))
    idx = darray.asarray(ih, mesh=mesh, spec=spec)
    fn = jax.jit(lambda a, i: darray.take_along_axis(a, i, axis=axis))
    y = fn(x, idx)
    ref = np.take_along_axis(xh.astype(np.float64), np.where(ih < 0, ih + shape[axis], ih),
                             axis=axis)
    np.testing.assert_array_equal(np.asarray(y), ref)
    assert_layout(y, split=(x if tuple(ishape) == shape else idx).layout.split, shape=ishape)
    hlo = compiled_hlo(fn, x, idx)
    assert collective_count(hlo, "all-gather") == 0
    assert collective_count(hlo, "all-to-all") == 3


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.complex128, np.int8])
def test_take_along_axis_reoriented_dtypes_and_clamping(monkeypatch, dtype):
    """Any dtype travels; out-of-range indices are wrapped once and clamped, as the ring and
    the logical path read them."""
    mesh = mesh_of((8,))
    rng = np.random.default_rng(3)
    xh = rng.integers(-100, 100, (101, 45))
    if dtype == np.complex128:
        xh = xh + 1j * rng.standard_normal((101, 45))
    xh = (xh > 0 if dtype == np.bool_ else xh).astype(canonical_dtype(dtype))
    x = darray.asarray(xh, mesh=mesh, spec=("x", None))
    ih = rng.integers(-300, 300, (101, 45)).astype(canonical_dtype(np.int64))
    idx = darray.asarray(ih, mesh=mesh, spec=("x", None))
    y = darray.take_along_axis(x, idx, axis=0)
    np.testing.assert_array_equal(
        np.asarray(y), np.take_along_axis(xh, np.clip(np.where(ih < 0, ih + 101, ih), 0, 100), 0))
    assert y.dtype == xh.dtype
    assert_layout(y, x.layout)
    monkeypatch.setattr(exchange_gather, "MIN_REORIENT_PARTS", 1 << 30)  # the ring
    np.testing.assert_array_equal(np.asarray(darray.take_along_axis(x, idx, axis=0)),
                                  np.asarray(y))


def test_take_along_axis_reoriented_with_indices_placed_otherwise():
    """Indices split over another axis than x's: moved to x's split for the kernel, and the
    result comes back in the indices' layout (the output follows them, as on the ring)."""
    mesh = mesh_of((2, 4))
    xh, x = _x((203, 37), mesh, (("x", "y"), None))
    ih = _idx(203, (60, 37))
    idx = darray.asarray(ih, mesh=mesh, spec=(None, ("x", "y")))
    y = darray.take_along_axis(x, idx, axis=0)
    np.testing.assert_array_equal(np.asarray(y), np.take_along_axis(
        xh.astype(np.float64), np.where(ih < 0, ih + 203, ih), 0))
    assert_layout(y, idx.layout)


def test_take_along_axis_reoriented_onto_a_split_axis(monkeypatch):
    """Reoriented over 2 devices (allowed here) onto an axis already split over 4 others."""
    monkeypatch.setattr(exchange_gather, "MIN_REORIENT_PARTS", 2)
    mesh = mesh_of((2, 4))
    xh, x = _x((41, 67, 3), mesh, ("x", "y", None))
    assert exchange_gather.reorient_axis(x.layout, 0) == 1
    ih = _idx(41, (41, 67, 3))
    y = darray.take_along_axis(x, darray.asarray(ih, mesh=mesh, spec=("x", "y", None)), axis=0)
    np.testing.assert_array_equal(np.asarray(y), np.take_along_axis(
        xh.astype(np.float64), np.where(ih < 0, ih + 41, ih), 0))
    assert_layout(y, x.layout)


def test_take_along_axis_keeps_the_ring_where_reorienting_does_not_fit():
    """Too few devices on the axis, too short other axes (9 -> 16 cells would hold 3 blocks),
    a 1-D array, mesh axes out of the mesh's order: the ring."""
    assert exchange_gather.reorient_axis(_x((41, 67), mesh_of((2, 4)), ("x", "y"))[1].layout,
                                         0) is None
    assert exchange_gather.reorient_axis(_x((203, 9), mesh_of((8,)), ("x", None))[1].layout,
                                         0) is None
    assert exchange_gather.reorient_axis(_x((203,), mesh_of((8,)), ("x",))[1].layout,
                                         0) is None
    assert exchange_gather.reorient_axis(
        _x((203, 37), mesh_of((4, 2)), (("y", "x"), None))[1].layout, 0) is None


def _np_at(xh, key, how, values):
    """numpy's unbuffered equivalents of JAX's .at (repeats accumulate)."""
    out = xh.astype(np.float64).copy()
    ufunc = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}
    if how == "set":
        out[key] = values
    elif how in ufunc:
        ufunc[how].at(out, key, values)
    else:
        prod = np.ones_like(out)
        np.multiply.at(prod, key, values)
        out = out / prod if how == "divide" else out ** prod
    return out


AT = [
    ((8,), (1001,), ("x",), 0, (300,)),
    ((2, 4), (41, 67, 5), ("x", "y", None), 0, (23,)),
    ((2, 4), (41, 67, 5), ("x", "y", None), 1, (11, 3)),
    ((4, 2), (61, 205), ("y", "x"), 1, (40,)),
    ((4, 2), (61, 25), (("x", "y"), None), 0, (50,)),
    ((2, 4), (4001, 3), (("x", "y"), None), 0, (20,)),  # few requests: shared by all-reduce
]


@pytest.mark.parametrize("how", ["add", "multiply", "min", "max", "divide", "power"])
@pytest.mark.parametrize("mshape,shape,spec,axis,ishape", AT)
def test_at_updates_along_a_split_axis(how, mshape, shape, spec, axis, ishape):
    mesh = mesh_of(mshape)
    xh, x = _x(shape, mesh, spec)
    if how == "power":
        xh, x = np.abs(xh), darray.abs(x)
    ih = _idx(shape[axis], ishape)  # repeats and negatives: they accumulate
    indexed = shape[:axis] + ishape + shape[axis + 1:]
    uh = np.random.default_rng(2).uniform(0.5, 1.5, indexed).astype(xh.dtype)
    key = (slice(None),) * axis + (darray.asarray(ih, mesh=mesh),)
    hkey = (slice(None),) * axis + (ih,)
    tol = 1e-12 if xh.dtype == np.float64 else 1e-5
    for values, host_values in ((darray.asarray(uh, mesh=mesh), uh), (1.25, 1.25)):
        y = getattr(x.at[key], how)(values)
        np.testing.assert_allclose(np.asarray(y), _np_at(xh, hkey, how, host_values),
                                   rtol=tol, atol=tol)
        assert_layout(y, x.layout)
    np.testing.assert_array_equal(np.asarray(x), xh)  # x itself unchanged


@pytest.mark.parametrize("mshape,shape,spec,axis,ishape", AT)
def test_set_and_setitem_with_unique_indices(mshape, shape, spec, axis, ishape):
    mesh = mesh_of(mshape)
    xh, x = _x(shape, mesh, spec)
    n = shape[axis]
    size = int(np.prod(ishape))
    # unique cells, half of them written as negative indices
    ih = (np.random.default_rng(3).permutation(n)[:size] - n * (np.arange(size) % 2))
    ih = ih.reshape(ishape).astype(canonical_dtype(np.int64))
    indexed = shape[:axis] + ishape + shape[axis + 1:]
    uh = np.random.default_rng(4).standard_normal(indexed).astype(xh.dtype)
    hkey = (slice(None),) * axis + (ih,)
    ref = _np_at(xh, hkey, "set", uh)
    idx = darray.asarray(ih, mesh=mesh)
    key = (slice(None),) * axis + (idx,)
    y = x.at[key].set(darray.asarray(uh, mesh=mesh))
    np.testing.assert_array_equal(np.asarray(y), ref)
    assert_layout(y, x.layout)
    x[key] = uh
    np.testing.assert_array_equal(np.asarray(x), ref)
    assert_layout(x, y.layout)
    _no_gather(lambda a, i, u: a.at[(slice(None),) * axis + (i,)].set(u), y, idx,
               darray.asarray(uh, mesh=mesh))


def test_scatter_drops_out_of_range_distarray_indices_as_before(monkeypatch):
    mesh = mesh_of((8,))
    xh, x = _x((50,), mesh, ("x",))
    ih = np.array([-51, -50, -1, 0, 49, 50, 3, 3], canonical_dtype(np.int64))
    idx = darray.asarray(ih, mesh=mesh, spec=("x",))
    ring = np.asarray(x.at[idx].add(1.0))
    monkeypatch.setattr(exchange_gather, "MIN_RING_CELLS", 1 << 62)
    old = np.asarray(x.at[idx].add(1.0))
    np.testing.assert_array_equal(ring, old)
    ref = xh.astype(np.float64).copy()
    np.add.at(ref, np.array([0, 49, 0, 49, 3, 3]), 1.0)
    np.testing.assert_allclose(ring, ref)


def test_small_arrays_keep_the_old_path(monkeypatch):
    """Below MIN_RING_CELLS the old (XLA) path runs; the answers are the same."""
    monkeypatch.setattr(exchange_gather, "MIN_RING_CELLS", 1 << 14)
    mesh = mesh_of((8,))
    xh, x = _x((1001,), mesh, ("x",))
    assert not exchange_gather.applies(x, 0)
    ih = _idx(1001, (40,))
    y = darray.take(x, darray.asarray(ih, mesh=mesh), axis=0)
    np.testing.assert_array_equal(np.asarray(y), xh[ih])
    assert_layout(y, split=(("x",),), shape=(40,))
    big = darray.zeros((1 << 14,), mesh=mesh, spec=("x",))
    assert exchange_gather.applies(big, 0)


def test_under_jit_with_traced_indices():
    mesh = mesh_of((2, 4))
    xh, x = _x((101, 3), mesh, (("x", "y"), None))
    ih = _idx(101, (64,))
    idx = darray.asarray(ih, mesh=mesh, spec=(("x", "y"),))
    y = jax.jit(lambda a, i: (darray.take(a, i, axis=0), a.at[i].add(2.0)))(x, idx)
    np.testing.assert_array_equal(np.asarray(y[0]), xh[ih])
    ref = xh.astype(np.float64).copy()
    np.add.at(ref, ih, 2.0)
    np.testing.assert_allclose(np.asarray(y[1]), ref)
    assert_layout(y[0], split=x.layout.split, shape=(64, 3))
    assert_layout(y[1], x.layout)
