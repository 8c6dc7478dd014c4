"""Covers: darray/_src/layout/layout.py

Layout arithmetic: no devices needed (AbstractMesh carries only names and sizes)."""
import dataclasses
import math

import helpers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import PartitionSpec as P

from darray import Layout, LayoutError

MESH_24 = helpers.abstract_mesh((2, 4), ("x", "y"))


def abstract_mesh(sizes):
    return helpers.abstract_mesh(tuple(sizes), tuple("abcd"[: len(sizes)]))


@st.composite
def layouts(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(0, 40), min_size=ndim, max_size=ndim)))
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    mesh = abstract_mesh(sizes)
    names = list(mesh.axis_names)
    spec = [None] * ndim
    for name in names:
        axis = draw(st.integers(-1, ndim - 1))
        if axis >= 0:
            spec[axis] = (spec[axis] or ()) + (name,)
    halo = tuple(tuple(draw(st.lists(st.integers(0, 3), min_size=2, max_size=2))) for _ in shape)
    return Layout.create(shape, mesh, tuple(spec), halo=halo)


@given(layouts())
@settings(max_examples=200, deadline=None)
def test_blocks_tile_the_axis(layout):
    for axis, n in enumerate(layout.shape):
        blocks = layout.blocks(axis)
        assert len(blocks) == layout.parts(axis)
        assert sum(stop - start for start, stop in blocks) == n
        # contiguous, in order, never beyond the array
        edge = 0
        for start, stop in blocks:
            assert start == edge and start <= stop <= n
            edge = stop
        assert layout.padded_shape[axis] % layout.parts(axis) == 0
        assert layout.padded_shape[axis] - n < max(layout.parts(axis), 1)
        lo, hi = layout.halo[axis]
        assert layout.physical_shape[axis] == layout.parts(axis) * (lo + layout.chunk(axis) + hi)


@given(layouts())
@settings(max_examples=100, deadline=None)
def test_device_slices_partition_the_array(layout):
    """Every logical cell is owned by exactly one block coordinate."""
    import itertools
    sizes = layout.mesh_shape
    used = layout.used_mesh_axes
    owned = 0
    for coords in itertools.product(*[range(sizes[n]) for n in used]):
        slices = layout.device_slices(dict(zip(used, coords)))
        owned += math.prod(s.stop - s.start for s in slices)
    assert owned == math.prod(layout.shape)


def test_uneven_example_13_over_8():
    layout = Layout.create((13,), helpers.abstract_mesh((8,), ("d",)), ("d",))
    assert layout.chunk(0) == 2
    assert [e - s for s, e in layout.blocks(0)] == [2, 2, 2, 2, 2, 2, 1, 0]
    assert layout.padded_shape == (16,) and layout.is_padded


def test_spec_round_trip_and_repr():
    layout = Layout.create((13, 10, 7), MESH_24, P("x", "y"))
    assert layout.spec == P("x", "y")
    assert layout.split == (("x",), ("y",), ())
    assert layout.padded_shape == (14, 12, 7)
    assert repr(layout) == "Layout(shape=(13, 10, 7), mesh=(x:2, y:4), split=(x, y, None))"
    multi = Layout.create((16, 3), MESH_24, (("x", "y"),))
    assert multi.parts(0) == 8 and multi.spec == P(("x", "y"))
    # block index is major-to-minor over ('x', 'y'), as in JAX
    assert multi.block_index(0, {"x": 1, "y": 2}) == 6


def test_layout_is_hashable_and_immutable():
    a = Layout.create((4, 4), MESH_24, ("x",))
    b = Layout.create((4, 4), MESH_24, P("x"))
    assert a == b and hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.shape = (1,)


@pytest.mark.parametrize("spec, exc, message", [
    (("x", "z"), LayoutError, r"spec\[1\] names mesh axis 'z'.*known axes: \('x', 'y'\)"),
    (("x", "x"), LayoutError, r"uses mesh axis 'x' twice \(array axes 0 and 1\)"),
    (("x", None, "y", None), LayoutError, r"has 4 entries but the array has rank 3"),
    (("x", 3), TypeError, r"spec\[1\]=3 is not accepted"),
    ("xy", TypeError, r"spec must be a tuple or jax.sharding.PartitionSpec"),
])
def test_bad_specs_are_named(spec, exc, message):
    with pytest.raises(exc, match=message):
        Layout.create((4, 4, 4), MESH_24, spec)


def test_layout_error_is_a_value_error():
    assert issubclass(LayoutError, ValueError)


def test_bad_halo():
    with pytest.raises(LayoutError, match="halo="):
        Layout.create((4, 4), MESH_24, ("x",), halo=((1, 1), (-1, 0)))


def test_layout_has_no_axis_order():
    # k-space stored transposed is a different split, never a permutation of the axes
    assert [f.name for f in dataclasses.fields(Layout)] == ["shape", "mesh", "split", "halo"]
    with pytest.raises(TypeError, match="order"):
        Layout.create((4, 4), MESH_24, ("x",), order=(1, 0))
