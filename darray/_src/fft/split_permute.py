"""A reorder of one split axis whose pattern is known at trace time, by point-to-point sends.

`permute(x, axis, source, length)` gives out[i] = x[source[i]] along `axis` (zero where
source[i] < 0), keeping the axis split over the same mesh axes (re-chunked for `length`). The
real-to-real transforms of a split axis (r2r_split) use it for Makhoul's reorders: even entries
forward and odd entries backward, and back.

Each device sends each other device exactly the entries that device needs, nothing else: the
(sender, receiver) pairs are grouped into rounds in which every device sends at most one piece
and receives at most one (a colouring of the pair graph), and each round is one `ppermute` of
its longest piece. Makhoul's reorder over P contiguous blocks moves each block in two halves to
two devices: two or three rounds of half a block, about one block per device in all. No
all-gather, and no all-to-all whose pieces would all be padded to the longest one (a P-fold
send buffer). The receiver assembles its block with one gather from what it kept and what it
received.

The routing tables are host constants of about the signal's length in int32 (one row per
device), built once per (length, chunks, pattern).
"""
from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
from jax import lax

from darray._src.backends.registry import EXCHANGES, FFT_EXECUTORS, select_exchanges
from darray._src.base import compat
from darray._src.layout.layout import Layout


@functools.lru_cache(maxsize=64)
def _routes(source: tuple, cs_in: int, cs_out: int, parts: int):
    """(rounds, local_take, out_take): rounds = [(pairs, send (parts, width))], local_take the
    local entries each device keeps (parts, n_local), out_take (parts, cs_out) the position of
    each output entry in [kept, round 0, round 1, ..., zero]."""
    src = np.asarray(source, np.int64)
    length = src.shape[0]
    slots = np.arange(parts * cs_out)
    src_all = np.full(parts * cs_out, -1, np.int64)
    src_all[:length] = src
    dst_dev, dst_loc = slots // cs_out, slots % cs_out
    live = src_all >= 0
    src_dev, src_loc = src_all // cs_in, src_all % cs_in
    # entries per (sender, receiver), in the receiver's slot order
    pairs: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for s, d, sl, dl in zip(src_dev[live], dst_dev[live], src_loc[live], dst_loc[live]):
        pairs.setdefault((int(s), int(d)), []).append((int(sl), int(dl)))
    kept = {d: pairs.pop((d, d), []) for d in range(parts)}
    # greedy colouring, longest pieces first: a round holds at most one piece per sender and
    # one per receiver
    rounds: list[dict] = []
    for (s, d), items in sorted(pairs.items(), key=lambda kv: -len(kv[1])):
        for rnd in rounds:
            if all(s != a and d != b for a, b in rnd):
                rnd[(s, d)] = items
                break
        else:
            rounds.append({(s, d): items})
    n_kept = max([len(v) for v in kept.values()] + [1])
    local_take = np.zeros((parts, n_kept), np.int32)
    out_take = np.full((parts, cs_out), -1, np.int64)
    for d, items in kept.items():
        for k, (sl, dl) in enumerate(items):
            local_take[d, k] = sl
            out_take[d, dl] = k
    offset = n_kept
    plan = []
    for rnd in rounds:
        width = max(len(v) for v in rnd.values())
        send = np.zeros((parts, width), np.int32)
        for (s, d), items in rnd.items():
            for k, (sl, dl) in enumerate(items):
                send[s, k] = sl
                out_take[d, dl] = offset + k
        plan.append((tuple(rnd), send))
        offset += width
    out_take[out_take < 0] = offset  # the zero appended after the last round
    return plan, local_take, out_take.astype(np.int32)


def _block(b, *, name, mesh, parts, plan, local_take, out_take, permute):
    """Per device: b[..., t] (its input block, the axis last) -> its output block; `permute`
    is the backend's face move (`EXCHANGES`)."""
    r = lax.axis_index(name)

    def take(table):
        return jnp.take(b, jnp.asarray(table)[r], axis=-1)
    pieces = [take(local_take)]
    names = (name,) if isinstance(name, str) else tuple(name)
    for pairs, send in plan:
        pieces.append(permute(take(send), names, list(pairs), mesh))
    pieces.append(jnp.zeros(b.shape[:-1] + (1,), b.dtype))
    return jnp.take(jnp.concatenate(pieces, axis=-1), jnp.asarray(out_take)[r], axis=-1)


def permute(x, axis: int, source, length: int):
    """out[..., i, ...] = x[..., source[i], ...] along `axis` (zero where source[i] < 0) for
    i < length, as a DistArray split like x on that axis. The sends run on the FFT backend in
    force when it offers face moves (JAX's ppermute, MPI_Sendrecv), else on JAX's: the rule of
    the split-axis FFT these reorders surround (r2r_split records the Selection).

    Layout:
      Every axis keeps x's split; `axis` is re-chunked for `length`. A few ppermutes of about
      half a block each (module doc), no all-gather."""
    from darray._src.distarray.array import DistArray
    layout = x.layout
    source = np.asarray(source, np.int64)
    if source.shape != (length,) or source.max(initial=-1) >= layout.shape[axis]:
        raise ValueError(f"permute: source must hold {length} indices below "
                         f"{layout.shape[axis]} (or negative for zero)")
    shape = list(layout.shape)
    shape[axis] = length
    out_layout = Layout.create(tuple(shape), layout.mesh, layout.spec)
    parts = layout.parts(axis)
    if parts == 1:  # nothing to send: one local gather
        moved = jnp.moveaxis(x.data, axis, -1)
        padded = jnp.concatenate([moved, jnp.zeros(moved.shape[:-1] + (1,), moved.dtype)], -1)
        index = np.where(source < 0, moved.shape[-1], source).astype(np.int32)
        return DistArray._new(jnp.moveaxis(jnp.take(padded, jnp.asarray(index), axis=-1), -1,
                                           axis), out_layout)
    group = tuple(layout.split[axis])
    name = group[0] if len(group) == 1 else group
    plan, local_take, out_take = _routes(tuple(int(s) for s in source), layout.chunk(axis),
                                         out_layout.chunk(axis), parts)

    exchanges = select_exchanges("FFT split-axis", FFT_EXECUTORS).backend

    def body(block):
        moved = jnp.moveaxis(block, axis, -1)
        # one chain of exchanges per program (the MPI backend orders them by one token)
        out = _block(moved, name=name, mesh=layout.mesh, parts=parts, plan=plan,
                     local_take=local_take, out_take=out_take,
                     permute=EXCHANGES[exchanges](layout.mesh).permute)
        return jnp.moveaxis(out, -1, axis)
    mapped = compat.shard_map(body, mesh=layout.mesh, in_specs=(layout.spec,),
                              out_specs=out_layout.spec)
    return DistArray._new(mapped(x.data), out_layout)


__all__ = ["permute"]
