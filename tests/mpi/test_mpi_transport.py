"""Covers: darray/_src/backends/mpi_transport.py, darray/_src/base/native.py

The MPI transport (csrc/mpi_all_to_all.cc) under `mpiexec -n 2` and `-n 4` (slow tier).

The default install builds without MPI, so this test compiles its own copy of darray._native
with -DDARRAY_ENABLE_MPI=ON into a temporary directory (CMake, nanobind, an MPI with mpicc such
as the mpich wheel, and mpi4py), then runs mpi_worker.py on every rank: the exchange against
numpy, two chained exchanges in one program, vmap of both exchanges, a slab fftn against
numpy.fft.fftn, error paths, and ranks that reach different exchanges (a rank-dependent order in
one jit; two jitted exchanges called in a different order per rank) getting an error on every
rank instead of mixed data, after which the process still exchanges correctly.
"""
from __future__ import annotations

import pytest
from mpi_launch import mpiexec


@pytest.mark.slow
@pytest.mark.multiprocess
@pytest.mark.parametrize("ranks", [2, 4])
def test_transport_under_mpiexec(mpi_native, ranks):
    out = mpiexec(ranks, "mpi_worker.py", mpi_native, timeout_s=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    for check in ("exchange", "ordering", "vmap", "fftn", "errors", "mismatch"):
        done = {line for line in out.stdout.splitlines() if line.endswith(f" ok {check}")}
        assert done == {f"{r} ok {check}" for r in range(ranks)}, (check, out.stdout)


def test_default_build_has_the_transport_and_links_no_mpi():
    import subprocess

    import darray._native
    from darray._src.backends import mpi_transport
    from darray._src.base import native
    info = native.build_info()
    assert info["mpi"] is True and mpi_transport.available()
    assert {mpi_transport.TARGET, mpi_transport.SENDRECV_TARGET} <= set(info["targets"])
    linked = subprocess.run(["ldd", darray._native.__file__], capture_output=True, text=True,
                            timeout=60).stdout
    assert "libc." in linked and "libmpi" not in linked, linked  # MPI comes at run time
