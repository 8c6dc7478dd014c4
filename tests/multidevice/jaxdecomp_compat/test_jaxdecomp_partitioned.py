"""Covers: darray/_src/jaxdecomp_compat/fft.py, darray/_src/jaxdecomp_compat/halo.py
Covers: darray/_src/jaxdecomp_compat/transpose.py, darray/_src/jaxdecomp_compat/deferred.py

darray.jaxdecomp under jit/grad/vmap with no mesh in context: planned at partition time.

jaxDecomp's users never write ``jax.set_mesh``: an array on Auto mesh axes is traced without a
sharding, and jaxDecomp plans when XLA partitions the program. darray.jaxdecomp does the same
(darray/_src/jaxdecomp_compat/deferred.py). Values against numpy float64; every output's
sharding against what jaxDecomp's `get_fft_output_sharding` (or the eager call) gives; both
partitioners (Shardy, jax's default, and GSPMD).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from halo_reference import halo_reference
from helpers import mesh_of
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import darray.jaxdecomp as jd
from darray.jaxdecomp import fft as jd_fft

# float64 data and tolerances throughout: not run with x64 off
pytestmark = pytest.mark.x64

MESHES = [(2, 4), (4, 2), (8, 1), (1, 8)]


def natural(mesh_shape):
    return P(*(n if s > 1 else None for n, s in zip(("z", "y"), mesh_shape)))


def effective(sharding, ndim):
    """The spec without size-1 mesh axes, one entry per array axis."""
    sizes = dict(sharding.mesh.shape)
    out = []
    for entry in tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec)):
        names = () if entry is None else ((entry,) if isinstance(entry, str) else entry)
        out.append(tuple(n for n in names if sizes[n] > 1))
    return tuple(out)


def field(shape=(8, 16, 24), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.fixture(params=[True, False], ids=["shardy", "gspmd"])
def partitioner(request):
    old = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", request.param)
    yield request.param
    jax.config.update("jax_use_shardy_partitioner", old)


@pytest.mark.parametrize("mesh_shape", MESHES)
def test_pfft3d_pifft3d_under_jit_without_a_mesh(mesh_shape, partitioner):
    mesh = mesh_of(mesh_shape, ("z", "y"))
    x = field()
    xs = jax.device_put(x, NamedSharding(mesh, natural(mesh_shape)))
    fwd = jax.jit(jd.pfft3d)
    k = fwd(xs)
    back = jax.jit(jd.pifft3d)(k)
    np.testing.assert_allclose(np.asarray(k), np.fft.fftn(x).transpose(1, 2, 0), atol=1e-10)
    np.testing.assert_allclose(np.asarray(back).real, x, atol=1e-12)
    # jaxDecomp 0.3.1's output specs (recorded in test_jaxdecomp_compat.py; the eager call
    # gives them). get_fft_output_sharding agrees except on (1, 8), where it reads P(None, 'y')
    # as (batch, x) and predicts a 4-entry spec.
    assert effective(k.sharding, 3) == effective(jd.pfft3d(xs).sharding, 3)
    if mesh_shape != (1, 8):
        predicted = jd.get_fft_output_sharding(xs.sharding)
        assert effective(k.sharding, 3) == effective(predicted, 3)
    assert effective(back.sharding, 3) == effective(xs.sharding, 3)
    hlo = fwd.lower(xs).compile().as_text()
    assert "all-gather" not in hlo
    if mesh_shape == (2, 4):  # jaxDecomp's pencil algorithm: one all-to-all per split axis
        assert hlo.count("all-to-all(") == 2, hlo.count("all-to-all(")


def test_noncontiguous_config_under_jit(partitioner):
    mesh = mesh_of((2, 4), ("z", "y"))
    x = field()
    xs = jax.device_put(x, NamedSharding(mesh, P("z", "y")))
    try:
        jd.config.update("transpose_axis_contiguous", False)
        jax.clear_caches()  # jaxDecomp's config is not in jit's cache key (nor is it in jaxDecomp)
        k = jax.jit(jd.pfft3d)(xs)
        eager = jd.pfft3d(xs)
    finally:
        jd.config.update("transpose_axis_contiguous", True)
        jax.clear_caches()
    np.testing.assert_allclose(np.asarray(k), np.fft.fftn(x), atol=1e-10)
    assert effective(k.sharding, 3) == effective(eager.sharding, 3)


@pytest.mark.parametrize("mesh_shape", [(2, 4), (8, 1)])
def test_gradients_jacfwd_jacrev(mesh_shape, partitioner):
    mesh = mesh_of(mesh_shape, ("z", "y"))
    x = field((8, 8, 8), seed=3)
    xs = jax.device_put(x, NamedSharding(mesh, natural(mesh_shape)))
    w = field((8, 8, 8), seed=4)

    def loss(v):
        return jnp.sum(jnp.abs(jd.pfft3d(v)) ** 2 * w.transpose(1, 2, 0))

    g = jax.jit(jax.grad(loss))(xs)
    # numpy: d/dx sum(w |F x|^2) = 2 Re(F^H (w F x)) for real x
    fx = np.fft.fftn(x)
    expected = 2 * np.real(np.fft.ifftn(w * fx) * x.size)
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-10, atol=1e-8)
    assert effective(g.sharding, 3) == effective(xs.sharding, 3)

    def f(v):
        return jnp.real(jd.pfft3d(v)).sum(axis=(1, 2))  # 8 outputs (the Y axis)

    jf = jax.jit(jax.jacfwd(f))(xs)
    jr = jax.jit(jax.jacrev(f))(xs)
    # row ky of the Jacobian: sum over kz, kx of Re(F x)[kx, ky, kz] = 64 * Re(DFT row ky)
    # on the x = 0, z = 0 plane: cos(2 pi ky y / 8) at (0, y, 0), zero elsewhere
    dense = np.zeros((8, 8, 8, 8))
    for ky in range(8):
        dense[ky, 0, :, 0] = 64 * np.cos(2 * np.pi * ky * np.arange(8) / 8)
    np.testing.assert_allclose(np.asarray(jf), dense, atol=1e-9)
    np.testing.assert_allclose(np.asarray(jr), dense, atol=1e-9)


def test_real_transforms_and_their_gradient(partitioner):
    mesh = mesh_of((2, 4), ("z", "y"))
    x = field()
    xs = jax.device_put(x, NamedSharding(mesh, P("z", "y")))
    k = jax.jit(jd_fft.prfft3d)(xs)
    back = jax.jit(jd_fft.pirfft3d)(k)
    np.testing.assert_allclose(np.asarray(k), np.fft.rfftn(x).transpose(1, 2, 0), atol=1e-10)
    np.testing.assert_allclose(np.asarray(back), x, atol=1e-12)
    assert effective(k.sharding, 3) == effective(jd_fft.prfft3d(xs).sharding, 3)
    assert effective(back.sharding, 3) == (("z",), ("y",), ())
    g = jax.jit(jax.grad(lambda v: jnp.sum(jnp.abs(jd_fft.prfft3d(v)) ** 2)))(xs)
    reference = jax.grad(lambda v: jnp.sum(jnp.abs(jnp.fft.rfftn(v)) ** 2))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), np.asarray(reference), rtol=1e-12, atol=1e-9)


TRANSPOSES = ["transposeXtoY", "transposeYtoZ", "transposeZtoY", "transposeYtoX",
              "transposeXtoZ", "transposeZtoX"]


@pytest.mark.parametrize("name", TRANSPOSES)
def test_transposes_under_jit_equal_eager(name, partitioner):
    mesh = mesh_of((2, 4), ("z", "y"))
    x = field()
    xs = jax.device_put(x, NamedSharding(mesh, P("z", "y")))
    f = getattr(jd, name)
    eager, traced = f(xs), jax.jit(f)(xs)
    order = (2, 0, 1) if name in ("transposeXtoY", "transposeYtoZ", "transposeZtoX") \
        else (1, 2, 0)
    np.testing.assert_array_equal(np.asarray(traced), x.transpose(order))
    assert effective(traced.sharding, 3) == effective(eager.sharding, 3)
    g = jax.jit(jax.grad(lambda v: jnp.sum(f(v) * x.transpose(order))))(xs)
    np.testing.assert_array_equal(np.asarray(g), x)  # the transpose of a permutation


@pytest.mark.parametrize("extents, periods", [((2, 2), (True, True)), ((1, 2), (False, True))])
def test_halo_exchange_values_and_adjoint_under_jit(extents, periods, partitioner):
    mesh = mesh_of((2, 4), ("z", "y"))
    x, g = field((16, 32, 4), seed=5), field((16, 32, 4), seed=6)
    xs = jax.device_put(x, NamedSharding(mesh, P("z", "y")))
    out = jax.jit(lambda v: jd.halo_exchange(v, extents, periods))(xs)
    np.testing.assert_array_equal(np.asarray(out), halo_reference(x, (2, 4), extents, periods))
    assert effective(out.sharding, 3) == (("z",), ("y",), ())
    gs = jax.device_put(g, NamedSharding(mesh, P("z", "y")))
    # (an elementwise loss: jnp.vdot's flattening reshape makes Shardy keep only 'z' on the
    # gradient, resharding darray's (z, y) result, which no op of darray's decides)
    grad = jax.jit(jax.grad(lambda v, w: jnp.sum(jd.halo_exchange(v, extents, periods) * w)))(
        xs, gs)
    assert effective(grad.sharding, 3) == (("z",), ("y",), ())
    for flat in np.random.default_rng(9).choice(x.size, 6, replace=False):
        e = np.zeros(x.size)
        e[flat] = 1
        col = halo_reference(e.reshape(x.shape), (2, 4), extents, periods)
        np.testing.assert_allclose(np.asarray(grad).ravel()[flat], np.vdot(col, g), atol=1e-12)


@pytest.mark.parametrize("spatial", [(2, 2), (4, 1), (1, 4)])
def test_sharded_vmap_keeps_the_batch_sharded(spatial, partitioner):
    """A batch axis sharded over a third mesh axis 'c' stays sharded through vmap (was:
    replicated over 'c', 2x the memory and communication)."""
    mesh = mesh_of((2, *spatial), ("c", "z", "y"))
    spec = P("c", "z", "y")  # as jaxDecomp's suite builds it (size-1 axes named too)
    b = field((4, 8, 16, 8), seed=2)
    bs = jax.device_put(b, NamedSharding(mesh, spec))
    k = jax.jit(jax.vmap(jd.pfft3d))(bs)
    np.testing.assert_allclose(np.asarray(k), np.fft.fftn(b, axes=(1, 2, 3)).transpose(0, 2, 3, 1),
                               atol=1e-10)
    assert effective(k.sharding, 4) == effective(jd.get_fft_output_sharding(bs.sharding), 4)
    back = jax.jit(jax.vmap(jd.pifft3d))(k)
    np.testing.assert_allclose(np.asarray(back).real, b, atol=1e-12)
    assert effective(back.sharding, 4) == effective(bs.sharding, 4)
    t = jax.jit(jax.vmap(jd.transposeXtoY))(bs)
    np.testing.assert_array_equal(np.asarray(t), b.transpose(0, 3, 1, 2))
    assert effective(t.sharding, 4)[0] == ("c",)
    h = jax.jit(jax.vmap(lambda v: jd.halo_exchange(v, (1, 1), (True, True))))(bs)
    assert effective(h.sharding, 4) == effective(bs.sharding, 4)
    # with spmd_axis_name, and batched gradients
    k2 = jax.jit(jax.vmap(jd.pfft3d, spmd_axis_name="c"))(bs)
    assert effective(k2.sharding, 4)[0] == ("c",)
    grads = jax.jit(jax.vmap(jax.grad(lambda v: jnp.sum(jnp.abs(jd.pfft3d(v)) ** 2))))(bs)
    np.testing.assert_allclose(np.asarray(grads), 2 * 1024 * b, rtol=1e-10)


def test_halo_gradient_against_a_constant_is_refused_not_wrong():
    """With the cotangent a constant, JAX prunes the sharded input and compiles the transpose
    for one device, where a halo exchange has no block edges: darray refuses by name."""
    mesh = mesh_of((2, 4), ("z", "y"))
    xs = jax.device_put(field((16, 32, 4)), NamedSharding(mesh, P("z", "y")))
    g = field((16, 32, 4), seed=1)
    with pytest.raises(ValueError, match="no block edges"):
        jax.jit(jax.grad(lambda v: jnp.vdot(jd.halo_exchange(v, (1, 1), (True, True)), g)))(xs)


def test_one_device_program_runs_locally():
    """JaxPM's single-device path: no mesh anywhere, under jit."""
    x = field()
    k = jax.jit(jd.pfft3d)(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(k), np.fft.fftn(x).transpose(1, 2, 0), atol=1e-10)
    assert len(k.sharding.device_set) == 1


def test_uneven_split_under_jit_is_refused_by_name():
    mesh = mesh_of((2, 4), ("z", "y"))
    pin = NamedSharding(mesh, P("z", "y"))
    with pytest.raises(Exception, match="does not split evenly"):
        jax.jit(lambda v: jd.pfft3d(jax.lax.with_sharding_constraint(v, pin)))(
            jnp.ones((6, 10, 8)))


def test_cudecomp_backend_under_jit_needs_a_known_sharding():
    mesh = mesh_of((2, 4), ("z", "y"))
    xs = jax.device_put(field(), NamedSharding(mesh, P("z", "y")))
    with pytest.raises(ValueError, match="jax.set_mesh"):
        jax.jit(lambda v: jd.pfft3d(v, backend="cudecomp"))(xs)


def test_every_public_name_of_jaxdecomp_0_3():
    names = ["config", "init", "finalize", "get_pencil_info", "get_autotuned_config",
             "make_config", "halo_exchange", "pfft3d", "pifft3d", "transposeXtoY",
             "transposeYtoX", "transposeYtoZ", "transposeZtoY", "transposeXtoZ",
             "transposeZtoX", "TRANSPOSE_XY", "TRANSPOSE_YX", "TRANSPOSE_YZ", "TRANSPOSE_ZY",
             "SLAB_XY", "SLAB_YZ", "PENCILS", "NO_DECOMP", "get_fft_output_sharding",
             "get_output_specs", "validate_spec_matches_mesh", "fftfreq3d", "rfftfreq3d",
             "HALO_COMM_MPI", "HALO_COMM_MPI_BLOCKING", "HALO_COMM_NCCL", "HALO_COMM_NVSHMEM",
             "HALO_COMM_NVSHMEM_BLOCKING", "TRANSPOSE_COMM_MPI_A2A", "TRANSPOSE_COMM_MPI_P2P",
             "TRANSPOSE_COMM_MPI_P2P_PL", "TRANSPOSE_COMM_NCCL", "TRANSPOSE_COMM_NCCL_PL",
             "TRANSPOSE_COMM_NVSHMEM", "TRANSPOSE_COMM_NVSHMEM_PL"]
    missing = [n for n in names if not hasattr(jd, n)]
    assert not missing, missing
    assert jd.halo.halo_exchange is jd.halo_exchange
    assert jd.transpose.transposeXtoY is jd.transposeXtoY
    with pytest.raises(NotImplementedError, match="cudecomp"):
        jd.make_config()


def test_validate_spec_matches_mesh():
    mesh = mesh_of((2, 4), ("z", "y"))
    jd.validate_spec_matches_mesh(P("z", "y"), mesh)
    jd.validate_spec_matches_mesh(P(None, "y"), mesh_of((1, 8), ("z", "y")))
    with pytest.raises(ValueError, match="At position 0: spec has None but mesh axis 'z'"):
        jd.validate_spec_matches_mesh(P(None, "y"), mesh)
    with pytest.raises(ValueError, match="At position 0: spec has 'x' but mesh expects 'z'"):
        jd.validate_spec_matches_mesh(P("x", "y"), mesh)
