"""Covers: darray/_src/extras/printing.py

print(x) / str(x) show the values as numpy prints them; repr(x) shows the layout."""
import re

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray

MESH = mesh_of((2, 4), ("x", "y"))


@pytest.mark.parametrize("shape,spec", [
    ((13,), ("x",)), ((13, 7), ("x", "y")), ((40, 50), (None, ("x", "y"))),
    ((13, 10, 12), ("x", "y")), ((2000,), (("x", "y"),)), ((0, 3), ("x",)),
])
@pytest.mark.x64
def test_str_matches_numpy_including_summaries(shape, spec):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 1.5 - 7
    x = darray.asarray(a, mesh=MESH, spec=spec)
    assert str(x) == str(a)
    assert repr(x).startswith(f"DistArray(float64[{','.join(map(str, shape))}]")
    assert x.sharding.spec == x.layout.spec  # printing leaves the array as it was
    np.testing.assert_array_equal(np.asarray(x), a)


def test_large_array_prints_only_its_corners_without_all_gather():
    a = np.arange(64 * 64, dtype=np.int64).reshape(64, 64)
    x = darray.asarray(a, mesh=MESH, spec=("x", "y"))
    assert str(x) == str(a) and "..." in str(x)
    from darray._src.api.indexing import take
    picks = np.array([0, 1, 2, 3, 61, 62, 63])
    hlo = jax.jit(lambda t: take(take(t, picks, axis=0), picks, axis=1).data).lower(
        x).compile().as_text()
    gathered = [int(np.prod([int(d) for d in m.group(1).split(",") if d]))
                for m in re.finditer(r"= \w+\[([\d,]*)\][^=]*? all-gather\(", hlo)]
    # only index vectors move whole; the 64x64 array never does
    assert gathered and max(gathered) <= 7 * 8, gathered


@pytest.mark.x64
@pytest.mark.distributed_placement
def test_zero_d_prints_its_value():
    a = np.arange(13.0)
    s = darray.sum(darray.asarray(a, mesh=MESH, spec=("x",)))
    assert str(s) == str(a.sum())
    assert repr(s) == f"DistArray({float(a.sum())!r}, dtype=float64, mesh=(x:2, y:4))"
    assert f"{s:.1f}" == f"{a.sum():.1f}"


@pytest.mark.x64
def test_traced_arrays_print_their_layout():
    x = darray.asarray(np.arange(13.0), mesh=MESH, spec=("x",))
    seen = []
    jax.jit(lambda t: seen.append(str(t)) or t)(x)
    assert seen == ["DistArray(float64[13], mesh=(x:2, y:4), split=(x,))"]
