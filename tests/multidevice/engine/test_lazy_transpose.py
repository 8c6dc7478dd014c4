"""Covers: darray/_src/engine/views.py, darray/_src/api/manipulation.py
Covers: darray/_src/api/linalg.py

Unread permutations (issue 50: scikit-learn's ``U.T @ y`` after the svd of Ridge(solver="svd")):
an eager ``x.T`` computes nothing until it is read, and matmul / tensordot / vecdot contract
its source with permuted labels, so no transposed copy is made. Results equal numpy's
(float64 references), layouts equal those of the materialised transpose's product, numpy's
view semantics hold (writes through, later base writes show, the base kept alive), and the
program that runs holds no transposed block (memory_analysis, no all-gather)."""
from __future__ import annotations

import copy
import gc
import pickle

import jax
import numpy as np
import pytest
from helpers import assert_layout, close, collective_count, host, mesh_of, rand

import darray
from darray._src.linalg import contraction

MESHES = {"8": ((8,), ("x",)), "2x4": ((2, 4), ("x", "y")), "4x2": ((4, 2), ("x", "y"))}


def _unread(v) -> bool:
    link = v._pending
    return getattr(link, "source", None) is not None


def _rows(host, mesh):
    return darray.asarray(host, device=mesh, spec=(mesh.axis_names[0],) + (None,) * (host.ndim - 1))


def _materialised(x, axes):
    """The old path's operand: the permutation, read at once."""
    v = darray.permute_dims(x, axes)
    v.data  # noqa: B018  (reads it)
    assert not _unread(v)
    return v


@pytest.mark.parametrize("op, mesh_name", [
    ("matmul", "8"), ("matmul", "2x4"), ("matmul", "4x2"), ("tensordot", "2x4"),
    ("vecdot", "4x2"), ("rmatmul", "8")])
def test_contractions_read_the_source(op, mesh_name):
    """U.T @ y (a split contracted axis: partial products and a psum), U.T @ U.T.T,
    tensordot and vecdot of unread transposes, and numpy @ U.T: numpy's values, the layout
    of the materialised transpose's product, and the view left unread."""
    mesh = mesh_of(*MESHES[mesh_name])
    u, y = rand((1001, 12), np.float32), rand((1001, 3), np.float32, seed=1)
    U, Y = _rows(u, mesh), _rows(y, mesh)
    ref_u, ref_y = u.astype(np.float64), y.astype(np.float64)
    if op == "matmul":
        cases = [(lambda a: a @ Y, ref_u.T @ ref_y), (lambda a: a @ a.T, ref_u.T @ ref_u)]
    elif op == "tensordot":
        cases = [(lambda a: darray.tensordot(a, Y, axes=([1], [0])), ref_u.T @ ref_y)]
    elif op == "vecdot":
        cases = [(lambda a: darray.vecdot(a, a, axis=-1), (ref_u * ref_u).sum(0))]
    else:
        c = rand((5, 12), np.float32, seed=2)
        cases = [(lambda a: c @ a, c.astype(np.float64) @ ref_u.T)]
    for fn, ref in cases:
        view = U.T
        got = fn(view)
        assert _unread(view)
        close(got, ref, np.float32)
        assert_layout(got, fn(_materialised(U, (1, 0))).layout)


@pytest.mark.parametrize("rows", [40003, 1 << 15])
def test_u_transpose_y_runs_no_transposed_copy(monkeypatch, rows):
    """The eager U.T @ y runs the psum plan on U itself (the view stays unread: no copy
    outside the program), and the program holds no transposed copy either: its temporaries
    are those of the materialised transpose's program (uneven rows: both mask the padding of
    their one block), far below a block of U when the rows divide evenly; no all-gather."""
    mesh = mesh_of((8,), ("x",))
    u, y = rand((rows, 16), np.float32), rand((rows, 1), np.float32, seed=1)
    U, Y = _rows(u, mesh), _rows(y, mesh)
    ran = []
    real = contraction.run_plan
    monkeypatch.setattr(contraction, "run_plan",
                        lambda plan, a, b: ran.append((plan, a, b)) or real(plan, a, b))
    view = U.T
    got = view @ Y
    close(got, u.astype(np.float64).T @ y.astype(np.float64), np.float32)
    assert_layout(got, split=(None, None), shape=(16, 1))
    copied = _materialised(U, (1, 0))
    copied @ Y  # noqa: B018  (the old path, for its program)
    (plan, a, b), (old_plan, old_a, _) = ran
    assert a is U and b is Y and plan.kind == "psum" and _unread(view)
    assert old_a is copied and (old_plan.kind, old_plan.out_layout) == (plan.kind, plan.out_layout)
    compiled = contraction._program(plan).lower(U.data, Y.data).compile()
    old = contraction._program(old_plan).lower(copied.data, Y.data).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    block_of_u = U.data.nbytes // 8
    assert temp <= old.memory_analysis().temp_size_in_bytes
    if rows % 8 == 0:
        assert temp <= 0.25 * block_of_u, (temp, block_of_u)
    assert collective_count(compiled.as_text(), "all-gather") == 0


def test_small_products_take_the_general_path_unread():
    """Below the plans' size threshold XLA's path runs on the source, permuted inside the
    program (Vt.T @ d of _solve_svd, X @ components_.T of PCA.transform)."""
    mesh = mesh_of((2, 4), ("x", "y"))
    vt, d = rand((6, 6), np.float32), rand((6, 2), np.float32, seed=1)
    x = rand((50, 6), np.float32, seed=2)
    Vt, D, X = (darray.asarray(a, device=mesh) for a in (vt, d, x))
    view = Vt.T
    out = (view @ D).T
    assert _unread(view)
    close(out, (vt.astype(np.float64).T @ d).T, np.float32)
    assert_layout(out, (_materialised(Vt, (1, 0)) @ D).T.layout)
    transform = X @ Vt.T
    close(transform, x.astype(np.float64) @ vt.T, np.float32)
    assert_layout(transform, (X @ _materialised(Vt, (1, 0))).layout)


def test_view_semantics_of_an_unread_transpose():
    """numpy's rules: a base write before the first read shows; a write of the view writes
    the base; the view keeps a base the user dropped; x.T.T and a slice of x.T read right."""
    mesh = mesh_of((8,), ("x",))
    a = host(rand((37, 5)))
    x = _rows(a, mesh)
    v = x.T
    assert v.shape == (5, 37) and v.layout.split == ((), ("x",)) and _unread(v)
    x[0, 0] = 100.0
    a[0, 0] = 100.0
    np.testing.assert_array_equal(np.asarray(v), a.T)
    assert not _unread(v)
    v[1, 2] = -1.0
    a[2, 1] = -1.0
    np.testing.assert_array_equal(np.asarray(x), a)
    assert_layout(x, split=("x", None), shape=(37, 5))

    w = x.T
    w[0, :] = 7.0  # written before any read
    a[:, 0] = 7.0
    np.testing.assert_array_equal(np.asarray(x), a)
    np.testing.assert_array_equal(np.asarray(w), a.T)

    dropped = (x * 2.0).T  # nothing else holds x * 2
    gc.collect()
    np.testing.assert_array_equal(np.asarray(dropped), 2.0 * a.T)
    y = x + 1.0
    t = y.T
    del y
    gc.collect()
    np.testing.assert_array_equal(np.asarray(t), (a + 1.0).T)
    assert_layout(t, split=(None, "x"), shape=(5, 37))

    tt = x.T.T
    assert tt._pending.source is x and tt._pending.axes == (0, 1)
    np.testing.assert_array_equal(np.asarray(tt), a)
    part = x.T[1:3]
    part[...] = 0.0
    a[:, 1:3] = 0.0
    np.testing.assert_array_equal(np.asarray(x), a)


def test_conversions_of_an_unread_transpose():
    """copy, pickle, to_jax, np.asarray and jax.jit read an unread view (numpy's values,
    the transposed layout)."""
    mesh = mesh_of((2, 4), ("x", "y"))
    a = host(rand((9, 14)))
    x = darray.asarray(a, device=mesh, spec=("x", "y"))
    for read in (copy.copy, copy.deepcopy, lambda v: pickle.loads(pickle.dumps(v)),
                 lambda v: v.to_jax(), np.asarray, jax.jit(lambda v: v * 1.0)):
        v = x.T
        got = read(v)
        np.testing.assert_array_equal(np.asarray(got), a.T)
        if isinstance(got, darray.DistArray):
            assert_layout(got, split=("y", "x"), shape=(14, 9))
        assert not _unread(v)


def test_nothing_is_unread_under_jit():
    """Traced transposes are plain values (a traced program is functional)."""
    mesh = mesh_of((8,), ("x",))
    u, y = rand((64, 4)), rand((64, 2), seed=1)
    U, Y = _rows(u, mesh), _rows(y, mesh)
    seen = []

    def f(p, q):
        t = p.T
        seen.append(t._pending)
        return t @ q

    got = jax.jit(f)(U, Y)
    assert seen == [None]
    close(got, u.T @ y, u.dtype)
    assert_layout(got, split=(None, None), shape=(4, 2))
