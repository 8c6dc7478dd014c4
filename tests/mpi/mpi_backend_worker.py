"""Run under `mpiexec -n P python3 mpi_backend_worker.py NATIVE_SO`: the "mpi" backend (FFT
executor and halo fill) on a mesh of one CPU device per process, checked on every rank against
numpy (float64 references computed from the same global data) and against the "jax" backend
(gloo) on the same arrays, with the output layouts asserted. Prints "RANK ok <check>" lines.

NATIVE_SO is a darray._native built with DARRAY_ENABLE_MPI=ON (test_mpi_backend.py builds it).
"""
import importlib.util
import os
import sys

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.pop("XLA_FLAGS", None)  # one CPU device per process
spec = importlib.util.spec_from_file_location("darray._native", sys.argv[1])
native_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native_mod)
sys.modules["darray._native"] = native_mod  # darray._src.base.native imports this one

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from mpi4py import MPI  # noqa: E402,F401  (initialises MPI before any exchange)

jax.config.update("jax_enable_x64", True)
import darray  # noqa: E402
from darray._src.backends import mpi_exec, mpi_transport  # noqa: E402
from darray._src.backends.registry import select_fft_backend  # noqa: E402
from darray.distributed import gather  # noqa: E402  (collective host reads: every rank)

info = darray.distributed.initialize(heartbeat_timeout=15, shutdown_timeout=10)
rank, nproc = info["process_index"], info["process_count"]
assert jax.local_device_count() == 1, jax.local_devices()
AUTO = jax.sharding.AxisType.Auto
SHAPE = (13, 10, 7)  # uneven over every mesh used here
rng = np.random.default_rng(0)  # the same global data on every rank
host = rng.standard_normal(SHAPE)
host_c = host + 1j * rng.standard_normal(SHAPE)
TOL = dict(rtol=1e-10, atol=1e-10)
MPI_ON = dict(transpose_backend="mpi")
JAX_ON = dict(transpose_backend="jax")


def ok(check):
    # one write per line: mpiexec merges the ranks' streams, pieces of a print could interleave
    sys.stdout.write(f"RANK {rank} ok {check}\n")
    sys.stdout.flush()


def local(a):
    """This process's block of a DistArray (its physical data, padding and ghosts included)."""
    (shard,) = a.data.addressable_shards
    return gather(shard.data)


def assert_same(got, ref, want):
    """`got` (mpi) has `ref`'s (jax) layout and sharding, equals numpy's `want` and `ref`."""
    assert got.layout == ref.layout, (got.layout, ref.layout)
    assert got.data.sharding.spec == got.layout.spec, (got.data.sharding.spec, got.layout)
    np.testing.assert_allclose(gather(got), want, **TOL)
    np.testing.assert_allclose(local(got), local(ref), **TOL)


if nproc == 2:
    MESHES = [(jax.make_mesh((2,), ("x",), axis_types=(AUTO,)), s)
              for s in (("x", None, None), (None, "x", None), (None, None, "x"))]
else:
    mesh2 = jax.make_mesh((2, nproc // 2), ("x", "y"), axis_types=(AUTO,) * 2)
    MESHES = [(mesh2, s) for s in (("x", "y", None), ("y", "x", None), (None, "x", "y"),
                                    (("x", "y"), None, None), (("y", "x"), None, None))]

with darray.config_context(**MPI_ON):
    assert repr(select_fft_backend()) == "Selection(FFT on 'mpi')", select_fft_backend()

# --- 1. every FFT against numpy and the jax backend, on every mesh/spec
for mesh, spec in MESHES:
    x = darray.asarray(host, mesh=mesh, spec=spec)
    xc = darray.asarray(host_c, mesh=mesh, spec=spec)
    cases = [("fftn", lambda xc=xc: darray.fft.fftn(xc), np.fft.fftn(host_c)),
             ("ifftn", lambda xc=xc: darray.fft.ifftn(xc), np.fft.ifftn(host_c)),
             ("rfftn", lambda x=x: darray.fft.rfftn(x), np.fft.rfftn(host))]
    for _name, op, want in cases:
        with darray.config_context(**MPI_ON):
            got = op()
        with darray.config_context(**JAX_ON):
            ref = op()
        assert_same(got, ref, want)
    with darray.config_context(**MPI_ON):
        kr = darray.fft.rfftn(x)
        back = darray.fft.irfftn(kr, s=SHAPE)
        round_trip = darray.fft.ifftn(darray.fft.fftn(xc))
    with darray.config_context(**JAX_ON):
        back_ref = darray.fft.irfftn(kr, s=SHAPE)
    assert_same(back, back_ref, host)
    assert round_trip.layout == xc.layout
    np.testing.assert_allclose(gather(round_trip), host_c, **TOL)
    # the compiled program exchanges with MPI only: no XLA all-to-all left
    with darray.config_context(**MPI_ON):
        text = jax.jit(lambda a: darray.fft.fftn(a)).lower(xc).as_text()
    assert "darray_mpi_all_to_all_cpu" in text and "all_to_all\"" not in text \
        and "stablehlo.all_to_all" not in text, text[-2000:]
ok("fft")

# --- 2. halo fills (periodic and constant, widths 1 and 2) and halo_reduce
for mesh, spec in MESHES[:2]:
    x = darray.asarray(host, mesh=mesh, spec=spec)
    for boundary, mode in (("periodic", "wrap"), ("constant", "constant")):
        for width in (1, 2):
            with darray.config_context(**MPI_ON):
                h = x.halo(width, boundary=boundary)
                text = jax.jit(lambda a, width=width, boundary=boundary:
                               a.halo(width, boundary=boundary)).lower(x).as_text()
            with darray.config_context(**JAX_ON):
                h_ref = x.halo(width, boundary=boundary)
            assert "darray_mpi_sendrecv_cpu" in text and "collective_permute" not in text
            assert h.layout == h_ref.layout and h.layout.halo == ((width, width),) * 3
            assert h.data.sharding.spec == h.layout.spec
            np.testing.assert_array_equal(local(h), local(h_ref))
            # against numpy: this block's owned cells and ghosts are a window of np.pad
            padded = np.pad(host, width, mode=mode)
            blk = local(h)
            shard_index = h.data.addressable_shards[0].index
            starts, owned = [], []
            for axis, n in enumerate(SHAPE):
                chunk = h.layout.chunk(axis)
                block = (shard_index[axis].start or 0) // (chunk + 2 * width)
                starts.append(block * chunk)
                owned.append(min(chunk, n - block * chunk))
            assert all(m > 0 for m in owned), owned  # no empty blocks with these shapes
            want = padded[tuple(slice(s, s + m + 2 * width) for s, m in zip(starts, owned))]
            np.testing.assert_array_equal(blk[tuple(slice(0, m + 2 * width) for m in owned)],
                                          want)
            with darray.config_context(**MPI_ON):
                red = h.halo_reduce(boundary=boundary)
            with darray.config_context(**JAX_ON):
                red_ref = h_ref.halo_reduce(boundary=boundary)
            assert red.layout == red_ref.layout == x.layout
            np.testing.assert_allclose(gather(red), gather(red_ref), **TOL)
ok("halo")

# --- 3. two independent FFTs in one jitted program (each program's exchanges are chained)
mesh, spec = MESHES[0]
xc = darray.asarray(host_c, mesh=mesh, spec=spec)
other = host_c[::-1].copy() * 2
yc = darray.asarray(other, mesh=mesh, spec=spec)
with darray.config_context(**MPI_ON):
    two = jax.jit(lambda a, b: (darray.fft.fftn(a), darray.fft.ifftn(b)))
    for _ in range(5):
        ka, kb = two(xc, yc)
        np.testing.assert_allclose(gather(ka), np.fft.fftn(host_c), **TOL)
        np.testing.assert_allclose(gather(kb), np.fft.ifftn(other), **TOL)
ok("ordering")


# --- 4. gradients and jvp through fftn equal the jax backend's and jnp's
def loss(a):
    k = darray.fft.fftn(a)
    return darray.sum(darray.real(k) ** 3 + darray.imag(k) * darray.real(k))


def loss_ref(a):
    k = jnp.fft.fftn(a)
    return jnp.sum(jnp.real(k) ** 3 + jnp.imag(k) * jnp.real(k))


for mesh, spec in MESHES[:2]:
    x = darray.asarray(host, mesh=mesh, spec=spec)
    with darray.config_context(**MPI_ON):
        g = darray.grad(loss)(x)
        g_jit = jax.jit(darray.grad(loss))(x)
        _, tangent = jax.jvp(darray.fft.fftn, (x,), (x,))
    with darray.config_context(**JAX_ON):
        g_ref = darray.grad(loss)(x)
    want = gather(jax.grad(loss_ref)(jnp.asarray(host)))
    for got in (g, g_jit):
        assert got.layout == g_ref.layout == x.layout
        np.testing.assert_allclose(gather(got), want, rtol=1e-9, atol=1e-7)
        np.testing.assert_allclose(local(got), local(g_ref), rtol=1e-9, atol=1e-7)
    np.testing.assert_allclose(gather(tangent), np.fft.fftn(host), **TOL)
# jacfwd / jacrev batch the exchanges (vmap rule), on a small array
small = np.random.default_rng(3).standard_normal((4, 4, 2))
jac_want = gather(jax.jacfwd(lambda a: jnp.real(jnp.fft.fftn(a)))(jnp.asarray(small)))
mesh, spec = MESHES[0]
xs = darray.asarray(small, mesh=mesh, spec=spec)
for jac in (jax.jacfwd, jax.jacrev):
    with darray.config_context(**MPI_ON):
        (leaf,) = jax.tree_util.tree_leaves(jac(lambda a: darray.real(darray.fft.fftn(a)))(xs))
    if isinstance(leaf, darray.DistArray):
        leaf = leaf.data
    gathered = multihost_utils.process_allgather(leaf, tiled=True)
    np.testing.assert_allclose(gather(gathered), jac_want, **TOL)
ok("grad")

# --- 5. errors come back as Python exceptions naming the handler; the process goes on
comm = mpi_exec.communicator(MESHES[0][0], ("x",))
try:
    mpi_transport.exchange_rows(jnp.zeros((comm.Get_size() + 1, 2)), mpi_transport.new_order(),
                                comm)
    raise AssertionError("a wrong leading dimension was accepted")
except ValueError as err:
    assert "communicator size" in str(err), err
raw = jax.ffi.ffi_call(mpi_transport.TARGET, (jax.ShapeDtypeStruct((comm.Get_size() + 1, 2),
                                                                   jnp.float64),
                                              jax.ShapeDtypeStruct((), jnp.uint8)),
                       has_side_effect=True)
try:
    raw(jnp.zeros((comm.Get_size() + 1, 2)), mpi_transport.new_order(),
        comm=np.int64(comm.py2f()), call_id=np.int64(1))
    raise AssertionError("the handler accepted a wrong leading dimension")
except Exception as err:  # jax's runtime error type moved between versions
    assert "darray_mpi_all_to_all" in str(err) and "communicator size" in str(err), err
raw = jax.ffi.ffi_call(mpi_transport.SENDRECV_TARGET, (jax.ShapeDtypeStruct((3,), jnp.float64),
                                                       jax.ShapeDtypeStruct((), jnp.uint8)),
                       has_side_effect=True)
try:  # a permutation table of the wrong length
    raw(jnp.zeros(3), mpi_transport.new_order(), comm=np.int64(comm.py2f()),
        call_id=np.int64(1), dests=np.zeros(comm.Get_size() + 1, np.int64),
        sources=np.zeros(1, np.int64))
    raise AssertionError("the handler accepted a permutation of the wrong length")
except Exception as err:
    assert "darray_mpi_sendrecv" in str(err) and "one per rank" in str(err), err
# a mesh that is not one device per process is refused with a clear message
try:
    mpi_exec.communicator(jax.make_mesh((1,), ("z",), devices=jax.local_devices()), ("z",))
    raise AssertionError("a mesh without every process was accepted")
except ValueError as err:
    assert "one device per process" in str(err), err
# the process is still usable
with darray.config_context(**MPI_ON):
    np.testing.assert_allclose(gather(darray.fft.fftn(xc)), np.fft.fftn(host_c), **TOL)
ok("errors")

# --- 6. two separately jitted darray ops called in a different order on rank 0 than on the
# others: every call fails on every rank with the same-exchange error, never mixed data; called
# in the same order afterwards they are right (a 1-D mesh: every exchange on one communicator)
MISMATCH = "reached different MPI exchanges"
line = jax.make_mesh((nproc,), ("x",), axis_types=(AUTO,))
small_c, large_c = host_c[:8], host_c[:12]
xa = darray.asarray(small_c, mesh=line, spec=("x", None, None))
xb = darray.asarray(large_c, mesh=line, spec=("x", None, None))
with darray.config_context(**MPI_ON):
    fa = jax.jit(darray.fft.fftn)
    fb = jax.jit(darray.fft.fftn)
    calls = [lambda: fa(xa), lambda: fb(xb)]
    for call in (calls if rank == 0 else calls[::-1]):
        try:
            jax.block_until_ready(call().data)
            raise AssertionError(f"rank {rank}: darray ops out of step ran without an error")
        except AssertionError:
            raise
        except Exception as err:  # jax's runtime error type moved between versions
            assert MISMATCH in str(err), err
    ka, kb = fa(xa), fb(xb)
with darray.config_context(**JAX_ON):
    ka_ref, kb_ref = darray.fft.fftn(xa), darray.fft.fftn(xb)
assert_same(ka, ka_ref, np.fft.fftn(small_c))
assert_same(kb, kb_ref, np.fft.fftn(large_c))
ok("mismatch")
