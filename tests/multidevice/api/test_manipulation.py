"""Covers: darray/_src/api/manipulation.py

Manipulation functions against numpy (float64) on uneven shapes and several meshes, with the
output layout asserted; roll along a split axis checked to be a neighbour exchange in HLO."""
import jax
import numpy as np
import pytest
from helpers import host, mesh_of
from hypothesis import given, settings
from hypothesis import strategies as st

import darray

MESHES = [(8,), (2, 4), (4, 2), (1, 8)]


def pencil(mesh_shape):
    """A spec splitting the first one or two axes over every mesh axis."""
    return ("x",) if len(mesh_shape) == 1 else ("x", "y")


@pytest.fixture(params=MESHES, ids=lambda m: "x".join(map(str, m)))
def mesh(request):
    return mesh_of(request.param)


def data(shape, seed=0):
    """Random data in the dtype darray holds it in (float32 with x64 off), so that the exact
    comparisons below compare the values darray holds."""
    return host(np.random.default_rng(seed).standard_normal(shape))


def dist(a, mesh, spec):
    return darray.asarray(a, mesh=mesh, spec=spec)


def check(y, ref, split):
    np.testing.assert_array_equal(np.asarray(y), ref)
    assert y.shape == ref.shape
    assert y.layout.split == tuple(split), y.layout
    assert y.data.shape == y.layout.physical_shape


def names(mesh):
    return tuple((n,) for n in mesh.axis_names)


# -- reshape ------------------------------------------------------------------------------------
def test_reshape_keeps_intact_split_axes(mesh):
    a = data((7, 13, 3, 2))
    x = dist(a, mesh, pencil(mesh.axis_names))
    sx = names(mesh) + ((),) * (4 - len(mesh.axis_names))
    y = darray.reshape(x, (7, 13, 6))
    check(y, a.reshape(7, 13, 6), sx[:2] + ((),))
    y = darray.reshape(x, (7, 13, -1, 1))
    check(y, a.reshape(7, 13, 6, 1), sx[:2] + ((), ()))


def test_reshape_across_split_axes_moves_mesh_axes_to_leading_output_axis(mesh):
    a = data((7, 13, 3))
    x = dist(a, mesh, pencil(mesh.axis_names))
    used = tuple(mesh.axis_names)
    y = darray.reshape(x, (-1,))
    check(y, a.reshape(-1), (used,))
    y = darray.reshape(x, (91, 3))
    check(y, a.reshape(91, 3), (used, ()))
    with pytest.raises(ValueError, match="copy=False"):
        darray.reshape(x, (-1,), copy=False)


def test_reshape_errors(mesh):
    x = dist(data((7, 13)), mesh, None)
    with pytest.raises(ValueError, match=r"cannot reshape an array of size 91 into shape \(90,\)"):
        darray.reshape(x, (90,))
    with pytest.raises(ValueError, match="at most one -1"):
        darray.reshape(x, (-1, -1))
    with pytest.raises(TypeError, match="shape="):
        darray.reshape(x, "ab")


# -- axis permutations and unit axes -------------------------------------------------------------
def test_permute_dims_moveaxis_matrix_transpose(mesh):
    a = data((7, 13, 5))
    x = dist(a, mesh, pencil(mesh.axis_names))
    s = x.layout.split
    check(darray.permute_dims(x, (2, 0, 1)), a.transpose(2, 0, 1), (s[2], s[0], s[1]))
    check(darray.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1), (s[1], s[2], s[0]))
    check(darray.matrix_transpose(x), np.swapaxes(a, -1, -2), (s[0], s[2], s[1]))
    with pytest.raises(ValueError, match="axes="):
        darray.permute_dims(x, (0, 1))
    with pytest.raises(ValueError, match="out of range"):
        darray.permute_dims(x, (0, 1, 3))


def test_expand_dims_and_squeeze(mesh):
    a = data((7, 13))
    x = dist(a, mesh, pencil(mesh.axis_names))
    s = x.layout.split
    y = darray.expand_dims(x, axis=1)
    check(y, a[:, None], (s[0], (), s[1]))
    y = darray.expand_dims(x, axis=(0, -1))
    check(y, a[None, :, :, None], ((), s[0], s[1], ()))
    check(darray.squeeze(y, axis=(0, 3)), a, s)
    with pytest.raises(ValueError, match="squeeze axis=0 has extent 7"):
        darray.squeeze(x, axis=0)
    with pytest.raises(IndexError, match="out of range"):
        darray.expand_dims(x, axis=3)


# -- flip and roll ------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, (0, 2), None])
def test_flip(mesh, axis):
    a = data((7, 13, 3))
    x = dist(a, mesh, pencil(mesh.axis_names))
    check(darray.flip(x, axis=axis), np.flip(a, axis), x.layout.split)


@pytest.mark.parametrize("shape", [(7, 13), (16, 8)])
@pytest.mark.parametrize("shift,axis", [(1, 0), (-3, 0), (5, 1), (20, 1), ((2, -4), (0, 1)),
                                        (3, (1, 1))])
def test_roll_along_split_axes(mesh, shape, shift, axis):
    a = data(shape)
    x = dist(a, mesh, pencil(mesh.axis_names))
    check(darray.roll(x, shift, axis=axis), np.roll(a, shift, axis), x.layout.split)


def test_roll_flat_and_unsplit(mesh):
    a = data((7, 5))
    x = dist(a, mesh, (mesh.axis_names[0],))
    check(darray.roll(x, 4), np.roll(a, 4), x.layout.split)
    check(darray.roll(x, -2, axis=1), np.roll(a, -2, axis=1), x.layout.split)
    with pytest.raises(ValueError, match="same length"):
        darray.roll(x, (1, 2), axis=0)


@pytest.mark.parametrize("n", [13, 16])
def test_roll_split_axis_is_neighbour_exchange_in_hlo(n):
    mesh = mesh_of((8,))
    x = dist(data((n, 3)), mesh, ("x",))
    hlo = jax.jit(lambda v: darray.roll(v, 3, axis=0)).lower(x).compile().as_text()
    assert "collective-permute" in hlo
    assert "all-gather" not in hlo
    assert "all-to-all" not in hlo


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 30), m=st.integers(1, 4), shift=st.integers(-40, 40),
       mesh_shape=st.sampled_from(MESHES))
def test_roll_hypothesis(n, m, shift, mesh_shape):
    mesh = mesh_of(mesh_shape)
    a = data((n, m), seed=n)
    x = dist(a, mesh, pencil(mesh.axis_names))
    check(darray.roll(x, shift, axis=0), np.roll(a, shift, axis=0), x.layout.split)


# -- joining and splitting ----------------------------------------------------------------------
def test_concat_stack_unstack(mesh):
    a, b = data((7, 13), 1), data((7, 13), 2)
    x, y = dist(a, mesh, pencil(mesh.axis_names)), dist(b, mesh, pencil(mesh.axis_names))
    s = x.layout.split
    check(darray.concat([x, y], axis=1), np.concatenate([a, b], 1), s)
    check(darray.concat((x, y), axis=0), np.concatenate([a, b], 0), s)
    used = tuple(n for t in s for n in t)
    check(darray.concat([x, y], axis=None), np.concatenate([a.ravel(), b.ravel()]), (used,))
    check(darray.stack([x, y], axis=1), np.stack([a, b], 1), (s[0], (), s[1]))
    pieces = darray.unstack(x, axis=1)
    assert len(pieces) == 13
    for i, p in enumerate(pieces):
        check(p, a[:, i], (s[0],))
    with pytest.raises(ValueError, match="differ on another axis"):
        darray.concat([x, dist(data((7, 2)), mesh, None)], axis=0)
    with pytest.raises(TypeError, match="non-empty tuple or list"):
        darray.concat(x)


def test_concat_mixed_layouts_takes_first(mesh):
    a, b = data((7, 13), 1), data((5, 13), 2)
    x = dist(a, mesh, pencil(mesh.axis_names))
    y = dist(b, mesh, None)
    check(darray.concat([x, y], axis=0), np.concatenate([a, b], 0), x.layout.split)


# -- broadcasting, tile, repeat -----------------------------------------------------------------
def test_broadcast(mesh):
    a = data((7, 1, 3))
    x = dist(a, mesh, (mesh.axis_names[0],))
    s0 = (mesh.axis_names[0],)
    check(darray.broadcast_to(x, (2, 7, 5, 3)), np.broadcast_to(a, (2, 7, 5, 3)),
          ((), s0, (), ()))
    y = dist(data((5, 1)), mesh, None)
    bx, by = darray.broadcast_arrays(x, y)
    check(bx, np.broadcast_to(a, (7, 5, 3)), (s0, (), ()))
    assert by.shape == (7, 5, 3)
    assert darray.broadcast_shapes((7, 1), (1, 5)) == (7, 5)
    with pytest.raises(ValueError, match="cannot broadcast"):
        darray.broadcast_to(x, (7, 2, 4))


def test_tile_and_repeat(mesh):
    a = data((7, 3))
    x = dist(a, mesh, (mesh.axis_names[0],))
    s = x.layout.split
    check(darray.tile(x, (1, 2)), np.tile(a, (1, 2)), s)
    check(darray.tile(x, (2, 1, 2)), np.tile(a, (2, 1, 2)), ((),) + s)
    check(darray.tile(x, (3, 1)), np.tile(a, (3, 1)), s)
    check(darray.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1), s)
    check(darray.repeat(x, 3), np.repeat(a, 3), s[:1])
    counts = np.array([0, 1, 2, 3, 1, 0, 2])
    check(darray.repeat(x, darray.asarray(counts, mesh=mesh), axis=0),
          np.repeat(a, counts, axis=0), s)
    with pytest.raises(ValueError, match="repeats has 2 entries; need 1 or 7"):
        darray.repeat(x, np.array([1, 2]), axis=0)


def test_results_are_pinned_under_jit(mesh):
    a = data((13, 6))
    x = dist(a, mesh, pencil(mesh.axis_names))
    f = jax.jit(lambda v: darray.roll(darray.flip(v, axis=0), 2, axis=0))
    y = f(x)
    check(y, np.roll(np.flip(a, 0), 2, 0), x.layout.split)
    assert y.data.sharding.spec == x.layout.spec
