"""Covers: darray/_src/layout/memory.py

Arrays that can never fit are refused at creation (darray/_src/layout/memory.py), with the bytes
per device and the memory the device (or, on CPU, the host) has; arrays that fit are unaffected."""
from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import darray
from darray._src.layout import memory
from darray._src.placement.placement import make_layout

HUGE = (2**40,)  # float32: 4 TiB, 512 GiB per device on 8 devices


def _host_gib():
    available, source = memory.host_available_bytes()
    assert available is not None and source == "MemAvailable in /proc/meminfo"
    return available


@pytest.mark.parametrize("create, name", [
    (lambda: darray.zeros(HUGE, dtype=darray.float32), "darray.zeros"),
    (lambda: darray.ones(HUGE, dtype=darray.float32), "darray.ones"),
    (lambda: darray.full(HUGE, 2.0, dtype=darray.float32), "darray.full"),
    (lambda: darray.arange(2**40, dtype=darray.float32), "darray.arange"),
    (lambda: darray.linspace(0, 1, 2**40, dtype=darray.float32), "darray.linspace"),
    (lambda: darray.eye(2**20, dtype=darray.float32), "darray.eye"),
    # random refuses a last extent >= 2**32 itself: 2**40 cells as a square
    (lambda: darray.random.normal(jax.random.key(0), (2**20, 2**20), darray.float32),
     "darray.random.normal"),
    (lambda: darray.random.uniform(jax.random.key(0), (2**20, 2**20), darray.float32),
     "darray.random.uniform"),
])
def test_creation_that_cannot_fit_is_refused_with_the_numbers(create, name):
    available = _host_gib()
    with pytest.raises(ValueError) as err:
        create()
    text = str(err.value)
    assert text.startswith(f"{name}: an array of shape "), text
    assert "dtype float32" in text and "over mesh {'d': 8}" in text, text
    per_device = int(re.search(r"\((\d+) bytes\) per device", text).group(1))
    assert per_device == 2**40 * 4 // 8, text  # 512 GiB
    host = int(re.search(r"host has [\d.]+ \w+ \((\d+) bytes\) available", text).group(1))
    assert abs(host - available) < 2 << 30, (host, available)  # the host's MemAvailable
    assert "for this process's 8 CPU device(s)" in text and "split it over more devices" in text


def test_eye_counts_its_padded_block():
    layout = make_layout((2**20, 2**20), mesh=(2, 4), spec=("x", "y"))
    assert memory.bytes_per_device(layout, np.float32) == 2**19 * 2**18 * 4


def test_device_memory_stats_are_used_where_reported(monkeypatch):
    layout = make_layout((2**28,), spec=("d",))  # 1 GiB float32, 128 MiB per device
    device = np.asarray(layout.mesh.devices).flat[0]
    stats = {"bytes_limit": 100 << 20, "bytes_in_use": 10 << 20}
    monkeypatch.setattr(type(device), "memory_stats", lambda self: stats)
    with pytest.raises(ValueError, match=r"needs 128\.0 MiB \(134217728 bytes\) per device, "
                                         r"but device .* has 90\.0 MiB \(94371840 bytes\) free "
                                         r"\(device.memory_stats\(\)"):
        memory.check_fits(layout, np.float32, what="darray.zeros")
    stats["bytes_limit"] = 1 << 30
    memory.check_fits(layout, np.float32, what="darray.zeros")  # fits: no error


def test_arrays_that_fit_are_created_as_before():
    x = darray.zeros((1024, 1024), dtype=darray.float32, mesh=(2, 4), spec=("x", "y"))
    assert x.layout.spec == jax.sharding.PartitionSpec("x", "y")
    np.testing.assert_array_equal(np.asarray(x), np.zeros((1024, 1024), np.float32))


@pytest.mark.parametrize("mode, tunables, want", [
    ("always [madvise] never", "glibc.malloc.hugetlb=1", "on: GLIBC_TUNABLES"),
    ("always [madvise] never", "glibc.malloc.check=0:glibc.malloc.hugetlb=1", "on: GLIBC_TUNABLES"),
    ("always [madvise] never", None, "off: start the processes with GLIBC_TUNABLES="),
    ("always [madvise] never", "glibc.malloc.hugetlb=0", "off: start the processes"),
    ("[always] madvise never", None, "on: the kernel's transparent_hugepage mode is always"),
    ("always madvise [never]", "glibc.malloc.hugetlb=1", "off: the kernel's "
                                                         "transparent_hugepage mode is never"),
])
def test_huge_page_buffers_reads_the_kernel_mode_and_the_glibc_tunable(tmp_path, mode, tunables,
                                                                        want):
    mode_file = tmp_path / "enabled"
    mode_file.write_text(mode + "\n")
    environ = {} if tunables is None else {"GLIBC_TUNABLES": tunables}
    assert memory.huge_page_buffers(str(mode_file), environ).startswith(want)
    assert memory.huge_page_buffers(str(tmp_path / "missing"), environ).startswith("unknown")


@pytest.mark.parametrize("tunables, want", [
    (memory.HOST_BUFFER_TUNABLES, "on: GLIBC_TUNABLES fixes the mmap threshold"),
    ("glibc.malloc.mmap_threshold=1048576:glibc.malloc.trim_threshold=1:"
     "glibc.malloc.top_pad=2", "on:"),
    ("glibc.malloc.hugetlb=1", "off: start the processes with GLIBC_TUNABLES="
                               + memory.HOST_BUFFER_TUNABLES),
    # each one missing: the threshold moves, the heap is trimmed, or empty heaps are unmapped
    ("glibc.malloc.trim_threshold=1:glibc.malloc.top_pad=2", "off:"),
    ("glibc.malloc.mmap_threshold=1048576:glibc.malloc.top_pad=2", "off:"),
    ("glibc.malloc.mmap_threshold=1048576:glibc.malloc.trim_threshold=1", "off:"),
    (None, "off:"),
])
def test_buffer_reuse_reads_the_glibc_tunables(tunables, want):
    environ = {} if tunables is None else {"GLIBC_TUNABLES": tunables}
    assert memory.buffer_reuse(environ).startswith(want)


def test_the_recommended_tunables_turn_on_both_reports(tmp_path):
    mode_file = tmp_path / "enabled"
    mode_file.write_text("always [madvise] never\n")
    environ = {"GLIBC_TUNABLES": memory.HOST_BUFFER_TUNABLES}
    assert memory.huge_page_buffers(str(mode_file), environ).startswith("on: GLIBC_TUNABLES")
    assert memory.buffer_reuse(environ).startswith("on:")


def test_buffer_reuse_is_unknown_without_glibc(monkeypatch):
    monkeypatch.setattr(memory.platform, "libc_ver", lambda: ("", ""))   # musl, macOS
    environ = {"GLIBC_TUNABLES": memory.HOST_BUFFER_TUNABLES}
    assert memory.buffer_reuse(environ) == "unknown: this process does not run on glibc"
