"""Shared setup for the darray examples: virtual devices, output folder, figures, self-checks.

Every example imports this module first, so 8 virtual CPU devices exist before jax starts (on a
laptop the examples are still distributed). A real GPU/TPU machine keeps its own devices: set
XLA_FLAGS yourself to override.
"""
from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

# The numpy references are float64; so are the examples' checks where they say so.
jax.config.update("jax_enable_x64", True)

import matplotlib  # noqa: E402

# Agg: no display needed (CI, clusters); the figure goes to a PNG file.
matplotlib.use("Agg")

OUTPUT_ENV = "DARRAY_EXAMPLES_OUT"
DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "_output"


def parse_args(description: str, argv=None) -> argparse.Namespace:
    """--out DIR (default $DARRAY_EXAMPLES_OUT, else examples/_output/)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", default=os.environ.get(OUTPUT_ENV, str(DEFAULT_OUT)),
                        help=f"folder for the figure (default ${OUTPUT_ENV} or {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    args.out = pathlib.Path(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def mesh_2d():
    """A 2-D ("x", "y") mesh over every device: 2x4 on the default 8 virtual CPU devices,
    2 x n/2 on any even count (GPUs), 1 x n otherwise. Both axes of a 2-D or 3-D grid split."""
    n = jax.device_count()
    shape = (2, n // 2) if n % 2 == 0 else (1, n)
    return jax.make_mesh(shape, ("x", "y"))


def save_figure(fig, out: pathlib.Path, name: str) -> pathlib.Path:
    path = out / name
    fig.savefig(path, dpi=80, bbox_inches="tight")
    print(f"figure: {path}")
    return path


class Checks:
    """Collects named pass/fail checks; `finish()` prints them and returns the exit status."""

    def __init__(self, name: str):
        self.name = name
        self.failed = []
        self.t0 = time.perf_counter()

    def check(self, label: str, ok: bool, detail: str = "") -> None:
        print(f"  [{'ok' if ok else 'FAILED'}] {label}{': ' + detail if detail else ''}")
        if not ok:
            self.failed.append(label)

    def finish(self) -> int:
        elapsed = time.perf_counter() - self.t0
        if self.failed:
            print(f"{self.name}: SELF-CHECK FAILED ({', '.join(self.failed)}) in {elapsed:.1f} s")
            return 1
        print(f"{self.name}: SELF-CHECK PASSED in {elapsed:.1f} s")
        return 0


def wavenumbers(k_layout, real_shape, box=1.0):
    """The angular wavenumbers (k_0, ..., k_last) of an rfftn grid, each a DistArray of the full
    k-space shape in the layout `k_layout` (the layout rfftn returned), so that arithmetic with
    the transform needs no data movement. Entries follow numpy's fftfreq/rfftfreq order (the
    Nyquist frequency negative on full axes)."""
    import jax.numpy as jnp

    import darray  # after the environment above is set

    shape = tuple(k_layout.shape)
    ndim = len(shape)

    def component(axis):
        n = real_shape[axis]
        scale = 2 * np.pi / box

        def fn(*index):
            i = index[axis]
            k = i if axis == ndim - 1 else jnp.where(i < (n + 1) // 2, i, i - n)
            return k * scale
        return darray.fromfunction(fn, shape, dtype=darray.float64, mesh=k_layout.mesh,
                                   spec=k_layout.spec)
    return tuple(component(a) for a in range(ndim))


def numpy_wavenumbers(real_shape, box=1.0):
    """The same wavenumbers as `wavenumbers`, as broadcastable float64 numpy arrays."""
    ndim = len(real_shape)
    out = []
    for axis, n in enumerate(real_shape):
        freq = np.fft.rfftfreq(n, box / n) if axis == ndim - 1 else np.fft.fftfreq(n, box / n)
        out.append((2 * np.pi * freq).reshape([-1 if a == axis else 1 for a in range(ndim)]))
    return tuple(out)
