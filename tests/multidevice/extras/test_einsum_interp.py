"""Covers: darray/_src/extras/numerical.py

einsum and interp against numpy in float64 on even and uneven layouts: layouts asserted,
HLO: a split contraction is one all-reduce with no gather of the operands; interp has no
collective."""
from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import collectives, mesh_of

import darray

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

MESH = {"x": 2, "y": 4}


def mesh():
    return mesh_of((2, 4), ("x", "y"))


def put(host, spec):
    return darray.asarray(host, mesh=mesh(), spec=spec)


def hlo(fn, *arrays):
    layouts = [a.layout for a in arrays]
    wrap = darray.DistArray._new
    f = jax.jit(lambda *ds: fn(*[wrap(d, lay) for d, lay in zip(ds, layouts)]).data)
    return collectives(f.lower(*[a.data for a in arrays]).compile().as_text())


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("m,k,n", [(8, 16, 12), (7, 13, 5)])
def test_einsum_matmul_split_contraction_is_one_all_reduce(m, k, n):
    A, B = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    a, b = put(A, ("x", "y")), put(B, ("y", None))
    r = darray.einsum("ij,jk->ik", a, b)
    np.testing.assert_allclose(np.asarray(r), A @ B, rtol=1e-12)
    assert r.layout.split == (("x",), ())
    assert hlo(lambda p, q: darray.einsum("ij,jk->ik", p, q), a, b) == ["all-reduce"]
    # b split otherwise along j: moved to a's split first, still no gather of a
    b2 = put(B, (None, "y"))
    r2 = darray.einsum("ij,jk->ik", a, b2)
    np.testing.assert_allclose(np.asarray(r2), A @ B, rtol=1e-12)
    assert r2.layout.split == (("x",), ())


@pytest.mark.parametrize("shape", [(8, 4, 6), (5, 3, 7)])
def test_einsum_batched_and_free_axes_need_no_collective(shape):
    b, i, j = shape
    X, Y = RNG.standard_normal((b, i, j)), RNG.standard_normal((b, j, 3))
    x, y = put(X, ("y", None, None)), put(Y, ("y", None, None))
    r = darray.einsum("bij,bjk->bik", x, y)
    np.testing.assert_allclose(np.asarray(r), np.einsum("bij,bjk->bik", X, Y), rtol=1e-12)
    assert r.layout.split == (("y",), (), ())
    assert r.data.sharding.spec == jax.sharding.PartitionSpec("y")
    assert hlo(lambda p, q: darray.einsum("bij,bjk->bik", p, q), x, y) == []
    v = RNG.standard_normal(j)
    s = darray.einsum("bij,j->bi", x, put(v, (None,)))
    np.testing.assert_allclose(np.asarray(s), X @ v, rtol=1e-12)
    assert s.layout.split == (("y",), ())


@pytest.mark.parametrize("subscripts,shapes,specs", [
    ("ij->", [(13, 6)], [("x", "y")]),
    ("ij->j", [(13, 6)], [("x", "y")]),
    ("ij", [(7, 9)], [("x", "y")]),
    ("ji", [(7, 9)], [("x", "y")]),
    ("bii->bi", [(6, 5, 5)], [("y", None, None)]),
    ("bii", [(6, 5, 5)], [("y", None, None)]),
    ("i,j->ij", [(13,), (6,)], [("x",), ("y",)]),
    ("ij,ij->i", [(13, 6), (13, 6)], [("x", "y"), ("x", None)]),
    ("ij,jk,kl->il", [(7, 5), (5, 9), (9, 4)], [("x", "y"), ("y", None), (None, None)]),
    ("...j,jk", [(3, 7, 5), (5, 6)], [("x", None, "y"), ("y", None)]),
    ("b...,b->...", [(6, 4, 3), (6,)], [("y", "x", None), ("y",)]),
])
@pytest.mark.distributed_placement
def test_einsum_forms_match_numpy(subscripts, shapes, specs):
    hosts = [RNG.standard_normal(s) for s in shapes]
    ops = [put(h, sp) for h, sp in zip(hosts, specs)]
    r = darray.einsum(subscripts, *ops)
    ref = np.einsum(subscripts, *hosts)
    assert r.shape == ref.shape
    np.testing.assert_allclose(np.asarray(r), ref, rtol=1e-12, atol=1e-12)
    assert r.data.sharding.spec == r.layout.spec
    found = hlo(lambda *a: darray.einsum(subscripts, *a), *ops)
    assert "all-gather" not in found, found


def test_einsum_conflicting_mesh_axes_move_the_later_operand():
    """x splits label i over 'x' and z splits label l over 'x' too: a mesh axis serves one
    label, so z is moved (unsplit along l); values are numpy's."""
    X, Y, Z = (RNG.standard_normal(s) for s in [(8, 5), (5, 9), (9, 4)])
    r = darray.einsum("ij,jk,kl->il", put(X, ("x", "y")), put(Y, ("y", None)),
                      put(Z, (None, "x")))
    np.testing.assert_allclose(np.asarray(r), X @ Y @ Z, rtol=1e-12)
    assert r.layout.split == (("x",), ())


def test_einsum_diagonal_of_split_axes_moves_them_first():
    """A label repeated in one operand (a diagonal) needs both axes on one device: the operand
    is moved to unsplit matrix axes first (documented), and the result is numpy's."""
    H = RNG.standard_normal((9, 9))
    r = darray.einsum("ii->i", put(H, ("x", "y")))
    np.testing.assert_allclose(np.asarray(r), np.diag(H), rtol=1e-14)
    assert r.layout.split == ((),)
    np.testing.assert_allclose(np.asarray(darray.einsum("ii", put(H, ("x", None)))),
                               np.trace(H), rtol=1e-12)


def test_einsum_gradient_keeps_layouts():
    A, B = RNG.standard_normal((8, 16)), RNG.standard_normal((16, 4))
    a, b = put(A, ("x", "y")), put(B, ("y", None))
    ga, gb = darray.grad(lambda p, q: darray.sum(darray.einsum("ij,jk->ik", p, q) ** 2),
                         argnums=(0, 1))(a, b)
    C = A @ B
    # each entry is a sum of products: its rounding error scales with the terms, not with
    # the entry, so an entry that nearly cancels needs the absolute bound (seen: 9.4e-4 off
    # by 1.2e-15, relative 1.3e-12, with RNG's draws depending on which tests ran first)
    for got, want in ((ga, 2 * C @ B.T), (gb, 2 * A.T @ C)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())
    assert ga.layout == a.layout and gb.layout == b.layout


def test_einsum_errors():
    a = put(np.ones((4, 3)), ("x", None))
    with pytest.raises(ValueError, match=r"name 2 operand\(s\) but 1 were given"):
        darray.einsum("ij,jk", a)
    with pytest.raises(ValueError, match=r"term 'ijk' has 3 labels but the operand has 2"):
        darray.einsum("ijk->i", a)
    with pytest.raises(ValueError, match=r"label 'j' has extents \[3, 4\]"):
        darray.einsum("ij,jk", a, a)
    with pytest.raises(ValueError, match=r"output of subscripts='ij->ik' names \['k'\]"):
        darray.einsum("ij->ik", a)
    with pytest.raises(TypeError, match=r"must be a string"):
        darray.einsum(a, [0, 1])
    with pytest.raises(ValueError, match=r"holds \['1'\]"):
        darray.einsum("i1", a)
    with pytest.raises(ValueError, match=r"broadcast axes \('...'\) in the operands but not"):
        darray.einsum("i...->", a)


# -- interp -----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,spec", [((16, 8), ("x", "y")), ((13, 5), ("x", "y")),
                                        ((11,), (("x", "y"),))])
def test_interp_matches_numpy_no_collective(shape, spec):
    host = RNG.standard_normal(shape) * 3
    x = put(host, spec)
    xp = np.sort(RNG.uniform(-2, 2, 9))
    fp = np.sin(xp)
    cases = [{}, {"left": -5.0, "right": 7.0}]
    for kw in cases:
        r = darray.interp(x, xp, fp, **kw)
        np.testing.assert_allclose(np.asarray(r), np.interp(host, xp, fp, **kw), rtol=1e-12)
        assert r.layout == x.layout and r.data.sharding.spec == x.data.sharding.spec
    r = darray.interp(x, xp, fp + 1j * np.cos(xp))
    np.testing.assert_allclose(np.asarray(r), np.interp(host, xp, fp + 1j * np.cos(xp)),
                               rtol=1e-12)
    xq = np.array([170.0, 10.0, 350.0, 50.0])  # periodic, unsorted table, as numpy's example
    fq = np.array([1.0, 2.0, 3.0, 4.0])
    r = darray.interp(x * 100.0, xq, fq, period=360)
    np.testing.assert_allclose(np.asarray(r), np.interp(host * 100, xq, fq, period=360),
                               rtol=1e-12)
    assert hlo(lambda a: darray.interp(a, xp, fp), x) == []


def test_interp_table_length_of_x_and_distarray_table():
    # a table as long as x is still replicated, never split like x
    host = np.linspace(-1, 1, 8)
    x = put(host, ("y",))
    xp = np.linspace(-1.5, 1.5, 8)
    assert hlo(lambda a: darray.interp(a, xp, xp ** 2), x) == []
    r = darray.interp(x, put(xp, (None,)), put(xp ** 2, ("x",)))
    np.testing.assert_allclose(np.asarray(r), np.interp(host, xp, xp ** 2), rtol=1e-12)


def test_interp_errors():
    x = put(np.ones(8), ("y",))
    with pytest.raises(ValueError, match=r"xp and fp must have the same length"):
        darray.interp(x, np.arange(3.0), np.arange(4.0))
    with pytest.raises(ValueError, match=r"xp must be 1-D"):
        darray.interp(x, np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"must not be empty"):
        darray.interp(x, np.array([]), np.array([]))
    with pytest.raises(ValueError, match=r"period=0"):
        darray.interp(x, np.arange(3.0), np.arange(3.0), period=0)
    with pytest.raises(TypeError, match=r"x must be real"):
        darray.interp(x * 1j, np.arange(3.0), np.arange(3.0))
