"""Printing a DistArray's values the way numpy does, without bringing the array to one host.

numpy summarises an array of more than `threshold` elements by showing `edgeitems` cells at
each end of every long axis. darray reads exactly those cells: along every axis longer than
2 * edgeitems it takes `edgeitems` leading cells, one stand-in cell and `edgeitems` trailing
cells (a distributed `take` whose output is that small), then lets numpy format the small array
with threshold 0, so numpy elides the stand-in and prints "..." in its place. Memory and traffic
are bounded by the printed corner, never the global array.
"""
from __future__ import annotations

import numpy as np

from darray._src.api.indexing import take
from darray._src.layout import host as host_reads


def _corner_indices(n: int, edge: int):
    """Indices to fetch along an axis of length n: all of them when short, else the edges
    around one stand-in (index `edge`, whose value numpy never shows)."""
    if n <= 2 * edge:
        return None
    return np.array(list(range(edge)) + [edge] + list(range(n - edge, n)))


def printable(x) -> tuple[np.ndarray, dict]:
    """(host array, numpy print options) that make numpy print `x` as it would print the
    whole array."""
    opts = np.get_printoptions()
    threshold, edge = opts["threshold"], opts["edgeitems"]
    if x.size <= threshold:
        return np.asarray(x), {}
    corner = x
    for axis, n in enumerate(x.shape):
        picks = _corner_indices(n, edge)
        if picks is not None:
            corner = take(corner, picks, axis=axis)  # output-sized read from the owners
    return np.asarray(corner), {"threshold": 0}


def values_text(x, *, prefix: str = "", suffix: str = "") -> str:
    """numpy's text for the values of `x` (str() style when prefix is empty). An array with
    blocks on other processes prints its layout instead: reading their cells is a collective,
    which one process printing alone must not start."""
    if host_reads.spans_other_processes(x.data) and not x.data.is_fully_replicated:
        return (f"{x!r} (values on several processes: darray.distributed.gather(x), called on "
                f"every process, brings them to each)")
    host, extra = printable(x)
    with np.printoptions(**extra):
        if not prefix:
            return str(host)
        return np.array2string(host, separator=", ", prefix=prefix, suffix=suffix)
