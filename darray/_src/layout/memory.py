"""Refusing at creation an array that can never fit in its devices' memory.

Without this check JAX accepts the array and its allocation fails later, asynchronously, as a
RESOURCE_EXHAUSTED at an unrelated line. `check_fits` compares the bytes each device of the
layout would hold with what the device reports it can still hold: `device.memory_stats()`
(``bytes_limit - bytes_in_use``) where the backend reports it (GPU, TPU), and on CPU, where all
of a process's devices share the host's memory, the host's available memory (``MemAvailable``
in /proc/meminfo, else ``os.sysconf``) against the bytes of all of this process's devices.
"""
from __future__ import annotations

import math
import os
import platform

import jax
import numpy as np

from darray._src.layout.layout import Layout


def _gib(n: float) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def host_available_bytes() -> tuple[int | None, str]:
    """(bytes of host memory available, where the number came from); (None, why) if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages, page = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return pages * page, "os.sysconf('SC_AVPHYS_PAGES')"
    except (ValueError, OSError, AttributeError):
        return None, "the host's memory is unknown"


def _device_free(device) -> int | None:
    try:
        stats = device.memory_stats()
    except Exception:  # backends without memory statistics raise or return None
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def bytes_per_device(layout: Layout, dtype) -> int:
    """Bytes one device holds of an array of `layout` (its padded, haloed block)."""
    return math.prod(layout.block_shape) * np.dtype(dtype).itemsize


def check_fits(layout: Layout, dtype, *, what: str = "the array") -> None:
    """Raise ValueError if an array of `layout` and `dtype` cannot fit in its devices' memory.

    `what` names the call in the message (e.g. "darray.zeros"). Small arrays (under 64 MiB per
    process) are never checked: asking the devices costs more than it could save.
    """
    per_device = bytes_per_device(layout, dtype)
    here = jax.process_index()
    mine = [d for d in np.asarray(layout.mesh.devices).flat if d.process_index == here]
    if per_device * max(len(mine), 1) < (64 << 20) or not mine:
        return
    head = (f"{what}: an array of shape {layout.shape} and dtype {np.dtype(dtype).name} split "
            f"{layout.spec} over mesh {dict(layout.mesh.shape)} needs {_gib(per_device)} "
            f"({per_device} bytes) per device")
    fix = ("; split it over more devices (a larger mesh, or more axes split), use a smaller "
           "dtype, or create it in pieces")
    free = _device_free(mine[0])
    if free is not None:
        if per_device > free:
            raise ValueError(f"{head}, but device {mine[0]} has {_gib(free)} ({free} bytes) "
                             f"free (device.memory_stats(): bytes_limit - bytes_in_use){fix}")
        return
    # CPU devices of one process share the host's memory.
    available, source = host_available_bytes()
    needed = per_device * len(mine)
    if available is not None and needed > available:
        raise ValueError(f"{head}, {_gib(needed)} ({needed} bytes) for this process's "
                         f"{len(mine)} {mine[0].platform.upper()} device(s), but the host has "
                         f"{_gib(available)} ({available} bytes) available ({source}){fix}")


THP_MODE_FILE = "/sys/kernel/mm/transparent_hugepage/enabled"


def huge_page_buffers(thp_mode_file: str = THP_MODE_FILE, environ=None) -> str:
    """Whether this process's large host buffers come as transparent huge pages, and how to ask.

    glibc serves an allocation above its mmap threshold (32 MiB at most) with a fresh mapping
    that it unmaps on free, so every large XLA:CPU buffer (each eager result, each jitted
    program's scratch) is page-faulted 4 KiB at a time on every call: about half the time of a
    256^3 complex FFT round trip on one core. The kernel serves 2 MiB pages instead when its
    transparent-huge-page mode is "always", or when it is "madvise" and glibc is started with
    the tunable glibc.malloc.hugetlb=1 (glibc 2.35 and later); neither changes a result or the
    peak memory. The tunable is read at process start, so it can only be reported here.
    """
    try:
        with open(thp_mode_file) as f:
            mode = f.read().split("[", 1)[1].split("]", 1)[0]
    except (OSError, IndexError):
        return "unknown: no transparent huge pages on this system"
    tunables = _tunables(environ)
    if mode == "always":
        return "on: the kernel's transparent_hugepage mode is always"
    if mode == "madvise" and tunables.get("glibc.malloc.hugetlb") == "1":
        return "on: GLIBC_TUNABLES has glibc.malloc.hugetlb=1"
    if mode == "madvise":
        return (f"off: start the processes with GLIBC_TUNABLES={HOST_BUFFER_TUNABLES} (see "
                "darray's performance guide, 'Host buffers: huge pages and reuse')")
    return f"off: the kernel's transparent_hugepage mode is {mode}"


# Every setting that keeps XLA:CPU's host buffers from being page-faulted afresh on every call:
# large buffers as huge pages (`huge_page_buffers`), smaller ones reused (`buffer_reuse`).
HOST_BUFFER_TUNABLES = ("glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:"
                        "glibc.malloc.trim_threshold=4294967296:glibc.malloc.top_pad=67108864")
_REUSE_TUNABLES = ("glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold",
                   "glibc.malloc.top_pad")


def _tunables(environ) -> dict:
    text = (os.environ if environ is None else environ).get("GLIBC_TUNABLES", "")
    return dict(item.split("=", 1) for item in text.split(":") if "=" in item)


def buffer_reuse(environ=None) -> str:
    """Whether this process reuses its host buffers under 32 MiB or faults them in afresh.

    XLA:CPU allocates each call's buffers from the threads that run the call, in glibc's
    per-thread arenas, and glibc unmaps an arena's extra heap once it is empty and trims the
    rest: every call then faults its buffers in again, 4 KiB at a time (1,300-8,000 faults per
    128^3 FFT round trip on 2 ranks). A fixed mmap threshold (32 MiB, so buffers below it stay
    in the arenas), a large trim threshold and a top pad as large as a heap (64 MiB: glibc then
    keeps empty heaps) reuse them: 24-150 faults. Buffers of 32 MiB or more are still mapped
    afresh per call, as huge pages with glibc.malloc.hugetlb=1. The tunables are read at
    process start, so they can only be reported here.
    """
    if platform.libc_ver()[0] != "glibc":
        return "unknown: this process does not run on glibc"
    tunables = _tunables(environ)
    if all(name in tunables for name in _REUSE_TUNABLES):
        return "on: GLIBC_TUNABLES fixes the mmap threshold and keeps freed heaps"
    return (f"off: start the processes with GLIBC_TUNABLES={HOST_BUFFER_TUNABLES} (see darray's "
            "performance guide, 'Host buffers: huge pages and reuse')")
