"""Buffer donation for in-place operators: ``x += y`` may write its result into x's memory.

A DistArray's data is an immutable jax.Array, so ``x *= s`` computes a new array and rebinds
x: for a moment the old and the new value are both alive, one more array of x's size (what
set the peak of scikit-learn's PCA on darray: svd_flip's ``u *= signs``). When nothing else
can read x's old buffer, the program may take it over instead (``jax.jit(...,
donate_argnums=...)``, an input/output alias in XLA): the result is written in place and the
old jax.Array is deleted.

"Nothing else can read it" is decided here, before the program runs (`donatable`):

* the call is eager (no tracer, no trace running: traced programs are functional), the array
  is settled (not a view, whose data its base may read again; not a JAX rebuild) and
  distributed (a split axis, not the one device of small arrays, whose data
  `compat.uncommitted` shares) and at least `MIN_BYTES` large (below that the saving is
  nothing and the checks below would cost more than they save);
* no other Python reference holds the jax.Array object: another DistArray (``copy.copy(x)``
  shares it), a user's ``x.data``, a user's jax.Array that
  ``darray.asarray`` kept as it was, pytree leaves, the in-flight queue of
  `compat.bound_in_flight` (which drops it first);
* no one else holds one of its per-device blocks: jax caches them in the array and hands
  them out as ``x.data.addressable_shards[i].data`` (an uncommitted or reassembled array made
  from them holds them too); their reference counts, against those of a fresh array's blocks
  (measured once per platform: jax and Python versions differ), tell;
* no other live jax.Array sits on its device buffers: ``jax.device_put`` of an array to an
  equivalent sharding (another mesh object of the same devices, ``P('x', None)`` for
  ``P('x')``) makes a second Python object over the same memory, which donation would delete
  too (measured on jax 0.10 and 0.12). `jax.live_arrays` lists them; only arrays of x's shape
  or of its blocks' shape can share its buffers, so the scan reads one attribute of the others.

Host views of a buffer (numpy's zero-copy ``np.asarray`` of a CPU shard, DLPack) are external
references: jax then copies instead of donating, so they stay valid. A read of x that starts
in another thread while ``x += y`` is running may find the old array deleted: concurrent
reads and writes of one array are a race in numpy too (there they read a torn value).
"""
from __future__ import annotations

import functools
import sys

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from darray._src.base import compat
from darray._src.distarray.array import DistArray
from darray._src.layout.layout import Layout
from darray._src.placement.placement import local_mesh

# Arrays smaller than this (physical bytes, all devices) are never donated.
MIN_BYTES = 1 << 20

# The references to x's jax.Array while `_sole_holder` reads its count: x's slot, the local
# name and getrefcount's own argument.
_OWN_REFERENCES = 3


def donatable(x: DistArray, layout: Layout) -> bool:
    """Whether the program computing ``x <op>= ...`` in `layout` may take over x's buffer (see
    the module docstring): x is settled, eager, distributed, large, already in `layout`, and the
    sole holder of its device buffers."""
    if x._pending is not None or (x._layout is not layout and x._layout != layout):
        return False
    if layout.mesh is local_mesh() or not any(layout.split) or compat.is_tracing():
        return False
    data = x._stored
    if (not isinstance(data, jax.Array) or compat.is_tracer(data) or data.is_deleted()
            or data.nbytes < MIN_BYTES or len(data.sharding.device_set) < 2):
        return False
    compat.forget_in_flight(data)
    del data
    if not _sole_holder(x):
        return False
    data = x._stored
    platform = next(iter(data.sharding.device_set)).platform
    return (max(_block_references(data), default=0) <= _cached_block_references(platform)
            and not _shares_buffers(data))


def _sole_holder(x: DistArray) -> bool:
    stored = x._stored
    return sys.getrefcount(stored) <= _OWN_REFERENCES


def _block_references(data) -> list[int]:
    """The reference counts of `data`'s per-device blocks, the single-device jax.Arrays jax
    caches in it (``x.data.addressable_shards[i].data`` hands them out; an uncommitted or
    reassembled array made from them holds them too)."""
    blocks = data._arrays  # jax-version seam: private, on both supported lines (0.10, 0.12)
    return [sys.getrefcount(block) for block in blocks]


@functools.cache
def _cached_block_references(platform: str) -> int:
    """What `_block_references` counts for blocks held by their array's cache alone (jax and
    Python versions differ): measured once on a fresh two-device array (plain data cached)."""
    devices = np.array(jax.local_devices(backend=platform)[:2])
    if len(devices) < 2:
        return 0  # one device of it in this process: no two-device probe, never donate
    probe = jax.device_put(np.zeros(len(devices), np.float32),
                           NamedSharding(Mesh(devices, ("probe",)), PartitionSpec("probe")))
    return max(_block_references(probe), default=0)


def _shares_buffers(data) -> bool:
    """Whether a live jax.Array other than `data` and its own cached blocks uses one of its
    device buffers (an array of its shape over the same blocks, made by ``jax.device_put`` to
    an equivalent sharding, or of a block's shape)."""
    blocks = data._arrays
    own = {id(block) for block in blocks}
    pointers = {block.unsafe_buffer_pointer() for block in blocks}
    shapes = {data.shape} | {block.shape for block in blocks}
    del blocks
    platform = next(iter(data.sharding.device_set)).platform
    for other in jax.live_arrays(platform):
        if other is data or id(other) in own or other.aval.shape not in shapes:
            continue
        if other.is_deleted():
            continue
        for i in range(len(other.sharding.addressable_devices)):
            if other.addressable_data(i).unsafe_buffer_pointer() in pointers:
                return True
    return False
