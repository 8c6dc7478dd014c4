"""Covers: darray/_src/plans/fft_plan.py

The greedy FFT plan's rules one by one (darray/_src/plans/fft_plan.py, GreedyPlanner), and
the whole rule on grids of 37725 cases against the plans of the closure-based function it
replaced (greedy_plan_cases.py: digests per (mesh, shape) group)."""
from __future__ import annotations

from greedy_plan_cases import digests
from helpers import abstract_mesh

from darray._src.layout.layout import Layout
from darray._src.plans.fft_plan import GreedyPlanner, LocalFFT, Transpose, greedy_plan

# Taken from the closure-based `_greedy` (commit bbc6cd1) before it became GreedyPlanner; the
# "pad" groups were added later, their digests also taken by running that function.
GOLDEN = {
    '(8,) (12, 10)': (30, 'e922544df390d48e'),
    '(8,) (7, 9)': (30, '988b77ba7ce79695'),
    '(8,) (8, 12, 10)': (80, 'd5ead0f0f8fbbcb9'),
    '(8,) (13, 10, 7)': (80, '885b0857a5a53d6c'),
    '(8,) (5, 6, 7)': (80, 'f01576e8f4189ab6'),
    '(8,) (6, 8, 4, 10)': (125, '18b2fe3217f7adc9'),
    '(2, 4) (12, 10)': (90, '992cca1d324ee657'),
    '(2, 4) (7, 9)': (90, 'fcc74667b308e9fd'),
    '(2, 4) (8, 12, 10)': (320, 'bb59420a3f387790'),
    '(2, 4) (13, 10, 7)': (320, 'a1f618d8a33539d3'),
    '(2, 4) (5, 6, 7)': (320, 'e508064031163376'),
    '(2, 4) (6, 8, 4, 10)': (625, 'e28e2b2c373fbb12'),
    '(4, 2) (12, 10)': (90, '19b37b1c0b316ea9'),
    '(4, 2) (7, 9)': (90, '260fa5977905eb71'),
    '(4, 2) (8, 12, 10)': (320, 'c3179852e24c996e'),
    '(4, 2) (13, 10, 7)': (320, 'a97e5ec968d28807'),
    '(4, 2) (5, 6, 7)': (320, 'acafef6b8edb5da5'),
    '(4, 2) (6, 8, 4, 10)': (625, '076de40196b801d1'),
    '(1, 8) (12, 10)': (90, '9483dc5f9b54a489'),
    '(1, 8) (7, 9)': (90, '09c182e3aca8b14f'),
    '(1, 8) (8, 12, 10)': (320, '307162e2560bd1da'),
    '(1, 8) (13, 10, 7)': (320, 'd6c797bd495b9297'),
    '(1, 8) (5, 6, 7)': (320, '835074af1602ed37'),
    '(1, 8) (6, 8, 4, 10)': (625, 'fd0e61bd803a5628'),
    '(2, 2, 2) (12, 10)': (270, '6ef6f7195f94df67'),
    '(2, 2, 2) (7, 9)': (270, '0dc8ea176e8a34c9'),
    '(2, 2, 2) (8, 12, 10)': (1280, 'f34da475f57405cb'),
    '(2, 2, 2) (13, 10, 7)': (1280, 'd5aa2783be0accdc'),
    '(2, 2, 2) (5, 6, 7)': (1280, '7800aace1fc502bd'),
    '(2, 2, 2) (6, 8, 4, 10)': (3125, 'b9f171486f1f24b1'),
    'pad (8,) (7, 9)': (84, 'ede12942f0018a1c'),
    'pad (8,) (13, 10, 7)': (280, 'e8516c50203b88ed'),
    'pad (8,) (3, 5, 2, 7)': (350, '490f13f1b05d34d0'),
    'pad (3, 2) (7, 9)': (308, '7f5a9ed1b65f72ad'),
    'pad (3, 2) (13, 10, 7)': (1330, '18d521a5b3b773f9'),
    'pad (3, 2) (3, 5, 2, 7)': (2030, 'e1706c9ae4764383'),
    'pad (2, 2, 2) (7, 9)': (1148, 'b8c7c8a5d36b4894'),
    'pad (2, 2, 2) (13, 10, 7)': (6580, '2e126f5d5184c7f8'),
    'pad (2, 2, 2) (3, 5, 2, 7)': (12390, 'bbafbdf50393aa5a'),
}

SLAB = abstract_mesh((8,), ("x",))
PENCIL = abstract_mesh((2, 4), ("x", "y"))


def planner(shape, mesh, spec, axes=None, kind="c2c", inverse=False):
    axes = tuple(range(len(shape))) if axes is None else tuple(axes)
    layout = Layout.create(shape, mesh, spec)
    return GreedyPlanner(layout, axes, kind, inverse, tuple(shape[a] for a in axes))


def test_every_case_of_the_grid_plans_as_before():
    got = digests()
    assert got.keys() == GOLDEN.keys()
    assert sum(n for n, _ in got.values()) == 37725
    changed = {g: (GOLDEN[g], got[g]) for g in GOLDEN if got[g] != GOLDEN[g]}
    assert not changed, ("plans changed; compare with `python3 tests/unit/greedy_plan_cases.py "
                         f"--show MESH SHAPE` at the golden commit: {changed}")


def test_real_axis_first_for_r2c_and_last_for_c2r():
    p = planner((8, 12, 10), SLAB, (None, "x", None), kind="r2c")
    assert [p.allowed(a) for a in range(3)] == [False, False, True]
    q = planner((8, 12, 10), SLAB, (None, "x", None), kind="c2r", inverse=True)
    assert [q.allowed(a) for a in range(3)] == [True, True, False]
    q.pending = [2]
    assert q.allowed(2)


def test_rotation_moves_each_split_one_transform_axis_on():
    assert planner((8, 12, 10), SLAB, ("x", None, None)).rotation == {0: 1}
    assert planner((8, 12, 10), PENCIL, ("x", "y", None)).rotation == {0: 1, 1: 2}
    assert planner((8, 12, 10), PENCIL, ("x", None, "y")).rotation == {0: 1, 2: 0}
    # no free slot to rotate through, and no rotation for c2r (it retraces its forward plan)
    assert planner((8, 12), PENCIL, ("x", "y")).rotation is None
    assert planner((8, 12, 10), SLAB, ("x", None, None), kind="c2r").rotation is None
    # r2c whose last axis starts split moves that split first instead
    assert planner((8, 12, 10), SLAB, (None, None, "x"), kind="r2c").rotation is None


def test_nearest_prefers_least_padding_then_distance_then_the_higher_axis():
    p = planner((8, 6, 16, 12), SLAB, ("x", None, None, None), axes=(0,))
    assert p.nearest(0, [1, 2, 3]) == 2        # 6 and 12 pad over 8 parts; 16 does not
    p = planner((8, 16, 8, 16), SLAB, (None, None, "x", None), axes=(2,))
    assert p.nearest(2, [1, 3]) == 3           # no padding either way, equally near: higher
    assert p.nearest(2, [0, 1]) == 1           # equally even: the nearer
    assert p.nearest(2, []) is None


def test_destination_takes_transformed_then_batch_then_pending_axes():
    p = planner((8, 8, 8, 8), SLAB, ("x", None, None, None), axes=(0, 1, 2))
    p.done, p.pending = [2], [0, 1]
    assert p.destination(0) == 2               # a transformed axis, though 1 is nearer
    p.done = []
    assert p.destination(0) == 3               # then a batch axis
    p.split[3] = ("y",)
    assert p.destination(0) == 1               # then a pending one
    p.split[1] = p.split[2] = ("z",)
    assert p.destination(0) is None


def test_a_local_stage_transforms_every_ready_axis_and_r2c_alone():
    p = planner((8, 12, 10), SLAB, ("x", None, None))
    p.transform_local([2, 1])
    assert p.stages == [LocalFFT((1, 2), "c2c", False, (12, 10), ())]
    assert p.pending == [0] and p.done == [1, 2]
    r = planner((8, 12, 10), SLAB, ("x", None, None), kind="r2c")
    r.transform_local([1, 2])
    assert r.stages == [LocalFFT((2,), "r2c", False, (10,), ())]
    assert r.shape == [8, 12, 6] and r.pending == [0, 1]


def test_making_room_moves_by_the_rotation_or_reports_stuck():
    p = planner((8, 12, 10), SLAB, ("x", None, None))
    p.transform_local([1, 2])
    assert p.make_room() and p.split == [(), ("x",), ()]
    assert p.stages[-1] == Transpose(("x",), 0, 1, 8, 12, 8)
    stuck = planner((8, 12), PENCIL, ("x", "y"))
    assert not stuck.make_room() and stuck.stages == []
    assert greedy_plan(stuck.layout, (0, 1), "c2c", False, (8, 12)) is None


def test_a_borrowed_batch_axis_is_handed_back():
    # every transform axis split: the split of axis 0 parks on batch axis 2, then returns
    plan = greedy_plan(Layout.create((8, 8, 4), PENCIL, ("x", "y", None)), (0, 1), "c2c",
                       False, (8, 8))
    assert plan is not None and plan.out_layout.split[2] == ()
    moves = [(s.src, s.dst) for s in plan.stages if isinstance(s, Transpose)]
    assert moves[-1][1] in (0, 1) and plan.out_layout.split[:2] != ((), ())
    # home free: the borrowed split goes back where it started
    p = planner((8, 8, 4), PENCIL, (None, "y", None), axes=(0, 1))
    p.split = [(), (), ("y",)]
    p.hand_back()
    assert p.split == [(), ("y",), ()] and p.stages == [Transpose(("y",), 2, 1, 4, 8, 4)]
    # home taken: the nearest free transform axis
    p = planner((8, 8, 4), PENCIL, (None, "y", None), axes=(0, 1))
    p.split = [(), ("x",), ("y",)]
    p.hand_back()
    assert p.split == [("y",), ("x",), ()] and p.stages == [Transpose(("y",), 2, 0, 4, 8, 4)]
    # a batch axis keeps a split it started with
    p = planner((8, 8, 4), PENCIL, (None, None, "y"), axes=(0, 1))
    p.hand_back()
    assert p.split == [(), (), ("y",)] and p.stages == []
