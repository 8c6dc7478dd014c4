"""Covers: darray/_src/linalg/contraction.py, darray/_src/api/linalg.py
Covers: darray/_src/extras/numerical.py

Contractions within 3 blocks of temporaries per device and with no all-gather (issue 50:
"matmul: at most 3 blocks"; issue 49 item 2 "Contractions"), read from XLA's compiled plan:
``jax.jit(f).lower(...).compile().memory_analysis()``, a block being the larger of a device's
share of the arguments and of the outputs. Uneven shapes on the meshes 8, 2x4 and 4x2, large
enough to take the plans under darray's size thresholds (compiled only, never run).

Before the gather-free plans (XLA's partitioner on the logical arrays, float32, measured on
jax 0.10 / CPU): matmul of two 2-D-split square matrices 5.0 blocks and two all-gathers;
row-split @ row-split 3.7 blocks and one all-gather; a batched matmul whose rows and columns
share a mesh axis 4.0 blocks and one all-gather, its einsum 4.5.
"""
import jax
import numpy as np
import pytest
from helpers import assert_layout, collective_count, mesh_of, rand

import darray
from darray._src.linalg import contraction

RULE = 3.0


def blocks_and_gathers(fn, *args):
    compiled = jax.jit(fn).lower(*args).compile()
    m = compiled.memory_analysis()
    block = max(m.argument_size_in_bytes, m.output_size_in_bytes)
    return m.temp_size_in_bytes / block, collective_count(compiled.as_text(), "all-gather")


def dist(shape, mesh_shape, spec, seed):
    return darray.asarray(rand(shape, np.float32, seed=seed), mesh=mesh_of(mesh_shape),
                          spec=spec)


matmul = darray.matmul
CASES = {
    # name: (function, (shape, mesh, spec) of each operand, the plan it must take)
    "matmul summa 2x4": (matmul, ((1001, 1001), (2, 4), ("x", "y")),
                         ((1001, 1001), (2, 4), ("x", "y")), "summa"),
    "matmul summa 4x2": (matmul, ((1001, 1001), (4, 2), ("x", "y")),
                         ((1001, 1001), (4, 2), ("x", "y")), "summa"),
    "matmul summa 4x2 oblong": (matmul, ((1603, 4001), (4, 2), ("x", "y")),
                                ((4001, 1199), (4, 2), ("x", "y")), "summa"),
    "matmul rows@rows 8": (matmul, ((4001, 1603), (8,), ("x",)),
                           ((1603, 1203), (8,), ("x",)), "ring_b"),
    "matmul rows@rows 2x4": (matmul, ((4001, 1603), (2, 4), (("x", "y"),)),
                             ((1603, 1203), (2, 4), (("x", "y"),)), "ring_b"),
    "matmul cols@cols 4x2": (matmul, ((1203, 1603), (4, 2), (None, ("x", "y"))),
                             ((1603, 4001), (4, 2), (None, ("x", "y"))), "ring_a"),
    "matmul gram 8": (matmul, ((45, 1001), (8,), (None, "x")), ((1001, 45), (8,), ("x",)),
                      "psum"),
    "matmul batched ring 2x4": (matmul, ((63, 301, 203), (2, 4), ("x", "y")),
                                ((63, 203, 301), (2, 4), ("x", None, "y")), "ring_n"),
    "matmul batched psum 8": (matmul, ((37, 203, 19), (8,), (None, None, "x")),
                              ((37, 19, 203), (8,), (None, "x")), "psum"),
    "tensordot 8": (lambda a, b: darray.tensordot(a, b, axes=2),
                    ((37, 203, 19), (8,), (None, "x")), ((203, 19, 11), (8,), ("x",)), "psum"),
    # issue 49's speed-guard row, smaller (a ring over y, then an all-reduce over x): 8.9
    # blocks at (1021, 1031) when it was a SUMMA holding b's panels whole
    "tensordot axis 0 2x4": (lambda a, b: darray.tensordot(a, b, axes=([0], [0])),
                             ((803, 611), (2, 4), ("x", "y")), ((803, 611), (2, 4), ("x", "y")),
                             "ring_n"),
    "tensordot axis 0 4x2": (lambda a, b: darray.tensordot(a, b, axes=([0], [0])),
                             ((803, 611), (4, 2), ("x", "y")), ((803, 611), (4, 2), ("x", "y")),
                             "ring_n"),
    "vecdot 2x4": (darray.vecdot, ((37, 203, 190), (2, 4), (None, "y", "x")),
                   ((37, 203, 190), (2, 4), (None, "y", None)), "psum"),
    "einsum batched 2x4": (lambda a, b: darray.einsum("bij,bjk->bik", a, b),
                           ((63, 301, 203), (2, 4), ("x", "y")),
                           ((63, 203, 301), (2, 4), ("x", None, "y")), "ring_n"),
    "einsum summa 4x2": (lambda a, b: darray.einsum("ij,jk->ki", a, b),
                         ((1603, 4001), (4, 2), ("x", "y")),
                         ((4001, 1199), (4, 2), ("x", "y")), "summa"),
}
TERMS = {"tensordot 8": ("abc", "bcd", "ad"), "tensordot axis 0 2x4": ("ab", "ac", "bc"),
         "tensordot axis 0 4x2": ("ab", "ac", "bc"), "vecdot 2x4": ("abc", "abc", "ab"),
         "einsum batched 2x4": ("bij", "bjk", "bik"), "einsum summa 4x2": ("ij", "jk", "ki")}
# einsum's own rule: a mesh axis serves the first label that splits it (j claims y, so k
# comes back unsplit)
TARGETS = {"einsum summa 4x2": ((), ("x",)), "tensordot axis 0 2x4": (("y",), ()),
           "tensordot axis 0 4x2": (("y",), ())}


@pytest.mark.parametrize("name", sorted(CASES))
def test_contraction_within_three_blocks_and_no_all_gather(name):
    fn, (s1, m1, p1), (s2, m2, p2), kind = CASES[name]
    x1, x2 = dist(s1, m1, p1, 1), dist(s2, m2, p2, 2)
    assert x1.layout.is_padded or x2.layout.is_padded  # uneven: padding is masked in place
    terms = TERMS.get(name) or contraction.matmul_terms(x1.ndim, x2.ndim)
    plan = contraction.plan_contraction(x1, x2, *terms, conj_a=name.startswith("vecdot"),
                                        target=TARGETS.get(name))
    assert plan is not None and plan.kind == kind, plan
    blocks, gathers = blocks_and_gathers(fn, x1, x2)
    print(f"{name}: {blocks:.2f} blocks, {gathers} all-gathers")
    assert gathers == 0
    assert blocks <= RULE, blocks


def test_tensordot_axis_0_runs_within_three_blocks_and_equals_numpy():
    """The speed-guard row itself, run (float32 as there): 2.2 blocks, no all-gather, the
    output split as tensordot's rule says (a's free axis over y, b's unsplit), numpy's value."""
    a, b = rand((803, 611), seed=3), rand((803, 611), seed=4)
    mesh = mesh_of((2, 4))
    x1 = darray.asarray(a.astype(np.float32), mesh=mesh, spec=("x", "y"))
    x2 = darray.asarray(b.astype(np.float32), mesh=mesh, spec=("x", "y"))

    def fn(u, v):
        return darray.tensordot(u, v, axes=([0], [0]))
    blocks, gathers = blocks_and_gathers(fn, x1, x2)
    assert gathers == 0 and blocks <= RULE, (blocks, gathers)
    out = jax.jit(fn)(x1, x2)
    assert_layout(out, split=("y", None), shape=(611, 611))
    ref = a.astype(np.float32).astype(np.float64).T @ b.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=0, atol=1e-4 * np.abs(ref).max())
