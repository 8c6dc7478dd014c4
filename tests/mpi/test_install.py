"""Covers: none (pip install of the package and its mpi extra)

`pip install darray` then `pip install 'darray[mpi]'`, as a new user does (slow tier).

In a fresh `python -m venv` (never activated: its bin/ is not on PATH, pip is called as
venv/bin/pip) darray is installed from a copy of this checkout. Plain: the module links no MPI
library, build_info() says the MPI handlers are there but no MPI library is, and selecting the
"mpi" backend raises with the fix. With the extra: `venv/bin/mpiexec -n 2` runs fftn on the "mpi"
backend on every rank against numpy (install_worker.py), bounded by a timeout that kills every
rank. Needs a C++ compiler, CMake and network access to the package index (pip builds darray).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from mpi_launch import HERE, ROOT, run_bounded

PLAIN = r"""
import sys
import darray
from darray._src.backends.registry import BackendUnavailableError, select_fft_backend
info = darray.build_info()
assert info["mpi"] is True and "mpi4py is not installed" in info["mpi_library"], info
try:
    select_fft_backend("mpi")
except BackendUnavailableError as err:
    assert "pip install 'darray[mpi]'" in str(err), err
    print("PLAIN ok", darray.__file__)
"""


def _source_copy(dest):
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if os.path.isfile(os.path.join(ROOT, name)) and not name.startswith("darray/_native"):
            os.makedirs(os.path.dirname(os.path.join(dest, name)) or dest, exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), os.path.join(dest, name))
    return dest


@pytest.mark.slow
@pytest.mark.multiprocess
def test_pip_install_then_mpi_extra_gives_the_mpi_backend(tmp_path):
    if shutil.which("git") is None:
        pytest.fail("this test needs git (to list the checkout's files)")
    src = _source_copy(str(tmp_path / "src"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bin_ = venv / "bin"
    env = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": "/usr/bin:/bin",
           "JAX_PLATFORMS": "cpu"}  # not activated: the venv's bin/ is not on PATH
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONFIG_FILE"):
        if name in os.environ:
            env[name] = os.environ[name]

    out = run_bounded([str(bin_ / "pip"), "install", "-q", src], 1500, env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (so,) = [os.path.join(d, f) for d, _, fs in os.walk(venv) for f in fs
             if f.startswith("_native") and f.endswith(".so")]
    linked = subprocess.run(["ldd", so], capture_output=True, text=True).stdout
    assert "libmpi" not in linked, linked
    out = run_bounded([str(bin_ / "python"), "-c", PLAIN], 300, env=env, cwd=str(tmp_path))
    assert out.returncode == 0 and "PLAIN ok" in out.stdout, out.stdout + out.stderr[-3000:]
    assert str(venv) in out.stdout, out.stdout  # darray came from the venv, not the checkout

    out = run_bounded([str(bin_ / "pip"), "install", "-q", f"{src}[mpi]"], 1500, env=env,
                      cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    out = run_bounded([str(bin_ / "mpiexec"), "-n", "2", str(bin_ / "python"),
                       os.path.join(HERE, "install_worker.py")], 600,
                      env=dict(env, DARRAY_SOURCE_TREE=ROOT), cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for check in ("build_info", "fftn"):
        done = {line.split(" ok")[0] for line in out.stdout.splitlines() if f" ok {check}" in line}
        assert done == {"RANK 0", "RANK 1"}, (check, out.stdout)
    assert "library=MPICH" in out.stdout, out.stdout
