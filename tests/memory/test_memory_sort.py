"""Covers: darray/_src/engine/distributed_sort.py, darray/_src/api/sorting.py
Covers: darray/_src/engine/window_search.py
Covers: darray/_src/api/searching.py

Issue 49's rule for sorting and searching along a split axis: at most 3 blocks of temporaries
per device (XLA's plan, ``memory_analysis()``; a block is the larger of a device's share of the
inputs and of the outputs) and no all-gather, on uneven shapes over 8, 2x4 and 4x2 meshes.
"""
from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray as da
from darray._src.engine import distributed_sort

RULE = 3.0

LAYOUTS = [
    ((8,), (100003,), ("x",), 0),
    ((2, 4), (1001, 403), ("x", "y"), 1),
    ((2, 4), (1001, 403), ("x", "y"), 0),
    ((4, 2), (101, 67, 45), ("x", "y", None), 1),
    ((2, 4), (37, 20003), (None, ("x", "y")), 1),
]


def blocks_of(fn, *args):
    """(temp / block, all-gathers) of jit(fn) on `args`, per device."""
    compiled = jax.jit(fn).lower(*args).compile()
    m = compiled.memory_analysis()
    block = max(m.argument_size_in_bytes, m.output_size_in_bytes, 4096)
    return m.temp_size_in_bytes / block, compiled.as_text().count("all-gather")


@pytest.mark.parametrize("mesh_shape,shape,spec,axis", LAYOUTS)
@pytest.mark.parametrize("fname", ["sort", "argsort"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_along_split_axis_within_three_blocks(mesh_shape, shape, spec, axis, fname,
                                                   descending):
    x = da.asarray(np.random.default_rng(0).random(shape).astype(np.float32),
                   device=mesh_of(mesh_shape), spec=spec)
    fn = getattr(da, fname)
    blocks, gathers = blocks_of(lambda a: fn(a, axis=axis, descending=descending), x)
    assert gathers == 0
    # argsort carries (value, int32 index) through the network: with x64 off the block is a
    # float32 / int32 one, 2.25-2.33 blocks measured (the phases unrolled, each merged block
    # written over a received one: engine/distributed_sort.py `_merge_keyed`)
    assert blocks <= RULE, f"{fname} {shape} {spec} axis {axis}: {blocks:.2f} blocks"


@pytest.mark.parametrize("mesh_shape,n1,spec1,shape2,spec2", [
    ((8,), 100003, ("x",), (100003,), ("x",)),
    ((8,), 100003, ("x",), (5001,), None),
    ((2, 4), 100003, (("x", "y"),), (1001, 403), ("y", "x")),
    ((4, 2), 100003, ("y",), (1001, 403), ("x", None)),
    pytest.param((8,), 100003, ("x",), (5001,), ("x",), marks=pytest.mark.slow),
    pytest.param((8,), 131072, ("x",), (131072,), ("x",), marks=pytest.mark.slow),  # even
    pytest.param((2, 4), 100003, (("x", "y"),), (1024, 512), ("x", "y"),  # even
                 marks=pytest.mark.slow),
    pytest.param((2, 4), 100003, ("x",), (37, 20003), (None, ("x", "y")),
                 marks=pytest.mark.slow),
    pytest.param((4, 2), 100003, ("y",), (1001, 403), ("x", "y"), marks=pytest.mark.slow),
])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_never_gathers_x1(mesh_shape, n1, spec1, shape2, spec2, side):
    """x2 apart from x1's mesh axes (one psum of counts) or split on them too (the window
    search, engine/window_search.py; x1 was replicated there: 6.5-9 blocks)."""
    mesh = mesh_of(mesh_shape)
    rng = np.random.default_rng(0)
    x1 = da.asarray(np.sort(rng.random(n1).astype(np.float32)), device=mesh, spec=spec1)
    x2 = da.asarray(rng.random(shape2).astype(np.float32), device=mesh, spec=spec2)
    assert distributed_sort.searchable(x1.layout, x2.layout)
    blocks, gathers = blocks_of(lambda a, b: da.searchsorted(a, b, side=side), x1, x2)
    assert gathers == 0
    assert blocks <= RULE, f"searchsorted {spec1} / {shape2} {spec2}: {blocks:.2f} blocks"
