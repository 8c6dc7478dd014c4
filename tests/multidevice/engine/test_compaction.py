"""Covers: darray/_src/engine/compaction.py, darray/_src/api/searching.py
Covers: darray/_src/api/indexing.py, darray/_src/api/set_functions.py

Compaction and the other data-dependent-shape functions on every layout family, against
numpy, with the output layout asserted.

The family that broke (issue 9): XLA's partitioner miscompiled jnp.nonzero(size=...) on partly
replicated operands, e.g. a 1-D array split over one axis of a (2, 4) mesh gave
x[x > 4] == [6 .. 12, 0]. darray now compacts on the physical blocks (engine/compaction.py);
these tests pin the layouts where it went wrong plus one per mesh family, uneven extents and
splits that leave mesh axes unused. The full sweep is in the slow tier.
"""
import itertools

import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray

MESHES = {"8": ((8,), ("x",)), "2x4": ((2, 4), ("x", "y")), "4x2": ((4, 2), ("x", "y")),
          "1x8": ((1, 8), ("x", "y")), "2x2x2": ((2, 2, 2), ("x", "y", "z"))}

# (mesh, shape, spec): the reported reproducers first, then one partly replicated case per
# mesh family with uneven extents.
CASES = [
    ("2x4", (13,), ("x",)),            # the issue's reproducer
    ("4x2", (17, 1), ("x", "y")),      # mask on (17, 1) split (x, y)
    ("2x2x2", (13,), ("y",)),          # 1-D over one axis of a 3-D mesh
    ("8", (13,), ("x",)),
    ("1x8", (5, 7), (None, "y")),
    ("2x4", (3, 5, 7), ("y", None, "x")),
    ("2x2x2", (7, 5), (("z", "x"), None)),
]


def data(shape, seed=0):
    """Integers in [-3, 3] with signed zeros (a compaction must keep -0.0)."""
    a = np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float64)
    a[a == 0] = -0.0
    return a


def split_of(spec, ndim):
    out = []
    for s in tuple(spec) + (None,) * (ndim - len(spec)):
        out.append(() if s is None else ((s,) if isinstance(s, str) else tuple(s)))
    return tuple(out)


def assert_equal(y, ref):
    host = np.asarray(y)
    np.testing.assert_array_equal(host, ref)
    assert host.dtype == ref.dtype, (host.dtype, ref.dtype)
    if host.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(host), np.signbit(ref))
    assert y.data.shape == y.layout.physical_shape


def used(split):
    return tuple(n for s in split for n in s)


@pytest.mark.x64
@pytest.mark.parametrize("mesh_name,shape,spec", CASES, ids=lambda v: str(v))
def test_mask_get_set_nonzero(mesh_name, shape, spec):
    mesh = mesh_of(*MESHES[mesh_name])
    a = data(shape)
    x = darray.asarray(a, mesh=mesh, spec=spec)
    split = split_of(spec, len(shape))
    mask = x > 0

    # x[mask]: values, C order, split over the mesh axes the input used
    y = x[mask]
    assert_equal(y, a[a > 0])
    assert y.layout.split == (used(split),)

    # nonzero: one index array per axis, same layout
    for got, ref in zip(darray.nonzero(mask), np.nonzero(a > 0)):
        assert_equal(got, ref.astype(np.int64))
        assert got.layout.split == (used(split),)
    # a float array's nonzeros: -0.0 is zero
    for got, ref in zip(darray.nonzero(x), np.nonzero(a)):
        assert_equal(got, ref.astype(np.int64))

    # x[mask] = values (one per selected cell, C order): x's layout
    count = int(np.count_nonzero(a > 0))
    values = -np.arange(1.0, count + 1.0)
    ref = a.copy()
    ref[a > 0] = values
    z = darray._src.api.indexing.setitem(x, (mask,), values)
    assert_equal(z, ref)
    assert z.layout.split == split
    np.testing.assert_array_equal(np.asarray(x), a)  # input untouched


def test_issue_reproducer_on_explicit_mesh():
    """Exactly the issue's code (jax.make_mesh: Explicit axes on new jax)."""
    mesh = mesh_of((2, 4), ("x", "y"), explicit=True)
    a = np.arange(13, dtype=np.float32)
    v = darray.asarray(a, mesh=mesh, spec=("x",))
    np.testing.assert_array_equal(np.asarray(v[v > 4]), a[a > 4])
    np.testing.assert_array_equal(np.asarray(darray.nonzero(v > 4)[0]), np.nonzero(a > 4)[0])


@pytest.mark.x64
def test_leading_mask_keeps_trailing_split():
    """A mask over the leading axes: the trailing axes keep their split."""
    mesh = mesh_of((2, 4))
    a = data((7, 5, 6))
    x = darray.asarray(a, mesh=mesh, spec=(None, "y", "x"))
    m = a[:, :, 0] > 0
    y = x[darray.asarray(m, mesh=mesh, spec=("x",))]
    assert_equal(y, a[m])
    assert y.layout.split == (("y",), ("x",))
    # a host mask, a mask with trailing slices, and a write of rows
    assert_equal(x[m, :], a[m])
    rows = np.arange(6.0) + 0.5
    ref = a.copy()
    ref[m] = rows
    assert_equal(darray._src.api.indexing.setitem(x, (m,), rows), ref)


@pytest.mark.x64
def test_mixed_keys_and_halo():
    """Masks inside a bigger key go through the same compaction (as index arrays); haloed
    operands are compacted without their ghosts."""
    mesh = mesh_of((4, 2))
    a = data((9, 7))
    x = darray.asarray(a, mesh=mesh, spec=("y", "x"))
    m = darray.asarray(a[0] > 0, mesh=mesh, spec=("x",))
    assert_equal(x[1:8:2, m], a[1:8:2, a[0] > 0])
    assert_equal(x[np.array([0, 8]), :][:, m], a[[0, 8]][:, a[0] > 0])
    h = x.halo(1)
    assert_equal(h[h > 0], a[a > 0])
    assert_equal(darray.nonzero(h > 0)[1], np.nonzero(a > 0)[1].astype(np.int64))


@pytest.mark.x64
def test_empty_and_full_selections():
    mesh = mesh_of((2, 2, 2))
    a = data((5, 3))
    x = darray.asarray(a, mesh=mesh, spec=("z",))
    for y, ref in ((x[x > 10], a[a > 10]), (x[x > -10], a[a > -10]),
                   (darray.nonzero(x > 10)[0], np.zeros(0, np.int64))):
        assert_equal(y, ref)
        assert y.layout.split == (("z",),)  # the same layout whether or not anything is hit
    rows = x[np.zeros(5, bool)]
    assert_equal(rows, a[np.zeros(5, bool)])
    assert rows.layout.split == (("z",), ())


@pytest.mark.parametrize("mesh_name,shape,spec", CASES[:3] + CASES[5:6], ids=lambda v: str(v))
def test_unique_searchsorted_isin_repeat(mesh_name, shape, spec):
    mesh = mesh_of(*MESHES[mesh_name])
    a = data(shape)
    x = darray.asarray(a, mesh=mesh, spec=spec)
    values, counts = darray.unique_counts(x)
    ref_values, ref_counts = np.unique(a, return_counts=True)
    np.testing.assert_array_equal(np.asarray(values), ref_values)
    np.testing.assert_array_equal(np.asarray(counts), ref_counts)
    inv = darray.unique_inverse(x).inverse_indices
    np.testing.assert_array_equal(np.asarray(inv), np.unique(a, return_inverse=True)[1]
                                  .reshape(a.shape))
    assert inv.layout.split == split_of(spec, len(shape))

    sorted_ = darray.asarray(np.sort(a.reshape(-1)), mesh=mesh)
    pos = darray.searchsorted(sorted_, x, side="right")
    np.testing.assert_array_equal(np.asarray(pos), np.searchsorted(np.sort(a.reshape(-1)), a,
                                                                   side="right"))
    assert pos.layout.split == x.layout.split

    hit = darray.isin(x, np.array([-1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(hit), np.isin(a, [-1.0, 2.0]))
    assert hit.layout.split == x.layout.split

    counts = np.arange(shape[0]) % 3
    r = darray.repeat(x, counts, axis=0)
    np.testing.assert_array_equal(np.asarray(r), np.repeat(a, counts, axis=0))
    assert r.layout.split == x.layout.split


@pytest.mark.x64
def test_data_dependent_shapes_under_jit_raise_jax_error():
    """A shape that depends on values is JAX's limit under jit (never hit eagerly)."""
    x = darray.asarray(data((13,)), mesh=mesh_of((8,)))
    for f in (lambda v: v[v > 0], lambda v: darray.nonzero(v)[0], darray.unique_values,
              lambda v: darray.repeat(v, darray.astype(v > 0, darray.int64))):
        with pytest.raises(jax.errors.ConcretizationTypeError, match="depends on"):
            jax.jit(f)(x)
    # a scalar write through a mask is a select: fine under jit
    y = jax.jit(lambda v: darray._src.api.indexing.setitem(v, (v > 0,), 0.0))(x)
    np.testing.assert_array_equal(np.asarray(y), np.where(data((13,)) > 0, 0.0, data((13,))))


def _all_specs(names, ndim):
    """Every spec giving each array axis a distinct mesh axis or None."""
    pool = list(names) + [None] * ndim
    return sorted(set(itertools.permutations(pool, ndim)), key=str)


@pytest.mark.slow
@pytest.mark.parametrize("mesh_name", list(MESHES))
@pytest.mark.parametrize("shape", [(1,), (13,), (17, 1), (5, 7), (3, 2, 5)], ids=str)
def test_compaction_sweep(mesh_name, shape):
    mesh = mesh_of(*MESHES[mesh_name])
    a = data(shape, seed=len(shape))
    for spec in _all_specs(MESHES[mesh_name][1], len(shape)):
        x = darray.asarray(a, mesh=mesh, spec=spec)
        y = x[x > 0]
        assert_equal(y, a[a > 0])
        assert y.layout.split == (used(split_of(spec, len(shape))),)
        for got, ref in zip(darray.nonzero(x < 0), np.nonzero(a < 0)):
            assert_equal(got, ref.astype(np.int64))


def test_gradients_through_compaction_and_gathers():
    """The bit-pattern sums keep derivatives (custom JVP): d/dx sum(read(x)**2) = 2 x at the
    cells read, 0 elsewhere."""
    mesh = mesh_of((2, 4))
    a = data((13,))
    x = darray.asarray(a, mesh=mesh, spec=("x",))
    mask = a > 0
    idx = np.array([1, 5, 12, 5])
    counts = np.bincount(idx, minlength=13)
    cases = [
        (lambda v: darray.sum(v[darray.asarray(mask, mesh=mesh, spec=("x",))] ** 2), 2 * a * mask),
        (lambda v: darray.sum(v[mask] ** 2), 2 * a * mask),
        (lambda v: darray.sum(darray.take(v, idx) ** 2), 2 * a * counts),
        (lambda v: darray.sum(v[idx] ** 2), 2 * a * counts),
        (lambda v: v[3] ** 2, 2 * a * (np.arange(13) == 3)),
    ]
    for f, ref in cases:
        g = darray.grad(f)(x)
        np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-12, atol=0)
        assert g.layout.split == (("x",),)
