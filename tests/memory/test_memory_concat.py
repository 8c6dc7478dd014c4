"""Covers: darray/_src/engine/joining.py, darray/_src/api/manipulation.py

The memory rule (issue 49) for concat on custom layouts: each compiled program plans at most 3
blocks of temporaries per device (memory_survey.blocks_of) and holds no all-gather. The cases:
operands of uneven sizes along a split join axis, 3 and 5 operands, operands split unlike the
first one, joins along either axis of the 2x4 and 4x2 meshes and along an axis split over two
mesh axes. Before the join windows were read straight from the input blocks: 3.04-4.24 blocks
(the zero-framed copy of a device's blocks), and one all-gather where an operand's split had to
change across both mesh axes (4.3 blocks); the blocks of each case are printed.
"""
from __future__ import annotations

import jax
import memory_survey as ms
import numpy as np
import pytest
from helpers import assert_layout, mesh_of

import darray

XY = ("x", "y")
# name -> (mesh shape, [(operand shape, split)], join axis)
CASES = {
    "8 uneven 1-D, 3 operands": ((8,), [((1001,), ("x",)), ((17,), ("x",)),
                                        ((503,), ("x",))], 0),
    "8 split join axis 1": ((8,), [((37, 203), (None, "x")), ((37, 61), (None, "x"))], 1),
    "8 operand split elsewhere": ((8,), [((1001, 403), ("x", None)),
                                         ((203, 403), (None, "x"))], 0),
    "8 join axis 1, operand split on axis 0": ((8,), [((403, 1001), (None, "x")),
                                                       ((403, 203), ("x", None))], 1),
    "2x4 axis 0": ((2, 4), [((101, 67, 45), ("x", "y", None)),
                            ((33, 67, 45), ("x", "y", None))], 0),
    "2x4 axis 1": ((2, 4), [((101, 67, 45), ("x", "y", None)),
                            ((101, 30, 45), ("x", "y", None))], 1),
    "2x4 axis 1, 3 operands": ((2, 4), [((101, 67, 45), ("x", "y", None)),
                                        ((101, 30, 45), ("x", "y", None)),
                                        ((101, 9, 45), ("x", "y", None))], 1),
    "2x4 axis 1 even": ((2, 4), [((104, 68, 48), ("x", "y", None)),
                                 ((104, 32, 48), ("x", "y", None))], 1),
    "2x4 axis 1, operand split (y, x)": ((2, 4), [((101, 67, 45), ("x", "y", None)),
                                                  ((101, 30, 45), ("y", "x", None))], 1),
    "4x2 axis 0": ((4, 2), [((101, 67, 45), ("x", "y", None)),
                            ((33, 67, 45), ("x", "y", None))], 0),
    "4x2 axis 1": ((4, 2), [((101, 67, 45), ("x", "y", None)),
                            ((101, 30, 45), ("x", "y", None))], 1),
    "4x2 two mesh axes": ((4, 2), [((1001, 403), (XY, None)), ((77, 403), (XY, None))], 0),
    "4x2 two mesh axes, 3 operands": ((4, 2), [((1001, 403), (XY, None)),
                                               ((77, 403), (XY, None)),
                                               ((300, 403), (XY, None))], 0),
    "4x2 operand split over both axes elsewhere": ((4, 2), [((101, 67, 45), ("x", "y", None)),
                                                            ((33, 67, 45), (None, XY, None))],
                                                   0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_concat_within_three_blocks_and_no_all_gather(case):
    mesh_shape, operands, axis = CASES[case]
    mesh = mesh_of(mesh_shape)
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal(shape).astype(np.float32) for shape, _ in operands]
    xs = [darray.asarray(h, mesh=mesh, spec=split) for h, (_, split) in zip(hosts, operands)]

    def join(*arrays):
        return darray.concat(arrays, axis=axis)
    blocks, temp, block, gathers = ms.blocks_of(jax.jit(join).lower(*xs).compile())
    print(f"concat {case}: {blocks:.2f} blocks, {gathers} all-gathers")
    assert gathers == 0, f"concat {case}: {gathers} all-gathers"
    assert blocks <= ms.RULE, (f"concat {case}: {blocks:.2f} blocks of temporaries per device "
                               f"({temp} bytes, block {block} bytes)")
    y = join(*xs)
    assert_layout(y, split=operands[0][1], shape=np.concatenate(hosts, axis=axis).shape,
                  mesh=mesh)
    np.testing.assert_array_equal(np.asarray(y), np.concatenate(hosts, axis=axis))


# stack joins along a new, unsplit axis: each device stacks its blocks; an operand split
# otherwise is moved first (name -> (mesh shape, operand splits, shape))
STACKS = {
    "8 operand split elsewhere": ((8,), [(None, "x"), ("x", None)], (403, 1001)),
    "4x2 operand split over both axes elsewhere": ((4, 2), [("x", "y", None), (None, XY, None)],
                                                   (101, 67, 45)),
}


@pytest.mark.parametrize("case", list(STACKS))
def test_stack_within_three_blocks_and_no_all_gather(case):
    mesh_shape, splits, shape = STACKS[case]
    mesh = mesh_of(mesh_shape)
    rng = np.random.default_rng(1)
    hosts = [rng.standard_normal(shape).astype(np.float32) for _ in splits]
    xs = [darray.asarray(h, mesh=mesh, spec=split) for h, split in zip(hosts, splits)]

    def join(*arrays):
        return darray.stack(arrays, axis=1)
    blocks, temp, block, gathers = ms.blocks_of(jax.jit(join).lower(*xs).compile())
    print(f"stack {case}: {blocks:.2f} blocks, {gathers} all-gathers")
    assert gathers == 0, f"stack {case}: {gathers} all-gathers"
    assert blocks <= ms.RULE, (f"stack {case}: {blocks:.2f} blocks of temporaries per device "
                               f"({temp} bytes, block {block} bytes)")
    y = join(*xs)
    want = np.stack(hosts, axis=1)
    assert_layout(y, split=splits[0][:1] + (None,) + splits[0][1:], shape=want.shape, mesh=mesh)
    np.testing.assert_array_equal(np.asarray(y), want)
