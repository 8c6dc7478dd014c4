"""One rank of an `mpiexec -n N` run of darray (started by test_launchers.py).

argv: devices_per_process, mode, outdir[, dead_rank]. The launcher is detected by
`darray.distributed.initialize()` (no address on the command line).

mode "checks": on a mesh over every process's devices, fftn/ifftn/rfftn/irfftn round trips, halo
fills (periodic, widths 1 and 2), halo_reduce, sum/mean/max over axes and over all,
from_callback and fromfunction, each compared on this rank with numpy float64 results computed
from the same global data, and each result's layout and sharding asserted. Then random fields
(rank 0 writes the gathered values for the parent to compare with its own draws) and
checkpoints: with 4 processes it saves into outdir/saved_by_4 (and from_callback data into
outdir/host_by_4); with other counts it loads those (when present) onto its own mesh and spec.
Each check prints "CHECK <name> ok"; the end prints "RESULT ok".

mode "die": rank `dead_rank` records its death time and crashes (os._exit(9)) after the first
collective; the others keep calling collectives until the watchdog (or the launcher) ends them.
mode "hang": that rank stops itself (SIGSTOP: alive but silent) instead; the parent kills it
once the others are gone.
Every rank writes its pid to outdir/pid-<rank> so the parent can time each exit.
"""
import os
import signal
import sys
import time

devices_per_process, mode, outdir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices_per_process}"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import darray  # noqa: E402
from darray.distributed import gather  # noqa: E402  (collective host reads: every rank)

HEARTBEAT_S = 10
info = darray.distributed.initialize(heartbeat_timeout=HEARTBEAT_S, shutdown_timeout=10)
rank, nproc = info["process_index"], info["process_count"]
assert info["launcher"] in ("mpich", "openmpi"), info
assert info["device_count"] == devices_per_process * nproc, info
assert len(info["local_devices"]) == devices_per_process and info["watchdog"], info
with open(os.path.join(outdir, f"pid-{rank}"), "w") as f:
    f.write(str(os.getpid()))

from jax.experimental import multihost_utils  # noqa: E402

if mode in ("die", "hang"):
    dead = int(sys.argv[4])
    multihost_utils.sync_global_devices("started")
    print("RANK", rank, "started", flush=True)
    if rank == dead:
        time.sleep(1)
        with open(os.path.join(outdir, "died_at"), "w") as f:
            f.write(repr(time.time()))
        if mode == "hang":
            os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(9)  # a crash: no goodbye, no shutdown
    start = time.time()
    while time.time() - start < 120:  # the watchdog must end this long before
        multihost_utils.process_allgather(np.ones(3))
        time.sleep(0.2)
    print("RESULT survived", flush=True)
    sys.exit(0)

assert mode == "checks", mode
AUTO = jax.sharding.AxisType.Auto
ndev = jax.device_count()
if ndev % 2:  # an odd count: one axis over every device (13 over 3 is 5, 5, 3)
    mesh, spec = jax.make_mesh((ndev,), ("x",), axis_types=(AUTO,)), ("x",)
else:
    mesh = jax.make_mesh((2, ndev // 2), ("x", "y"), axis_types=(AUTO,) * 2)
    spec = ("x", "y")
SHAPE = (13, 10, 7)  # uneven over every mesh used here
rng = np.random.default_rng(0)  # same global data on every rank
host = rng.standard_normal(SHAPE)
host_c = host + 1j * rng.standard_normal(SHAPE)


def ok(name):
    print(f"CHECK {name} ok", flush=True)


def assert_placed(a, split=None):
    """The array's data is sharded as its layout says (and split as asked)."""
    assert a.data.sharding.spec == a.layout.spec, (a.data.sharding.spec, a.layout.spec)
    assert not a.data.is_fully_addressable or nproc == 1
    if split is not None:
        assert a.layout.split == split, (a.layout.split, split)


x = darray.asarray(host, mesh=mesh, spec=spec)
xc = darray.asarray(host_c, mesh=mesh, spec=spec)
assert_placed(x)
np.testing.assert_array_equal(gather(x), host)

# --- fft round trips
k = darray.fft.fftn(xc)
assert_placed(k)
np.testing.assert_allclose(gather(k), np.fft.fftn(host_c), rtol=1e-10, atol=1e-10)
back = darray.fft.ifftn(k)
assert back.layout == xc.layout, (back.layout, xc.layout)
assert_placed(back)
np.testing.assert_allclose(gather(back), host_c, atol=1e-12)
ok("fftn_ifftn")
kr = darray.fft.rfftn(x)
assert_placed(kr)
assert kr.shape == (13, 10, 4), kr.shape
np.testing.assert_allclose(gather(kr), np.fft.rfftn(host), rtol=1e-10, atol=1e-10)
backr = darray.fft.irfftn(kr, s=SHAPE)
assert backr.layout == x.layout, (backr.layout, x.layout)
np.testing.assert_allclose(gather(backr), host, atol=1e-12)
ok("rfftn_irfftn")


# --- halo fill and its adjoint
def split_count(layout, axis):
    return int(np.prod([layout.mesh.shape[name] for name in layout.split[axis]], dtype=int))


def copies_along(n, blocks, width):
    """How often each cell of an axis appears in the blocks' owned+ghost ranges (periodic)."""
    chunk = -(-n // blocks)
    count = np.zeros(n)
    for b in range(blocks):
        start, stop = b * chunk, min((b + 1) * chunk, n)
        if start < stop:  # empty trailing blocks carry no ghosts
            np.add.at(count, np.arange(start - width, stop + width) % n, 1)
    return count


for width in (1, 2):
    h = x.halo(width)
    assert h.layout.halo == ((width, width),) * 3, h.layout.halo
    assert h.layout.split == x.layout.split
    assert_placed(h)
    w2 = 2 * width
    inner = (slice(width, -width),) * 3

    def stencil(b, w=width, w2=w2, inner=inner):
        # neighbours `width` away on every axis, read from the ghosts at block edges
        out = -6 * b[inner]
        for axis in range(3):
            lo = tuple(slice(0, -w2) if a == axis else inner[a] for a in range(3))
            hi = tuple(slice(w2, None) if a == axis else inner[a] for a in range(3))
            out = out + b[lo] + b[hi]
        return out

    lap = darray.map_blocks(stencil, h)
    ref = -6 * host + sum(np.roll(host, s, axis) for axis in range(3) for s in (width, -width))
    assert lap.layout.split == x.layout.split and lap.layout.halo == ((0, 0),) * 3
    assert_placed(lap)
    np.testing.assert_allclose(gather(lap), ref, atol=1e-12)
    reduced = h.halo_reduce()
    assert reduced.layout == x.layout, (reduced.layout, x.layout)
    assert_placed(reduced)
    copies = 1.0
    for axis, n in enumerate(SHAPE):
        shape = [1, 1, 1]
        shape[axis] = n
        copies = copies * copies_along(n, split_count(x.layout, axis), width).reshape(shape)
    np.testing.assert_allclose(gather(reduced), host * copies, rtol=1e-12)
    ok(f"halo_width{width}")
    ok(f"halo_reduce_width{width}")

# --- reductions
for axis in (0, 1, 2, (0, 2), None):
    for name in ("sum", "mean", "max"):
        got = getattr(darray, name)(x, axis=axis)
        want = getattr(np, name)(host, axis=axis)
        assert got.shape == np.shape(want), (name, axis, got.shape)
        assert got.data.sharding.spec == got.layout.spec, (name, axis)
        np.testing.assert_allclose(gather(got), want, rtol=1e-12, atol=1e-12)
ok("reductions")

# --- creation without a global host array
calls = []
fc = darray.from_callback(SHAPE, np.float64, lambda idx: calls.append(idx) or host[idx],
                          mesh=mesh, spec=spec)
assert_placed(fc, split=x.layout.split)
assert len(calls) <= devices_per_process, calls  # only this process's own blocks
np.testing.assert_array_equal(gather(fc), host)
ok("from_callback")
fspec = tuple(reversed(spec)) + (None,) * (3 - len(spec))
ff = darray.fromfunction(lambda i, j, k: i * 100.0 + j * 10.0 + k, SHAPE, dtype=np.float64,
                         mesh=mesh, spec=fspec)
assert_placed(ff)
np.testing.assert_array_equal(gather(ff),
                              np.fromfunction(lambda i, j, k: i * 100.0 + j * 10.0 + k, SHAPE))
ok("fromfunction")

# --- random: the parent compares rank 0's gathered draws with its own 1- and 8-device draws
key = jax.random.key(7)
drawn = {"normal": darray.random.normal(key, SHAPE, mesh=mesh, spec=spec),
         "uniform": darray.random.uniform(key, (37, 5), np.float32, mesh=mesh, spec=spec[::-1]),
         "integers": darray.random.integers(key, -4, 4, (37,), mesh=mesh, spec=(spec[-1],))}
for a in drawn.values():
    assert_placed(a)
gathered = {name: gather(a) for name, a in drawn.items()}  # collective: every rank
if rank == 0:
    for name, values in gathered.items():
        np.save(os.path.join(outdir, f"random_{name}_{nproc}.npy"), values)
ok("random")

# --- checkpoints: written by 4 processes, read by 2 and 3 on their own meshes
saved_random = os.path.join(outdir, "saved_by_4")
saved_host = os.path.join(outdir, "host_by_4")
if nproc == 4:
    darray.save(saved_random, drawn["normal"])
    darray.save(saved_host, darray.asarray(host, mesh=mesh, spec=(None, "y", "x")),
                engine="numpy")
    meta = darray._src.extras.io.read_metadata(saved_host)["attributes"]["darray"]
    assert meta["process_count"] == 4, meta
    ok("save")
elif os.path.exists(saved_host):
    other = ("x", None, None) if len(spec) == 1 else (None, "x", "y")
    for engine in ["numpy"] + (["tensorstore"] if darray._src.extras.io._tensorstore() else []):
        loaded = darray.load(saved_host, mesh=mesh, spec=other, engine=engine)
        assert_placed(loaded)
        assert loaded.layout.split == tuple((a,) if a else () for a in other), loaded.layout
        np.testing.assert_array_equal(gather(loaded), host)
    loaded = darray.load(saved_random, mesh=mesh, spec=other)
    assert_placed(loaded)
    # the field saved by 4 processes equals the one this process count draws itself
    np.testing.assert_array_equal(gather(loaded), gathered["normal"])
    if rank == 0:
        np.save(os.path.join(outdir, f"loaded_{nproc}.npy"), gather(loaded))
    else:
        gather(loaded)
    ok("load")
multihost_utils.sync_global_devices("done")
print("RESULT ok", flush=True)
