"""Shared by the MPI tests: a darray._native with the MPI handlers, and a bounded mpiexec.

Every default build has the MPI handlers (they resolve MPI at run time from the library mpi4py
loads, csrc/mpi_api.h), so the installed module is used; a module built with
DARRAY_ENABLE_MPI=OFF makes the fixture compile its own copy with cmake into a temporary
directory (needs cmake and nanobind, no MPI; about 40 s on two idle cores). The workers load
the module by path.
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
    """The path of a darray._native with the MPI handlers (skips without the tools)."""
    pytest.importorskip("mpi4py", reason="the MPI tests need mpi4py (`pip install 'darray[mpi]'`)")
    if shutil.which("mpiexec") is None:
        pytest.skip("the MPI tests need mpiexec on PATH (`pip install 'darray[mpi]'`)")
    from darray._src.base import native
    if native.build_info().get("mpi"):
        import darray._native
        return darray._native.__file__
    pytest.importorskip("nanobind", reason="building the MPI-enabled module needs nanobind")
    if shutil.which("cmake") is None:
        pytest.skip("building the MPI-enabled module needs cmake on PATH")
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
