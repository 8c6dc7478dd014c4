"""Random fields that are the same on any mesh and any number of processes.

Every element's random bits are the Threefry-2x32 hash of the user's key and the element's own
global coordinates, so a draw depends only on (key, shape, dtype): never on the mesh, the spec,
the padding of an uneven split or the process count. Each device hashes the coordinates of its
own block inside shard_map: nothing is generated on one device first, and nothing moves.

The counter of an element is the pair (row, column): ``row`` its row-major index over every axis
but the last, ``column`` its index along the last axis. Both must fit in 32 bits (arrays up to
2**32 - 1 rows of 2**32 - 1 cells). The key is first folded with the rank and extents, so draws
of different shapes from one key are unrelated rather than overlapping.

Why not jax.random on the physical array: its bits are a function of the flat index over the
array it fills, and darray's physical array is padded by an amount that depends on the mesh;
drawing the logical array and padding it afterwards goes through an unevenly sharded
intermediate whose placement XLA chooses (and is mesh-independent only under
jax_threefry_partitionable, a global flag darray should not flip for its users).
"""
from __future__ import annotations

import math
import operator

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry2x32_p

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.engine.placing import canonical, check_dtype, created, shape_tuple
from darray._src.extras.blockwise import block_coordinates
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.placement.placement import make_layout

_U32 = 1 << 32


def _keypair(key, shape) -> jax.Array:
    """The uint32[2] Threefry key for this draw: the user's key folded with rank and extents."""
    if isinstance(key, DistArray) or not isinstance(key, (jax.Array, np.ndarray)):
        raise TypeError(f"key must be a jax.random key (jax.random.key(seed) or "
                        f"jax.random.PRNGKey(seed)), got {type(key).__name__}: {key!r}")
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.shape != ():
            raise ValueError(f"key must be a single key, got a key array of shape {key.shape}")
        impl = str(jax.random.key_impl(key))
        if "threefry" not in impl:
            raise ValueError(f"key uses the PRNG implementation {impl!r}; darray.random needs "
                             "threefry2x32 keys (the default: jax.random.key(seed))")
        data = jax.random.key_data(key)
    else:
        if key.shape != (2,) or key.dtype != np.uint32:
            raise ValueError(f"key must be a jax.random key or a raw uint32[2] key "
                             f"(jax.random.PRNGKey(seed)), got an array of dtype {key.dtype} "
                             f"and shape {key.shape}")
        data = jnp.asarray(key)
    typed = jax.random.wrap_key_data(data, impl="threefry2x32")
    typed = jax.random.fold_in(typed, len(shape))
    for n in shape:
        typed = jax.random.fold_in(typed, n)
    return jax.random.key_data(typed)


def _check_counters(shape):
    rows = math.prod(shape[:-1])
    cols = shape[-1] if shape else 1
    if rows >= _U32 or cols >= _U32:
        raise ValueError(f"shape={shape!r} is too large for darray.random: the rows (product of "
                         f"all but the last extent, {rows}) and the last extent ({cols}) must "
                         f"each be below 2**32")


def _block_bits(layout: Layout, keypair):
    """Inside shard_map: two uint32 words of Threefry output per cell of this device's block."""
    coords = block_coordinates(layout, np.uint32)  # wraps only in padding cells (never read)
    block = tuple(layout.chunk(a) for a in range(layout.ndim))
    row = jnp.zeros((1,) * layout.ndim, np.uint32)
    for axis in range(layout.ndim - 1):
        row = row * np.uint32(layout.shape[axis]) + coords[axis]
    col = coords[-1] if layout.ndim else jnp.zeros((), np.uint32)
    row, col = jnp.broadcast_to(row, block), jnp.broadcast_to(col, block)
    return threefry2x32_p.bind(keypair[0], keypair[1], row, col)


def _unit_float(hi, lo, dtype):
    """Uniform floats in [0, 1) from random words: the top mantissa bits under exponent 0."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8:
        bits = (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)
        utype, mant = np.uint64, 52
    else:
        bits, utype, mant = hi, np.uint32, 23
    width = np.dtype(utype).itemsize * 8
    one = np.array(1.0, dtype).view(utype)
    mantissa = bits >> utype(width - mant)
    return jax.lax.bitcast_convert_type(mantissa | utype(one), dtype) - dtype.type(1)


def _generate(layout: Layout, key, transform, out_dtype):
    """Run `transform` (a name in _TRANSFORMS and its static arguments, hashable so that the
    compiled generator is cached) on the random words of every cell, block by block."""
    keypair = _keypair(key, layout.shape)
    fn = _generator(layout, transform, np.dtype(out_dtype))
    return created(fn(keypair), layout)


@program_cache(SMALL)
def _generator(layout: Layout, transform, out_dtype):
    name, *static = transform

    def body(keypair):
        hi, lo = _block_bits(layout, keypair)
        return _TRANSFORMS[name](*static, hi, lo).astype(out_dtype)

    mapped = compat.shard_map(body, mesh=layout.mesh, in_specs=(jax.sharding.PartitionSpec(),),
                              out_specs=layout.spec, check_vma=False)
    return jax.jit(mapped, out_shardings=physical.sharding_of(layout))


def _float_dtype(dtype, fn_name):
    dt = check_dtype(np.float64 if dtype is None or dtype is float else dtype)
    if dt.kind not in "fc" or dt.itemsize < 4:
        raise TypeError(f"{fn_name}: dtype={dtype!r} is not accepted; use "
                        "darray.float32, darray.float64, complex64 or complex128")
    return dt


def _scalar(value, argname, fn_name):
    if isinstance(value, (DistArray, jax.Array, np.ndarray)) and np.ndim(value) != 0:
        raise TypeError(f"{fn_name}: {argname} must be a scalar, got an array of shape "
                        f"{np.shape(value)}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{fn_name}: {argname}={value!r} must be a real number") from None


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0, *, mesh=None,
            spec=None) -> DistArray:
    """Uniform samples in ``[minval, maxval)``, the same for any mesh and process count.

    Args:
      key: a jax.random key (``jax.random.key(seed)``, or a raw ``jax.random.PRNGKey(seed)``).
      shape: the logical global shape.
      dtype: a real floating dtype (default float64, float32 without jax_enable_x64).
      minval, maxval: the interval (Python scalars).
      mesh, spec: where the array goes (as in `darray.asarray`).

    Layout:
      As requested; no communication (each device hashes its own cells' coordinates).

    Example:
      >>> u = darray.random.uniform(jax.random.key(0), (13, 10), mesh=(2, 4))
    """
    dt = _float_dtype(dtype, "uniform")
    if dt.kind == "c":
        raise TypeError(f"uniform: dtype={dtype!r} is complex; use a real floating dtype")
    lo, hi = _scalar(minval, "minval", "uniform"), _scalar(maxval, "maxval", "uniform")
    if not lo < hi:
        raise ValueError(f"uniform: needs minval < maxval, got minval={lo!r}, maxval={hi!r}")
    shape = shape_tuple(shape)
    _check_counters(shape)
    return _generate(make_layout(shape, mesh, spec, dtype=dt, what="darray.random.uniform"),
                     key, ("uniform", dt, lo, hi), dt)


def _uniform_transform(dt, lo, hi, w0, w1):
    u = _unit_float(w0, w1, dt)
    # Scaling can round up to maxval; keep the interval half-open as documented.
    out = u * dt.type(hi - lo) + dt.type(lo)
    return jnp.minimum(out, jnp.asarray(np.nextafter(dt.type(hi), dt.type(lo)), dt))


def normal(key, shape=(), dtype=None, *, mesh=None, spec=None) -> DistArray:
    """Standard normal samples, the same for any mesh and process count.

    Real dtypes: N(0, 1) by the inverse error function of a uniform in (-1, 1). Complex dtypes:
    real and imaginary parts independent N(0, 1/2) (unit variance of the complex value), drawn
    from two keys derived from `key`.

    Args and Layout: as `uniform` (dtype may also be complex64 or complex128).
    """
    dt = _float_dtype(dtype, "normal")
    shape = shape_tuple(shape)
    _check_counters(shape)
    layout = make_layout(shape, mesh, spec, dtype=dt, what="darray.random.normal")
    if dt.kind == "c":
        real = canonical(np.float64 if dt.itemsize == 16 else np.float32)
        k_re, k_im = _split_key(key)
        re = _generate(layout, k_re, ("normal", real), real)
        im = _generate(layout, k_im, ("normal", real), real)
        scale = real.type(np.sqrt(0.5))
        data = _combine_complex(layout, dt)(re.data, im.data, scale)
        return created(data, layout)
    return _generate(layout, key, ("normal", dt), dt)


def _split_key(key):
    """Two keys for the real and imaginary parts, derived the same way on every mesh."""
    base = jax.random.wrap_key_data(_keypair(key, ()), impl="threefry2x32")
    return jax.random.fold_in(base, 1), jax.random.fold_in(base, 2)


@program_cache(SMALL)
def _combine_complex(layout: Layout, dt):
    return jax.jit(lambda re, im, s: jax.lax.complex(re * s, im * s).astype(dt),
                   out_shardings=physical.sharding_of(layout))


def _normal_transform(dt, w0, w1):
    u = _unit_float(w0, w1, dt)  # [0, 1)
    lo = np.nextafter(dt.type(-1), dt.type(0))  # open at -1: erfinv(-1) is -inf
    v = jnp.maximum(u * dt.type(2) - dt.type(1), dt.type(lo))
    return dt.type(np.sqrt(2)) * jax.lax.erf_inv(v)


def integers(key, low, high=None, shape=(), dtype=None, *, mesh=None, spec=None) -> DistArray:
    """Random integers in ``[low, high)`` (numpy Generator.integers with endpoint=False), the
    same for any mesh and process count.

    Args:
      key: a jax.random key.
      low, high: the bounds (Python ints); with ``high=None`` the range is ``[0, low)``.
      shape: the logical global shape.
      dtype: an integer dtype (default int64, int32 without jax_enable_x64).
      mesh, spec: where the array goes.

    Each value is a 64-bit random word reduced modulo the range size (bias below 2**-32 for
    ranges up to 2**32).

    Layout: as requested; no communication.
    """
    dt = check_dtype(np.int64 if dtype is None or dtype is int else dtype)
    if dt.kind not in "iu":
        raise TypeError(f"integers: dtype={dtype!r} is not an integer dtype; use e.g. "
                        "darray.int32 or darray.int64")
    if high is None:
        low, high = 0, low
    try:
        low, high = operator.index(low), operator.index(high)
    except TypeError:
        raise TypeError(f"integers: low={low!r} and high={high!r} must be Python ints") from None
    info = np.iinfo(dt)
    if not low < high:
        raise ValueError(f"integers: needs low < high, got low={low}, high={high}")
    if low < info.min or high - 1 > info.max:
        raise ValueError(f"integers: [low, high) = [{low}, {high}) does not fit dtype {dt} "
                         f"([{info.min}, {info.max}])")
    shape = shape_tuple(shape)
    _check_counters(shape)
    return _generate(make_layout(shape, mesh, spec, dtype=dt, what="darray.random.integers"),
                     key, ("integers", dt, low, high - low), dt)


def _integers_transform(dt, low, span, w0, w1):
    if jax.config.jax_enable_x64:
        word = (w0.astype(np.uint64) << np.uint64(32)) | w1.astype(np.uint64)
        offset = word if span == 1 << 64 else word % np.uint64(span)  # full uint64 range
        # offset < span <= 2**64; adding low in the unsigned domain wraps to the right value,
        # which the bitcast reads back as a signed number where dt is signed.
        value = offset + np.uint64(low % (1 << 64))
        if dt.kind == "i":
            value = jax.lax.bitcast_convert_type(value, np.int64)
        return value.astype(dt)
    # 32-bit words only: (w0 * 2**32 + w1) mod span from 32-bit pieces, every step < 2**32.
    if span == _U32:  # the full 32-bit range: every word is already uniform
        offset = w1
        value = offset + np.uint32(low % _U32)
        return (jax.lax.bitcast_convert_type(value, np.int32) if dt.kind == "i"
                else value).astype(dt)
    s = np.uint32(span)
    mult = np.uint32(_U32 % span)
    a = _mulmod32(w0 % s, mult, span)
    offset = (a + w1 % s) % s if span <= (1 << 31) else _addmod32(a, w1 % s, span)
    value = offset + np.uint32(low % _U32)
    if dt.kind == "i":
        value = jax.lax.bitcast_convert_type(value, np.int32)
    return value.astype(dt)


_TRANSFORMS = {"uniform": _uniform_transform, "normal": _normal_transform,
               "integers": _integers_transform}


def _mulmod32(a, b, m):
    """a * b mod m for uint32 arrays a, b < m, by double-and-add (m < 2**32, no overflow)."""
    out = jnp.zeros_like(a)
    for bit in range(31, -1, -1):
        out = _addmod32(out, out, m)
        out = jnp.where((b >> np.uint32(bit)) & np.uint32(1), _addmod32(out, a, m), out)
    return out


def _addmod32(a, b, m):
    m = np.uint32(m)
    return jnp.where(a >= m - b, a - (m - b), a + b)
