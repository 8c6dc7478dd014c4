"""Host reads of a DistArray that spans several processes: local when they can be, refused at
once when they cannot, and one explicit collective (`gather`) for the whole array.

A multi-process array's values live on every process. A read that needs other processes'
blocks is a collective: if one process makes it alone
(``if rank == 0: np.save(..., np.asarray(x))``) it waits forever, or aborts every process with
a "collective mismatch". So host conversions (`np.asarray`, `tolist`, `print`, `float`, `item`)
never start a collective: they read this process's own data when that holds the answer (a
replicated 0-d result, a cell one of this process's devices owns) and otherwise raise
`NonLocalDataError` on this process, naming the collective to call on every process instead:
``darray.distributed.gather(x)``.
"""
from __future__ import annotations

import jax
import numpy as np

from darray._src.base import compat
from darray._src.base.errors import NonLocalDataError as NonLocalDataError
from darray._src.layout.layout import Layout


def spans_other_processes(data) -> bool:
    """True for concrete data with blocks on devices of other processes."""
    return not compat.is_tracer(data) and not getattr(data, "is_fully_addressable", True)


def _process_count(layout: Layout) -> int:
    return len({d.process_index for d in np.asarray(layout.mesh.devices).flat})


def refusal(layout: Layout, what: str) -> NonLocalDataError:
    return NonLocalDataError(
        f"{what} needs the values of a DistArray of shape {layout.shape} split "
        f"{layout.describe_split()} over {_process_count(layout)} processes, and this process "
        f"(jax.process_index()={jax.process_index()}) holds only its own blocks. Reading the "
        f"others is a collective that every process must call, so it is not started from one "
        f"process alone (it would wait forever). Call darray.distributed.gather(x) on every "
        f"process (e.g. `host = darray.distributed.gather(x)`, then `if rank == 0: "
        f"np.save(path, host)`), or darray.save(path, x) on every process; this process's "
        f"blocks are in x.data.addressable_shards.")


def local_cell(data, layout: Layout, index: tuple[int, ...], what: str):
    """The element at physical `index` of multi-process `data` as a Python scalar, read from
    this process's own devices, or raise `refusal` when none of them holds it."""
    for shard in data.addressable_shards:
        ranges = [s.indices(n) for s, n in zip(shard.index, data.shape)]
        if all(lo <= i < hi for i, (lo, hi, _) in zip(index, ranges)):
            local = tuple(i - lo for i, (lo, _, _) in zip(index, ranges))
            return np.asarray(shard.data)[local].item()
    raise refusal(layout, what)
