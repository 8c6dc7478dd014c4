"""Covers: darray/_src/api/statistical.py, darray/_src/engine/scanning.py
Covers: darray/_src/api/manipulation.py, darray/_src/engine/repeating.py
Covers: darray/_src/api/set_functions.py, darray/_src/engine/membership.py
Covers: darray/_src/engine/joining.py, darray/_src/extras/numpy_reductions.py

Cumulative sums and products, repeat, tile and isin along split axes (issue 49): results
against numpy (float64 references) on uneven and even splits over the 8, 2x4 and 4x2 meshes,
over one mesh axis and over two; the output's layout asserted, and the compiled programs
free of all-gathers (the block-wise algorithms of engine/scanning.py, repeating.py and
membership.py).
"""
from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import assert_layout, collective_count, compiled_hlo, mesh_of, rand

import darray
from darray._src.engine import repeating

# (mesh shape, array shape, split): uneven and even, one mesh axis and two per array axis
LAYOUTS = [
    ((8,), (45,), ("x",)),
    ((8,), (64,), ("x",)),
    ((8,), (5,), ("x",)),
    ((2, 4), (13, 11), ("x", "y")),
    ((2, 4), (37,), (("x", "y"),)),
    ((4, 2), (9, 6, 3), (("x", "y"), None, None)),
    ((4, 2), (7, 19), ("y", "x")),
    ((8,), (5, 29, 3), (None, "x", None)),
]
IDS = [f"{'x'.join(map(str, m))}-{s}-{sp}" for m, s, sp in LAYOUTS]


def _dist(host, mesh_shape, split):
    return darray.asarray(host, mesh=mesh_of(mesh_shape), spec=split)


def _split_axes(split):
    return [a for a, s in enumerate(split) if s]


@pytest.mark.x64
@pytest.mark.parametrize("mesh_shape,shape,split", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_cumulative_along_every_axis_matches_numpy(mesh_shape, shape, split, op):
    host = rand(shape, seed=3)
    if op == "prod":
        host = 1 + 0.05 * host  # products of many terms stay finite
    x = _dist(host, mesh_shape, split)
    fn = getattr(darray, f"cumulative_{op}")
    ref = getattr(np, f"cumulative_{op}")
    for axis in range(len(shape)):
        for include_initial in (False, True):
            got = fn(x, axis=axis, include_initial=include_initial)
            want = ref(host, axis=axis, include_initial=include_initial)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
            assert_layout(got, shape=want.shape, split=x.layout.split)


@pytest.mark.x64
@pytest.mark.parametrize("mesh_shape,shape,split", LAYOUTS[:5], ids=IDS[:5])
def test_cumulative_sum_dtypes(mesh_shape, shape, split):
    ints = np.random.default_rng(1).integers(-50, 50, shape).astype(np.int32)
    x = _dist(ints, mesh_shape, split)
    axis = _split_axes(split)[-1]
    got = darray.cumulative_sum(x, axis=axis, dtype=np.float64, include_initial=True)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(
        np.asarray(got), np.cumulative_sum(ints, axis=axis, dtype=np.float64,
                                           include_initial=True))
    # int32 accumulates in the default integer (numpy: int64), bool counts
    got = darray.cumulative_sum(x, axis=axis)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(got), np.cumulative_sum(ints, axis=axis))
    flags = _dist(ints > 0, mesh_shape, split)
    got = darray.cumulative_sum(flags, axis=axis)
    np.testing.assert_array_equal(np.asarray(got), np.cumulative_sum(ints > 0, axis=axis))
    assert_layout(got, shape=shape, split=x.layout.split)


@pytest.mark.x64
@pytest.mark.parametrize("mesh_shape,shape,split", LAYOUTS[3:], ids=IDS[3:])
def test_cumsum_of_the_flattened_array(mesh_shape, shape, split):
    host = rand(shape, seed=5)
    x = _dist(host, mesh_shape, split)
    got = darray.cumsum(x)
    np.testing.assert_allclose(np.asarray(got), np.cumsum(host), rtol=1e-12, atol=1e-12)
    assert_layout(got, shape=(host.size,), split=((*x.layout.used_mesh_axes,),))
    got = darray.cumprod(_dist(1 + 0.01 * host, mesh_shape, split))
    np.testing.assert_allclose(np.asarray(got), np.cumprod(1 + 0.01 * host), rtol=1e-12)


@pytest.mark.parametrize("mesh_shape,shape,split", LAYOUTS, ids=IDS)
def test_repeat_along_split_and_flattened(mesh_shape, shape, split):
    host = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    x = _dist(host, mesh_shape, split)
    for count in (1, 2, 3):
        for axis in [*range(len(shape)), None]:
            got = darray.repeat(x, count, axis=axis)
            want = np.repeat(host, count, axis=axis)
            np.testing.assert_array_equal(np.asarray(got), want)
            want_split = ((*x.layout.used_mesh_axes,),) if axis is None else x.layout.split
            assert_layout(got, shape=want.shape, split=want_split)


@pytest.mark.parametrize("mesh_shape,shape,split", LAYOUTS, ids=IDS)
def test_tile_along_split_axes(mesh_shape, shape, split, monkeypatch):
    monkeypatch.setattr(repeating, "TILE_MIN_CELLS", 0)  # the block-wise path at these sizes
    host = rand(shape, np.float32, seed=7)
    x = _dist(host, mesh_shape, split)
    for reps in [(2,), (3, 1), (2, 3), (1, 2, 2), (2, 1, 1, 3)]:
        got = darray.tile(x, reps)
        want = np.tile(host, reps)
        np.testing.assert_array_equal(np.asarray(got), want)
        lead = len(want.shape) - len(shape)
        assert_layout(got, shape=want.shape, split=((),) * lead + x.layout.split)


def test_small_tile_keeps_xla_path():
    """Below repeating.TILE_MIN_CELLS output cells XLA's program (faster there,
    bench_speed_guard.py) tiles the split axis; the answer and layout are the same."""
    host = rand((61, 67), np.float32, seed=3)
    x = _dist(host, (8,), ("x", None))
    assert 3 * host.size < repeating.TILE_MIN_CELLS
    got = darray.tile(x, (3, 1))
    np.testing.assert_array_equal(np.asarray(got), np.tile(host, (3, 1)))
    assert_layout(got, shape=(183, 67), split=x.layout.split)
    text = compiled_hlo(lambda a: darray.tile(a, (3, 1)), x)
    assert collective_count(text, "collective-permute") == 0  # not the rounds


def _isin_values(shape, dtype, seed):
    values = np.random.default_rng(seed).integers(-6, 6, shape).astype(dtype)
    if values.dtype.kind == "f":
        flat = values.reshape(-1)
        flat[0], flat[-1] = -0.0, np.nan
        if flat.size > 2:
            flat[1] = np.inf
    return values


@pytest.mark.parametrize("mesh_shape,shape,split", LAYOUTS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_isin_against_split_test_values(mesh_shape, shape, split, dtype):
    host1 = _isin_values(shape, dtype, 11)
    # x2 split otherwise than x1: over the mesh's last axis, uneven
    mesh = mesh_of(mesh_shape)
    host2 = _isin_values((23,), dtype, 12)
    if host2.dtype.kind == "f":
        host2[3] = 0.0  # equals x1's -0.0; x2's NaN matches nothing
    x1 = _dist(host1, mesh_shape, split)
    x2 = darray.asarray(host2, mesh=mesh, spec=(mesh.axis_names[-1],))
    for invert in (False, True):
        got = darray.isin(x1, x2, invert=invert)
        np.testing.assert_array_equal(np.asarray(got), np.isin(host1, host2, invert=invert))
        assert got.dtype == np.bool_
        assert_layout(got, x1.layout)
    # x2 of the same split, and a replicated numpy x2
    x2 = _dist(host1[::-1].copy(), mesh_shape, split)
    np.testing.assert_array_equal(np.asarray(darray.isin(x1, x2)),
                                  np.isin(host1, host1[::-1]))
    np.testing.assert_array_equal(np.asarray(darray.isin(x1, host2[:4])),
                                  np.isin(host1, host2[:4]))


@pytest.mark.x64
def test_isin_compares_in_numpys_promoted_dtype():
    # 2**24 + 1 is no float32, but numpy compares int64 with float32 in float64
    host1 = np.array([2**24 + 1, 5, 7, 2**24], np.int64)
    host2 = np.array([2.0**24, 5.0, 1.5], np.float32)
    x1 = _dist(host1, (8,), ("x",))
    x2 = _dist(host2, (8,), ("x",))
    np.testing.assert_array_equal(np.asarray(darray.isin(x1, x2)), np.isin(host1, host2))


@pytest.mark.parametrize("mesh_shape,shape,split", [LAYOUTS[0], LAYOUTS[3], LAYOUTS[5]],
                         ids=[IDS[0], IDS[3], IDS[5]])
def test_no_all_gather_in_the_compiled_programs(mesh_shape, shape, split, monkeypatch):
    monkeypatch.setattr(repeating, "TILE_MIN_CELLS", 0)  # the block-wise tile at this size
    x = _dist(rand(shape, np.float32), mesh_shape, split)
    axis = _split_axes(split)[0]
    reps = [1] * len(shape)
    reps[axis] = 3
    programs = {
        "cumulative_sum": lambda a: darray.cumulative_sum(a, axis=axis, include_initial=True),
        "cumulative_prod": lambda a: darray.cumulative_prod(a, axis=axis),
        "cumsum": lambda a: darray.cumsum(a),
        "repeat": lambda a: darray.repeat(a, 2, axis=axis),
        "repeat flat": lambda a: darray.repeat(a, 2),
        "tile": lambda a: darray.tile(a, tuple(reps)),
        "isin": lambda a: darray.isin(a, a[..., ::-1] if a.ndim else a),
    }
    for name, fn in programs.items():
        text = compiled_hlo(fn, x)
        assert collective_count(text, "all-gather") == 0, name
    assert jax.device_count() == 8


@pytest.mark.parametrize("mesh_shape,split2", [((8,), ("x",)), ((2, 4), ("x", "y"))])
def test_isin_ring_of_large_test_blocks(mesh_shape, split2):
    """x2 beyond the small-set size (4096 cells): its sorted blocks travel around the ring."""
    rng = np.random.default_rng(21)
    host1 = rng.integers(-9000, 9000, (37, 29)).astype(np.float64)
    host1[0, 0], host1[1, 1] = np.nan, -0.0
    shape2 = (6003,) if len(split2) == 1 else (97, 71)
    host2 = rng.integers(-9000, 9000, shape2).astype(np.float64)
    host2.flat[0], host2.flat[5] = np.nan, 0.0
    x1 = _dist(host1, mesh_shape, ("x", None))
    x2 = _dist(host2, mesh_shape, split2)
    for invert in (False, True):
        got = darray.isin(x1, x2, invert=invert)
        np.testing.assert_array_equal(np.asarray(got), np.isin(host1, host2, invert=invert))
        assert_layout(got, x1.layout)
