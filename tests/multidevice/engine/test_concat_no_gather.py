"""Covers: darray/_src/engine/joining.py, darray/_src/api/manipulation.py

concat and stack never gather their inputs (docs/design.md, principle 2).

Left to XLA, ``concatenate`` along an axis split over mesh axes all-gathers every input (each
device then holds the whole result). darray assembles each output block from the pieces of the
input blocks it overlaps, moved in a few ppermute rounds planned on the host (engine/joining.py).
Each case compiles the join once, runs it (values against numpy in float64, output layout and
sharding) and reads the compiled HLO: no all-gather, all-reduce, reduce-scatter or all-to-all.
The host plan itself is checked up to 1024 blocks (every cell moved once, bounded traffic).
Uneven extents (padding), empty inputs, splits whose mesh axes are not in the mesh's order,
several mesh axes on one array axis, ghost cells and inputs in other layouts are covered.
"""
import jax
import numpy as np
import pytest
from helpers import assert_layout, collective_counts, mesh_of

import darray
from darray._src.engine import joining

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64


def _check_layout(out, mesh, split):
    assert_layout(out, split=split, mesh=mesh)
    assert not out.layout.has_halo


GATHERING = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all")


def _compiled_join(fn, inputs):
    """The join's result and its gathering / reducing collectives (neighbour permutes are how
    a join moves the pieces that cross a block boundary)."""
    compiled = jax.jit(lambda *v: fn(list(v))).lower(*inputs).compile()
    counts = collective_counts(compiled.as_text())
    return compiled(*inputs), {n: counts[n] for n in GATHERING}


def _host(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


# (mesh shape, input shapes, shared spec, axis): the join axis is split in every case
_SPLIT_CASES = [
    ((8,), [(13, 5), (7, 5)], ("x",), 0),                          # uneven, padded blocks
    ((8,), [(100, 2), (3, 2), (1, 2)], ("x",), 0),                 # tiny inputs into one block
    ((2, 4), [(13, 3), (1, 3), (30, 3)], (("y", "x"),), 0),        # mesh axes not in mesh order
    ((2, 4), [(5, 13), (5, 2)], ("x", "y"), 1),                    # pencil, join the minor axis
    ((2, 4), [(6, 16), (6, 8)], (None, ("x", "y")), -1),           # even, two mesh axes
    ((2, 2, 2), [(9, 3), (4, 3), (0, 3), (17, 3)], (("z", "x"), "y"), 0),  # empty input
    ((2, 2, 2), [(3, 5, 4), (3, 11, 4)], ("x", ("z", "y")), 1),   # 3D, reordered pair
    ((2, 4), [(n, 2) for n in (9, 1, 40, 3, 17, 8)], (("y", "x"),), 0),  # inputs share rounds
]


@pytest.mark.parametrize("mesh_shape,shapes,spec,axis", _SPLIT_CASES,
                         ids=[f"{m}-{len(s)}in-{p}-ax{a}" for m, s, p, a in _SPLIT_CASES])
def test_concat_along_split_axis_moves_blocks_without_gather(mesh_shape, shapes, spec, axis):
    mesh = mesh_of(mesh_shape)
    hosts = _host(shapes, seed=len(shapes) + axis)
    xs = [darray.asarray(h, mesh=mesh, spec=spec) for h in hosts]
    assert xs[0].layout.split[axis], "the case must join along a split axis"
    out, coll = _compiled_join(lambda v: darray.concat(v, axis=axis), xs)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate(hosts, axis=axis))
    _check_layout(out, mesh, xs[0].layout.split)
    assert coll == dict.fromkeys(coll, 0), coll
    eager = darray.concat(xs, axis=axis)
    np.testing.assert_array_equal(np.asarray(eager), np.concatenate(hosts, axis=axis))
    assert eager.layout == out.layout


def test_concat_drops_ghost_cells_locally():
    """Inputs with ghosts (x.halo) on the split join axis and on an unsplit axis: the ghosts
    are cut off each block on its device, nothing is gathered."""
    mesh = mesh_of((2, 4))
    a, b = _host([(13, 6), (9, 6)], seed=3)
    xa = darray.asarray(a, mesh=mesh, spec=(("y", "x"),)).halo(1)
    xb = darray.asarray(b, mesh=mesh, spec=(("y", "x"),)).halo(((2, 1), (1, 1)))
    assert xa.layout.has_halo and xb.layout.has_halo
    out, coll = _compiled_join(lambda v: darray.concat(v, axis=0), [xa, xb])
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([a, b], axis=0))
    _check_layout(out, mesh, ((("y", "x")), ()))
    assert coll == dict.fromkeys(coll, 0), coll


def test_concat_redistributes_other_layouts_to_the_first():
    """Inputs in other layouts are moved to the first input's split first (values and layout;
    an input that is merely replicated where the output is split is cut locally)."""
    mesh = mesh_of((2, 4))
    a, b, c = _host([(7, 10), (12, 10), (3, 10)], seed=5)
    xa = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    xb = darray.asarray(b, mesh=mesh, spec=(None, "x"))
    xc = darray.asarray(c, mesh=mesh, spec=(("y", "x"),))
    out = darray.concat([xa, xb, xc], axis=0)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([a, b, c], axis=0))
    _check_layout(out, mesh, xa.layout.split)
    replicated = darray.asarray(b, mesh=mesh, spec=None)
    out, coll = _compiled_join(lambda v: darray.concat(v, axis=0), [xa, replicated])
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([a, b], axis=0))
    _check_layout(out, mesh, xa.layout.split)
    assert coll == dict.fromkeys(coll, 0), coll


def test_concat_promotes_dtypes():
    mesh = mesh_of((8,))
    a = np.arange(11, dtype=np.int32)
    b = np.linspace(-1.0, 1.0, 6)
    out = darray.concat([darray.asarray(a, mesh=mesh), darray.asarray(b, mesh=mesh)])
    expected = np.concatenate([a, b])
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(out), expected)
    _check_layout(out, mesh, (("x",),))


# (mesh shape, shape, spec, axis): joins that never need another device's cells
_LOCAL_CASES = [
    ((2, 4), (13, 7), ("x", None), "concat", 1),          # join an unsplit axis
    ((8,), (5, 13), (None, "x"), "concat", 0),
    ((2, 4), (13, 7), ("x", "y"), "stack", 0),            # new leading axis
    ((2, 2, 2), (5, 9), (("z", "x"), "y"), "stack", 1),   # new middle axis, reordered pair
    ((4, 2), (13, 7), ("y", "x"), "stack", 2),            # new trailing axis
]


@pytest.mark.parametrize("mesh_shape,shape,spec,kind,axis", _LOCAL_CASES,
                         ids=[f"{k}-{m}-{p}-ax{a}" for m, s, p, k, a in _LOCAL_CASES])
def test_unsplit_concat_and_stack_stay_local(mesh_shape, shape, spec, kind, axis):
    mesh = mesh_of(mesh_shape)
    if kind == "concat":
        other = list(shape)
        other[axis] = 4
        hosts = _host([shape, tuple(other)], seed=axis)
        fn, ref = darray.concat, np.concatenate
    else:
        hosts = _host([shape] * 3, seed=axis)
        fn, ref = darray.stack, np.stack
    xs = [darray.asarray(h, mesh=mesh, spec=spec) for h in hosts]
    out, coll = _compiled_join(lambda v: fn(v, axis=axis), xs)
    np.testing.assert_array_equal(np.asarray(out), ref(hosts, axis=axis))
    split = list(xs[0].layout.split)
    if kind == "stack":
        split.insert(axis, ())
    _check_layout(out, mesh, split)
    assert coll == dict.fromkeys(coll, 0), coll
    hlo = jax.jit(lambda *v: fn(list(v), axis=axis)).lower(*xs).compile().as_text()
    assert "collective-permute" not in hlo


def test_stack_of_haloed_inputs_drops_ghosts_locally():
    mesh = mesh_of((2, 4))
    a, b = _host([(13, 7), (13, 7)], seed=9)
    xa = darray.asarray(a, mesh=mesh, spec=("x", "y")).halo(1)
    xb = darray.asarray(b, mesh=mesh, spec=("x", "y"))
    out, coll = _compiled_join(lambda v: darray.stack(v, axis=1), [xa, xb])
    np.testing.assert_array_equal(np.asarray(out), np.stack([a, b], axis=1))
    _check_layout(out, mesh, (("x",), (), ("y",)))
    assert coll == dict.fromkeys(coll, 0), coll


def test_concat_gradient_flows_back_to_each_input():
    """grad through the shift assembly: each input's cotangent is its slice of the weights,
    in the input's own layout."""
    mesh = mesh_of((2, 4))
    a, b, w = _host([(13, 3), (6, 3), (19, 3)], seed=11)
    xa = darray.asarray(a, mesh=mesh, spec=(("y", "x"),))
    xb = darray.asarray(b, mesh=mesh, spec=(("y", "x"),))
    xw = darray.asarray(w, mesh=mesh, spec=(("y", "x"),))

    def loss(p, q):
        return darray.sum(darray.concat([p, q], axis=0) * xw)
    ga, gb = darray.grad(loss, argnums=(0, 1))(xa, xb)
    np.testing.assert_allclose(np.asarray(ga), w[:13], rtol=1e-15)
    np.testing.assert_allclose(np.asarray(gb), w[13:], rtol=1e-15)
    assert ga.layout == xa.layout and gb.layout == xb.layout


@pytest.mark.parametrize("transform", [jax.jacfwd, jax.jacrev], ids=["jacfwd", "jacrev"])
def test_concat_jacobians_stay_distributed(transform):
    """jacfwd/jacrev through the rounds: the Jacobian leaf (output physical x input physical)
    matches the dense one and stays split over the join axis' mesh axes."""
    mesh = mesh_of((2, 4))
    a, b = _host([(13,), (6,)], seed=12)
    xa = darray.asarray(a, mesh=mesh, spec=(("y", "x"),))
    xb = darray.asarray(b, mesh=mesh, spec=(("y", "x"),))
    jac = jax.jit(transform(lambda p: darray.concat([p * p, xb, p])))(xa)
    leaf = jax.tree_util.tree_leaves(jac)[0]
    out_physical = darray.concat([xa, xb, xa]).layout.physical_shape
    assert leaf.shape == out_physical + xa.layout.physical_shape
    expected = np.zeros((32, 13))
    expected[np.arange(13), np.arange(13)] = 2 * a
    expected[19 + np.arange(13), np.arange(13)] = 1.0
    np.testing.assert_allclose(np.asarray(leaf)[:32, :13], expected, rtol=1e-15)
    assert leaf.sharding.spec != jax.sharding.PartitionSpec(), leaf.sharding
    assert not leaf.sharding.is_fully_replicated


def test_concat_flattened_and_errors():
    mesh = mesh_of((2, 4))
    a, b = _host([(5, 7), (3,)], seed=13)
    xa = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    xb = darray.asarray(b, mesh=mesh, spec=("y",))
    out = darray.concat([xa, xb], axis=None)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([a.ravel(), b]))
    _check_layout(out, mesh, (("x", "y"),))
    with pytest.raises(ValueError, match="differ on another axis"):
        darray.concat([xa, darray.asarray(np.ones((2, 6)), mesh=mesh)], axis=0)
    with pytest.raises(ValueError, match="one rank"):
        darray.concat([xa, xb], axis=0)


def _simulate_rounds(sizes, parts):
    """Run the host plan (joining.plan_rounds) on numpy blocks: each round must be a
    permutation whose windows stay inside the receiving block and inside the sender's source
    (with its zero frame, whose cells must never be kept), every output cell must be
    written exactly once with the right value, and the windows (what a device holds in
    flight) must add up to at most twice (one output block + one source)."""
    total = sum(sizes)
    out_chunk = -(-total // parts)
    out = np.full(parts * out_chunk, np.nan)
    writes = np.zeros(parts * out_chunk, int)
    sources, offset = [[] for _ in range(parts)], 0
    for n in sizes:  # each device's source: its block of every input, side by side
        c = -(-n // parts)
        padded = np.full(parts * c, np.nan)
        padded[:n] = offset + np.arange(n)  # each cell holds its output index
        for b in range(parts):
            sources[b].extend(padded[b * c:(b + 1) * c])
        offset += n
    rounds = joining.plan_rounds(tuple(sizes), parts)
    assert sum(r.length for r in rounds) <= 2 * (out_chunk + len(sources[0]))
    frame = joining.source_frame(rounds, len(sources[0]))
    assert frame <= max(r.length for r in rounds)
    framed = [[np.nan] * frame + src + [np.nan] * frame for src in sources]
    for r in rounds:
        senders, receivers = [b for b, _ in r.pairs], [q for _, q in r.pairs]
        assert len(set(senders)) == len(senders) and len(set(receivers)) == len(receivers)
        for b, q in r.pairs:
            start = r.send_start[b] + frame
            assert 0 <= start <= len(framed[b]) - r.length
            assert 0 <= r.place[q] <= out_chunk - r.length  # the window lies in the block
            window = framed[b][start:start + r.length]
            for w in range(r.keep_lo[q], r.keep_hi[q]):
                at = q * out_chunk + r.place[q] + w
                out[at] = window[w]
                writes[at] += 1
    np.testing.assert_array_equal(out[:total], np.arange(total))
    assert (writes[:total] == 1).all() and (writes[total:] == 0).all()
    return rounds


@pytest.mark.parametrize("parts", [2, 3, 8, 64, 1024])
def test_round_plan_moves_every_cell_once_with_bounded_traffic(parts):
    """The host plan alone (no devices), up to 1024 blocks: the traffic bound is what keeps a
    distributed concat from degenerating into a gather on large meshes."""
    rng = np.random.default_rng(parts)
    for _ in range(12):
        sizes = [int(rng.integers(1, 6 * parts + 40)) for _ in range(int(rng.integers(1, 5)))]
        _simulate_rounds(sizes, parts)
    _simulate_rounds([1, 10 * parts + 3], parts)
    _simulate_rounds([10 * parts + 3, parts // 2 + 1, 1], parts)
    # many large inputs: about one round per input (not one per input block), and windows
    # adding up to little more than one output block
    rounds = _simulate_rounds([100 * parts + 7] * 10, parts)
    assert len(rounds) <= 16
    assert sum(r.length for r in rounds) <= 1.6 * -(-(1000 * parts + 70) // parts)
