"""Covers: darray/_src/backends/cudecomp.py

Which darray plans the cuDecomp backend runs, and why it declines the others (CPU, CI).

The mapping is pure data (plans, layouts, meshes), so it is tested here without a GPU; the GPU
tier (tests/gpu) runs the same plans through cuDecomp against numpy and the JAX backend.
"""
import types

import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import PartitionSpec as P

import darray
from darray._src.backends import cudecomp
from darray._src.backends.registry import FFT_EXECUTORS, BackendUnavailableError
from darray._src.base.native import build_info
from darray._src.fft.api import fft_plan


def _mesh(shape, names=("r", "c")):
    return mesh_of(shape, names[:len(shape)])


def _ops(result):
    assert not isinstance(result, str), result
    grid, ops = result
    return grid, [cudecomp.OPS[o] for o in ops if o is not None]


def test_axis_order_is_reversed_in_one_place():
    assert cudecomp.to_cudecomp((4, 5, 6)) == (6, 5, 4)
    assert cudecomp.to_cudecomp(cudecomp.to_cudecomp((4, 5, 6))) == (4, 5, 6)


@pytest.mark.parametrize("dtype", ["complex64", "float64"])
def test_pencil_fftn_and_its_inverse_map_to_the_four_transposes(dtype):
    mesh = _mesh((1, 1))
    x = darray.zeros((8, 6, 4), dtype=dtype, mesh=mesh, spec=P("c", "r", None))
    kind = "c2c" if dtype.startswith("complex") else "r2c"
    plan = fft_plan(x, kind=kind, decomposition="pencil")
    grid, ops = _ops(cudecomp.plan_ops(plan))
    assert ops == ["XToY", "YToZ"]
    assert (grid.rows, grid.cols, grid.pdims) == ("r", "c", (1, 1))
    assert plan.out_layout.spec == P(None, "c", "r")  # cuDecomp's Z-pencil
    y = darray.zeros(plan.out_layout.shape, dtype="complex64", mesh=mesh,
                     spec=plan.out_layout.spec)
    inverse = fft_plan(y, kind="c2c", inverse=True, decomposition="pencil")
    _, back = _ops(cudecomp.plan_ops(inverse))
    assert back == ["ZToY", "YToX"]
    assert inverse.out_layout.spec == x.layout.spec


def test_slab_on_a_one_axis_mesh_is_a_1_by_p_grid():
    mesh = _mesh((1,), ("s",))
    x = darray.zeros((8, 8, 8), dtype="complex64", mesh=mesh, spec=P("s", None, None))
    # "pencil", as darray.fft asks for with backend="cudecomp" ("auto" runs one local FFT here)
    grid, ops = _ops(cudecomp.plan_ops(fft_plan(x, decomposition="pencil")))
    assert ops == ["YToZ"] and (grid.rows, grid.cols, grid.pdims) == (None, "s", (1, 1))


@pytest.mark.parametrize("shape, spec, mesh_shape, reason", [
    ((8, 8), P("c", None), (1, 2), "3-D"),
    ((8, 8, 8), P("c", "r", None), (2, 4), "merges"),           # 'auto' picks a merged plan
    ((6, 8, 8), P("c", "r", None), (2, 4), "uneven"),
    ((8, 8, 8), P("c", "r", None), (2, 4), "rank order"),        # 8 devices, one process
    ((8, 8, 8), P(("r", "c"), None, None), (2, 4), "group of mesh axes"),
])
def test_plans_cudecomp_cannot_run_say_why(shape, spec, mesh_shape, reason):
    x = darray.zeros(shape, dtype="complex64", mesh=_mesh(mesh_shape), spec=spec)
    decomposition = "auto" if reason in ("merges", "group of mesh axes") else "pencil"
    why = cudecomp.plan_ops(fft_plan(x, decomposition=decomposition))
    assert isinstance(why, str) and reason in why, why


def _stub_mesh(names, procs):
    devices = np.vectorize(lambda p: types.SimpleNamespace(process_index=int(p)),
                           otypes=[object])(np.asarray(procs))
    return types.SimpleNamespace(axis_names=names, devices=devices)


def test_rank_order_follows_where_the_mesh_puts_each_process():
    row_major = _stub_mesh(("r", "c"), [[0, 1, 2], [3, 4, 5]])
    assert cudecomp._rank_order(row_major, "r", "c", (2, 3)) == cudecomp._ROW_MAJOR
    col_major = _stub_mesh(("r", "c"), [[0, 2, 4], [1, 3, 5]])
    assert cudecomp._rank_order(col_major, "r", "c", (2, 3)) == cudecomp._COL_MAJOR
    shuffled = _stub_mesh(("r", "c"), [[0, 1, 5], [3, 4, 2]])
    assert "rank order" in cudecomp._rank_order(shuffled, "r", "c", (2, 3))
    # mesh axes listed (cols, rows): the grid roles, not the axis order, decide
    transposed = _stub_mesh(("c", "r"), [[0, 3], [1, 4], [2, 5]])
    assert cudecomp._rank_order(transposed, "r", "c", (2, 3)) == cudecomp._ROW_MAJOR


def test_halo_layouts_cudecomp_fills_and_those_it_declines():
    mesh = _mesh((1, 1))
    x = darray.zeros((8, 6, 4), dtype="float64", mesh=mesh, spec=P("c", "r", None))
    y_layout = x.layout.with_halo(((1, 1),) * 3)
    assert cudecomp.halo_supports((x.layout, y_layout, ("periodic",) * 3)) is None
    grid, axis = cudecomp._halo_grid(y_layout)
    assert axis == 0 and grid.pdims == (1, 1)
    assert "periodic" in cudecomp.halo_supports((x.layout, y_layout, ("reflect",) * 3))
    lopsided = x.layout.with_halo(((1, 2), (0, 0), (0, 0)))
    assert "asymmetric" in cudecomp.halo_supports((x.layout, lopsided, ("periodic",) * 3))


@pytest.mark.skipif(build_info().get("cudecomp", False), reason="this build has cuDecomp")
def test_selecting_cudecomp_without_the_build_says_how_to_get_it():
    with pytest.raises(BackendUnavailableError, match="CUDECOMP_ROOT"):
        FFT_EXECUTORS.select("cudecomp")


def test_a_1x1_grid_issues_no_transpose():
    # Size-1 axes move nothing on every backend: the four pencil moves of a one-GPU round trip
    # are layout changes only, so cuDecomp is not called for any of them.
    mesh = _mesh((1, 1))
    x = darray.zeros((8, 6, 4), dtype="complex64", mesh=mesh, spec=P("c", "r", None))
    plan = fft_plan(x, decomposition="pencil")
    _, ops = cudecomp.plan_ops(plan)
    assert [cudecomp.OPS[o] for o in ops if o is not None] == ["XToY", "YToZ"]
    assert cudecomp.calls(plan, ops) == ()


def test_only_the_moves_over_more_than_one_process_are_issued():
    mesh = _mesh((1, 2))  # rows 'r' of size 1, cols 'c' of size 2
    x = darray.zeros((8, 6, 4), dtype="complex64", mesh=mesh, spec=P("c", "r", None))
    plan = fft_plan(x, decomposition="pencil")
    # (plan_ops declines this mesh here: two devices of one process are no cuDecomp rank order;
    # the stage-to-op mapping is the same one plan_ops uses)
    ops = [None if not hasattr(s, "parts") else cudecomp._MOVES[(s.src, s.dst)][1]
           for s in plan.stages]
    issued = cudecomp.calls(plan, ops)
    assert [name for _, name in issued] == ["YToZ"]  # XToY moves 'r' (size 1): a no-op
    assert all(plan.stages[i].parts == 2 for i, _ in issued)
