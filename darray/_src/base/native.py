"""The seam to the compiled module ``darray._native`` (built from ``csrc/``).

``darray._native`` exports XLA FFI handlers as PyCapsules. This module loads it lazily (importing
darray never fails because the native part is missing: the pure-JAX backend still works),
registers its handlers with JAX once, and wraps each handler in a small Python function built on
``jax.ffi.ffi_call``. Asking for a native op without the native module raises
``BackendUnavailableError`` (an ImportError too) with the command that fixes it.

An install on a machine without a C++ compiler (or with ``DARRAY_NATIVE=0``) builds no native
module: CMakeLists.txt then installs ``darray/_native_skipped.txt`` holding the reason, which
`not_built_reason` reads so that every message can say why the module is missing.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import operator
import pathlib
import sys
import threading
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from darray._src.base.errors import BackendUnavailableError

__all__ = ["available", "bind_mpi", "build_info", "not_built_reason", "register_targets",
           "require", "pad_axis"]

_FIX = (
    "reinstall darray with a C++17 compiler on PATH so that its native part is built: "
    "`python3 -m pip install --force-reinstall --no-deps --no-binary darray darray`, or from "
    "a checkout `python3 -m pip install -e .` (pip fetches CMake, nanobind and scikit-build-core "
    "itself; `pip install -v` shows the build; see docs/install.md)"
)
_SKIP_MARKER = ("darray", "_native_skipped.txt")

# Target-name suffix -> the platform name jax.ffi.register_ffi_target expects.
_PLATFORM_OF_SUFFIX = {"_cpu": "cpu", "_cuda": "CUDA"}

_lock = threading.Lock()
_registered: set[str] = set()

# dtypes the pad_axis handler accepts (csrc/pad_axis.cc checks the same list).
_PAD_DTYPES = tuple(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))


def not_built_reason() -> str | None:
    """Why the install left the native module out (the marker CMakeLists.txt installs beside
    the package when it builds without one), or None when no such install is on sys.path.

    Searched on sys.path rather than beside this file: an editable install keeps the sources
    in the checkout and what CMake installed in site-packages."""
    for entry in sys.path:
        marker = pathlib.Path(entry or ".", *_SKIP_MARKER)
        if marker.is_file():
            return marker.read_text().strip() or "the install built no native module"
    return None


@functools.cache
def _load() -> tuple[ModuleType | None, str | None]:
    """Import darray._native once; return (module, None) or (None, why it failed)."""
    try:
        return importlib.import_module("darray._native"), None
    except ImportError as e:  # missing .so, wrong ABI, missing shared library
        skipped = not_built_reason()
        if skipped is not None:
            return None, f"darray was installed without its native part: {skipped}"
        return None, f"{type(e).__name__}: {e}"


def available() -> bool:
    """True if the compiled module ``darray._native`` can be imported."""
    return _load()[0] is not None


def build_info() -> dict[str, Any]:
    """Describe the native build: which optional parts were compiled in.

    Returns:
      A dict with at least ``available`` (bool), ``cuda``, ``cudecomp``, ``mpi``, ``nccl`` (bools:
      compiled in or not). With the native module present it also holds ``xla_ffi_api`` (the XLA FFI
      header version built against), ``compiler``, ``nanobind`` and ``targets`` (the FFI target
      names). Without it every flag is False and ``reason`` says why the import failed.

    Examples:
      >>> import darray._src.base.native as native
      >>> native.build_info()["available"]
      True
    """
    mod, reason = _load()
    if mod is None:
        return {"available": False, "cuda": False, "cudecomp": False, "mpi": False,
                "nccl": False,
                "reason": f"{reason}; to fix it, {_FIX}"}
    if "mpi4py.MPI" in sys.modules:  # MPI is up already: binding costs nothing more
        bind_mpi()
    info = dict(mod.build_info())
    info.setdefault("nccl", False)  # modules built before the nccl backend existed
    info["available"] = True
    info["targets"] = sorted(mod.registrations())
    if info.get("mpi") and "mpi_library_version" not in info:
        info["mpi_library"] = (
            "resolved from the MPI library mpi4py loads, when the MPI backend is first used"
            if importlib.util.find_spec("mpi4py") is not None else
            "none: mpi4py is not installed (`pip install 'darray[mpi]'` installs mpich and "
            "mpi4py)")
    return info


def bind_mpi() -> str | None:
    """Point the MPI handlers at the MPI library mpi4py loaded (imports ``mpi4py.MPI``, which
    initialises MPI). Returns None when bound, else why not. The handlers link no MPI library:
    they call it through symbols resolved at run time (csrc/mpi_api.h)."""
    mod, reason = _load()
    if mod is None:
        return f"darray._native is not available ({reason})"
    if not hasattr(mod, "mpi_bind"):
        return "this darray build has no MPI handlers (built with DARRAY_ENABLE_MPI=OFF)"
    try:
        from mpi4py import MPI  # optional: importing mpi4py initialises MPI
    except ImportError as err:
        return f"mpi4py cannot be imported ({err})"
    why_not = mod.mpi_bind(MPI.__file__, MPI._sizeof(MPI.Comm), mpi_handle(MPI.BYTE),
                           mpi_handle(MPI.INT64_T), mpi_handle(MPI.MAX), MPI.PROC_NULL)
    return why_not or None


def mpi_handle(obj) -> int:
    """The C handle of an mpi4py object as a signed 64-bit int, the handlers' attribute type
    (mpi4py reports MPICH's int handles sign-extended to an unsigned 64-bit value)."""
    from mpi4py import MPI  # optional: importing mpi4py initialises MPI
    handle = int(MPI._handleof(obj))
    return handle - (1 << 64) if handle >= 1 << 63 else handle


def require() -> ModuleType:
    """Return ``darray._native`` or raise ``BackendUnavailableError`` saying how to build it."""
    mod, reason = _load()
    if mod is None:
        raise BackendUnavailableError(
            f"darray's native module darray._native is not available ({reason}); to fix it, "
            f"{_FIX}")
    return mod


def rebuild_advice() -> str:
    """What to do first when the native module is missing ("" when it is there)."""
    mod, reason = _load()
    return "" if mod is not None else f"darray._native is missing ({reason}): {_FIX}; then "


def register_targets(platform: str = "cpu") -> tuple[str, ...]:
    """Register the native FFI handlers for ``platform`` with JAX; safe to call many times.

    Args:
      platform: ``"cpu"`` or ``"cuda"``; targets built for other platforms are skipped.

    Returns:
      The names of all targets registered for ``platform`` (now or by an earlier call).

    Raises:
      BackendUnavailableError: the native module is missing (the message says how to
        build it).
      ValueError: unknown ``platform``.
    """
    wanted = platform.lower()
    if wanted not in ("cpu", "cuda"):
        raise ValueError(f"register_targets: platform={platform!r}; expected 'cpu' or 'cuda'")
    mod = require()
    names = []
    with _lock:
        for name, capsule in mod.registrations().items():
            suffix = "_" + name.rsplit("_", 1)[-1]
            jax_platform = _PLATFORM_OF_SUFFIX.get(suffix)
            if jax_platform is None or jax_platform.lower() != wanted:
                continue
            if name not in _registered:
                jax.ffi.register_ffi_target(name, capsule, platform=jax_platform)
                _registered.add(name)
            names.append(name)
    return tuple(sorted(names))


def pad_axis(x: Any, length: int, axis: int = -1) -> jax.Array:
    """Zero-pad the end of ``axis`` of ``x`` to ``length`` with the native CPU handler.

    The building block for uneven splits: pad the axis about to be split up to a multiple of the
    mesh size. Equivalent to ``jnp.pad`` with zeros after the data on one axis.

    Args:
      x: array of dtype float32, float64, complex64 or complex128, rank >= 1.
      length: the padded length of ``axis``, at least ``x.shape[axis]``.
      axis: the axis to pad; negative values count from the end.

    Returns:
      An array of ``x``'s dtype whose shape is ``x.shape`` with ``length`` at ``axis``.

    Raises:
      BackendUnavailableError: the native module is missing.
      TypeError: unsupported dtype or non-integer ``length``/``axis``.
      ValueError: ``length`` smaller than the axis.
      IndexError: ``axis`` out of range.

    Layout:
      None: a local op on a single buffer, no communication. Call it on per-shard data (inside
      ``shard_map``); it has no differentiation rule, so autodiff code should use ``jnp.pad``.

    Examples:
      >>> pad_axis(jnp.ones((2, 3), jnp.float32), 5, axis=1).shape
      (2, 5)
    """
    register_targets("cpu")
    x = jnp.asarray(x)
    if x.dtype not in _PAD_DTYPES:
        raise TypeError(f"pad_axis: x has dtype {x.dtype}; expected one of "
                        f"{', '.join(str(d) for d in _PAD_DTYPES)}")
    if x.ndim == 0:
        raise ValueError("pad_axis: x is a scalar (shape ()); expected an array of rank >= 1")
    try:
        axis = operator.index(axis)
        length = operator.index(length)
    except TypeError:
        raise TypeError(f"pad_axis: axis={axis!r} and length={length!r} must be integers") from None
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"pad_axis: axis={axis} is out of range for an array of rank {x.ndim}; "
                         f"expected {-x.ndim} <= axis < {x.ndim}")
    axis %= x.ndim
    if length < x.shape[axis]:
        raise ValueError(f"pad_axis: length={length} is smaller than x.shape[{axis}]="
                         f"{x.shape[axis]}; padding cannot shrink an axis")
    out_shape = x.shape[:axis] + (length,) + x.shape[axis + 1:]
    # The axis goes to the handler counted from the end, so the leading batch dimensions
    # that vmap's "broadcast_all" prepends do not move it.
    call = jax.ffi.ffi_call("darray_pad_axis_cpu", jax.ShapeDtypeStruct(out_shape, x.dtype),
                            vmap_method="broadcast_all")
    return call(x, axis=np.int64(axis - x.ndim))
