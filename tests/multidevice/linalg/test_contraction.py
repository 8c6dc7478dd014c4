"""Covers: darray/_src/linalg/contraction.py, darray/_src/api/linalg.py
Covers: darray/_src/extras/numerical.py

Contractions that never gather an operand (issue 50 item 2, issue 49 item 2): matmul, tensordot,
vecdot and two-operand einsum on split layouts take the shard_map plans of
linalg/contraction.py (local, psum, rings of collective-permutes, a ring followed by a
psum, SUMMA panels). Every result
is compared with numpy in float64 (float32 and complex64 at their tolerances), every result's
layout is asserted (rows split as the first operand's rows, columns as the second's columns),
the plan each layout takes is asserted (so a case cannot silently fall back), garbage in the
padding of uneven splits never reaches a result, and gradients equal single-device jax's.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_layout, canonical_dtype, mesh_of, rand

import darray
from darray._src.layout.layout import Layout
from darray._src.linalg import contraction
from darray._src.placement import physical

THRESHOLDS = (contraction.MIN_ELEMENTS, contraction.MIN_STEP_WORK)


@pytest.fixture(autouse=True)
def no_size_thresholds(monkeypatch):
    """Small shapes keep the tests quick: turn off the sizes below which darray keeps XLA's
    single program (test_small_products_keep_the_single_program_path restores them)."""
    monkeypatch.setattr(contraction, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(contraction, "MIN_STEP_WORK", 0)


def dist(a, mesh_shape, spec):
    return darray.asarray(a, mesh=mesh_of(mesh_shape), spec=spec)


def with_nan_padding(x):
    """x with every padding cell of its physical array set to NaN (what an op may leave there)."""
    lay = x.layout
    data = jax.jit(lambda d: jnp.where(physical.valid_mask(lay), d, jnp.nan))(x.data)
    return darray.DistArray._new(data, lay)


def tolerance(dtype):
    """Of the precision darray computes in (float64 data is float32 with x64 off)."""
    return 1e-12 if canonical_dtype(dtype) in (np.float64, np.complex128) else 2e-5


def assert_close(got, ref, dtype):
    got = np.asarray(got)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1.0)
    assert err < tolerance(dtype), err


# (mesh, shape and spec of x1, of x2, the plan, the result's split): uneven extents everywhere
MATMUL = {
    "summa-2x4": ((2, 4), (1001, 1001), ("x", "y"), (1001, 1001), ("x", "y"), "summa",
                  ("x", "y")),
    "summa-4x2": ((4, 2), (301, 203), ("x", "y"), (203, 257), ("x", "y"), "summa", ("x", "y")),
    "summa-crossed": ((2, 4), (301, 403), (None, "x"), (403, 301), ("y", None), "summa",
                      (None, None)),
    "ring-rows-8": ((8,), (1001, 403), ("x",), (403, 301), ("x",), "ring_b", ("x", None)),
    "ring-cols-8": ((8,), (301, 403), (None, "x"), (403, 301), (None, "x"), "ring_a",
                    (None, "x")),
    "ring-rows-2x4": ((2, 4), (203, 301), (("x", "y"),), (301, 99), (("x", "y"),), "ring_b",
                      (("x", "y"), None)),
    "ring-and-psum-2x4": ((2, 4), (203, 301), ("y",), (301, 99), (("x", "y"),), "ring_b",
                          ("y", None)),
    "gram-8": ((8,), (45, 1001), (None, "x"), (1001, 45), ("x",), "psum", (None, None)),
    "batched-psum-8": ((8,), (5, 203, 19), (None, None, "x"), (5, 19, 203), (None, "x"),
                       "psum", (None, None, None)),
    "batched-ring-n-2x4": ((2, 4), (11, 67, 45), ("x", "y"), (11, 45, 67), ("x", None, "y"),
                           "ring_n", ("x", "y", None)),
    "local-2x4": ((2, 4), (203, 45), ("x",), (45, 301), (None, "y"), "local", ("x", "y")),
    # k over y in both, b's columns over x (which a's rows use): a ring over x, then a psum
    "ring-n-psum-2x4": ((2, 4), (203, 301), ("x", "y"), (301, 99), ("y", "x"), "ring_n",
                        ("x", None)),
    "ring-n-psum-a-2x4": ((2, 4), (203, 301), ("x", "y"), (301, 99), (None, "x"), "ring_n",
                          ("x", None)),
    "ring-n-psum-b-2x4": ((2, 4), (203, 301), ("x", None), (301, 99), ("y", "x"), "ring_n",
                          ("x", None)),
    "matvec-2x4": ((2, 4), (301, 4003), ("x", "y"), (4003,), ("x",), "summa", ("x",)),
}


# every layout in float64; one layout per plan kind in the single precisions
SINGLE = ("summa-2x4", "ring-rows-8", "ring-cols-8", "gram-8", "batched-ring-n-2x4",
          "local-2x4")


@pytest.mark.parametrize("name,dtype", [(n, np.float64) for n in sorted(MATMUL)]
                         + [(n, d) for n in SINGLE for d in (np.float32, np.complex64)])
def test_matmul_takes_a_gather_free_plan_and_equals_numpy(name, dtype):
    mesh_shape, s1, p1, s2, p2, kind, split = MATMUL[name]
    a, b = rand(s1, dtype, seed=1), rand(s2, dtype, seed=2)
    x1, x2 = dist(a, mesh_shape, p1), dist(b, mesh_shape, p2)
    terms = contraction.matmul_terms(x1.ndim, x2.ndim)
    plan = contraction.plan_contraction(x1, x2, *terms)
    assert plan is not None and plan.kind == kind, plan
    ref = a.astype(np.complex128) @ b.astype(np.complex128)
    out = darray.matmul(x1, x2)
    assert_layout(out, split=split, shape=ref.shape)
    assert out.dtype == canonical_dtype(np.result_type(a.dtype, b.dtype))
    assert_close(out, ref, dtype)


@pytest.mark.parametrize("name", ["summa-2x4", "ring-rows-8", "ring-cols-8", "gram-8",
                                  "batched-ring-n-2x4", "ring-n-psum-a-2x4"])
def test_garbage_in_padding_never_reaches_a_result(name):
    mesh_shape, s1, p1, s2, p2, kind, split = MATMUL[name]
    a, b = rand(s1, seed=3), rand(s2, seed=4)
    x1 = with_nan_padding(dist(a, mesh_shape, p1))
    x2 = with_nan_padding(dist(b, mesh_shape, p2))
    assert x1.layout.is_padded or x2.layout.is_padded
    out = x1 @ x2
    assert_layout(out, split=split)
    assert_close(out, a @ b, np.float64)


def test_distributed_matmul_is_the_internal_entry_point():
    a, b = rand((1001, 1001), seed=5), rand((1001, 1001), seed=6)
    x1, x2 = dist(a, (2, 4), ("x", "y")), dist(b, (2, 4), ("x", "y"))
    out = contraction.distributed_matmul(x1, x2)
    assert_layout(out, split=("x", "y"))
    assert_close(out, a @ b, np.float64)
    # small operands too (no size threshold there)
    y1, y2 = dist(a[:9, :7], (2, 4), ("x", "y")), dist(b[:7, :5], (2, 4), ("x", "y"))
    assert_close(contraction.distributed_matmul(y1, y2), a[:9, :7] @ b[:7, :5], np.float64)


def test_distributed_matmul_refuses_what_it_cannot_plan():
    x1 = dist(rand((1, 64, 64)), (8,), (None, "x"))
    x2 = dist(rand((3, 64, 64)), (8,), (None, "x"))
    with pytest.raises(ValueError, match="distributed_matmul.*darray.matmul"):
        contraction.distributed_matmul(x1, x2)
    # darray.matmul itself broadcasts on its general path
    assert_close(darray.matmul(x1, x2), np.asarray(x1) @ np.asarray(x2), np.float64)


def test_small_products_keep_the_single_program_path(monkeypatch):
    monkeypatch.setattr(contraction, "MIN_ELEMENTS", THRESHOLDS[0])
    monkeypatch.setattr(contraction, "MIN_STEP_WORK", THRESHOLDS[1])
    x1, x2 = dist(rand((64, 64)), (8,), ("x",)), dist(rand((64, 64)), (8,), ("x",))
    assert contraction.plan_contraction(x1, x2, "mk", "kn", "mn") is None
    assert contraction.plan_contraction(x1, x2, "mk", "kn", "mn", min_elements=0) is not None
    assert_layout(x1 @ x2, split=("x", None))
    assert_close(x1 @ x2, np.asarray(x1) @ np.asarray(x2), np.float64)
    # a ring of 512^2 row blocks is below the loop threshold, 2048 x 1024 above it
    for m, k, taken in ((512, 512, False), (2048, 1024, True)):
        y1 = dist(np.zeros((m, k)), (8,), ("x",))
        y2 = dist(np.zeros((k, 1024)), (8,), ("x",))
        plan = contraction.plan_contraction(y1, y2, "mk", "kn", "mn")
        assert (plan is not None and plan.kind == "ring_b") == taken, (m, k, plan)
    # the one-collective plans have no loop: only the element threshold applies
    g1 = dist(np.zeros((45, 1001)), (8,), (None, "x"))
    g2 = dist(np.zeros((1001, 45)), (8,), ("x",))
    assert contraction.plan_contraction(g1, g2, "mk", "kn", "mn").kind == "psum"


# -- tensordot, vecdot, einsum ---------------------------------------------------------------------
def test_tensordot_contracting_split_axes():
    a, b = rand((37, 203, 19), seed=7), rand((203, 19, 11), seed=8)
    x1, x2 = dist(a, (8,), (None, "x")), dist(b, (8,), ("x",))
    out = darray.tensordot(x1, x2, axes=2)
    assert_layout(out, split=(None, None))
    assert_close(out, np.tensordot(a, b, axes=2), np.float64)
    a, b = rand((370, 20), seed=9), rand((11, 370), seed=10)
    x1, x2 = dist(a, (2, 4), ("x", "y")), dist(b, (2, 4), ("y", "x"))
    out = darray.tensordot(x1, x2, axes=([0], [1]))
    assert_layout(out, split=("y", None))
    assert_close(out, np.tensordot(a, b, axes=([0], [1])), np.float64)


@pytest.mark.parametrize("mesh_shape", [(2, 4), (4, 2)])
def test_tensordot_over_axis_0_of_2d_split_matrices_rings_then_sums(mesh_shape):
    """Issue 49's speed-guard row: axis 0 (k) over x in both, b's columns over y (which a's
    free axis uses): b's column blocks travel a ring over y on a's piece of k, one all-reduce
    over x adds the pieces (formerly a SUMMA holding b's panels whole); padding garbage of
    the uneven k never reaches the result."""
    a, b = rand((61, 43), seed=22), rand((61, 37), seed=23)
    x1 = with_nan_padding(dist(a, mesh_shape, ("x", "y")))
    x2 = with_nan_padding(dist(b, mesh_shape, ("x", "y")))
    plan = contraction.plan_contraction(x1, x2, "ab", "ac", "bc", target=(("y",), ()))
    assert plan is not None and (plan.kind, plan.label, plan.summed) == ("ring_n", "c", "a")
    out = darray.tensordot(x1, x2, axes=([0], [0]))
    assert_layout(out, split=("y", None), shape=(43, 37))
    assert_close(out, a.T @ b, np.float64)


@pytest.mark.parametrize("dtype", [np.complex128, np.float32])
def test_vecdot_along_a_split_axis(dtype):
    a, b = rand((37, 203, 190), dtype, seed=11), rand((37, 203, 190), dtype, seed=12)
    x1, x2 = dist(a, (2, 4), (None, "y", "x")), dist(b, (2, 4), (None, "y", None))
    plan = contraction.plan_contraction(x1, x2, "abc", "abc", "ab", conj_a=True)
    assert plan is not None and plan.kind == "psum", plan
    out = darray.vecdot(x1, x2)
    assert_layout(out, split=(None, "y"))
    ref = np.sum(np.conj(a.astype(np.complex128)) * b, axis=-1)
    assert_close(out, ref, dtype)


@pytest.mark.parametrize("subscripts", ["bij,bjk->bik", "bij,bjk->bki", "bij,bjk->b"])
def test_einsum_two_operands(subscripts):
    a, b = rand((11, 67, 45), seed=13), rand((11, 45, 67), seed=14)
    x1, x2 = dist(a, (2, 4), ("x", "y")), dist(b, (2, 4), ("x", None, "y"))
    out = darray.einsum(subscripts, x1, x2)
    ref = np.einsum(subscripts, a, b)
    assert out.layout.split[0] == ("x",)
    assert_layout(out, shape=ref.shape)
    assert_close(out, ref, np.float64)


def test_einsum_keeps_its_label_rule_and_needs_no_gather():
    """'ij,jk->ik' with j over y in a: y serves j, so k comes back unsplit (einsum's rule) and
    the plan assembles b's panels whole along k (SUMMA with a whole label), no gather."""
    a, b = rand((301, 403), seed=15), rand((403, 201), seed=16)
    x1, x2 = dist(a, (2, 4), ("x", "y")), dist(b, (2, 4), ("x", "y"))
    plan = contraction.plan_contraction(x1, x2, "ij", "jk", "ik", target=(("x",), ()))
    assert plan is not None and plan.kind == "summa" and plan.whole == "k", plan
    out = darray.einsum("ij,jk->ik", x1, x2)
    assert_layout(out, split=("x", None))
    assert_close(out, a @ b, np.float64)
    out = darray.einsum("ij,jk->ki", x1, x2)
    assert_layout(out, split=(None, "x"))
    assert_close(out, (a @ b).T, np.float64)


# -- gradients -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["summa-2x4", "ring-rows-8", "gram-8", "batched-ring-n-2x4",
                                  "ring-n-psum-b-2x4"])
def test_grad_equals_single_device_jax_and_keeps_layouts(name):
    mesh_shape, s1, p1, s2, p2, kind, split = MATMUL[name]
    if name == "summa-2x4":
        s1, s2 = (203, 301), (301, 99)  # smaller: the backward pass runs three panel loops
    a, b = rand(s1, seed=17), rand(s2, seed=18)
    w = rand(np.broadcast_shapes((a @ b).shape), seed=19)
    x1, x2 = dist(a, mesh_shape, p1), dist(b, mesh_shape, p2)

    def loss(u, v):
        return darray.sum(darray.sin(u @ v) * w)

    def loss_ref(u, v):
        return jnp.sum(jnp.sin(u @ v) * w)

    g1, g2 = darray.grad(loss, argnums=(0, 1))(x1, x2)
    r1, r2 = jax.grad(loss_ref, argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
    assert_layout(g1, x1.layout)
    assert_layout(g2, x2.layout)
    tol = tolerance(np.float64) * 100
    np.testing.assert_allclose(np.asarray(g1), np.asarray(r1), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(g2), np.asarray(r2), rtol=tol, atol=tol)


def test_plan_layout_matches_the_promised_matmul_layout():
    """The plan's output layout is the one matmul's docstring promises (a Layout value)."""
    x1 = dist(rand((101, 67, 45)), (2, 4), ("x", "y"))
    x2 = dist(rand((101, 45, 67)), (2, 4), ("x", None, "y"))
    plan = contraction.plan_contraction(x1, x2, "amk", "akn", "amn")
    assert plan.out_layout == Layout((101, 67, 67), x1.mesh, (("x",), ("y",), ()),
                                     ((0, 0),) * 3)


def test_explicit_mesh_plans_and_grads():
    """On a mesh of Explicit axes (a plain jax.make_mesh) the plans run and differentiate."""
    mesh = mesh_of((2, 4), explicit=True)
    a, b = rand((37, 29), seed=20), rand((29, 13), seed=21)
    for p1, p2, kind in ((("x", "y"), ("x", "y"), "summa"), (("x",), ("x",), "ring_b")):
        x1 = darray.asarray(a, mesh=mesh, spec=p1)
        x2 = darray.asarray(b, mesh=mesh, spec=p2)
        assert contraction.plan_contraction(x1, x2, "mk", "kn", "mn").kind == kind
        out = x1 @ x2
        assert_layout(out, split=(p1[0], p2[1] if len(p2) > 1 else None))
        assert_close(out, a @ b, np.float64)
        g = darray.grad(lambda u: darray.sum(u @ x2))(x1)  # noqa: B023
        assert_layout(g, x1.layout)
        assert_close(g, np.ones((37, 13)) @ b.T, np.float64)
