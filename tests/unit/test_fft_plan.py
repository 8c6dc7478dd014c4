"""Covers: darray/_src/plans/fft_plan.py, darray/_src/plans/fft_planner.py

The FFT plan is pure data: checked on AbstractMesh meshes, no devices involved."""

import pytest
from helpers import abstract_mesh
from hypothesis import given, settings
from hypothesis import strategies as st

from darray._src.layout.layout import Layout
from darray._src.plans.fft_plan import LocalFFT, Merge, PlanError, Transpose, apply_stage
from darray._src.plans.fft_planner import cost, find_plan, plan_fft

SLAB = abstract_mesh((8,), ("d",))
PENCIL = abstract_mesh((2, 4), ("x", "y"))
BATCHED = abstract_mesh((2, 2, 2), ("c", "x", "y"))


def transposes(plan):
    return [s for s in plan.stages if isinstance(s, Transpose)]


def test_slab_fftn_one_all_to_all_and_kspace_on_axis_1():
    lay = Layout.create((16, 16, 16), SLAB, ("d",))
    plan = plan_fft(lay, (0, 1, 2), "c2c", False, (16, 16, 16))
    assert plan.n_transposes == 1
    assert plan.stages[0] == LocalFFT((1, 2), "c2c", False, (16, 16))
    assert plan.stages[1] == Transpose(("d",), 0, 1, 16, 16, 8)
    assert plan.out_layout.split == ((), ("d",), ())
    back = plan_fft(plan.out_layout, (0, 1, 2), "c2c", True, (16, 16, 16))
    assert back.out_layout == lay and back.n_transposes == 1


def test_pencil_fftn_two_all_to_alls_and_inverse_retraces():
    lay = Layout.create((16, 12, 8), PENCIL, ("x", "y"))
    plan = plan_fft(lay, (0, 1, 2), "c2c", False, (16, 12, 8), strategy="pencil")
    assert [(t.mesh_axes, t.src, t.dst) for t in transposes(plan)] == [(("y",), 1, 2),
                                                                         (("x",), 0, 1)]
    assert plan.out_layout.split == ((), ("x",), ("y",))
    back = plan_fft(plan.out_layout, (0, 1, 2), "c2c", True, (16, 12, 8), strategy="pencil")
    assert [(t.src, t.dst) for t in transposes(back)] == [(1, 0), (2, 1)]
    assert back.out_layout == lay


def test_local_axes_need_no_communication():
    lay = Layout.create((8, 6, 5), PENCIL, ("x", "y"))
    plan = plan_fft(lay, (2,), "c2c", False, (5,))
    assert plan.n_transposes == 0 and plan.out_layout == lay


def test_batch_axes_keep_their_split_and_borrowed_axis_is_returned():
    lay = Layout.create((4, 16, 16, 16), BATCHED, ("c", "x", "y"))
    plan = plan_fft(lay, (1, 2, 3), "c2c", False, (16, 16, 16))
    assert plan.out_layout.split == (("c",), (), (), ("x", "y"))  # merged over x and y
    pencil = plan_fft(lay, (1, 2, 3), "c2c", False, (16, 16, 16), strategy="pencil")
    assert pencil.out_layout.split == (("c",), (), ("x",), ("y",))
    # 1D transform along a split axis: borrow an unsplit axis and hand it back.
    lay2 = Layout.create((16, 16), SLAB, ("d",))
    plan2 = plan_fft(lay2, (0,), "c2c", False, (16,))
    assert plan2.n_transposes == 2 and plan2.out_layout == lay2


def test_r2c_runs_first_on_the_last_axis_and_halves_it():
    lay = Layout.create((12, 10, 9), SLAB, ("d",))
    plan = plan_fft(lay, (0, 1, 2), "r2c", False, (12, 10, 9))
    assert plan.stages[0] == LocalFFT((2,), "r2c", False, (9,))
    assert plan.out_layout.shape == (12, 10, 5)
    back = plan_fft(plan.out_layout, (0, 1, 2), "c2r", True, (12, 10, 9))
    assert back.stages[-1] == LocalFFT((2,), "c2r", True, (9,))
    assert back.out_layout == lay


def test_r2c_with_split_last_axis_transposes_real_data_first():
    lay = Layout.create((16, 16, 16), SLAB, (None, None, "d"))
    plan = plan_fft(lay, (0, 1, 2), "r2c", False, (16, 16, 16))
    assert isinstance(plan.stages[0], Transpose)
    assert plan.stages[1].kind == "r2c"
    assert not any(s.kind == "c2c" for s in plan.stages[:2] if isinstance(s, LocalFFT))


def test_uneven_transposes_record_true_lengths():
    lay = Layout.create((7, 13, 5), PENCIL, ("x", "y"))
    plan = plan_fft(lay, (0, 1, 2), "c2c", False, (7, 13, 5))  # 5 < 8 devices: no slab
    t1, t2 = transposes(plan)
    assert (t1.src_len, t1.dst_len, t1.parts) == (13, 5, 4)
    assert (t2.src_len, t2.dst_len, t2.parts) == (7, 13, 2)


def test_s_resizes_local_axes_and_output_shape():
    lay = Layout.create((8, 8), SLAB, ("d",))
    plan = plan_fft(lay, (0, 1), "c2c", False, (10, 6))
    assert plan.out_layout.shape == (10, 6)


def test_no_unsplit_axis_is_reported():
    lay = Layout.create((64,), SLAB, ("d",))  # a split 1-D array: the four-step's job
    assert find_plan(lay, (0,), "c2c", False, (64,)) is None  # no plan: not an exception
    with pytest.raises(PlanError, match="every array axis is split") as err:
        plan_fft(lay, (0,), "c2c", False, (64,))
    # the message is true: the four-step FFT exists, only it has no Plan
    assert "four-step FFT along the split axis, which has no Plan" in str(err.value)
    assert "not implemented" not in str(err.value)
    haloed = Layout.create((64, 8), SLAB, ("d",), halo=((1, 1), (0, 0)))
    assert find_plan(haloed, (1,), "c2c", False, (8,)) is None
    with pytest.raises(PlanError, match=r"without halo, got Layout.*halo=.*x\.unhalo"):
        plan_fft(haloed, (1,), "c2c", False, (8,))


def test_merged_slab_one_all_to_all_over_every_device():
    lay = Layout.create((16, 16, 16), PENCIL, ("x", "y"))
    plan = plan_fft(lay, (0, 1, 2), "c2c", False, (16, 16, 16))
    assert plan.n_transposes == 1 and isinstance(plan.stages[1], Merge)
    assert plan.stages[1].mesh_axes == ("x", "y") and plan.stages[1].parts == 8
    assert plan.out_layout.split == ((), (), ("x", "y"))
    pencil = plan_fft(lay, (0, 1, 2), "c2c", False, (16, 16, 16), strategy="pencil")
    assert pencil.n_transposes == 2 and cost(plan) < cost(pencil)
    back = plan_fft(plan.out_layout, (0, 1, 2), "c2c", True, (16, 16, 16))
    assert back.out_layout == lay and back.n_transposes == 1
    real = plan_fft(lay, (0, 1, 2), "r2c", False, (16, 16, 16))
    assert real.n_transposes == 1 and real.stages[0].kind == "r2c"
    assert plan_fft(real.out_layout, (0, 1, 2), "c2r", True, (16, 16, 16)).out_layout == lay


def test_pencil_stays_where_no_slab_fits():
    lay = Layout.create((16, 16, 4), PENCIL, ("x", "y"))  # axis 2 shorter than 8 devices
    plan = plan_fft(lay, (0, 1, 2), "c2c", False, (16, 16, 4))
    assert plan.n_transposes == 2 and not any(isinstance(s, Merge) for s in plan.stages)


def test_fold_when_every_axis_is_split_keeps_the_layout():
    lay = Layout.create((24, 18), abstract_mesh((4, 2), ("x", "y")), ("x", "y"))
    plan = plan_fft(lay, (0, 1), "c2c", False, (24, 18))
    assert plan.out_layout == lay and plan.n_transposes == 4
    assert plan.stages[0] == Transpose(("y",), 1, 0, 18, 24, 2, 1, 4)
    assert plan_fft(lay, (0, 1), "c2c", True, (24, 18)).out_layout == lay
    real = plan_fft(lay, (0, 1), "r2c", False, (24, 18))
    assert real.out_layout.split == lay.split and real.out_layout.shape == (24, 10)
    assert plan_fft(real.out_layout, (0, 1), "c2r", True, (24, 18)).out_layout == lay
    # chunks that do not line up (9 over 4 then 2): no fold, the four-step runs instead
    with pytest.raises(PlanError):
        plan_fft(Layout.create((9, 9), abstract_mesh((4, 2), ("x", "y")), ("x", "y")),
                 (0, 1), "c2c", False, (9, 9))


def test_r2r_plans_carry_kernels_and_retrace():
    lay = Layout.create((16, 12, 10), PENCIL, (None, "x", "y"))
    plan = plan_fft(lay, (1, 2), "r2r", False, (12, 10), ("k1", "k2"))
    local = [s for s in plan.stages if isinstance(s, LocalFFT)]
    assert all(s.kind == "r2r" for s in local)
    assert sorted(k for s in local for k in s.kernels) == ["k1", "k2"]
    back = plan_fft(plan.out_layout, (1, 2), "r2r", True, (12, 10), ("i1", "i2"))
    assert back.out_layout == lay
    assert sorted(k for s in back.stages if isinstance(s, LocalFFT) for k in s.kernels) == \
        ["i1", "i2"]


def test_bad_kind_is_rejected():
    with pytest.raises(ValueError, match="kind='c2d'"):
        plan_fft(Layout.create((8,), SLAB, ()), (0,), "c2d", False, (8,))


MESHES = [SLAB, PENCIL, abstract_mesh((4, 2), ("x", "y")), abstract_mesh((1, 8), ("x", "y")),
          BATCHED]


@st.composite
def layouts(draw):
    mesh = draw(st.sampled_from(MESHES))
    ndim = draw(st.integers(len(mesh.axis_names) + 1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 20), min_size=ndim, max_size=ndim)))
    axes_for = draw(st.permutations(range(ndim)))[: len(mesh.axis_names)]
    spec = [None] * ndim
    for name, a in zip(mesh.axis_names, axes_for):
        spec[a] = name
    return Layout.create(shape, mesh, tuple(spec))


@settings(max_examples=60, deadline=None)
@given(layouts(), st.data())
def test_inverse_retraces_forward_c2c(lay, data):
    n = data.draw(st.integers(1, lay.ndim))
    axes = tuple(sorted(data.draw(st.permutations(range(lay.ndim)))[:n]))
    sizes = tuple(lay.shape[a] for a in axes)
    fwd = plan_fft(lay, axes, "c2c", False, sizes)
    # Batch axes keep their split; FFTs only ever run on unsplit axes (an axis split only
    # over mesh axes of size 1 is not split: "auto" transforms it locally).
    for a in range(lay.ndim):
        if a not in axes:
            assert fwd.out_layout.split[a] == lay.split[a]
    split = list(lay.split)
    for s in fwd.stages:
        if isinstance(s, LocalFFT):
            assert all(all(lay.mesh_shape[m] == 1 for m in split[a]) for a in s.axes)
        else:
            apply_stage(split, s)  # raises if the exchange does not fit the split
    assert tuple(split) == fwd.out_layout.split
    back = plan_fft(fwd.out_layout, axes, "c2c", True, sizes)
    assert back.out_layout == lay
    assert back.n_transposes == fwd.n_transposes


@settings(max_examples=40, deadline=None)
@given(layouts())
def test_inverse_retraces_forward_real(lay):
    axes = tuple(range(lay.ndim))
    if lay.split[-1]:
        return  # covered by test_r2c_with_split_last_axis_transposes_real_data_first
    fwd = plan_fft(lay, axes, "r2c", False, lay.shape)
    assert fwd.out_layout.shape == lay.shape[:-1] + (lay.shape[-1] // 2 + 1,)
    back = plan_fft(fwd.out_layout, axes, "c2r", True, lay.shape)
    assert back.out_layout == lay
    assert back.n_transposes == fwd.n_transposes
