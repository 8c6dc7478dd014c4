"""Covers: darray/_src/engine/exchange_gather.py, darray/_src/api/indexing.py
Covers: darray/_src/api/taking.py, darray/_src/extras/at.py

Integer-array indexing along a split axis plans at most 3 blocks of temporaries per device and
no all-gather (issue 49, item 2): XLA's accounting of the jitted call
(``jax.jit(f).lower(*args).compile().memory_analysis()``, memory_survey.blocks_of: a block is
the larger of a device's share of the arguments and of the outputs). Before the ring, XLA's
partitioner gathered the operand: 11.96 blocks for ``x[..., i]`` on the survey's 2x4 uneven
layout. float32 operands of uneven shapes (not divisible by the mesh) on the 8, 2x4 and 4x2
meshes, above the ring's size threshold.
"""
import jax
import numpy as np
import pytest
from helpers import mesh_of
from memory_survey import RULE, blocks_of

import darray
from darray._src.engine import exchange_gather

# (mesh shape, x shape, x spec, axis, index shape, index spec)
LAYOUTS = [
    ((8,), (100003,), ("x",), 0, (50001,), ("x",)),
    ((8,), (37, 2003, 19), (None, "x", None), 1, (999,), None),
    ((2, 4), (1001, 403), ("x", "y"), 0, (777,), ("x",)),
    ((2, 4), (101, 67, 45), ("x", "y", None), 1, (61,), ("y",)),
    ((4, 2), (403, 1001), ("x", "y"), 1, (3001,), (("x", "y"),)),
    ((4, 2), (20011, 13), (("x", "y"), None), 0, (20011,), None),
    # few indices: the requests are shared by all-reduces instead of a ring
    ((2, 4), (100003,), (("x", "y"),), 0, (999,), None),
]
IDS = [f"{m}-{s}-axis{a}" for m, s, _, a, _, _ in LAYOUTS]


def _operands(mshape, shape, spec, axis, ishape, ispec):
    mesh = mesh_of(mshape)
    rng = np.random.default_rng(0)
    x = darray.asarray(rng.standard_normal(shape).astype(np.float32), mesh=mesh, spec=spec)
    n = shape[axis]
    idx = darray.asarray(rng.integers(-n, n, ishape), mesh=mesh, spec=ispec)
    return x, idx


# The integer read of axis 0 of (1001, 403) on 2x4 planned 3.003 blocks while x[i] took the
# default layout (x moved first, a row buffer over); it now keeps x's split as take does: 0.80
GETITEM_CASES = [pytest.param(c, id=i) for c, i in zip(LAYOUTS, IDS)]


def _check(fn, *args):
    compiled = jax.jit(fn).lower(*args).compile()
    blocks, temp, block, gathers = blocks_of(compiled)
    assert gathers == 0, f"{gathers} all-gathers"
    assert blocks <= RULE, f"{blocks:.2f} blocks ({temp} bytes, block {block} bytes)"


@pytest.mark.parametrize("case", LAYOUTS, ids=IDS)
def test_take(case):
    axis = case[3]
    _check(lambda a, i: darray.take(a, i, axis=axis), *_operands(*case))


@pytest.mark.parametrize("case", GETITEM_CASES)
def test_getitem_integer_array(case):
    axis = case[3]
    _check(lambda a, i: a[(slice(None),) * axis + (i,)], *_operands(*case))


@pytest.mark.parametrize("case", GETITEM_CASES)
def test_getitem_two_dimensional_index(case):
    axis = case[3]
    x, idx = _operands(*case)
    two = darray.reshape(idx, (-1, 1)) if idx.shape[0] % 2 else darray.reshape(idx, (-1, 2))
    _check(lambda a, i: a[(slice(None),) * axis + (i,)], x, two)


@pytest.mark.parametrize("case", LAYOUTS, ids=IDS)
def test_take_along_axis(case):
    mshape, shape, spec, axis, _, _ = case
    x, _ = _operands(*case)
    ishape = list(shape)
    ishape[axis] = max(1, shape[axis] // 3)
    n = shape[axis]
    idx = darray.asarray(np.random.default_rng(1).integers(-n, n, ishape), mesh=x.mesh,
                         spec=spec)
    _check(lambda a, i: darray.take_along_axis(a, i, axis=axis), x, idx)


@pytest.mark.parametrize("how", ["add", "set", "max"])
@pytest.mark.parametrize("case", LAYOUTS, ids=IDS)
def test_at_update(case, how):
    axis = case[3]
    x, idx = _operands(*case)
    indexed = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    upd = darray.asarray(np.ones(indexed, np.float32), mesh=x.mesh)
    _check(lambda a, i, u: getattr(a.at[(slice(None),) * axis + (i,)], how)(u), x, idx, upd)


@pytest.mark.parametrize("case", LAYOUTS, ids=IDS)
def test_at_add_scalar(case):
    axis = case[3]
    _check(lambda a, i: a.at[(slice(None),) * axis + (i,)].add(1.0), *_operands(*case))


# take_along_axis split over 8 devices moves the split onto another axis (all-to-alls, one
# gather): x's whole columns, the narrowed indices and their copies (2.0 and 2.47 blocks with
# a single index row, where x's block outweighs the indices'; 1.44 with as many rows as x)
REORIENTED = [((8,), (1021, 1031), ("x", None), 1), ((8,), (1021, 1031), ("x", None), 1021),
              ((4, 2), (20011, 13), (("x", "y"), None), 1)]


@pytest.mark.parametrize("mshape,shape,spec,k", REORIENTED)
def test_take_along_axis_reoriented(mshape, shape, spec, k):
    mesh = mesh_of(mshape)
    rng = np.random.default_rng(2)
    x = darray.asarray(rng.standard_normal(shape).astype(np.float32), mesh=mesh, spec=spec)
    idx = darray.asarray(rng.integers(-shape[0], shape[0], (k,) + shape[1:]), mesh=mesh,
                         spec=spec)
    assert exchange_gather.reorient_axis(x.layout, 0) is not None
    _check(lambda a, i: darray.take_along_axis(a, i, axis=0), x, idx)
