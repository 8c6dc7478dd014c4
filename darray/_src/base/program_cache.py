"""One bounded cache for every compiled program darray keeps between calls.

darray builds a `jax.jit` closure per input layout (shape, mesh, split) and caches it, so a
repeated call does not retrace. Each closure owns its compiled XLA executable, and on XLA:CPU
every kernel of an executable is loaded as its own memory mappings (code, constants, data):
measured, about 3 mappings for a small elementwise program, 50 for a compaction, 84 for a
four-step FFT over a split axis and 250 for a Bluestein one (115 since bluestein.py's rewrite,
jax 0.12). A process that meets many shapes (scipy's `fftconvolve` test over 599 lengths) kept
one FFT program per length in per-function caches of 256 to 1024 entries, reached the kernel's
`vm.max_map_count` (65530) and XLA crashed in the next compilation.

So all those caches share one least-recently-used budget, counted in estimated mappings: each
decorated function declares what one of its programs costs (`weight`), and when the total passes
`BUDGET` the least recently used programs of any function are dropped. Dropping the last
reference to a `jax.jit` function frees its executables (jax keys its own caches on the function
weakly; measured: the mapping count falls back). The budget leaves most of the 65530 to the
user's own programs and to jax.

A key is the decorated function's arguments plus `config.program_key()`, the options read while
tracing (base/config.py): a program built under one backend is never returned under another.

While a ``max_temp_blocks`` limit is in force (base/memory_budget.py) a program is handed out
wrapped, so that it is measured and refused over the limit before it runs; with no limit (the
default) the lookup costs one list read more.
"""
from __future__ import annotations

import collections
import functools
import threading

from darray._src.base import config
from darray._src.base.memory_budget import guard

# Estimated mappings the cached programs may hold together (see the module doc).
BUDGET = 24_000

# Typical weights (estimated mappings per program, measured on XLA:CPU with 8 devices).
SMALL = 10         # elementwise, reductions, slicing, creation, placement moves
MEDIUM = 30        # joins, halo exchanges, scans
COMPACTION = 60    # boolean-mask compaction, nonzero, unique
FFT = 300          # distributed FFT stages (four-step ~84, Bluestein ~115; was ~250)

CacheInfo = collections.namedtuple("CacheInfo", "hits misses maxsize currsize")

_lock = threading.Lock()
_entries: collections.OrderedDict = collections.OrderedDict()  # (tag, key) -> (value, weight)
_held = [0]  # total weight of _entries
_caches: list = []


def program_cache(weight: int = SMALL):
    """Decorator: cache `fn(*args)` (hashable arguments) in the shared budget, at `weight`
    estimated mappings per entry. Like `functools.lru_cache`: `cache_info()`, `cache_clear()`."""
    if weight <= 0 or weight > BUDGET:
        raise ValueError(f"program_cache: weight={weight!r} must be in 1..{BUDGET}")

    def decorate(fn):
        tag = object()
        stats = [0, 0]  # hits, misses
        name = f"{fn.__module__}.{fn.__qualname__}"
        limited = config.MEMORY_LIMITED

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            # The options read while tracing are part of the key: a program built or traced
            # under other values (another backend, another comm setting) is another program.
            key = (tag, args, tuple(sorted(kwargs.items())) if kwargs else (),
                   config.program_key())
            # The hit path takes no lock: it runs on every eager op, and OrderedDict's get and
            # move_to_end are each atomic under the GIL. An entry evicted between the two is
            # still a valid program to return.
            hit = _entries.get(key)
            if hit is not None:
                try:
                    _entries.move_to_end(key)
                except KeyError:
                    pass
                stats[0] += 1
                return guard(hit[0], name) if limited[0] else hit[0]
            # Built outside the lock: building may call other cached functions (tracing
            # happens later, at the first call of the returned jit function).
            value = fn(*args, **kwargs)
            dropped = []
            with _lock:
                stats[1] += 1
                hit = _entries.get(key)
                if hit is not None:  # another thread built it meanwhile: keep one
                    value = hit[0]
                    return guard(value, name) if limited[0] else value
                _entries[key] = (value, weight)
                _held[0] += weight
                while _held[0] > BUDGET and len(_entries) > 1:
                    _, (old, w) = _entries.popitem(last=False)
                    _held[0] -= w
                    dropped.append(old)
            del dropped  # freed here, outside the lock (a jit function's finalizers run)
            return guard(value, name) if limited[0] else value

        def cache_info():
            with _lock:
                size = sum(1 for k in _entries if k[0] is tag)
            return CacheInfo(stats[0], stats[1], BUDGET // weight, size)

        def cache_clear():
            with _lock:
                for k in [k for k in _entries if k[0] is tag]:
                    _held[0] -= _entries.pop(k)[1]

        cached.cache_info = cache_info
        cached.cache_clear = cache_clear
        _caches.append(cached)
        return cached
    return decorate


def held() -> tuple[int, int]:
    """(programs cached, their estimated mappings) across every program cache."""
    with _lock:
        return len(_entries), _held[0]


def clear() -> None:
    """Drop every cached program (they are rebuilt and recompiled on their next use)."""
    with _lock:
        dropped = list(_entries.values())
        _entries.clear()
        _held[0] = 0
    del dropped


__all__ = ["BUDGET", "COMPACTION", "FFT", "MEDIUM", "SMALL", "clear", "held", "program_cache"]
