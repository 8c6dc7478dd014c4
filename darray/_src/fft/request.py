"""One FFT call as the routes below the entry points see it: a frozen, hashable `Request`.

The entry points (fft/api.py, mixed.py, padding, the jaxDecomp shim) check their arguments in
numpy's or scipy's terms and hand one `Request` down; planning (fft/core.py), the compiled
programs (keyed by it) and the split-axis route (split_axis.py) read it, so no route takes the
call apart into a long list of arguments again.
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Request:
    """What to compute.

    axes: distinct transform axes; for r2c/c2r the last is the halved axis.
    sizes: transform length per axis (numpy's ``s``; c2r: the real output length; r2r: each
      kernel's output length).
    kind: "c2c", "r2c", "c2r" or "r2r".
    inverse: the c2c direction; for r2r, retrace a forward plan (idct of a dct's output).
    norm: "backward", "ortho" or "forward".
    cast: the dtype the input is cast to first, None to take it as it is.
    conj_in, conj_out: conjugate the input / the output (hfft, ihfft).
    kernels: one hashable kernel per axis, where the local stages run kernels instead of plain
      FFTs: r2r (required), padded (dealiasing) and mixed transforms.
    """
    axes: tuple[int, ...]
    sizes: tuple[int, ...]
    kind: str
    inverse: bool
    norm: str = "backward"
    cast: np.dtype | None = None
    conj_in: bool = False
    conj_out: bool = False
    kernels: tuple = ()

    def __post_init__(self):
        # canonical, so that equal calls key one compiled program
        object.__setattr__(self, "axes", tuple(int(a) for a in self.axes))
        object.__setattr__(self, "sizes", tuple(int(n) for n in self.sizes))
        object.__setattr__(self, "inverse", bool(self.inverse))
        object.__setattr__(self, "kernels", tuple(self.kernels))
        if self.cast is not None:
            object.__setattr__(self, "cast", np.dtype(self.cast))

    def taking(self, dtype) -> Request:
        """This request for an input of `dtype`: no cast where it is that dtype already (so
        one program serves both spellings of the call)."""
        if self.cast is not None and np.dtype(self.cast) == np.dtype(dtype):
            return dataclasses.replace(self, cast=None)
        return self


__all__ = ["Request"]
