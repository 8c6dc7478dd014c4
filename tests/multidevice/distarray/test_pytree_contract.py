"""Covers: darray/_src/placement/rebuilt.py, darray/_src/distarray/array.py

The JAX pytree behaviours darray/_src/placement/rebuilt.py relies on, one test each (its module
doc lists them by these names). Each asserts what JAX does, so a JAX upgrade that changes one fails
here, by name, rather than somewhere downstream as a wrong Layout."""
from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import PartitionSpec as P

import darray
from darray._src.base import compat
from darray._src.distarray.array import REBUILT, DistArray


@pytest.fixture
def x():
    mesh = mesh_of((2, 4), ("x", "y"))
    return darray.asarray(np.arange(32.0).reshape(4, 8), device=mesh, spec=("x", "y"))


def test_unflatten_receives_leaves_that_are_not_arrays(x):
    """JAX rebuilds DistArrays around avals (eval_shape), PartitionSpecs and None (prefix
    trees of shardings), so tree_unflatten may not validate its leaf."""
    shaped = jax.eval_shape(lambda a: a * 2, x)
    assert type(shaped) is DistArray and isinstance(shaped._stored, jax.ShapeDtypeStruct)
    assert shaped.layout == x.layout and shaped.shape == x.shape
    specs = jax.tree.map(lambda _: P(), x)
    assert type(specs) is DistArray and specs._stored == P()
    nothing = jax.tree.map(lambda _: None, x)
    assert type(nothing) is DistArray and nothing._stored is None


def test_jacobians_nest_output_layout_outside_input_layout_inside(x):
    """jacfwd/jacrev of a DistArray function of a DistArray give
    ``DistArray(DistArray(leaf, input layout), output layout)``, the leaf's axes the output's
    physical axes then the input's."""
    for jac in (jax.jacfwd, jax.jacrev):
        J = jac(lambda a: darray.sin(a)[1:3])(x)
        out = darray.sin(x)[1:3]
        assert J._pending is REBUILT and type(J._stored) is DistArray
        assert J._layout == out.layout and J._stored._layout == x.layout
        leaf = J._stored._stored
        assert type(leaf) is not DistArray
        assert leaf.shape == out.layout.physical_shape + x.layout.physical_shape


def test_stacked_outputs_get_leading_plain_axes(x):
    """lax.scan's ys (as vmap's outputs) rebuild the DistArray around a leaf with the stacked
    axis first."""
    _, ys = jax.lax.scan(lambda c, _: (c, c * 2), x, None, length=3)
    assert type(ys) is DistArray and ys._pending is REBUILT
    assert ys._stored.shape == (3,) + x.layout.physical_shape
    assert ys.shape == (3,) + x.shape


def test_vmap_rebuilds_the_input_around_a_tracer_without_the_mapped_axis(x):
    """Inside jax.vmap the DistArray is rebuilt around a BatchTracer lacking the mapped axis,
    whose batch dim compat.vmap_levels reads (an unsplit axis: a split one is refused)."""
    seen = {}

    def f(a):
        seen["leaf_ndim"] = a._stored.ndim
        seen["pending"] = a._pending
        seen["levels"] = compat.vmap_levels(a._stored)
        seen["shape"] = a.shape
        return a

    y = darray.asarray(np.ones((3, 8)), device=x.mesh, spec=(None, "y"))
    jax.vmap(f)(y)
    assert seen["leaf_ndim"] == 1 and seen["pending"] is REBUILT
    assert seen["levels"][0][0] == 0 and seen["levels"][0][2] == 2
    assert seen["shape"] == (8,)
