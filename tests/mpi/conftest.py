"""Shared by the MPI tests: an MPI-enabled build of darray._native, and a bounded mpiexec.

The default install builds without MPI, so the slow tests compile their own copy of the module
with -DDARRAY_ENABLE_MPI=ON into a temporary directory (needs cmake, nanobind, mpi4py and an MPI
with mpicc, e.g. `pip install mpich mpi4py nanobind`; about 40 s on two idle cores) and load it
in the workers by path.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="session")
def mpi_native(tmp_path_factory):
    """The path of a darray._native built with DARRAY_ENABLE_MPI=ON (skips without the tools)."""
    pytest.importorskip("mpi4py", reason="the MPI tests need mpi4py")
    pytest.importorskip("nanobind", reason="building the MPI-enabled module needs nanobind")
    for tool in ("cmake", "mpiexec"):
        if shutil.which(tool) is None:
            pytest.skip(f"the MPI tests need {tool} on PATH")
    build = tmp_path_factory.mktemp("native_mpi")
    configure = ["cmake", "-S", ROOT, "-B", str(build), f"-DPython_EXECUTABLE={sys.executable}",
                 "-DDARRAY_ENABLE_MPI=ON", "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    for cmd in (configure, ["cmake", "--build", str(build)]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}{out.stderr}"
    (so,) = glob.glob(str(build / "_native*.so"))
    return so
