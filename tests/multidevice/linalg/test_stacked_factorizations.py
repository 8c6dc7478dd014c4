"""Covers: darray/_src/linalg/stacked.py, darray/_src/api/linalg.py

Stacks of square matrices whose matrix axes are split (issue 50, item 3): every batch element
runs the distributed 2-D path (linalg/stacked.py), the batch axis split or not. Results are
compared with numpy (float64) and keep the input's layout: factors, inverses, solutions and
vectors split like the input, values and scalars split like the batch. The compiled program
holds no all-gather.
"""
import jax
import numpy as np
import pytest
from helpers import assert_layout, collective_count, mesh_of

import darray
from darray._src.linalg import stacked

la = darray.linalg
pytestmark = pytest.mark.x64

N = 70  # >= jacobi.MIN_EXTENT, not divisible by the mesh
# batch unsplit with both matrix axes split; the batch split with one matrix axis split
SPLIT_BATCH = ("x", "y", None)
SPECS = [pytest.param((None, "x", "y"), marks=pytest.mark.slow, id="matrix-2d"),
         pytest.param(SPLIT_BATCH, id="batch-and-rows")]


def spd_stack(seed=0):
    g = np.random.default_rng(seed).standard_normal((3, N, N))
    return g @ np.swapaxes(g, 1, 2) + N * np.eye(N)


def stack_of(a, spec):
    x = darray.asarray(a, mesh=mesh_of((2, 4)), spec=spec)
    assert stacked.matrix_layout(x.layout).split == x.layout.split[-2:]
    return x


def values_split(x):
    return tuple(x.layout.split[:-2]) + ((),)


def check_eigh(a, x):
    w, v = la.eigh(x)
    assert_layout(v, x.layout)
    assert_layout(w, split=values_split(x), shape=a.shape[:-1])
    w, v = np.asarray(w), np.asarray(v)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-12, atol=0)
    residual = np.abs(a @ v - v * w[:, None, :]).max() / np.abs(w).max()
    assert residual <= 1e-10, residual
    np.testing.assert_allclose(np.asarray(la.eigvalsh(x)), w, rtol=1e-12)


def check_svd(a, x):
    u, s, vh = la.svd(x)
    assert_layout(u, x.layout)
    assert_layout(vh, x.layout)
    assert_layout(s, split=values_split(x), shape=a.shape[:-1])
    ref = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(np.asarray(s), ref, rtol=1e-12)
    back = (np.asarray(u) * np.asarray(s)[:, None, :]) @ np.asarray(vh)
    np.testing.assert_allclose(back, a, atol=1e-10 * ref.max())
    np.testing.assert_allclose(np.asarray(la.svdvals(x)), ref, rtol=1e-12)


def check_solve(a, x):
    rhs = np.random.default_rng(1).standard_normal(a.shape[:-1] + (5,))
    b = darray.asarray(rhs, mesh=x.mesh, spec=x.layout.spec)
    y = la.solve(x, b)
    assert_layout(y, b.layout)
    got = np.asarray(y)
    backward = np.abs(a @ got - rhs).max() / (np.abs(a).max() * np.abs(got).max() * N)
    assert backward <= 1e-13, backward
    np.testing.assert_allclose(got, np.linalg.solve(a, rhs), rtol=1e-10, atol=1e-12)


def check_slogdet(a, x):
    sign, logdet = la.slogdet(x)
    assert_layout(logdet, split=x.layout.split[:-2], shape=a.shape[:-2])
    assert_layout(sign, split=x.layout.split[:-2], shape=a.shape[:-2])
    ref_sign, ref_log = np.linalg.slogdet(a)
    np.testing.assert_allclose(np.asarray(sign), ref_sign)
    np.testing.assert_allclose(np.asarray(logdet), ref_log, rtol=1e-12)
    small = a / 20  # a determinant within float range
    xs = darray.asarray(small, mesh=x.mesh, spec=x.layout.spec)
    det = la.det(xs)
    assert_layout(det, split=x.layout.split[:-2], shape=a.shape[:-2])
    np.testing.assert_allclose(np.asarray(det), np.linalg.det(small), rtol=1e-10)


def check_cholesky_inv(a, x):
    low = la.cholesky(x)
    assert_layout(low, x.layout)
    np.testing.assert_allclose(np.asarray(low), np.linalg.cholesky(a), atol=1e-12)
    up = la.cholesky(x, upper=True)
    np.testing.assert_allclose(np.asarray(up), np.swapaxes(np.linalg.cholesky(a), 1, 2),
                               atol=1e-12)
    inv = la.inv(x)
    assert_layout(inv, x.layout)
    np.testing.assert_allclose(np.asarray(inv), np.linalg.inv(a), atol=1e-14)


CHECKS = {"eigh": check_eigh, "svd": check_svd, "solve": check_solve, "slogdet": check_slogdet,
          "cholesky-inv": check_cholesky_inv}
DEFAULT = {"eigh", "solve"}  # the rest in the slow tier (each program compiles for seconds)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("name", [n if n in DEFAULT else pytest.param(n, marks=pytest.mark.slow)
                                  for n in CHECKS])
def test_stacks_match_numpy_in_the_input_layout(name, spec):
    a = spd_stack()
    CHECKS[name](a, stack_of(a, spec))


def test_stacked_program_never_gathers_and_stays_bounded():
    """inv of a (3, 70, 70) stack, batch over x and rows over y: no all-gather, and the
    temporaries within 6 blocks of the local stack (measured 4.4 at n = 203)."""
    x = stack_of(spd_stack(), SPLIT_BATCH)
    compiled = jax.jit(la.inv).lower(x).compile()
    assert collective_count(compiled.as_text(), "all-gather") == 0
    m = compiled.memory_analysis()
    blocks = m.temp_size_in_bytes / max(m.argument_size_in_bytes, m.output_size_in_bytes)
    assert blocks <= 6.0, blocks


def test_layouts_outside_the_rule_keep_the_gathering_path():
    a = spd_stack()
    x = darray.asarray(a, mesh=mesh_of((2, 4)), spec=(("x", "y"), None, None))  # batch only
    assert stacked.inv(x) is None and stacked.eigh(x) is None
    inv = la.inv(x)
    assert_layout(inv, split=(("x", "y"), (), ()))
    np.testing.assert_allclose(np.asarray(inv), np.linalg.inv(a), atol=1e-14)


@pytest.mark.slow
def test_spectral_stacks_under_jit_stay_distributed_and_differentiate():
    """Under jax.jit the eigh / svd stack programs run distributed (no all-gather, vectors in
    the input's layout); darray.grad through them equals jax.grad of jnp.linalg's."""
    a = spd_stack()
    x = stack_of(a, SPLIT_BATCH)
    for fn in (la.eigh, la.svd):
        assert collective_count(jax.jit(fn).lower(x).compile().as_text(), "all-gather") == 0
    w, v = jax.jit(la.eigh)(x)
    assert_layout(v, x.layout)
    scale = 1e-12 * np.linalg.norm(a, 2, axis=(1, 2)).max()
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a), atol=scale)
    u, s, vh = jax.jit(la.svd)(x)
    assert_layout(u, x.layout)
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a, compute_uv=False), atol=scale)
    weights = np.arange(N, dtype=np.float64)
    g = darray.grad(lambda t: (la.eigvalsh(t) * darray.asarray(weights)).sum())(x)
    ref = jax.grad(lambda t: (jax.numpy.linalg.eigvalsh(t) * weights).sum())(a)
    assert_layout(g, x.layout)
    np.testing.assert_allclose(np.asarray(g), np.asarray(ref), atol=1e-10)
