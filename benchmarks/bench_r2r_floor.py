"""Where the time of darray's real-to-real transforms goes on XLA:CPU (issue #21).

Two tables from one run, each timed interleaved round-robin (warm-up excluded, medians):

1. Distributed round trips of an N^3 float32 array on a (2, 4) mesh (8 virtual CPU devices),
   as ratios to darray's ``irfftn(rfftn(x))``:

   * ``dctn+idctn``: darray's type-2 round trip as shipped.
   * ``structure floor``: the same darray program, compiled while every local Makhoul kernel
     (``r2r_local._dct2``/``_dct3``, ``r2r_local_2d._dct2_2d``/``_dct3_2d``) is replaced by a
     stand-in that keeps its FFT call and does one elementwise pass around it (the real and
     imaginary parts of the spectrum stacked into the output, and back): no reorder, no
     twiddles. It computes no DCT. It keeps everything else of the program: the plan, the FFT
     calls (2-D real FFTs where darray uses them), the exchanges and their transposing copies.
     So ``floor / rfftn`` is what a local kernel made of these real FFT calls costs in this
     program at the least: better reorders and twiddles can take ``dctn+idctn`` down to it.

2. Per-device costs (a ``rows x N`` float32 block on each of the 8 devices at once, along the
   last axis, in a shard_map without communication: the contention of the distributed
   programs), as ratios to one real FFT: the inverse real FFT, one elementwise pass
   (``x * 2``), and darray's DCT-II and DCT-III kernels. Measured at 256: a pass costs a third
   of a real FFT and XLA:CPU's inverse real FFT 1.7-1.8x a forward one, so a kernel built from
   FFT ops plus O(n) passes cannot come near one real FFT there.

Usage: python benchmarks/bench_r2r_floor.py [--size 256] [--rows 8192] [--repeats 9]
Load averages before and after are printed: compare rows of one run, never across runs. The
table is written as JSON (``--json``, default benchmarks/results/bench_r2r_floor.json) with a
PNG plot beside it.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys

if __name__ == "__main__":  # standalone: 8 virtual devices before jax starts
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _bench_common beside us

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bench_common import default_json_path, make_row, time_interleaved, write_table  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P

import darray  # noqa: E402
import darray.fft as dfft  # noqa: E402
from darray._src.base import compat, program_cache  # noqa: E402
from darray._src.kernels import r2r_local, r2r_local_2d  # noqa: E402


def _stand_in_forward(fft):
    """A real block -> the same shape through `fft` and one pass: Re and Im stacked."""
    def kernel(x):
        half = x.shape[-1] // 2
        z = fft(x)
        return r2r_local.join_halves(z.real[..., :half], z.imag[..., 1:half + 1]).astype(x.dtype)
    return kernel


def _stand_in_inverse(inverse_fft):
    """The stand-in's way back: one pass builds a half spectrum, then `inverse_fft`."""
    def kernel(y):
        half = y.shape[-1] // 2
        imag = r2r_local.pad_front(y[..., half:])[..., :half + 1]
        spec = jax.lax.complex(y[..., :half + 1], imag)
        return inverse_fft(spec, y.shape).astype(y.dtype)
    return kernel


@contextlib.contextmanager
def stand_in_kernels():
    """Replace darray's local Makhoul kernels by the FFT-plus-one-pass stand-ins while the
    block runs (programs must be traced inside it); restores them and darray's program cache
    on exit, so nothing traced afterwards sees a stand-in."""
    saved = (r2r_local._dct2, r2r_local._dct3, r2r_local_2d._dct2_2d, r2r_local_2d._dct3_2d)
    r2r_local._dct2 = _stand_in_forward(lambda x: jnp.fft.rfft(x, axis=-1))
    r2r_local._dct3 = _stand_in_inverse(lambda s, shape: jnp.fft.irfft(s, n=shape[-1], axis=-1))
    r2r_local_2d._dct2_2d = _stand_in_forward(jnp.fft.rfft2)
    r2r_local_2d._dct3_2d = _stand_in_inverse(lambda s, shape: jnp.fft.irfft2(s, s=shape[-2:]))
    program_cache.clear()
    try:
        yield
    finally:
        (r2r_local._dct2, r2r_local._dct3, r2r_local_2d._dct2_2d,
         r2r_local_2d._dct3_2d) = saved
        program_cache.clear()


def distributed_rows(n, repeats):
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    host = np.random.default_rng(0).standard_normal((n, n, n)).astype(np.float32)
    x = darray.asarray(host, mesh=mesh, spec=("x", "y"))
    rfftn = jax.jit(lambda v: dfft.irfftn(dfft.rfftn(v), s=(n, n, n))).lower(x).compile()
    dctn = jax.jit(lambda v: dfft.idctn(dfft.dctn(v))).lower(x).compile()
    with stand_in_kernels():
        floor = jax.jit(lambda v: dfft.idctn(dfft.dctn(v))).lower(x).compile()
    programs = [("rfftn+irfftn", rfftn, x), ("dctn+idctn", dctn, x),
                ("structure floor", floor, x)]
    med = {k: v[0] for k, v in time_interleaved(programs, repeats, f"{n}^3 on (2, 4)").items()}
    return [make_row(name, f"{n}^3", "2x4", med[name], med[name] / med["rfftn+irfftn"])
            for name, _, _ in programs]


def local_rows(n, rows, repeats):
    """Each op on a `rows x n` block per device, all 8 devices at once (a shard_map with no
    communication): the contention of the distributed programs, where every device's op runs
    on one thread. On one device alone XLA:CPU splits an op over its intra-op threads, and does
    so unevenly (an inverse real FFT measured 2.2-2.7x a forward one there, 1.55x on one core)."""
    mesh = jax.make_mesh((8,), ("d",))
    spec = P("d")
    host = np.random.default_rng(1).standard_normal((8 * rows, n)).astype(np.float32)
    x = jax.device_put(host, NamedSharding(mesh, spec))
    half_spectrum = jax.device_put(np.fft.rfft(host).astype(np.complex64),
                                   NamedSharding(mesh, spec))
    kernel = r2r_local.apply_kernel

    def per_device(fn):
        return jax.jit(compat.shard_map(fn, mesh=mesh, in_specs=spec, out_specs=spec))

    programs = [
        ("rfft", per_device(jnp.fft.rfft), x),
        ("irfft", per_device(lambda s: jnp.fft.irfft(s, n=n)), half_spectrum),
        ("one elementwise pass", per_device(lambda v: v * 2), x),
        ("dct-II kernel", per_device(lambda v: kernel(v, -1, r2r_local.R2RKernel("dct", 2))), x),
        ("dct-III kernel", per_device(lambda v: kernel(v, -1, r2r_local.R2RKernel("dct", 3))),
         x),
    ]
    med = {k: v[0] for k, v in time_interleaved(programs, repeats,
                                                f"{rows}x{n} per device").items()}
    return [make_row(name, f"{rows}x{n}", "8x1", med[name], med[name] / med["rfft"])
            for name, _, _ in programs]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="N of the N^3 array (even)")
    parser.add_argument("--rows", type=int, default=8192,
                        help="rows per device of the local table")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", default=str(default_json_path("bench_r2r_floor")))
    args = parser.parse_args(argv)
    if args.size % 8 or args.size < 8:
        raise SystemExit(f"--size={args.size}: needs a multiple of 8 (an even length that "
                         f"the (2, 4) mesh splits evenly)")
    if jax.device_count() < 8:
        raise SystemExit(f"needs 8 devices, found {jax.device_count()} (set XLA_FLAGS="
                         f"--xla_force_host_platform_device_count=8 before jax starts)")
    load_before = os.getloadavg()[0]
    rows = distributed_rows(args.size, args.repeats) + local_rows(args.size, args.rows,
                                                                  args.repeats)
    print(f"# load average (1 min) before {load_before:.1f}, after {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores; {args.repeats} interleaved rounds; jax {jax.__version__}")
    print(f"{'program':24s} {'size':>12s} {'mesh':>5s} {'median ms':>10s} {'ratio':>7s}")
    for r in rows:
        print(f"{r['program']:24s} {r['size']:>12s} {r['mesh']:>5s} {r['time_ms']:10.2f} "
              f"{r['ratio']:7.2f}")
    print("# ratios: distributed rows over darray rfftn+irfftn; per-device rows over one rfft")
    write_table(rows, args.json, "bench_r2r_floor",
                "darray rfftn+irfftn (distributed), one rfft (per-device)",
                f"r2r cost on XLA:CPU, {args.size}^3 and {args.rows}x{args.size}")
    return rows


if __name__ == "__main__":
    main()
