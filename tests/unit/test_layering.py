"""Covers: none (the import structure of darray/_src as a whole)

The house rule of docs/architecture.md: each layer of darray/_src imports only the layers
below it, and the import graph has no cycle.

The test reads every module of darray/_src with `ast` (imports inside functions included, since
a late import is still a dependency; an import of `pkg.mod` counts as running `pkg/__init__.py`
too, as Python does) and checks each import of another darray module against
`FLOORS`, the one place the layer order is written. A module belongs to the most specific entry
that names it (a module, or a package for all its modules). Imports inside one floor are allowed
but must not form a cycle. No module of darray/_src imports the public surface (`darray`,
`darray.fft`, ...): the public modules stand above everything and pass the namespace down where
a method needs it (darray/__init__.py hands itself to `methods.register`).
"""
from __future__ import annotations

import ast
import pathlib

import pytest

import darray

SRC = pathlib.Path(darray.__file__).parent / "_src"

# Bottom to top. Each entry: (floor name, module or package names relative to darray._src).
FLOORS = (
    ("foundation", ("base", "kernels")),
    ("layout", ("layout",)),
    ("placement and plans", ("placement", "plans")),
    ("communication", ("backends",)),
    ("the type", ("distarray",)),
    ("engine", ("engine",)),
    ("namespace", ("api", "linalg")),
    ("extensions", ("extras", "fft", "halo", "jaxdecomp_compat", "particles", "cosmo")),
    ("methods", ("methods",)),
)


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def floor_of(module: str) -> int:
    """Index in FLOORS of the most specific entry naming `module` (or a package above it)."""
    best, best_len = None, -1
    for index, (_, names) in enumerate(FLOORS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best_len:
                best, best_len = index, len(name)
    if best is None:
        raise AssertionError(f"darray._src.{module} is on no floor: add it to FLOORS")
    return best


def imports_of(module: str, path: pathlib.Path, modules) -> list[tuple[str, int]]:
    """(imported darray._src module, line) for every import in `path`, nested ones included;
    ("<public>" , line) for an import of the public surface."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def resolve(dotted: str):
        dotted = dotted[len("darray._src."):] if dotted.startswith("darray._src.") else ""
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = ("darray._src." + package).split(".") if package else ["darray", "_src"]
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}"[12:] in modules
                       else base for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "darray" or (target.startswith("darray.")
                                      and not target.startswith("darray._src")):
                found.append(("<public>", node.lineno))
            elif target.startswith("darray._src"):
                resolved = resolve(target)
                if resolved is not None and resolved != module:
                    found.extend((m, node.lineno) for m in _runs(resolved, module, modules))
    return found


def _runs(target: str, importer: str, modules) -> list[str]:
    """The modules an import of `target` runs: Python runs every package above a module
    first, so `import pkg.mod` also runs `pkg/__init__.py` (and whatever that imports). The
    importer's own packages count too: a package `__init__` that imports its modules, one of
    which imports a sibling, is a package-level cycle (keep every `__init__` a map that imports
    nothing: an inert package is no edge, see import_graph)."""
    parts = target.split(".")
    packages = [".".join(parts[:i]) for i in range(1, len(parts))]
    return [p for p in packages if p in modules and p != importer] + [target]


def import_graph():
    modules = _modules()
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    # A package whose __init__.py imports no darray module runs nothing of darray: running it
    # depends on nothing, so it is no edge (darray/_src/fft/__init__.py is empty).
    inert = {m for m, p in modules.items() if p.name == "__init__.py" and not graph[m]}
    return modules, {m: [(t, line) for t, line in targets if t not in inert]
                     for m, targets in graph.items()}


def test_every_module_is_on_a_floor():
    for module in _modules():
        if module:  # darray._src itself (an empty package)
            floor_of(module)


def test_no_upward_import():
    modules, graph = import_graph()
    wrong = []
    for module, targets in graph.items():
        if not module:
            continue
        here = floor_of(module)
        for target, line in targets:
            if target == "<public>":
                wrong.append(f"darray/_src/{modules[module].relative_to(SRC)}:{line} imports the "
                             "public darray surface")
            elif floor_of(target) > here:
                wrong.append(f"darray/_src/{modules[module].relative_to(SRC)}:{line} "
                             f"({FLOORS[here][0]}) imports {target} "
                             f"({FLOORS[floor_of(target)][0]})")
    assert not wrong, "upward imports:\n" + "\n".join(wrong)


def find_cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _ in graph.get(v, ()):
            if w == "<public>":
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle():
    _, graph = import_graph()
    assert find_cycles(graph) == []


def test_the_checker_sees_violations():
    """The checker itself: a late upward import and a two-module circle are found."""
    graph = {"a": [("b", 1)], "b": [("a", 2)], "c": []}
    assert find_cycles(graph) == [["a", "b"]]
    assert floor_of("distarray.array") < floor_of("api.creation") < floor_of("methods.table")
    assert floor_of("kernels.r2r_local") < floor_of("plans.fft_plan") < floor_of("backends")
    assert floor_of("engine.arguments") < floor_of("api.creation") < floor_of("extras.at")
    # Importing a module runs the packages above it, the importer's own included.
    modules = {"pkg": None, "pkg.mod": None, "pkg.sub": None, "pkg.sub.leaf": None}
    assert _runs("pkg.sub.leaf", "other", modules) == ["pkg", "pkg.sub", "pkg.sub.leaf"]
    assert _runs("pkg.sub.leaf", "pkg.mod", modules) == ["pkg", "pkg.sub", "pkg.sub.leaf"]
    # A package face that re-exports its module, which imports a sibling: a cycle.
    graph = {"pkg": [("pkg.mod", 1)], "pkg.mod": [("pkg", 1), ("pkg.sub", 1)], "pkg.sub": []}
    assert find_cycles(graph) == [["pkg", "pkg.mod"]]
    with pytest.raises(AssertionError, match="on no floor"):
        floor_of("no_such_module")


def test_array_type_imports_nothing_above_placement():
    """distarray/array.py imports only the placement floor and below."""
    modules, graph = import_graph()
    limit = floor_of("placement")
    above = [t for t, _ in graph["distarray.array"] if t == "<public>" or floor_of(t) > limit]
    assert above == []


def test_every_floor_entry_is_a_folder_and_few_modules_are_loose():
    """A module's path names its floor: each entry of FLOORS is a package folder, and at most
    three files (the package face and the typing stub among them) sit loose in darray/_src."""
    for floor, names in FLOORS:
        for name in names:
            folder = SRC.joinpath(*name.split("."))
            assert (folder / "__init__.py").is_file(), f"{floor}: {name} is not a package folder"
    loose = sorted(p.name for p in SRC.iterdir() if p.is_file() and p.suffix in (".py", ".pyi"))
    assert len(loose) <= 3, f"loose modules in darray/_src: {loose}"
