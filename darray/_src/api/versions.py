"""Which revision of the Array API a namespace follows.

`darray` itself follows 2025.12 (`darray.__array_api_version__`). The standard lets a caller ask
for an older revision through ``x.__array_namespace__(api_version=...)``; for "2023.12" and
"2024.12" that returns a namespace that differs from `darray` only where 2025.12 changed a
result: `broadcast_arrays`, `meshgrid` and `__array_namespace_info__().devices()` return lists
there (2025.12 made them tuples, gh-981). Everything else is darray's own function.
"""
from __future__ import annotations

import functools
import types

from darray._src.api.info import Info

LATEST = "2025.12"
SUPPORTED = ("2023.12", "2024.12", "2025.12")


def namespace(darray, api_version):
    """The namespace for `api_version` (None: the latest), given `darray` itself (the module
    that registers DistArray's methods passes it down; nothing here imports it)."""
    if api_version is None or api_version == LATEST:
        return darray
    if api_version not in SUPPORTED:
        raise ValueError(f"api_version={api_version!r} is not supported; darray implements the "
                         f"Array API {LATEST} (also accepts {', '.join(map(repr, SUPPORTED[:-1]))}"
                         " or None)")
    return _older(darray, api_version)


class _OlderNamespace(types.ModuleType):
    """darray as a revision before 2025.12: lists where 2025.12 returns tuples."""

    __array_api_version__: str

    def __init__(self, name, base):
        super().__init__(name, base.__doc__)
        self._base = base

    def __getattr__(self, name):
        if name == "_base":
            raise AttributeError(name)
        return getattr(self._base, name)

    def __dir__(self):
        return sorted(set(dir(self._base)) | set(self.__dict__))


@functools.lru_cache(maxsize=4)
def _older(darray, api_version: str) -> types.ModuleType:
    ns = _OlderNamespace(f"darray[{api_version}]", darray)
    ns.__array_api_version__ = api_version

    def broadcast_arrays(*arrays):
        return list(darray.broadcast_arrays(*arrays))

    def meshgrid(*arrays, indexing="xy"):
        return list(darray.meshgrid(*arrays, indexing=indexing))

    def __array_namespace_info__():
        return Info(devices_as=list)

    for fn, of in ((broadcast_arrays, darray.broadcast_arrays), (meshgrid, darray.meshgrid),
                   (__array_namespace_info__, darray.__array_namespace_info__)):
        fn.__doc__ = f"{of.__doc__}\n\n(Array API {api_version}: a list, not a tuple.)"
        setattr(ns, fn.__name__, fn)
    return ns
