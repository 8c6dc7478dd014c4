"""Covers: none (which public names the differential registry covers)

The registry covers darray's public functions: the namespace, darray.linalg and darray.fft."""
import inspect

import diff_cases  # noqa: F401  (fills the registry)
from diff_registry import REGISTRY

import darray

# Public functions with no numpy counterpart to compare with, each tested elsewhere.
EXCLUDED = {
    "build_info": "reports the native build, no array",
    "config_context": "configuration, no array (tests/unit)",
    "record_backends": "a log of backend selections, no array (test_route_backends.py)",
    "get_config": "configuration, no array",
    "set_config": "configuration, no array",
    "default_mesh": "returns a mesh, no array",
    "vmap": "a transform, not an array function (tests/multidevice/distarray/test_vmap.py)",
    "map_blocks": "runs user code per block; no numpy counterpart (test_map_blocks.py)",
    "halo": "ghost cells have no numpy counterpart (test_halo.py)",
    "halo_reduce": "ghost cells have no numpy counterpart (test_halo.py)",
    "unhalo": "ghost cells have no numpy counterpart (test_halo.py)",
    "autotune": "times candidate layouts/backends; returns a choice, not an array",
    "fft.wavenumbers": "takes a spectrum, returns broadcastable vectors: against 2*pi*fftfreq in "
                       "test_fft_wavenumbers.py",
    "cross": "numpy's name for linalg.cross (its differential case), checked in "
             "test_numpy_names.py",
    "diag": "numpy's diag (1-D to 2-D and back), against numpy in test_numpy_names.py",
    "logspace": "creation from scalars, against numpy in test_numpy_names.py",
    "dynamic_slice": "jax.lax's, not numpy's: compared with it in test_traced_indices.py",
}
EXTRA = ("DistArray.__getitem__", "DistArray.__setitem__")


def public_functions() -> set[str]:
    names = set()
    for prefix, module in (("", darray), ("linalg.", darray.linalg), ("fft.", darray.fft)):
        for name in dir(module):
            obj = getattr(module, name)
            if name.startswith("_") or inspect.isclass(obj) or inspect.ismodule(obj):
                continue
            if callable(obj):
                names.add(prefix + name)
    return names


def test_registry_covers_namespace():
    public = public_functions()
    covered = {name for case in REGISTRY for name in case.covers}
    stale = sorted(set(EXCLUDED) - public)
    assert not stale, f"excluded names that are no longer public: {stale}"
    missing = sorted(public - covered - set(EXCLUDED))
    assert not missing, f"public functions with no differential case: {missing}"
    unknown = sorted(covered - public - set(EXTRA))
    assert not unknown, f"cases cover names that are not public: {unknown}"
    tested = len(public - set(EXCLUDED))
    print(f"\ndifferential coverage: {tested} of {len(public)} public functions "
          f"({len(EXCLUDED)} excluded with reasons) plus {len(EXTRA)} operators, "
          f"in {len(REGISTRY)} cases")
