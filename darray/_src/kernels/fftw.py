"""FFTW as the local-FFT provider of CPU programs (option ``local_fft``), loaded at run time.

FFTW is GPL; darray is Apache-2.0 and ships no FFTW: no header, no link, no bundled library.
The user installs one (``pip install pyfftw``, whose wheel carries libfftw3 and libfftw3f, or a
system ``libfftw3``); this module finds its path and hands it to the native module, which
resolves FFTW's guru64 calls with dlopen/dlsym (csrc/fftw_provider.cc). Where it looks, first
match wins:

1. ``DARRAY_FFTW_LIBRARY``: library files or folders, separated by ``os.pathsep`` (a file
   whose name starts ``libfftw3f`` is the single-precision library, any other the double one);
   when it is set nothing else is searched, so a wrong path is an error, not a silent fallback;
2. the ``pyfftw.libs`` folder of an installed pyFFTW wheel (found without importing pyFFTW);
3. the system's ``libfftw3.so.3`` and ``libfftw3f.so.3`` (the dynamic loader's search).

The transform is an XLA FFI custom call (``darray_fftw_cpu``) on one block: c2c, r2c or c2r
along any axes, strided (FFTW's guru interface needs no transpose), normalised like numpy.
Differentiation and vmap: the transform is a linear JAX primitive lowered to the custom call, so
its JVP is the same FFTW transform of the tangent; its transpose (reverse mode) is FFTW's c2c
again (a DFT matrix is symmetric) and, for r2c and c2r, JAX's transpose of jnp.fft's (as jnp.fft
does it); vmap moves the batch axis to the front, which the handler treats as one more batch
axis. Where FFTW is asked for and missing, the error says what to install.
"""
from __future__ import annotations

import functools
import importlib.util
import math
import os
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jex_core
from jax.interpreters import ad, batching, mlir

from darray._src.base import config, native
from darray._src.base.errors import BackendUnavailableError

LIBRARY_ENV = "DARRAY_FFTW_LIBRARY"
SYSTEM_SONAMES = ("libfftw3.so.3", "libfftw3f.so.3")
TARGET = "darray_fftw_cpu"
_KIND_CODE = {"c2c": 0, "r2c": 1, "c2r": 2}
_INSTALL = ("install FFTW: `pip install pyfftw` (its wheel carries libfftw3 and libfftw3f; "
            "`pip install 'darray[fftw]'` does the same), or the system package (libfftw3-3 / "
            "fftw), or point DARRAY_FFTW_LIBRARY at libfftw3.so. FFTW is GPL: choosing it is "
            "your call (docs/fftw.md)")


def _split_by_precision(files) -> tuple[str, str]:
    """(double, single) library paths among `files` ("" where none). pyFFTW's wheel names
    them ``libfftw3-<hash>.so.3`` and ``libfftw3f-<hash>.so.3``; the long-double and OpenMP
    libraries beside them are not used."""
    double = single = ""
    for f in files:
        base = pathlib.Path(f).name.split(".")[0].split("-")[0]
        if base == "libfftw3f":
            single = single or str(f)
        elif base == "libfftw3" or not base.startswith("libfftw3"):
            double = double or str(f)  # any other name: the user's own double library
    return double, single


def _in_folder(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in folder.glob("libfftw3*.so*") if p.is_file())


def candidates() -> tuple[str, str, str]:
    """(double path, single path, where they come from): the libraries `load` tries."""
    given = os.environ.get(LIBRARY_ENV)
    if given:
        files: list = []
        for entry in given.split(os.pathsep):
            path = pathlib.Path(entry)
            files.extend(_in_folder(path) if path.is_dir() else [path])
        double, single = _split_by_precision(files)
        return double, single, f"${LIBRARY_ENV}={given!r}"
    spec = importlib.util.find_spec("pyfftw")
    if spec is not None and spec.origin is not None:
        libs = pathlib.Path(spec.origin).parent.parent / "pyfftw.libs"
        double, single = _split_by_precision(_in_folder(libs)) if libs.is_dir() else ("", "")
        if double or single:
            return double, single, f"pyFFTW's wheel ({libs})"
    return SYSTEM_SONAMES[0], SYSTEM_SONAMES[1], "the system (libfftw3.so.3, libfftw3f.so.3)"


def load() -> str | None:
    """Load FFTW into the native module (once per process); None when loaded, else why not
    (the message says what to install)."""
    if not native.available():
        return (f"the FFTW provider runs in darray's native module, which is missing: "
                f"{native.rebuild_advice()}{_INSTALL}")
    return _load_library()


@functools.cache
def _load_library() -> str | None:
    """The one load of a process. Plain data: safe to cache."""
    mod = native.require()
    if not hasattr(mod, "fftw_load"):
        return ("this build of darray's native module predates the FFTW provider: rebuild it "
                f"(docs/install.md); then {_INSTALL}")
    double, single, where = candidates()
    why = mod.fftw_load(double, single)
    if why:
        return f"no usable FFTW library from {where} ({why}); {_INSTALL}"
    native.register_targets("cpu")
    return None


def info() -> dict:
    """What the provider has: ``loaded`` (bool), ``reason`` (why not), ``version``, paths and
    the number of cached plans. Loads FFTW (the libraries only; nothing runs)."""
    why = load()
    if why is not None:
        return {"loaded": False, "reason": why}
    return {"loaded": True, **native.require().fftw_info()}


def provider() -> str:
    """The provider the option ``local_fft`` selects here: "xla" or "fftw". "fftw" without a
    library raises BackendUnavailableError saying what to install; "auto" gives "fftw" when it
    is found and XLA's otherwise (docs/fftw.md: on an idle machine FFTW's round trips were as
    fast or faster in every precision and kind measured)."""
    asked = config.get_config("local_fft")
    if asked == "xla":
        return "xla"
    why = load()
    if why is None:
        return "fftw"
    if asked == "auto":
        return "xla"
    raise BackendUnavailableError(f"local_fft='fftw' was asked for, but {why}")


def _has_precision(dtype) -> bool:
    key = "double" if jnp.finfo(dtype).dtype == np.float64 else "single"
    return bool(native.require().fftw_info()[key])


def _scale(norm: str | None, n: int, inverse: bool) -> float:
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") != inverse:  # forward norm scales forward transforms, backward inverse
        return 1.0 / n
    return 1.0


def _fit(x, axes, lengths):
    """`x` cut or zero-padded along `axes` to `lengths` (numpy's treatment of ``s``)."""
    for a, n in zip(axes, lengths):
        have = x.shape[a]
        if have > n:
            x = lax.slice_in_dim(x, 0, n, axis=a)
        elif have < n:
            pad = [(0, 0, 0)] * x.ndim
            pad[a] = (0, n - have, 0)
            x = lax.pad(x, jnp.zeros((), x.dtype), pad)
    return x


def _xla(x, axes, kind: str, inverse: bool, sizes, norm):
    """The same transform by jnp.fft: the non-CPU branch, and what r2c/c2r transpose through."""
    if kind == "r2c":
        return jnp.fft.rfftn(x, s=sizes, axes=axes, norm=norm)
    if kind == "c2r":
        return jnp.fft.irfftn(x, s=sizes, axes=axes, norm=norm)
    return (jnp.fft.ifftn if inverse else jnp.fft.fftn)(x, s=sizes, axes=axes, norm=norm)


# -- the primitive: one FFTW transform of a block whose transformed axes have the exact input
# lengths (`transform` pads or cuts first). A primitive rather than a bare ffi_call so that its
# abstract value keeps the input's (shard_map varying-axes type, which the MPI backend checks)
# and so that it is linear to JAX: its JVP is itself on the tangent (FFTW in forward mode too).
def _out_aval(x, *, axes, kind, inverse, sizes, norm, measure):
    del inverse, norm, measure
    shape = list(x.shape)
    for a, n in zip(axes, sizes):
        shape[a] = n
    if kind == "r2c":
        shape[axes[-1]] = sizes[-1] // 2 + 1
        return x.update(shape=tuple(shape), dtype=jnp.result_type(x.dtype, np.complex64))
    if kind == "c2r":
        return x.update(shape=tuple(shape), dtype=jnp.finfo(x.dtype).dtype)
    return x.update(shape=tuple(shape))


_fftw_p = jex_core.Primitive("darray_fftw")
_fftw_p.def_abstract_eval(_out_aval)
_fftw_p.def_impl(lambda x, **params: jax.jit(lambda a: _fftw_p.bind(a, **params))(x))
_lower = jax.ffi.ffi_lowering(TARGET)


def _lowering(ctx, x, *, axes, kind, inverse, sizes, norm, measure):
    scale = _scale(norm, math.prod(sizes), inverse or kind == "c2r")
    # axes counted from the end, as the handler reads them
    rank = len(ctx.avals_in[0].shape)
    return _lower(ctx, x, axes=np.asarray([a - rank for a in axes], np.int64),
                  kind=np.int64(_KIND_CODE[kind]), forward=np.int64(not inverse),
                  measure=np.int64(measure), scale=np.float64(scale))


mlir.register_lowering(_fftw_p, _lowering, platform="cpu")


def _transpose(ct, x, **params):
    """JAX's transpose (not the adjoint) of the linear map. A c2c DFT matrix is symmetric, so
    c2c transposes to itself; r2c and c2r through JAX's transpose of jnp.fft's, as jnp.fft's
    own rules do (their transposes are not plain transforms)."""
    ct = ad.instantiate_zeros(ct)
    if params["kind"] == "c2c":
        return [_fftw_p.bind(ct, **params)]
    fn = functools.partial(_xla, axes=params["axes"], kind=params["kind"],
                           inverse=params["inverse"], sizes=params["sizes"], norm=params["norm"])
    (out,) = jax.linear_transpose(fn, x.aval)(ct)
    return [out]


ad.deflinear2(_fftw_p, _transpose)


def _batch(args, dims, **params):
    (x,), (bd,) = args, dims
    x = jnp.moveaxis(x, bd, 0)
    return _fftw_p.bind(x, **{**params, "axes": tuple(a + 1 for a in params["axes"])}), 0


batching.primitive_batchers[_fftw_p] = _batch


def _fftw(x, axes, kind, inverse, sizes, norm):
    """FFTW's transform of `x` with numpy's treatment of `sizes` (pads or cuts first)."""
    if kind == "c2r":
        x = _fit(x, axes, sizes[:-1] + (sizes[-1] // 2 + 1,))
    else:
        x = _fit(x, axes, sizes)
    measure = config.get_config("fftw_planner") == "measure"
    return _fftw_p.bind(x, axes=axes, kind=kind, inverse=bool(inverse), sizes=sizes, norm=norm,
                        measure=measure)


def usable_for(dtype) -> bool:
    """Whether the provider in force is FFTW and has the precision of `dtype`; asking for
    "fftw" where its library of that precision is missing raises, saying what to install,
    "auto" then takes XLA's."""
    if not jnp.issubdtype(dtype, jnp.inexact):  # integer or bool blocks (r2r casts them later)
        return False
    if provider() != "fftw":
        return False
    if _has_precision(dtype):
        return True
    if config.get_config("local_fft") == "fftw":
        which = "double" if jnp.finfo(dtype).dtype == np.float64 else "single"
        raise BackendUnavailableError(
            f"local_fft='fftw' was asked for a {np.dtype(dtype).name} transform, but the FFTW "
            f"found ({candidates()[2]}) has no {which}-precision library; {_INSTALL}")
    return False


def transform(x, axes, kind: str, inverse: bool, sizes, norm, elsewhere=None):
    """The local FFT of block `x` (``jnp.fft`` semantics, `sizes` numpy's ``s``): FFTW in CPU
    programs when the option selects it and it has this precision, XLA's elsewhere.

    Args:
      x: the block; complex for c2c and c2r, real for r2c.
      axes: transformed axes (distinct); for r2c and c2r the last is halved.
      kind: ``"c2c"``, ``"r2c"`` or ``"c2r"``.
      inverse: c2c's direction (c2r is inverse, r2c forward).
      sizes: the logical length of each transformed axis.
      norm: numpy's ``norm`` (None means "backward").
      elsewhere: ``elsewhere(x)`` runs the transform in non-CPU programs (default: jnp.fft).

    Returns:
      The transformed block, as ``jnp.fft``'s function of that kind returns it.
    """
    axes = tuple(int(a) % x.ndim for a in axes)
    sizes = tuple(int(n) for n in sizes)
    norm = norm or "backward"
    if kind != "r2c" and not jnp.issubdtype(x.dtype, jnp.complexfloating):
        x = x.astype(jnp.result_type(x.dtype, np.complex64))
    if elsewhere is None:
        elsewhere = functools.partial(_xla, axes=axes, kind=kind, inverse=inverse, sizes=sizes,
                                      norm=norm)
    if not usable_for(x.dtype):
        return elsewhere(x)
    # Decided when lowering: only CPU programs call FFTW.
    return lax.platform_dependent(
        x, cpu=lambda b: _fftw(b, axes, kind, inverse, sizes, norm), default=elsewhere)


__all__ = ["LIBRARY_ENV", "candidates", "info", "load", "provider", "transform", "usable_for"]
