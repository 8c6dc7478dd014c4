"""Covers: none (which public names the differential registry covers)

The registry covers darray's public functions: the namespace, darray.linalg and darray.fft."""
import diff_cases  # noqa: F401  (fills the registry)
from diff_registry import EXCLUDED, EXTRA, REGISTRY, public_functions


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
