"""Placing data: `asarray` and `redistribute`, the one way every array reaches its layout.

Host data goes through host memory once, each device receiving only its own block; a
DistArray or jax.Array moves by one jitted program (blocks, padding or a whole redistribution).
Every namespace section places its operands here (engine/arguments.py's `ensure_array`), so this
sits in the engine, below api/creation.py, which lists `asarray` with the standard's creation
functions.
"""
from __future__ import annotations

import math
import operator

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base import compat
from darray._src.base.program_cache import SMALL, program_cache
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout
from darray._src.placement import physical
from darray._src.placement.placement import local_mesh, make_layout


def created(data, layout: Layout) -> DistArray:
    """A new array from a creation function (a 0-d one stays a DistArray, like op results)."""
    if layout.ndim == 0 and layout.mesh is not local_mesh():
        if tuple(data.shape) != ():
            raise ValueError(f"physical data of shape {tuple(data.shape)} is not 0-d")
        return DistArray._make(data, layout)
    return DistArray._new(data, layout)


def canonical(dtype) -> np.dtype:
    """The dtype JAX will actually store (64-bit types shrink unless jax_enable_x64 is on)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.dtype(dtype)))


def check_dtype(dtype, argname="dtype"):
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{argname}={dtype!r} is not a dtype; use one of the darray dtypes "
                        "(e.g. darray.float32)") from None
    if dt.kind not in "biufc":
        raise TypeError(f"{argname}={dtype!r} is not supported: darray holds bool, integer, "
                        "real and complex floating dtypes")
    return canonical(dt)


def shape_tuple(shape, argname="shape") -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{argname}={shape!r} must be an int or a tuple of ints") from None
    if any(n < 0 for n in out):
        raise ValueError(f"{argname}={out!r} has a negative extent")
    return out


def redistribute(x: DistArray, layout: Layout, dtype=None) -> DistArray:
    """`x` in `layout` (and `dtype`): the one way darray moves an array's data.

    Block-wise on every path, so no device ever holds much more than its own blocks:

    - on the same device assignment, one compiled resharding;
    - onto another assignment with as many devices, a compiled resharding within the source
      assignment into a *proxy* layout (the target's mesh shape and split, laid over the
      source devices in their order), whose blocks then map 1:1 onto the target devices;
      `jax.device_put` copies each block to its target device (JAX reorders the shards
      in place when the device sets are equal);
    - onto a different number of devices, the target's blocks are cut one at a time on the
      source devices and copied to their target device.

    Peak extra memory per device: about two blocks (see tests/multidevice/engine/test_moves.py).
    """
    if x.layout == layout and (dtype is None or dtype == x.dtype):
        return x
    if _device_order(x.mesh) == _device_order(layout.mesh):
        return created(_redistribute_fn(x.layout, layout, dtype)(x.data), layout)
    if x.mesh is local_mesh() or compat.is_tracer(x.data):
        # a small array is uncommitted (jit moves it); under a trace, XLA places the data
        return created(_from_jax(layout, dtype)(x.to_jax()), layout)
    if x.mesh.size == layout.mesh.size:
        proxy_mesh = _proxy_mesh(x.mesh, layout.mesh)
        proxy = Layout(layout.shape, proxy_mesh, layout.split, layout.halo)
        data = x.data
        if proxy != x.layout or (dtype is not None and dtype != x.dtype):
            data = _redistribute_fn(x.layout, proxy, dtype)(data)
        return created(jax.device_put(data, physical.sharding_of(layout)), layout)
    return _move_by_blocks(x, layout, dtype)



def _device_order(mesh):
    return tuple(d.id for d in mesh.devices.reshape(-1))


def _proxy_mesh(src_mesh, dst_mesh):
    """`dst_mesh`'s shape, axis names and types over `src_mesh`'s devices in their flat order
    (the same device assignment as the source, so one jit may write it)."""
    return jax.sharding.Mesh(src_mesh.devices.reshape(dst_mesh.devices.shape),
                             dst_mesh.axis_names, axis_types=dst_mesh.axis_types)


def _move_by_blocks(x: DistArray, layout: Layout, dtype) -> DistArray:
    """A move between device assignments of different sizes: the target's halo-free physical
    array is computed on the source devices (split as the source is), then each target block
    is cut out on its own (held by every source device for the copy) and put on its device."""
    plain = layout.without_halo()
    # padded to the target's blocks, and further until the source's split divides it
    shape = tuple(-(-p // math.lcm(x.layout.parts(a), plain.parts(a)))
                  * math.lcm(x.layout.parts(a), plain.parts(a))
                  for a, p in enumerate(plain.padded_shape))
    padded = _padded_fn(x.layout, shape, dtype)(x.data)
    sharding = physical.sharding_of(plain)
    blocks = []
    cut = _block_fn(x.layout, tuple(padded.shape), plain.block_shape, padded.dtype)
    for device, index in sharding.devices_indices_map(plain.physical_shape).items():
        starts = np.array([s.start or 0 for s in index], dtype=np.int32)
        blocks.append(jax.device_put(cut(padded, starts), device))
    del padded
    data = jax.make_array_from_single_device_arrays(plain.physical_shape, sharding, blocks)
    out = created(data, plain)
    return out if plain == layout else redistribute(out, layout)


@program_cache(SMALL)
def _padded_fn(src: Layout, padded_shape: tuple[int, ...], dtype):
    def pad(data):
        logical = physical.physical_to_logical(data, src)
        if dtype is not None:
            logical = logical.astype(dtype)
        return jnp.pad(logical, [(0, p - n) for p, n in zip(padded_shape, src.shape)])
    return jax.jit(pad, out_shardings=physical.sharding_of(src.without_halo()))


@program_cache(SMALL)
def _block_fn(src: Layout, shape: tuple[int, ...], block: tuple[int, ...], dtype):
    del shape, dtype  # key only: one program per padded array and block shape
    replicated = jax.sharding.NamedSharding(src.mesh, jax.sharding.PartitionSpec())
    return jax.jit(lambda data, starts: jax.lax.dynamic_slice(data, tuple(starts), block),
                   out_shardings=replicated)


@program_cache(SMALL)
def _redistribute_fn(src: Layout, dst: Layout, dtype):
    def move(data):
        logical = physical.physical_to_logical(data, src)
        if dtype is not None:
            logical = logical.astype(dtype)
        return physical.logical_to_physical(logical, dst)
    return jax.jit(move, out_shardings=physical.sharding_of(dst))


def asarray(obj, /, *, dtype=None, device=None, copy=None, mesh=None, spec=None) -> DistArray:
    """Convert `obj` to a DistArray.

    Args:
      obj: a DistArray, jax.Array, numpy array, Python scalar or nested sequence of scalars.
      dtype: output dtype; default: inferred as the Array API says (Python floats give the
        default floating dtype).
      device: a Mesh (what ``x.device`` returns) or a single jax Device.
      copy: True always copies, False never copies (ValueError if a copy is needed).
      mesh, spec: where the array goes; default: ``obj``'s layout for a DistArray, else a 1D
        mesh over all devices with one axis split.

    Layout:
      As requested. Host data is sent block by block (each device receives only its block);
      a DistArray given another mesh/spec is redistributed in one compiled resharding.

    Examples:
      >>> mesh = jax.make_mesh((2, 4), ("x", "y"))
      >>> x = darray.asarray(np.ones((13, 10, 7)), mesh=mesh, spec=("x", "y"))
      >>> x
      DistArray(float32[13,10,7], mesh=(x:2, y:4), split=(x, y, None))
    """
    dtype = check_dtype(dtype)
    if isinstance(obj, (DistArray, jax.Array)):  # host data is checked once converted
        _refuse_dropping_imaginary(obj.dtype, dtype)
    if isinstance(obj, DistArray):
        same_place = mesh is None and device is None and spec is None
        layout = obj.layout if same_place else make_layout(obj.shape, mesh, spec, device, like=obj)
        if copy is False and (layout != obj.layout or (dtype is not None and dtype != obj.dtype)):
            raise ValueError("asarray(copy=False) cannot move or cast a DistArray without a copy")
        out = redistribute(obj, layout, dtype)
        # copy=True must give a distinct object: in-place operators rebind their DistArray.
        return DistArray._make(out.data, out.layout) if copy and out is obj else out
    if copy is False:
        raise ValueError(f"asarray(copy=False) needs a DistArray input; converting "
                         f"{type(obj).__name__} to a DistArray always copies")
    if isinstance(obj, jax.Array):
        return _from_jax_array(obj, dtype, mesh, spec, device)
    host = _to_host(obj, dtype)
    layout = make_layout(host.shape, mesh, spec, device)
    if layout.mesh is local_mesh():  # a small array: one transfer, as jnp.asarray does
        return created(jax.device_put(host, local_mesh().devices.flat[0]), layout)
    return created(physical.host_to_physical(host, layout), layout)


def _refuse_dropping_imaginary(source, dtype) -> None:
    """asarray(complex data, dtype=a real dtype) is refused, as `astype` refuses it: numpy
    and jax drop the imaginary part with only a warning, a silent wrong value. The standard
    leaves casts outside its promotion rules to the library."""
    if dtype is not None and np.dtype(source).kind == "c" and dtype.kind != "c":
        raise TypeError(f"asarray of {np.dtype(source)} data with dtype={dtype} would drop the "
                        f"imaginary part; take darray.real(...) first, or ask for a complex "
                        f"dtype")


def _from_jax_array(obj: jax.Array, dtype, mesh, spec, device) -> DistArray:
    """asarray of a jax.Array. Without mesh/spec/device, a NamedSharding is kept as it is (the
    same mesh, axis names and split, as JAX keeps an array's sharding): an evenly split array
    is wrapped with no data movement, an uneven one is padded on its own devices. Given a
    placement, the array is resharded there (across device sets too: asked for, not guessed)."""
    sharding = None if compat.is_tracer(obj) else getattr(obj, "sharding", None)
    if mesh is None and spec is None and device is None and isinstance(
            sharding, jax.sharding.NamedSharding) and sharding.mesh.size > 1:
        layout = Layout.create(obj.shape, compat.auto_twin(sharding.mesh),
                               _spec_entries(sharding.spec, obj.ndim))
        if layout.physical_shape == tuple(obj.shape) and dtype in (None, obj.dtype):
            data = obj
            if compat.is_explicit(sharding.mesh):  # the Auto twin: same devices, same blocks
                data = jax.device_put(obj, physical.sharding_of(layout))
            return created(data, layout)
    else:
        layout = make_layout(obj.shape, mesh, spec, device)
    if sharding is not None and getattr(obj, "_committed", False) and not (
            isinstance(sharding, jax.sharding.NamedSharding)
            and compat.auto_twin(sharding.mesh) == layout.mesh):
        # jit refuses operands committed to other devices or another mesh: reshard them
        # first, as asked (straight into the layout's blocks when it needs no padding)
        even = layout.physical_shape == tuple(obj.shape) and not layout.has_halo
        obj = jax.device_put(obj, physical.sharding_of(layout) if even else
                             jax.sharding.NamedSharding(layout.mesh, jax.sharding.PartitionSpec()))
    return created(_from_jax(layout, dtype)(obj), layout)


def _spec_entries(spec, ndim: int) -> tuple:
    """A PartitionSpec as darray's spec tuple (one entry per axis; UNCONSTRAINED unsplit)."""
    entries = tuple(spec) + (None,) * (ndim - len(tuple(spec)))
    return tuple(None if e is jax.sharding.PartitionSpec.UNCONSTRAINED else e
                 for e in entries[:ndim])


@program_cache(SMALL)
def _from_jax(layout: Layout, dtype):
    def place(x):
        if dtype is not None:
            x = x.astype(dtype)
        return physical.logical_to_physical(x, layout)
    return jax.jit(place, out_shardings=physical.sharding_of(layout))


def _to_host(obj, dtype) -> np.ndarray:
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        obj = np.from_dlpack(obj)
    try:
        host = np.asarray(obj)
    except (ValueError, TypeError) as err:
        raise TypeError(f"obj of type {type(obj).__name__} cannot be converted to an array "
                        f"({err}); pass an array, a scalar or a nested sequence of "
                        "scalars") from None
    if host.dtype.kind not in "biufc":
        raise TypeError(f"obj of type {type(obj).__name__} gives a numpy array of dtype "
                        f"{host.dtype}, which darray does not hold; pass numbers or arrays "
                        "of bool, integer, real or complex dtype")
    _refuse_dropping_imaginary(host.dtype, dtype)
    target = dtype if dtype is not None else canonical(host.dtype)
    return host.astype(target, copy=False)
