"""Covers: darray/_src/fft/split_permute.py, darray/_src/fft/r2r_split.py

split_permute.permute: a static reorder of a split axis by point-to-point sends (the Makhoul
reorders of r2r_split), against numpy indexing; the split is kept and nothing is gathered."""
import jax
import numpy as np
import pytest
from helpers import collective_counts, collectives, mesh_of

import darray
from darray._src.fft import r2r_split, split_permute

PLACEMENTS = {
    "d8": ((8,), ("d",), ("d",)),
    "xy_of_2x4": ((2, 4), ("x", "y"), (("x", "y"),)),
    "yx_of_2x4": ((2, 4), ("x", "y"), (("y", "x"),)),
    "y_of_2x4": ((2, 4), ("x", "y"), ("y",)),
}


def _place(a, placement):
    shape, names, spec = PLACEMENTS[placement]
    return darray.asarray(a, mesh=mesh_of(shape, names), spec=spec)


@pytest.mark.x64
@pytest.mark.parametrize("placement", list(PLACEMENTS))
@pytest.mark.parametrize("length, have", [(13, 13), (64, 64), (17, 30), (9, 5), (1, 1)])
def test_random_reorders_match_numpy(placement, length, have):
    rng = np.random.default_rng(length * 100 + have)
    a = rng.standard_normal(have)
    x = _place(a, placement)
    source = rng.permutation(max(length, have))[:length]
    source[source >= have] = -1
    if length > 3:
        source[2] = -1  # an explicit zero
    y = jax.jit(lambda v: split_permute.permute(v, 0, source, length))(x)
    want = np.where(source >= 0, a[np.clip(source, 0, have - 1)], 0.0)
    np.testing.assert_array_equal(np.asarray(y), want)
    assert y.layout.shape == (length,) and y.layout.split == x.layout.split
    assert y.data.sharding.is_equivalent_to(y.sharding, 1)
    np.testing.assert_array_equal(np.asarray(x), a)  # input untouched


@pytest.mark.x64
def test_makhoul_reorder_of_a_batched_axis_sends_without_gathering():
    """A (6, 40) array split (x, y) on (2, 4): the reorder of axis 1 is two collective
    permutes of half a block each (module doc), and no other collective."""
    a = np.random.default_rng(1).standard_normal((6, 40))
    mesh = mesh_of((2, 4), ("x", "y"))
    x = darray.asarray(a, mesh=mesh, spec=("x", "y"))
    source = np.asarray(r2r_split._makhoul_source(40, 40))
    fn = jax.jit(lambda v: split_permute.permute(v, 1, source, 40))
    hlo = fn.lower(x).compile().as_text()
    # blocks of 10 over the 4 devices of y: each block leaves in two halves, which the colouring
    # packs into two rounds, one collective permute each
    rounds = split_permute._routes(tuple(int(s) for s in source), 10, 10, 4)[0]
    assert len(rounds) == 2
    assert collective_counts(hlo) == {"collective-permute": len(rounds)}, collectives(hlo)
    y = fn(x)
    np.testing.assert_array_equal(np.asarray(y), a[:, source])
    assert y.layout == x.layout


def test_gradient_is_the_inverse_reorder():
    a = np.random.default_rng(2).standard_normal(13)
    x = _place(a, "d8")
    source = np.asarray(r2r_split._makhoul_source(13, 13))
    weights = np.arange(13.0)
    g = jax.grad(lambda v: (split_permute.permute(v, 0, source, 13).to_jax() * weights).sum())(x)
    want = np.zeros(13)
    want[source] = weights
    np.testing.assert_allclose(np.asarray(g), want)
    assert g.layout == x.layout


def test_bad_source_is_refused_with_its_bounds():
    x = _place(np.arange(5.0), "d8")
    with pytest.raises(ValueError, match="source must hold 4 indices below 5"):
        split_permute.permute(x, 0, np.array([0, 1, 2, 5]), 4)
