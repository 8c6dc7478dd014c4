"""Covers: darray/_src/base/compat.py, darray/_src/fft/r2r.py

Splits whose mesh axes are not in the mesh's order (('y', 'x') on an (x, y) mesh): ppermute
numbers devices in the mesh's order, darray's blocks in the split's (compat.ppermute_blocks).
Found by a seeded differential run: slicing, roll and the split r2r path gave wrong numbers."""
import numpy as np
import pytest
import scipy.fft as sf
from helpers import mesh_of

import darray

MESH = mesh_of((2, 4), ("x", "y"))


@pytest.mark.x64
@pytest.mark.parametrize("spec", [(("x", "y"),), (("y", "x"),)])
@pytest.mark.parametrize("n", [5, 13])
def test_slices_roll_and_dct_on_reordered_splits(spec, n):
    a = np.arange(n, dtype=np.float64) ** 2 - 3
    x = darray.asarray(a, mesh=MESH, spec=spec)
    for key in (slice(1, 6), slice(None, None, -1), slice(2, None, 3)):
        got = x[key]
        np.testing.assert_array_equal(np.asarray(got), a[key])
        assert got.layout.split == x.layout.split
    r = darray.roll(x, 9)
    np.testing.assert_array_equal(np.asarray(r), np.roll(a, 9))
    assert r.layout == x.layout
    d = darray.fft.dct(x, norm="forward")
    np.testing.assert_allclose(np.asarray(d), sf.dct(a, norm="forward"), rtol=1e-12, atol=1e-12)
    assert d.layout.split == x.layout.split
    y = darray.asarray(a, mesh=MESH, spec=spec)
    y[1:4] = -1.0
    b = a.copy()
    b[1:4] = -1.0
    np.testing.assert_array_equal(np.asarray(y), b)


@pytest.mark.parametrize("spec", [(("x", "y"),), (("y", "x"),)])
def test_halo_and_reduce_on_reordered_splits(spec):
    a = np.arange(16.0) + 1
    x = darray.asarray(a, mesh=MESH, spec=spec)
    h = x.halo(1)
    blocks = np.asarray(h.data).reshape(8, 4)  # ghost, 2 cells, ghost per block
    expected = np.stack([np.take(a, np.arange(2 * b - 1, 2 * b + 3), mode="wrap")
                         for b in range(8)])
    np.testing.assert_array_equal(blocks, expected)
    assert h.layout.split == x.layout.split
    np.testing.assert_array_equal(np.asarray(h.halo_reduce()), 2 * a)  # each cell is one ghost
