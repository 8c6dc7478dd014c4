"""Covers: darray/_src/engine/slicing.py, darray/_src/api/indexing.py

Basic indexing (ints, slices incl. negative steps, Ellipsis, None) never gathers its input.

docs/design.md, principle 2: left to XLA, ``x[2:5, 1]`` on a (13, 7) array split over a (2, 4) mesh
all-gathers the whole physical array, and basic writes gather the written axes. Each case
compiles ``x[key]`` / ``x[key] = v`` once, runs the compiled program (values vs numpy, output
layout and sharding) and reads its HLO: no all-gather may produce more elements than the
output's physical size (a write of a scalar: no all-gather at all).
"""
import re

import jax
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import NamedSharding

import darray
from darray._src.api import indexing

_SHAPE = re.compile(r"\w+\[([\d,]*)\]")


def _gathered_sizes(hlo: str) -> list[int]:
    """Elements produced by each all-gather in compiled HLO text (tuple results summed)."""
    sizes = []
    for line in hlo.splitlines():
        if "all-gather(" not in line and "all-gather-start(" not in line:
            continue
        result = line.split("=", 1)[1].split("all-gather", 1)[0]
        sizes.append(sum(int(np.prod([int(d) for d in dims.split(",") if d]))
                         for dims in _SHAPE.findall(result)))
    return sizes


def _mesh(shape):
    return mesh_of(shape, ("x", "y", "z")[:len(shape)], explicit=True)


def _expected_split(x_split, key, ndim):
    """The documented output rule: surviving axes keep their split, new axes are unsplit."""
    key = key if isinstance(key, tuple) else (key,)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        used = sum(k is not None for k in key if k is not Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - used) + key[i + 1:]
    key = key + (slice(None),) * (ndim - sum(k is not None for k in key))
    out, axis = [], 0
    for k in key:
        if k is None:
            out.append(())
            continue
        if isinstance(k, slice):
            out.append(tuple(x_split[axis]))
        axis += 1
    return tuple(out)


# (mesh shape, array shape, spec, key): uneven extents everywhere, split and unsplit axes,
# axes split over two mesh axes, partly replicated arrays, negative steps and indices
_GET_CASES = [
    ((2, 4), (13, 7), ("x", "y"), (slice(2, 5), 1)),          # the reported case
    ((2, 4), (13, 7), ("x", "y"), (1, slice(2, 5))),
    ((2, 4), (13, 7), ("x", "y"), (slice(None, None, -1), slice(1, None, -2))),
    ((4, 2), (13, 7), ("x", "y"), (slice(1, 12, 3), Ellipsis)),
    ((4, 2), (13, 7), (("x", "y"), None), (None, slice(-3, None), 2)),
    ((8,), (13, 7), ("x", None), (slice(11, 0, -4), slice(2, 6))),
    ((8,), (13, 7), (None, "x"), (3, slice(None, None, -1))),
    ((2, 2, 2), (5, 7, 3), ("x", "y", "z"), (slice(2, 5), 1)),
    ((2, 2, 2), (5, 7, 3), ("x", "y", "z"), (-1, -1)),
    ((2, 2, 2), (13, 7), (("x", "z"), None), (slice(0, 1), None, slice(None, None, -3))),
    ((2, 4), (17,), ("y",), (slice(15, 2, -2),)),             # partly replicated
]


@pytest.mark.parametrize("mesh_shape,shape,spec,key", _GET_CASES,
                         ids=[f"{m}-{s}-{p}-{k}" for m, s, p, k in _GET_CASES])
def test_getitem_values_layout_and_no_gather(mesh_shape, shape, spec, key):
    mesh = _mesh(mesh_shape)
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) - 20.0
    x = darray.asarray(a, mesh=mesh, spec=spec)
    compiled = jax.jit(lambda v: v[key]).lower(x).compile()
    out = compiled(x)
    np.testing.assert_array_equal(np.asarray(out), a[key])
    assert out.shape == a[key].shape
    assert out.layout.split == _expected_split(x.layout.split, key, x.ndim)
    assert out.data.sharding.is_equivalent_to(NamedSharding(mesh, out.layout.spec), out.ndim)
    limit = int(np.prod(out.layout.physical_shape))
    assert all(s <= limit for s in _gathered_sizes(compiled.as_text())), (
        _gathered_sizes(compiled.as_text()), limit)
    # eager call: the same values and layout
    eager = x[key]
    np.testing.assert_array_equal(np.asarray(eager), a[key])
    assert eager.layout == out.layout


_SET_CASES = [
    ((2, 4), (13, 7), ("x", "y"), (slice(2, 5), 1)),          # the reported case
    ((4, 2), (13, 7), ("x", "y"), (slice(None, None, -2), slice(5, 0, -3))),
    ((8,), (13, 7), (None, "x"), (Ellipsis, slice(1, 7, 2))),
    ((2, 2, 2), (5, 7, 3), ("x", "y", "z"), (None, 3, slice(1, None), -1)),
    ((2, 2, 2), (13, 7), (("x", "z"), None), (slice(3, 12, 4), 0)),
]


@pytest.mark.parametrize("mesh_shape,shape,spec,key", _SET_CASES,
                         ids=[f"{m}-{s}-{p}-{k}" for m, s, p, k in _SET_CASES])
@pytest.mark.x64
def test_setitem_values_layout_and_no_gather(mesh_shape, shape, spec, key):
    mesh = _mesh(mesh_shape)
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    x = darray.asarray(a, mesh=mesh, spec=spec)
    indexed = a[key].shape
    value = np.random.default_rng(0).standard_normal(indexed)
    read_size = int(np.prod(x[key].layout.physical_shape))
    for v, limit in [(-0.0, 0), (value, read_size)]:
        compiled = jax.jit(lambda t, v=v: indexing.setitem(t, key, v)).lower(x).compile()
        out = compiled(x)
        expected = a.copy()
        expected[key] = v
        got = np.asarray(out)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))  # -0.0 kept
        assert out.layout == x.layout
        assert out.data.sharding.is_equivalent_to(NamedSharding(mesh, x.layout.spec), x.ndim)
        sizes = _gathered_sizes(compiled.as_text())
        # a scalar needs no gather at all; an array value moves at most its own (padded) size
        assert all(s <= limit for s in sizes), (sizes, limit)
    np.testing.assert_array_equal(np.asarray(x), a)  # input unchanged


def test_setitem_distarray_value_in_another_layout():
    mesh = _mesh((2, 4))
    a = np.arange(91.0).reshape(13, 7)
    v = np.arange(10.0, 14.0).reshape(4, 1)[::-1]
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    value = darray.asarray(v, mesh=mesh, spec=("y", None))  # broadcast over the key's columns
    key = (slice(9, 1, -2), slice(2, 6))
    out = indexing.setitem(x, key, value)
    expected = a.copy()
    expected[key] = v
    np.testing.assert_array_equal(np.asarray(out), expected)
    assert out.layout == x.layout


@pytest.mark.x64
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.complex128])
def test_other_dtypes(dtype):
    mesh = _mesh((2, 4))
    a = (np.arange(91).reshape(13, 7) % 5).astype(dtype)
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    key = (slice(12, 1, -3), 2)
    got = x[key]
    np.testing.assert_array_equal(np.asarray(got), a[key])
    assert got.dtype == a.dtype and got.layout.split == (("x",),)
    out = indexing.setitem(x, key, a[key][::-1])
    expected = a.copy()
    expected[key] = a[key][::-1]
    np.testing.assert_array_equal(np.asarray(out), expected)
