"""Array creation: every function here creates data directly in its final sharding.

Only `asarray` of host data passes through host memory, and even then each device receives only
its own block. All functions take the Array API arguments plus keyword-only ``mesh`` (a
`jax.sharding.Mesh`) and ``spec`` (a tuple or PartitionSpec naming the mesh axis for each array
axis). Without them, arrays go on a 1D mesh over all devices, split along one axis.
"""
from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.arguments import array_operand
from darray._src.engine.placing import (
    asarray as asarray,
)
from darray._src.engine.placing import (
    canonical,
    check_dtype,
    created,
    shape_tuple,
)
from darray._src.engine.placing import (
    redistribute as redistribute,
)
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.placement.placement import make_layout

# what `full` accepts as fill_value
_SCALARS = (bool, int, float, complex, np.generic)


def _full(shape, fill_value, dtype, device, mesh, spec, like=None, what="darray.full") -> DistArray:
    shape = shape_tuple(shape)
    layout = make_layout(shape, mesh, spec, device, like=like, dtype=dtype, what=what)
    try:
        # The value is a runtime input: one compilation per (layout, dtype, value type), not
        # one per fill value (clients call full with data-dependent values).
        data = _fill_fn(layout, np.dtype(dtype))(fill_value)
    except (OverflowError, TypeError):  # e.g. a Python int beyond int64: bake it in instead
        data = physical.filled(layout, fill_value, dtype)
    return created(data, layout)


@program_cache(SMALL)
def _fill_fn(layout: Layout, dtype):
    shape = layout.physical_shape
    return jax.jit(lambda value: jnp.full(shape, value, dtype),
                   out_shardings=physical.sharding_of(layout))


def default_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(value, (int, np.integer)):
        return canonical(np.int64)
    if isinstance(value, complex):
        return canonical(np.complex128)
    return canonical(np.float64)


def zeros(shape, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """An array of zeros. Layout: as requested; no communication."""
    dtype = check_dtype(dtype) or default_dtype(0.0)
    return _full(shape, 0, dtype, device, mesh, spec, what="darray.zeros")


def ones(shape, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """An array of ones. Layout: as requested; no communication."""
    dtype = check_dtype(dtype) or default_dtype(0.0)
    return _full(shape, 1, dtype, device, mesh, spec, what="darray.ones")


def empty(shape, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """An uninitialised array (zeros here: XLA has no uninitialised buffers)."""
    return zeros(shape, dtype=dtype, device=device, mesh=mesh, spec=spec)


def full(shape, fill_value, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """An array filled with `fill_value`. Layout: as requested; no communication."""
    if isinstance(fill_value, DistArray):
        fill_value = fill_value.to_jax().item()
    elif isinstance(fill_value, jax.Array) and fill_value.ndim == 0:  # a darray 0-d result
        fill_value = fill_value.item()
    if not isinstance(fill_value, _SCALARS):
        raise TypeError(f"fill_value must be a Python scalar, got {type(fill_value).__name__}")
    dtype = check_dtype(dtype) or default_dtype(fill_value)
    return _full(shape, fill_value, dtype, device, mesh, spec)


def _like(fname, x, dtype, device, mesh, spec):
    if not isinstance(x, DistArray):  # the argument policy (engine/arguments.py)
        x = asarray(array_operand(fname, x))
    return x, (check_dtype(dtype) or x.dtype), device, mesh, spec


def zeros_like(x, /, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """Zeros with `x`'s shape, dtype and layout (unless overridden)."""
    x, dtype, device, mesh, spec = _like("zeros_like", x, dtype, device, mesh, spec)
    return _full(x.shape, 0, dtype, device, mesh, spec, like=x, what="darray.zeros_like")


def ones_like(x, /, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """Ones with `x`'s shape, dtype and layout (unless overridden)."""
    x, dtype, device, mesh, spec = _like("ones_like", x, dtype, device, mesh, spec)
    return _full(x.shape, 1, dtype, device, mesh, spec, like=x, what="darray.ones_like")


def empty_like(x, /, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """Like `zeros_like` (XLA has no uninitialised buffers)."""
    return zeros_like(x, dtype=dtype, device=device, mesh=mesh, spec=spec)


def full_like(x, /, fill_value, *, dtype=None, device=None, mesh=None, spec=None) -> DistArray:
    """`fill_value` with `x`'s shape, dtype and layout (unless overridden)."""
    x, dtype, device, mesh, spec = _like("full_like", x, dtype, device, mesh, spec)
    if isinstance(fill_value, DistArray):  # a 0-d result, as `full` takes it
        fill_value = fill_value.to_jax().item()
    return _full(x.shape, fill_value, dtype, device, mesh, spec, like=x, what="darray.full_like")


def _generated(layout: Layout, dtype, make, static=(), *args):
    """Run `make(padded_shape, *static, *args)` (an iota-style generator, a module-level function)
    compiled straight into the sharding. Values passed in `args` are runtime inputs: XLA cannot
    fold them, and new values reuse the compilation for (make, layout, dtype, static)."""
    return created(_generator_fn(make, layout, np.dtype(dtype), static)(*args), layout)


@program_cache(SMALL)
def _generator_fn(make, layout: Layout, dtype, static):
    padded = layout.padded_shape
    return jax.jit(lambda *a: make(padded, *static, *a).astype(dtype),
                   out_shardings=physical.sharding_of(layout))


def _runtime_scalar(value, dtype):
    """A scalar argument for a compiled generator: Python scalars go in as they are (jit keeps
    them weakly typed and caches by type), ints as floats for a floating `dtype` so that
    linspace(0, 1, n) and linspace(0.5, 2.5, n) share one compilation; anything else becomes a
    jax scalar of `dtype`."""
    if isinstance(value, (bool, int)) and np.dtype(dtype).kind in "fc":
        return float(value)
    if isinstance(value, (bool, int, float, complex)):
        return value
    return jnp.asarray(value, dtype)


def _arange_make(padded, wide, start, step):
    return start + step * jnp.arange(padded[0], dtype=wide)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None, mesh=None,
           spec=None) -> DistArray:
    """Evenly spaced values in [start, stop). Layout: 1D as requested; no communication."""
    # the length depends on the values, so 0-d arrays (e.g. darray.argmax results) are read
    # as Python scalars first: their type then picks numpy's default dtype (int stays int)
    start, stop, step = (_python_scalar(v) for v in (start, stop, step))
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange step must not be 0")
    n = max(0, int(np.ceil((stop - start) / step)))
    if dtype is None:
        dtype = default_dtype(start + stop + step if all(
            isinstance(v, (int, np.integer)) for v in (start, stop, step)) else 0.0)
    dtype = check_dtype(dtype)
    layout = make_layout((n,), mesh, spec, device, dtype=dtype, what="darray.arange")
    wide = _wide(dtype)
    return _generated(layout, dtype, _arange_make, (wide,), _runtime_scalar(start, wide),
                      _runtime_scalar(step, wide))


def _python_scalar(value):
    """A 0-d DistArray / jax / numpy array as the Python scalar it holds; others unchanged."""
    if isinstance(value, (DistArray, jax.Array, np.ndarray, np.generic)) and np.ndim(value) == 0:
        return value.item()
    return value


def _wide(dtype):
    """Compute generators in a precise type, then cast (numpy computes in float64/int64)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return canonical(np.complex128)
    if dtype.kind == "f":
        return canonical(np.float64)
    return canonical(np.int64) if dtype.kind in "iu" else dtype


def _linspace_make(padded, wide, num, div, endpoint, floor, start, stop):
    start, stop = jnp.asarray(start, wide), jnp.asarray(stop, wide)
    i = jnp.arange(padded[0], dtype=wide)
    if div <= 0:
        return start + 0 * i
    # numpy's formula, then `stop` written into the last cell. start/stop are runtime
    # inputs: as constants, XLA CPU's fast-math folds the partitioned write of `stop` into
    # start + i*step (measured: linspace(1, 0, 4)[-1] came out 5.6e-17, not 0).
    vals = start + i * ((stop - start) / div)
    if endpoint and num > 1:
        vals = jax.lax.dynamic_update_slice(vals, jnp.full((1,), stop, wide), (num - 1,))
    return jnp.floor(vals) if floor else vals


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True, mesh=None,
             spec=None) -> DistArray:
    """`num` evenly spaced samples from start to stop. Layout: 1D; no communication.

    An integer `dtype` gets numpy's answer: samples computed in floating point, then rounded
    toward -inf."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace num={num} must be >= 0")
    dtype = check_dtype(dtype) or default_dtype(complex(0) if isinstance(
        start, complex) or isinstance(stop, complex) else 0.0)
    layout = make_layout((num,), mesh, spec, device, dtype=dtype, what="darray.linspace")
    div = (num - 1) if endpoint else num
    # numpy's rule for other dtypes: samples computed in float64, integers rounded toward -inf
    wide = _wide(dtype) if dtype.kind in "fc" else canonical(np.float64)
    floor = dtype.kind in "iu"
    return _generated(layout, dtype, _linspace_make, (wide, num, div, bool(endpoint), floor),
                      _runtime_scalar(start, wide), _runtime_scalar(stop, wide))


def _eye_make(padded, k):
    rows = jax.lax.broadcasted_iota(np.int32, padded, 0)
    cols = jax.lax.broadcasted_iota(np.int32, padded, 1)
    return cols - rows == k


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None, mesh=None,
        spec=None) -> DistArray:
    """Ones on the k-th diagonal. Layout: 2D as requested; no communication."""
    n_cols = n_rows if n_cols is None else n_cols
    dtype = check_dtype(dtype) or default_dtype(0.0)
    layout = make_layout(shape_tuple((n_rows, n_cols)), mesh, spec, device, dtype=dtype,
                         what="darray.eye")
    # k is a runtime input (an out-of-range k simply matches no cell); int32 like the iotas
    return _generated(layout, dtype, _eye_make, (), np.int32(np.clip(operator.index(k),
                                                                      -2**31, 2**31 - 1)))
