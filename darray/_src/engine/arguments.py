"""The argument policy's first half: what a public function accepts where it takes an array
(as jax.numpy's ensure_arraylike). The second half, placement, is `common.ensure_array`
(darray.asarray's rule). Kept apart from engine/common.py so that api/creation.py, which common
calls for the placement, can use it without an import cycle."""
from __future__ import annotations

import jax
import numpy as np

from darray._src.distarray.array import DistArray

_PY_SCALARS = (bool, int, float, complex)
_FOREIGN_ARRAYS = (np.ndarray, np.generic, jax.Array)


def array_operand(fname: str, x, argname: str = "x"):
    """`x` as an operand of the public function `fname` (as jax.numpy's ensure_arraylike): a
    DistArray, a Python scalar, or a numpy or jax array (tracers included) of a dtype darray
    holds pass unchanged; anything else (lists, strings...) is a TypeError naming `fname`,
    as jax.numpy refuses them. Elementwise functions keep the scalars and foreign arrays as
    they are (they broadcast against the DistArray operands, placed where those are, see
    engine/operands.py); functions that need an array call `ensure_array`."""
    if isinstance(x, DistArray) or isinstance(x, _PY_SCALARS):
        return x
    if isinstance(x, _FOREIGN_ARRAYS):
        if np.dtype(x.dtype).kind not in "biufc":
            raise TypeError(f"{fname}: {argname} has dtype {x.dtype}, which darray does not "
                            "hold (bool, integer, real or complex)")
        return x
    raise TypeError(f"{fname}: {argname} must be an array (a DistArray, a numpy or jax array) "
                    f"or a Python scalar, got {type(x).__name__}; convert it with "
                    "darray.asarray")
