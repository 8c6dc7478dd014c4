"""`__array_namespace_info__()`: what this namespace supports, as the standard asks.

Devices: a DistArray's device is its mesh, so the devices offered are meshes; the default one
spans every device (see `darray.default_mesh`).
"""
from __future__ import annotations

from darray._src.base import compat
from darray._src.base import dtypes as _dt
from darray._src.placement.placement import default_mesh

_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
          "complex floating", "numeric")


class Info:
    """The namespace inspection object returned by `darray.__array_namespace_info__()`.

    `devices()` is a tuple (Array API 2025.12); the 2023.12/2024.12 namespaces
    (``x.__array_namespace__(api_version="2024.12")``) build it with ``devices_as=list``.
    """

    __module__ = "darray"

    def __init__(self, *, devices_as=tuple):
        self._devices_as = devices_as

    def capabilities(self) -> dict:
        """Boolean masks and nonzero/unique give data-dependent shapes, computed eagerly: while
        a jax transformation traces (under jit the count is not known) they raise, so both
        report False then, as jax.numpy's do. XLA puts no limit on the rank."""
        eager = not compat.is_tracing()
        return {"boolean indexing": eager, "data-dependent shapes": eager,
                "max dimensions": None}

    def default_device(self):
        return default_mesh()

    def devices(self):
        return self._devices_as([default_mesh()])

    def default_dtypes(self, *, device=None) -> dict:
        return {"real floating": _dt.default_float(), "complex floating": _dt.default_complex(),
                "integral": _dt.default_int(), "indexing": _dt.default_int()}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """Supported dtypes by name, optionally only those of `kind` (a kind name or tuple).
        The standard's dtypes, as jax.numpy lists them: float16 works everywhere too but is
        not one of them."""
        have = tuple(d for d in _dt.available() if d in _dt.STANDARD)
        if kind is None:
            chosen = have
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            for k in kinds:
                if k not in _KINDS:
                    raise ValueError(f"kind={k!r} is not a dtype kind; use one of {_KINDS} "
                                     "or a tuple of them")
            chosen = tuple(d for d in have if any(d in _dt.CATEGORIES[k] for k in kinds))
        return {d.name: d for d in chosen}


def __array_namespace_info__() -> Info:
    """The namespace inspection object (capabilities, devices, dtypes)."""
    return Info()
