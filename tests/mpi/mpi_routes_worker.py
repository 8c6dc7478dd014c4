"""Run under `mpiexec -n 2 python3 mpi_routes_worker.py NATIVE_SO`: the routes that are not one
whole FFT plan, on the "mpi" backend. The split-axis FFT (four-step and Bluestein), the split
DCT/DST (its reorders too), the padded rfftn/irfftn (padding=1.5), `transformn` with a cosine
axis, `pad` and `gradient` must each record the MPI backend (`darray.record_backends`), show it
in their plan record (`fft_plan` / `transformn_plan`, the same Selection), exchange through
darray's MPI handlers only (no XLA all-to-all or collective-permute in the compiled program),
and match numpy/scipy (float64 references from the same global data), with the output layouts
asserted. Prints "RANK r ok <check>" lines.
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
import numpy as np  # noqa: E402
import scipy.fft  # noqa: E402
from mpi4py import MPI  # noqa: E402,F401  (initialises MPI before any exchange)

jax.config.update("jax_enable_x64", True)
import darray  # noqa: E402
from darray._src.fft.api import fft_plan  # noqa: E402
from darray._src.fft.mixed import transformn_plan  # noqa: E402
from darray.distributed import gather  # noqa: E402  (collective host reads: every rank)

info = darray.distributed.initialize(heartbeat_timeout=15, shutdown_timeout=10)
rank, nproc = info["process_index"], info["process_count"]
assert jax.local_device_count() == 1, jax.local_devices()
MESH = jax.make_mesh((nproc,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
MPI_ON = dict(transpose_backend="mpi")
TOL = dict(rtol=1e-10, atol=1e-10)
rng = np.random.default_rng(0)  # the same global data on every rank


def ok(check):
    sys.stdout.write(f"RANK {rank} ok {check}\n")
    sys.stdout.flush()


def on_mpi(fn, *args, route, plan=None):
    """fn(*args) with the MPI backend: its records name `route` on "mpi" only, the plan record
    `plan()` (if given) shows the same Selection, and its compiled program exchanges through
    darray's MPI handlers, not XLA's collectives."""
    with darray.config_context(**MPI_ON):
        with darray.record_backends() as log:
            out = fn(*args)
        record = plan() if plan is not None else None
        text = jax.jit(fn).lower(*args).as_text()
    routes = [(s.kind, s.requested, s.backend) for s in log]
    assert routes and all(s.backend == "mpi" for s in log), routes
    assert route in [kind for kind, _, _ in routes], routes
    if record is not None:
        assert record.selection in log, (record.selection, routes)
        moves = [line for line in record.describe().splitlines() if "all-to-all" in line]
        assert moves and all(line.endswith(" on 'mpi'") for line in moves), record.describe()
        assert out.layout == record.out_layout, (out.layout, record.out_layout)
    assert "darray_mpi_" in text, text[-2000:]
    for collective in ("all_to_all", "collective_permute", "all_gather"):
        assert f"stablehlo.{collective}" not in text, (collective, text[-2000:])
    return out


def pad_full(c, fine):
    """Zero-pad a full spectrum to `fine`; an even axis's Nyquist entry is split evenly."""
    for ax, m in enumerate(fine):
        n = c.shape[ax]
        if m == n:
            continue
        c = np.moveaxis(c, ax, 0)
        out = np.zeros((m,) + c.shape[1:], complex)
        pos = (n + 1) // 2
        out[:pos] = c[:pos]
        out[m - n // 2:] = c[n - n // 2:]
        if n % 2 == 0:
            out[n // 2] = out[m - n // 2] = c[n // 2] / 2
        c = np.moveaxis(out, 0, ax)
    return c


# --- 1. the split-axis FFT: a 1-D array split over every process (four-step and Bluestein)
for n in (40, 37):  # 40 = 8 * 5 factors over 2 parts; 37 is prime: Bluestein
    host = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    x = darray.asarray(host, mesh=MESH, spec=("x",))
    got = on_mpi(darray.fft.fft, x, route="FFT split-axis", plan=lambda x=x: fft_plan(x))
    assert got.layout.split == x.layout.split and got.data.sharding.spec == got.layout.spec
    np.testing.assert_allclose(gather(got), np.fft.fft(host), **TOL)
    back = on_mpi(darray.fft.ifft, got, route="FFT split-axis")
    np.testing.assert_allclose(gather(back), host, **TOL)
ok("split-axis")

# --- 1b. the split DCT/DST: reorders (point-to-point sends) around the split-axis FFT
host = rng.standard_normal(24)
x = darray.asarray(host, mesh=MESH, spec=("x",))
for fname, typ in (("dct", 2), ("dst", 3), ("dct", 4), ("dst", 1)):
    got = on_mpi(lambda a, f=fname, t=typ: getattr(darray.fft, f)(a, type=t), x,
                 route="FFT split-axis")
    assert got.layout.split == x.layout.split and got.data.sharding.spec == got.layout.spec
    want = getattr(scipy.fft, fname)(host, type=typ)
    np.testing.assert_allclose(gather(got), want, **TOL)
ok("split-r2r")

# --- 2. the padded (3/2-rule) transforms: plans with per-axis kernels
shape = (12, 10, 8)
u = rng.standard_normal(shape)
x = darray.asarray(u, mesh=MESH, spec=("x", None, None))
k = on_mpi(darray.fft.rfftn, x, route="FFT")
fine = tuple(3 * s // 2 for s in shape)
uf = on_mpi(lambda a: darray.fft.irfftn(a, s=shape, padding=1.5), k, route="FFT",
           plan=lambda: fft_plan(k, kind="c2r", inverse=True, s=shape, padding=1.5))
assert uf.shape == fine and uf.layout.split == x.layout.split
want = (np.fft.ifftn(pad_full(np.fft.fftn(u), fine)) * (np.prod(fine) / u.size)).real
np.testing.assert_allclose(gather(uf), want, atol=1e-12)
kk = on_mpi(lambda a: darray.fft.rfftn(a, s=shape, padding=1.5), uf, route="FFT",
            plan=lambda: fft_plan(uf, kind="r2c", s=shape, padding=1.5))
assert kk.layout == k.layout
np.testing.assert_allclose(gather(kk), np.fft.rfftn(u), atol=1e-11)
ok("padded")

# --- 3. transformn: a Fourier axis, a cosine axis and a sine axis in one plan
host = rng.standard_normal(shape)
x = darray.asarray(host, mesh=MESH, spec=("x", None, None))
kinds = ("fft", "dct2", "dst1")
got = on_mpi(lambda a: darray.fft.transformn(a, kinds), x, route="FFT",
             plan=lambda: transformn_plan(x, kinds))
want = np.fft.fft(scipy.fft.dst(scipy.fft.dct(host, type=2, axis=1), type=1, axis=2), axis=0)
assert got.data.sharding.spec == got.layout.spec
np.testing.assert_allclose(gather(got), want, **TOL)
back = on_mpi(lambda a: darray.fft.itransformn(a, kinds), got, route="FFT")
assert back.layout == x.layout
np.testing.assert_allclose(gather(back), host, **TOL)
ok("transformn")

# --- 4. pad (regrid rounds of face moves) and gradient (a halo fill)
host = rng.standard_normal((13, 6))
x = darray.asarray(host, mesh=MESH, spec=("x", None))
for mode in ("reflect", "wrap", "constant"):
    got = on_mpi(lambda a, mode=mode: darray.pad(a, ((3, 2), (1, 1)), mode=mode), x,
                 route="pad")
    assert got.layout.split == x.layout.split and got.data.sharding.spec == got.layout.spec
    np.testing.assert_array_equal(gather(got), np.pad(host, ((3, 2), (1, 1)), mode=mode))
got = on_mpi(lambda a: darray.gradient(a, axis=0), x, route="halo")
assert got.layout == x.layout
np.testing.assert_allclose(gather(got), np.gradient(host, axis=0), **TOL)
ok("stencils")
