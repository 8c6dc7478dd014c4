"""Covers: darray/_src/backends/cudecomp.py, darray/_src/backends/registry.py
Covers: darray/_src/fft/api.py, darray/_src/halo/api.py

GPU tier: the cuDecomp backend against numpy and against the JAX backend on the same GPU(s).

Run with ``python3 -m pytest -m gpu tests/gpu`` on a machine with an NVIDIA GPU and a darray
built with cuDecomp (docs/native.md; tools/gpu_rig/run_gpu_tier.sh does all of it). Elsewhere
the whole module is skipped with the reason printed (and the default run deselects it).

One process, one GPU: the mesh is a (1, 1) process grid, so cuDecomp's transposes run as local
pencil re-layouts and its halo update as periodic self-exchange; NCCL is initialised but
carries no traffic. Several GPUs: launch under ``mpiexec -n P`` with one GPU per rank.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import PartitionSpec as P

import darray
from darray._src.base import native


def _why_not():
    if not any(d.platform == "gpu" for d in jax.devices()):
        return f"no CUDA device (JAX sees {jax.devices()[0].platform} devices only)"
    if not native.build_info().get("cudecomp"):
        return ("this darray build has no cuDecomp (build_info()['cudecomp'] is False); see "
                "docs/native.md")
    try:
        from mpi4py import MPI  # noqa: F401
    except ImportError as e:
        return f"mpi4py is missing ({e})"
    return None


_REASON = _why_not()
# A skipif, not a module-level skip: the default run deselects the gpu marker before any skip is
# evaluated, so it reports no skip; `-m gpu` without a GPU prints the reason per test.
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_REASON is not None, reason=f"GPU tier skipped: {_REASON}")]

from darray._src.backends import cudecomp  # noqa: E402
from darray._src.backends.registry import FFT_EXECUTORS  # noqa: E402
from darray._src.fft.api import fft_plan  # noqa: E402
from darray._src.halo.api import _HALO_BACKENDS  # noqa: E402

SHAPE = (16, 12, 10)


def _grid_mesh():
    n = len(jax.devices())
    rows = int(np.sqrt(n))
    while n % rows:
        rows -= 1
    return mesh_of((rows, n // rows), ("r", "c"))


MESH = _grid_mesh()
X_PENCIL = P("c", "r", None)


def _field(dtype, shape=SHAPE, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _dist(a):
    return darray.asarray(a, mesh=MESH, spec=X_PENCIL)


def _on(backend, fn, *args, **kw):
    with darray.config_context(transpose_backend=backend):
        return fn(*args, **kw)


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if np.dtype(dtype).itemsize <= 8 and \
        np.dtype(dtype) != np.float64 else dict(rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", ["fftn", "ifftn"])
def test_c2c_matches_numpy_and_the_jax_backend(name, dtype):
    a = _field(dtype)
    x = _dist(a)
    got = _on("cudecomp", getattr(darray.fft, name), x)
    # the same (pencil) plan on the JAX backend: with "auto" it would pick a merged plan
    ref = _on("jax", getattr(darray.fft, name), x, decomposition="pencil")
    want = getattr(np.fft, name)(a.astype(np.complex128))
    np.testing.assert_allclose(np.asarray(got), want, **_tol(dtype))
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), **_tol(dtype))
    assert got.layout == ref.layout
    assert got.data.sharding.is_equivalent_to(ref.data.sharding, 3)
    # fftn of an X-pencil is cuDecomp's X->Y->Z; ifftn of an X-pencil retraces a path cuDecomp
    # has no transpose for (Z->X), so it runs on "jax" and the Selection says so.
    plan = fft_plan(x, inverse=name == "ifftn", decomposition="pencil")
    sel = FFT_EXECUTORS.select("cudecomp", plan)
    assert sel.backend == ("cudecomp" if name == "fftn" else "jax"), sel


def test_the_pencil_plan_runs_on_cudecomp_not_on_a_fallback():
    x = _dist(_field(np.complex128))
    with darray.config_context(transpose_backend="cudecomp"):
        plan = fft_plan(x, decomposition="pencil")
        sel = FFT_EXECUTORS.select(None, plan)
    assert sel.backend == "cudecomp" and not sel.fell_back, sel
    grid, ops = cudecomp.plan_ops(plan)
    assert [cudecomp.OPS[o] for o in ops if o is not None] == ["XToY", "YToZ"]
    assert grid.pdims == tuple(MESH.devices.shape)


def test_round_trips_real_and_complex():
    a = _field(np.float64)
    x = _dist(a)
    with darray.config_context(transpose_backend="cudecomp"):
        k = darray.fft.rfftn(x)
        back = darray.fft.irfftn(k, s=SHAPE)
        kc = darray.fft.fftn(x.astype(darray.complex128))
        backc = darray.fft.ifftn(kc)
    np.testing.assert_allclose(np.asarray(k), np.fft.rfftn(a), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(np.asarray(back), a, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(backc).real, a, rtol=1e-10, atol=1e-10)
    assert back.layout.spec == x.layout.spec
    assert backc.layout.spec == x.layout.spec


def test_real_to_real_transforms():
    scipy_fft = pytest.importorskip("scipy.fft")
    a = _field(np.float64)
    x = _dist(a)
    for name in ("dctn", "dstn"):
        got = _on("cudecomp", getattr(darray.fft, name), x)
        ref = _on("jax", getattr(darray.fft, name), x)
        want = getattr(scipy_fft, name)(a)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-9)
        assert got.layout == ref.layout


def _spectrum(backend):
    """A real vector-valued function of a real field through fftn on `backend`."""
    def f(v):
        with darray.config_context(transpose_backend=backend):
            k = darray.fft.fftn(darray.asarray(v, mesh=MESH, spec=X_PENCIL).astype(
                darray.complex128)).to_jax()
        return (jnp.abs(k) ** 2 * jnp.arange(k.shape[-1])).reshape(-1)[:24]
    return f


def test_autodiff_matrix_equals_the_jax_backend():
    xr = _field(np.float64, (4, 4, 6), seed=3)
    v = jnp.asarray(xr)
    for transform in (jax.jacfwd, jax.jacrev):
        got = transform(_spectrum("cudecomp"))(v)
        ref = transform(_spectrum("jax"))(v)
        assert got.shape == (24, 4, 4, 6)
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-9, atol=1e-9)
    total = lambda b: (lambda u: jnp.sum(_spectrum(b)(u)))  # noqa: E731
    np.testing.assert_allclose(np.asarray(jax.grad(total("cudecomp"))(v)),
                               np.asarray(jax.grad(total("jax"))(v)), rtol=1e-9, atol=1e-9)
    # jvp against numpy: d/dt |F(x + t d)|^2 w = 2 Re(conj(F x) (F d)) w
    d = _field(np.float64, (4, 4, 6), seed=4)
    _, tangent = jax.jvp(_spectrum("cudecomp"), (v,), (jnp.asarray(d),))
    want = (2 * (np.conj(np.fft.fftn(xr)) * np.fft.fftn(d)).real * np.arange(6)).reshape(-1)[:24]
    np.testing.assert_allclose(np.asarray(tangent), want, rtol=1e-9, atol=1e-9)


def test_vmap_over_a_batch_equals_the_jax_backend():
    a = np.stack([_field(np.complex64, seed=s) for s in range(2)])

    def one(backend):
        def f(v):
            with darray.config_context(transpose_backend=backend):
                return darray.fft.fftn(darray.asarray(v, mesh=MESH, spec=X_PENCIL)).to_jax()
        return jax.vmap(f)(jnp.asarray(a))
    got, ref = one("cudecomp"), one("jax")
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(np.asarray(got), np.fft.fftn(a, axes=(1, 2, 3)),
                               rtol=2e-4, atol=2e-3)


def test_one_descriptor_per_key():
    x = _dist(_field(np.complex64, (8, 8, 8)))
    for _ in range(3):
        _on("cudecomp", darray.fft.fftn, x)
    keys = [k for k in cudecomp.CREATED if k[0] == (8, 8, 8) and k[3] == "complex64"]
    assert keys, cudecomp.CREATED
    assert all(cudecomp.CREATED[k] == 1 for k in keys), cudecomp.CREATED


@pytest.mark.parametrize("width", [1, 2])
def test_halo_fill_matches_numpy_wrap_and_the_jax_backend(width):
    a = _field(np.float64)
    x = _dist(a)
    got = _on("cudecomp", x.halo, width)
    ref = _on("jax", x.halo, width)
    sel = _HALO_BACKENDS.select("cudecomp", (x.layout, got.layout, ("periodic",) * 3))
    assert sel.backend == "cudecomp" and not sel.fell_back, sel
    np.testing.assert_array_equal(np.asarray(got.data), np.asarray(ref.data))
    if MESH.devices.size == 1:
        np.testing.assert_array_equal(np.asarray(got.data), np.pad(a, width, mode="wrap"))
    assert got.layout == ref.layout
    summed = darray.halo_reduce(got, backend="cudecomp")
    np.testing.assert_allclose(np.asarray(summed),
                               np.asarray(darray.halo_reduce(ref, backend="jax")), rtol=1e-12)


def test_halo_gradient_equals_the_jax_backend():
    a = _field(np.float64, (6, 6, 6), seed=7)
    x = _dist(a)

    def loss(backend):
        return lambda v: jnp.sum(_on(backend, v.halo, 1).data ** 3)
    got = jax.grad(loss("cudecomp"))(x)
    ref = jax.grad(loss("jax"))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-10)


def test_a_cudecomp_error_is_an_exception_and_the_process_goes_on():
    x = _dist(_field(np.complex64, (8, 8, 8)))
    with darray.config_context(transpose_backend="cudecomp"):
        darray.fft.fftn(x)  # creates the descriptor
    key = next(k for k in cudecomp._grids if k[0] == (8, 8, 8) and k[3] == "complex64")
    entry = cudecomp._grids[key]
    cudecomp.native.register_targets("cuda")
    wrong = jnp.zeros((3, 8, 8), jnp.complex64)  # not the grid's X-pencil
    with pytest.raises(Exception, match="do not match the grid's pencils"):
        jax.block_until_ready(jax.jit(lambda b: cudecomp._transpose(b, 0, entry, (3, 8, 8)))(wrong))
    again = _on("cudecomp", darray.fft.fftn, x)
    np.testing.assert_allclose(np.asarray(again), np.fft.fftn(np.asarray(x)), rtol=2e-4, atol=2e-4)


def test_nvshmem_backends_are_refused_with_a_reason():
    x = _dist(_field(np.complex64, (8, 8, 4)))
    with darray.config_context(transpose_backend="cudecomp", cudecomp_transpose_comm="NVSHMEM"):
        with pytest.raises(ValueError, match="NVSHMEM"):
            darray.fft.fftn(x)
