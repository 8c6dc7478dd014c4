"""einops through `einops.array_api` (its top-level functions dispatch on known backends only and
do not know DistArrays; the array_api module works on any Array API namespace)."""
from clients_harness import case, darray_bug, library_bug  # noqa: F401

LIB = "einops"


def _e():
    import einops.array_api as ea
    return ea


def ein_case(name, inputs=("X",), **kw):
    return case(LIB, name, inputs, **kw)


ein_case("rearrange_transpose", ("X",))(lambda xp, X: _e().rearrange(X, "n m -> m n"))
ein_case("rearrange_split", ("X",))(lambda xp, X: _e().rearrange(X[:, :6], "n (a b) -> n a b", a=2))
ein_case("rearrange_merge", ("cube",))(lambda xp, cube: _e().rearrange(cube, "n m c -> n (m c)"))
ein_case("rearrange_merge_leading", ("cube",))(
    lambda xp, cube: _e().rearrange(cube, "n m c -> (n m) c"))
ein_case("rearrange_add_axis", ("X",))(lambda xp, X: _e().rearrange(X, "n m -> n 1 m"))
ein_case("rearrange_permute3", ("cube",))(lambda xp, cube: _e().rearrange(cube, "n m c -> c n m"))
for _op in ("mean", "sum", "max", "min", "prod"):
    ein_case(f"reduce_{_op}_rows", ("X",))(lambda xp, X, _o=_op: _e().reduce(X, "n m -> m", _o))
ein_case("reduce_mean_cols", ("X",))(lambda xp, X: _e().reduce(X, "n m -> n", "mean"))
ein_case("reduce_all", ("X",))(lambda xp, X: _e().reduce(X, "n m -> ", "sum"))
ein_case("reduce_keep", ("cube",))(lambda xp, cube: _e().reduce(cube, "n m c -> n 1 c", "max"))
ein_case("repeat_new_axis", ("X",))(lambda xp, X: _e().repeat(X, "n m -> n m r", r=3))
ein_case("repeat_tile", ("X",))(lambda xp, X: _e().repeat(X, "n m -> (r n) m", r=2))
ein_case("pack", ("X", "cube"))(lambda xp, X, cube: _e().pack([X, cube], "n m *")[0])
ein_case("pack_unpack", ("X", "cube"))(
    lambda xp, X, cube: (lambda p: _e().unpack(p[0], p[1], "n m *"))(_e().pack([X, cube], "n m *")))
