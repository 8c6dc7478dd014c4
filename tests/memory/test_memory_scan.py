"""Covers: darray/_src/engine/scanning.py, darray/_src/engine/repeating.py
Covers: darray/_src/engine/membership.py, darray/_src/engine/joining.py

The memory rule (issue 49) for the block-wise scans, repeat, tile and isin: each compiled
program plans at most 3 blocks of temporaries per device (a block: the larger of a device's
share of the inputs and of the outputs, XLA's memory_analysis; memory_survey.blocks_of) and
holds no all-gather, on uneven and even splits over the 8, 2x4 and 4x2 meshes. Before these
algorithms: 17 blocks for cumulative_sum(include_initial=True) on 8 devices, 8 for tile, 45
for repeat over the flattened array, 27,000-47,000 for isin.
"""
from __future__ import annotations

import jax
import memory_survey as ms
import numpy as np
import pytest
from helpers import mesh_of

import darray

# name -> (mesh shape, array shape, split); uneven and even, one and two mesh axes per axis
LAYOUTS = {
    "8 uneven": ((8,), (37, 203, 19), (None, "x", None)),
    "8 even": ((8,), (40, 208, 16), (None, "x", None)),
    "2x4 uneven": ((2, 4), (101, 67, 45), ("x", "y", None)),
    "2x4 even": ((2, 4), (104, 68, 48), ("x", "y", None)),
    "4x2 uneven, two mesh axes": ((4, 2), (1001, 403), (("x", "y"), None)),
    "8 uneven 1-D": ((8,), (100003,), ("x",)),
}


def _split_axis(split):
    """The last split axis (a middle axis of the 3-D layouts)."""
    return [a for a, s in enumerate(split) if s][-1]


def _programs(ndim, axis):
    reps = [1] * ndim
    reps[axis] = 3
    return {
        "cumulative_sum": lambda a: darray.cumulative_sum(a, axis=axis),
        "cumulative_sum include_initial": lambda a: darray.cumulative_sum(
            a, axis=axis, include_initial=True),
        "cumulative_prod include_initial": lambda a: darray.cumulative_prod(
            a, axis=axis, include_initial=True),
        "cumulative_sum float64": lambda a: darray.cumulative_sum(a, axis=axis,
                                                                  dtype=np.float64),
        "cumsum flattened": lambda a: darray.cumsum(a),
        "repeat": lambda a: darray.repeat(a, 2, axis=axis),
        "repeat flattened": lambda a: darray.repeat(a, 3),
        "tile": lambda a: darray.tile(a, tuple(reps)),
        "tile prepending": lambda a: darray.tile(a, (2,) + tuple(reps)),
        "isin": lambda a, b: darray.isin(a, b),
    }


# the float64 widening needs x64 (deselected in the x64-off configuration)
CASES = [pytest.param(name, program, id=f"{program}@{name}",
                      marks=[pytest.mark.x64] if program.endswith("float64") else [])
         for name in LAYOUTS for program in _programs(1, 0)]


@pytest.mark.parametrize("layout,program", CASES)
def test_within_three_blocks_and_no_all_gather(layout, program):
    mesh_shape, shape, split = LAYOUTS[layout]
    mesh = mesh_of(mesh_shape)
    rng = np.random.default_rng(0)
    x = darray.asarray(rng.standard_normal(shape).astype(np.float32), mesh=mesh, spec=split)
    fn = _programs(len(shape), _split_axis(split))[program]
    args = [x]
    if program == "isin":  # test values of another shape, split over the mesh's last axis
        tests = rng.integers(-3, 3, 5003).astype(np.float32)
        args.append(darray.asarray(tests, mesh=mesh, spec=(mesh.axis_names[-1],)))
    blocks, temp, block, gathers = ms.blocks_of(jax.jit(fn).lower(*args).compile())
    assert gathers == 0, f"{program} on {layout}: {gathers} all-gathers"
    assert blocks <= ms.RULE, (f"{program} on {layout}: {blocks:.2f} blocks of temporaries "
                               f"per device ({temp} bytes, block {block} bytes)")
