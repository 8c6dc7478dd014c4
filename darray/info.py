"""``python -m darray.info [--check]``: what this darray install runs, on one screen.

Versions (darray, jax, jaxlib, numpy), platform, devices, processes and the detected launcher,
x64 and darray's options in force, each native backend (built or not, usable here or not, and
why), and the MPI library and launchers on PATH. ``--check`` also runs a small distributed FFT
round trip and a halo exchange against numpy and prints ok or the difference (exit status 1 on
a difference). Paste its output into a bug report; run it first on a new cluster.

This module only re-exports; the code is in darray._src.extras.diagnostics.
"""
from darray._src.extras.diagnostics import collect as collect
from darray._src.extras.diagnostics import main as main
from darray._src.extras.diagnostics import self_check as self_check

__all__ = ["collect", "main", "self_check"]

if __name__ == "__main__":
    raise SystemExit(main())
