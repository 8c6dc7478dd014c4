"""The argument policy: one rule for every namespace function, method and extension.

`array_operand` says what a public function accepts where it takes an array (as jax.numpy's
ensure_arraylike); `ensure_array` adds the placement (darray.asarray's rule) where the
function needs a DistArray; `refuse_out` turns away numpy's `out=` buffers. The rule for
operands on different meshes is engine/operands.py's.
"""
from __future__ import annotations

import jax
import numpy as np

from darray._src.distarray.array import DistArray
from darray._src.engine.placing import asarray

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


def ensure_array(fname: str, x, argname: str = "x", *, spec=None) -> DistArray:
    """`x` as a DistArray, for the public function `fname` where it needs an array: a
    DistArray passes; a numpy or jax array or a Python scalar is placed as `darray.asarray(x)`
    places it (the default mesh, or the one device of small arrays; uncommitted, so it joins
    the mesh of any committed operand: engine/operands.py), as jax.numpy places host data; the
    rest is refused by `array_operand`.

    spec: the one exception, for a function whose docs place host data otherwise (fft's
    dct/dst family puts a 1-D signal whole on every device: ``asarray(x, spec=(None,))``)."""
    if isinstance(x, DistArray):
        return x
    x = array_operand(fname, x, argname)
    return asarray(x) if spec is None else asarray(x, spec=spec)


def refuse_out(out, fname: str) -> None:
    """numpy's `out=` argument, accepted only as None: darray has no output buffers (a
    DistArray is immutable data plus a layout, as a jax.Array is). `fname` is the call as the
    user wrote it (``"nansum"``, ``"x.sum"``)."""
    if out is not None:
        raise TypeError(f"{fname}(out=...) is not supported: darray functions return a new "
                        f"array, as jax.numpy's do (got out={out!r}); use the returned array, "
                        f"or write it into an existing one with out[...] = result")
