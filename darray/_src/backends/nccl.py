"""The "nccl" backend: darray's exchanges as FFI custom calls on XLA's own NCCL communicator.

No MPI: jaxlib >= 0.11.2 hands an FFI handler the NCCL communicator XLA built for the call's
device groups (the XLA FFI collectives extension; csrc/nccl_ffi.cc), so the backend runs under
`jax.distributed` with one or several GPUs per process. Every Transpose or Merge stage of a plan
is ONE custom call: a pack kernel (the exchanged axis made major-most, the padding of an uneven
split zero-filled), grouped ncclSend/ncclRecv of one piece per peer, and an unpack kernel (each
piece put in place along the axis that became local, padding dropped). Local FFTs are jnp.fft
(cuFFT), run by the JAX backend's own stage loop (`fft_exec.run_stages(move=...)`). Halo faces
move by grouped ncclSend/ncclRecv on the same communicators.

Falls back to "jax" (the Selection says why) where this cannot run: a build without the
handlers, a jaxlib without the extension, a mesh that is not on GPUs. A stage over a size-1 mesh
axis moves nothing (as on every backend).

The copies are described by pure data (`CopyDesc`, built here, read by the one strided-copy
kernel in csrc/nccl_pack.cu); `emulated_move` runs the very same descriptors with jnp gathers
and XLA's all-to-all, so CPU tests check every plan shape against numpy without a GPU.

Autodiff: a custom call has no transpose rule, so each executor is a `jax.custom_jvp` whose
tangent is the same plan run by the JAX executor (every plan is linear in the data). Forward
values run on these handlers; tangents and cotangents move by XLA's own collectives (which are
NCCL too). The halo fill does the same, and halo_reduce (its transpose) runs on "jax".
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import math

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np
from jax import lax

from darray._src.backends.jax import fft_exec, halo_exchange
from darray._src.backends.jax.transpose import lax_exchange
from darray._src.base import compat, native
from darray._src.plans.fft_plan import Merge, Plan, Transpose

TRANSPOSE_TARGET = "darray_nccl_transpose_cuda"
SENDRECV_TARGET = "darray_nccl_sendrecv_cuda"
MIN_JAXLIB = (0, 11, 2)  # the first jaxlib with the FFI collectives extension
MAX_DIMS, MAX_CHECKS = 12, 4  # csrc/nccl_common.h
ITEMSIZES = (1, 2, 4, 8, 16)


# -- can it run here? ------------------------------------------------------------------------
def _version(text: str) -> tuple[int, ...]:
    parts = []
    for p in text.split(".")[:3]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def environment_reason(info=None, jaxlib_version=None, platform=None) -> str | None:
    """None when the nccl backend can run in this process, else why not (then "jax" runs).
    The arguments default to this process's build, jaxlib and default platform (tests pass
    their own)."""
    info = native.build_info() if info is None else info
    if jaxlib_version is None:
        jaxlib_version = jaxlib.__version__
    platform = jax.default_backend() if platform is None else platform
    if not info.get("nccl"):
        return ("this darray build has no NCCL handlers (build_info()['nccl'] is False: build "
                "with DARRAY_ENABLE_CUDA=ON and DARRAY_ENABLE_NCCL=ON against jaxlib >= 0.11.2)")
    if _version(jaxlib_version) < MIN_JAXLIB:
        return (f"jaxlib {jaxlib_version} has no XLA FFI collectives extension (it arrived in "
                f"jaxlib 0.11.2), so no handler can get XLA's NCCL communicator")
    if platform != "gpu":
        return f"the nccl backend runs on NVIDIA GPUs; JAX's default backend here is {platform!r}"
    return None


def _mesh_platform(mesh) -> str | None:
    devices = getattr(mesh, "devices", None)
    try:
        return np.asarray(devices).flat[0].platform
    except (AttributeError, IndexError, TypeError):
        return None


def plan_reason(plan: Plan) -> str | None:
    """None when the handlers can express every exchange of `plan`, else why not."""
    platform = _mesh_platform(plan.in_layout.mesh)
    if platform not in (None, "gpu", "cuda"):
        return f"the plan's mesh is on {platform!r} devices, not GPUs"
    ndim = len(plan.in_layout.shape)
    for stage in plan.stages:
        if isinstance(stage, Merge):
            if len(stage.moves) > MAX_CHECKS:
                return f"{stage} merges more than {MAX_CHECKS} groups in one exchange"
            if ndim + len(stage.moves) > MAX_DIMS:
                return f"rank {ndim} with {len(stage.moves)} groups exceeds the copy kernel"
        elif isinstance(stage, Transpose) and ndim + 1 > MAX_DIMS:
            return f"rank {ndim} exceeds the copy kernel's {MAX_DIMS - 1} dimensions"
    return None


def supports(plan: Plan):
    """The registry hook: None when this backend runs `plan`, else why "jax" runs it."""
    return environment_reason() or plan_reason(plan)


def halo_supports(key):
    in_layout = key[0]
    platform = _mesh_platform(in_layout.mesh)
    why = environment_reason()
    if why is None and platform not in (None, "gpu", "cuda"):
        why = f"the array's mesh is on {platform!r} devices, not GPUs"
    return why


# -- the copy descriptors (pure) -------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CopyDesc:
    """One pass of csrc/nccl_pack.cu's kernel. The index space `dims` (row-major) walks the
    contiguous side; element j pairs with offset sum(j * strides) of the other side. A check
    ``(digit, chunk, limit)`` keeps j[digit] * dims[chunk] + j[chunk] < limit (padding out)."""
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    checks: tuple[tuple[int, int, int], ...] = ()


@dataclasses.dataclass(frozen=True)
class Exchange:
    """One fused exchange: pack (gather into `parts` pieces), send piece b to block b of the
    group over mesh axes `names`, unpack (scatter) into a block of `out_shape`."""
    names: tuple[str, ...]
    parts: int
    pack: CopyDesc
    unpack: CopyDesc
    out_shape: tuple[int, ...]

    @property
    def elements(self) -> int:
        return math.prod(self.pack.dims)


def _strides(shape) -> list[int]:
    out, step = [0] * len(shape), 1
    for k in range(len(shape) - 1, -1, -1):
        out[k], step = step, step * shape[k]
    return out


def _pack(shape, dsts, parts_each) -> tuple[CopyDesc, list[int]]:
    """Pieces major-most: dims (p_0, .., p_{k-1}, block with each dst_i cut to its chunk)."""
    st = _strides(shape)
    piece = list(shape)
    k = len(dsts)
    digit_strides, checks = [], []
    for i, (d, p) in enumerate(zip(dsts, parts_each)):
        chunk = -(-shape[d] // p)
        piece[d] = chunk
        digit_strides.append(chunk * st[d])
        checks.append((i, k + d, shape[d]))
    return CopyDesc(tuple(parts_each) + tuple(piece), tuple(digit_strides) + tuple(st),
                    tuple(checks)), piece


def _unpack(piece, srcs, src_lens, parts_each) -> tuple[CopyDesc, list[int]]:
    """Received pieces (p_0, .., p_{k-1}, piece) -> each digit i joins src_i (major), each
    src_i cut back to its true length."""
    out = list(piece)
    for s, n in zip(srcs, src_lens):
        out[s] = n
    ost = _strides(out)
    k = len(srcs)
    digit_strides = [piece[s] * ost[s] for s in srcs]
    checks = tuple((i, k + s, n) for i, (s, n) in enumerate(zip(srcs, src_lens)))
    return CopyDesc(tuple(parts_each) + tuple(piece), tuple(digit_strides) + tuple(ost),
                    checks), out


def exchange_for(stage, shape, order) -> Exchange:
    """The Exchange of a Transpose or Merge stage on a block of `shape` whose axis p holds
    logical axis order[p] (fft_exec.run_stages' working order)."""
    shape = list(shape)
    if isinstance(stage, Transpose):
        src, dst = order.index(stage.src), order.index(stage.dst)
        pack, piece = _pack(shape, [dst], [stage.parts])
        unpack, out = _unpack(piece, [src], [stage.src_local_len], [stage.parts])
        # one digit on each side: the flat piece index is the block number over mesh_axes
        return Exchange(tuple(stage.mesh_axes), stage.parts, pack, unpack, tuple(out))
    moves = stage.moves
    parts_each = [m.parts for m in moves]
    if stage.gathers:
        total = math.prod(parts_each)
        pack, piece = _pack(shape, [order.index(moves[0].dst)], [total])
        unpack, out = _unpack(piece, [order.index(m.src) for m in moves],
                              [m.src_len for m in moves], parts_each)
    else:
        pack, piece = _pack(shape, [order.index(m.dst) for m in moves], parts_each)
        unpack, out = _unpack(piece, [order.index(moves[0].src)], [moves[0].src_len],
                              [math.prod(parts_each)])
    return Exchange(tuple(stage.mesh_axes), stage.parts, pack, unpack, tuple(out))


def _offsets(desc: CopyDesc):
    idx = np.indices(desc.dims).reshape(len(desc.dims), -1)
    offset = np.tensordot(np.asarray(desc.strides, np.int64), idx, axes=1)
    valid = np.ones(offset.shape, bool)
    for digit, chunk, limit in desc.checks:
        valid &= idx[digit] * desc.dims[chunk] + idx[chunk] < limit
    return offset, valid


def emulated_move(block, stage, order):
    """The nccl mover with the handler's descriptors run by jnp (gather, XLA all-to-all,
    scatter): what the kernels compute, checkable on CPU against the JAX backend."""
    ex = exchange_for(stage, block.shape, order)
    offset, valid = _offsets(ex.pack)
    flat = block.reshape(-1)
    send = jnp.where(valid, flat[np.where(valid, offset, 0)], jnp.zeros((), block.dtype))
    rows = send.reshape(ex.parts, -1)
    names = ex.names[0] if len(ex.names) == 1 else ex.names
    got = lax_exchange(rows, names).reshape(-1)
    offset, valid = _offsets(ex.unpack)
    out = jnp.zeros(math.prod(ex.out_shape), block.dtype).at[offset[valid]].set(got[valid])
    return out.reshape(ex.out_shape)


# -- groups ----------------------------------------------------------------------------------
def groups(mesh, names) -> list[list[int]]:
    """The device groups that exchange over mesh axes `names`, as XLA's flattened ids (a
    device's position in mesh.devices, which is the partition id inside shard_map); each group
    ascending, groups ordered by their first id."""
    names = (names,) if isinstance(names, str) else tuple(names)
    ids = np.arange(math.prod(mesh.devices.shape)).reshape(mesh.devices.shape)
    axes = [list(mesh.axis_names).index(n) for n in names]
    others = [a for a in range(ids.ndim) if a not in axes]
    moved = np.transpose(ids, others + axes).reshape(-1, math.prod(ids.shape[a] for a in axes))
    return sorted(sorted(int(i) for i in g) for g in moved)


def _order_key(mesh, names) -> int:
    text = repr((tuple(mesh.axis_names), tuple(mesh.devices.shape), tuple(names)))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 2


def _my_block(mesh, names):
    """This device's block number over `names`, major first (the Layout's numbering)."""
    sizes = dict(mesh.shape)
    number = jnp.zeros((), jnp.int32)
    for name in names:
        number = number * sizes[name] + lax.axis_index(name)
    return number.astype(jnp.int32)


def _group_attrs(mesh, names):
    gs = groups(mesh, names)
    return dict(groups=np.asarray(gs, np.int64).reshape(-1), group_size=np.int64(len(gs[0])),
                order_key=np.int64(_order_key(mesh, names)))


def _desc_attrs(prefix, desc: CopyDesc):
    checks = np.asarray(desc.checks, np.int64).reshape(-1)
    return {f"{prefix}_dims": np.asarray(desc.dims, np.int64),
            f"{prefix}_strides": np.asarray(desc.strides, np.int64),
            f"{prefix}_checks": checks if checks.size else np.zeros((0,), np.int64)}


def _transpose_call(block, ex: Exchange, mesh):
    dtype = block.dtype
    send_bytes = ex.elements * dtype.itemsize
    out_bytes = math.prod(ex.out_shape) * dtype.itemsize
    # y doubles as the send buffer when it is large enough (no padding dropped on src)
    send_ws = jax.ShapeDtypeStruct((1 if out_bytes >= send_bytes else send_bytes,), np.uint8)
    call = jax.ffi.ffi_call(
        TRANSPOSE_TARGET,
        (jax.ShapeDtypeStruct(ex.out_shape, dtype), send_ws,
         jax.ShapeDtypeStruct((ex.elements,), dtype),
         jax.ShapeDtypeStruct((ex.parts,), np.int32)),
        vmap_method="sequential")
    y, *_ = call(block, _my_block(mesh, ex.names), **_group_attrs(mesh, ex.names),
                 **_desc_attrs("pack", ex.pack), **_desc_attrs("unpack", ex.unpack))
    return y


# Tests set this to run the handlers on one GPU (a communicator of one rank: pack, exchange,
# unpack) where a size-1 stage would otherwise move nothing.
EXCHANGE_SIZE_ONE = False


def _native_move(mesh):
    def move(block, stage, order):
        ex = exchange_for(stage, block.shape, order)
        if ex.parts == 1 and not EXCHANGE_SIZE_ONE:
            if tuple(block.shape) == ex.out_shape:
                return block  # a size-1 mesh axis: only the layout changes
        if block.dtype.itemsize not in ITEMSIZES:
            raise TypeError(f"nccl backend: dtype {block.dtype} has an itemsize the copy "
                            f"kernel does not handle ({ITEMSIZES})")
        return _transpose_call(block, ex, mesh)
    return move


# -- the FFT executor ------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _executor(plan: Plan, norm: str, exchange_size_one: bool):
    native.register_targets("cuda")
    mesh = plan.in_layout.mesh
    body = compat.shard_map(
        lambda b: fft_exec.run_stages(b, plan, norm, move=_native_move(mesh)),
        mesh=mesh, in_specs=(plan.in_layout.spec,), out_specs=plan.out_layout.spec)
    return fft_exec.with_jax_tangent(body, plan, norm)


def execute(plan: Plan, data, norm: str, standalone: bool = False):
    """Physical array of `plan.in_layout` -> that of `plan.out_layout`, exchanges on NCCL.
    `standalone` changes nothing: the reorders are ``jnp.transpose`` either way."""
    del standalone
    if not plan.stages:
        return data
    return _executor(plan, norm, EXCHANGE_SIZE_ONE)(data)


# -- halo fills ------------------------------------------------------------------------------
def _permute(x, names, pairs, mesh):
    names = (names,) if isinstance(names, str) else tuple(names)
    size = math.prod(dict(mesh.shape)[n] for n in names)
    sources, dests = [-1] * size, [-1] * size
    for src, dst in pairs:
        dests[src], sources[dst] = dst, src
    call = jax.ffi.ffi_call(SENDRECV_TARGET, (jax.ShapeDtypeStruct(x.shape, x.dtype),
                                              jax.ShapeDtypeStruct((size,), np.int32)),
                            vmap_method="sequential")
    y, _ = call(x, _my_block(mesh, names), **_group_attrs(mesh, names),
                sources=np.asarray(sources, np.int64), dests=np.asarray(dests, np.int64))
    return y


def halo_fill(data, fill_value, *, in_layout, out_layout, rules):
    """Ghost cells filled with faces moved by ncclSend/ncclRecv on XLA's communicators."""
    if fill_value is None:
        # the linear map halo_reduce transposes: on "jax" (a custom call has no transpose)
        return halo_exchange.fill(data, None, in_layout=in_layout, out_layout=out_layout,
                                  rules=rules)
    native.register_targets("cuda")

    @jax.custom_jvp
    def run(d):
        return halo_exchange.fill(d, fill_value, in_layout=in_layout, out_layout=out_layout,
                                  rules=rules, permute=_permute)

    @run.defjvp
    def run_jvp(primals, tangents):
        return run(primals[0]), halo_exchange.fill(tangents[0], None, in_layout=in_layout,
                                                   out_layout=out_layout, rules=rules)
    return run(data)


__all__ = ["CopyDesc", "Exchange", "emulated_move", "environment_reason", "exchange_for",
           "execute", "groups", "halo_fill", "halo_supports", "plan_reason", "supports"]
