"""Move darray/_src's modules into folders by floor, and rewrite every reference to them.

Run from the repository root: ``python3 tools/house_moves.py`` (``--dry-run`` lists what it
would change). The folders then follow the floors of tests/unit/test_layering.py:

* ``kernels/``: pure per-block math (r2r kernels, local FFT passes, complex special functions);
* ``plans/``: pure-data plans, built without devices (the FFT plan and its planner, the halo
  plan and the halo arguments);
* ``backends/``: communication, below array.py; its registry leaves the package's
  ``__init__`` for ``backends/registry.py``, so importing a backend module no longer runs it;
* ``engine/``: what every namespace section uses (operands, the apply paths, views, slicing,
  joining, compaction, reduce-scatter);
* ``api/``: the Array API standard's sections; ``extras/``: numpy's and JAX's functions
  beyond the standard, built on them.

The table below is the whole move; the rest of the script applies it by pattern, not by a
list of files, so it also fixes files written after it (a branch merged later), and running it
on a tree already moved changes nothing. It rewrites

* imports (``from darray._src.fft.plan import Plan``, ``from darray._src.fft import plan``,
  ``from darray._src import backends``), keeping every local name;
* dotted names in any text (monkeypatch targets, ``importlib`` strings, docs);
* file paths (``darray/_src/fft/plan.py``, ``_src/fft/plan.py``, ``fft/plan.py``);
* short dotted module names that stand alone in quotes or backticks (``"fft.plan"``);
* shared helpers that lose their leading underscore (RENAMES).

MERGES folds a twin module into another: its imports join the other's, its definitions are
appended, and every reference points at the survivor. The import blocks it touched are sorted
with ruff's isort rule afterwards, as the project's lint asks.
"""
from __future__ import annotations

import argparse
import ast
import pathlib
import re
import subprocess
import sys

SRC = "darray/_src"

# old path under darray/_src -> new path under darray/_src
MOVES = {
    # kernels/: pure per-block math, jax and numpy only
    "fft/r2r_local.py": "kernels/r2r_local.py",
    "fft/r2r_local_2d.py": "kernels/r2r_local_2d.py",
    "backends/jax/local_fft.py": "kernels/local_fft.py",
    "api/complex_special.py": "kernels/complex_special.py",
    # plans/: pure data, no devices
    "fft/plan.py": "plans/fft_plan.py",
    "fft/planner.py": "plans/fft_planner.py",
    "halo/plan.py": "plans/halo_plan.py",
    "halo/spec.py": "plans/halo_spec.py",
    # the dtypes and their categories: a foundation every floor may read
    "api/dtypes.py": "dtypes.py",
    # the standard's section "Data Type Functions" (its twin name `data_types` is gone)
    "api/data_types.py": "api/data_type_functions.py",
    # backends/: the registry leaves the package's face
    "backends/__init__.py": "backends/registry.py",
    # engine/: what every section uses
    "api/common.py": "engine/common.py",
    "api/arguments.py": "engine/arguments.py",
    "api/operands.py": "engine/operands.py",
    "api/views.py": "engine/views.py",
    "api/slicing.py": "engine/slicing.py",
    "api/joining.py": "engine/joining.py",
    "api/compaction.py": "engine/compaction.py",
    "api/reduce_scatter.py": "engine/reduce_scatter.py",
    # extras/: numpy's and JAX's functions beyond the standard
    "api/at.py": "extras/at.py",
    "api/binning.py": "extras/binning.py",
    "api/blockwise.py": "extras/blockwise.py",
    "api/creation_extra.py": "extras/creation_extra.py",
    "api/numerical.py": "extras/numerical.py",
    "api/numpy_reductions.py": "extras/numpy_reductions.py",
    "api/quantiles.py": "extras/quantiles.py",
    "api/reinterpret.py": "extras/reinterpret.py",
    "api/stencils.py": "extras/stencils.py",
}

# twin -> survivor (paths under darray/_src, before the moves): the twin's code is appended
MERGES = {
    "api/_helpers.py": "api/common.py",
}
# twin -> {its top-level name: the name it takes}, where the survivor defines the same name
MERGE_RENAMES = {
    "api/_helpers.py": {"_physical_fn": "_run_physical_fn"},
}

# module (new dotted name under darray._src) -> {old name: new name}: helpers that other
# modules import on purpose, so they are no longer private
RENAMES = {
    "blocks": {"_block_info": "block_info_of"},
    "fft.api": {"_as_dist": "as_dist", "_r2r_planned": "r2r_planned"},
    "kernels.r2r_local": {"_orthogonal_weights": "orthogonal_weights", "_scale": "kernel_scale"},
}

# packages the moves create, with the map their __init__ holds
NEW_PACKAGES = {
    "kernels": '''"""Pure per-block math: what one device computes on its block, jax and numpy only.

Nothing here knows a mesh, a layout or a DistArray, so every module is on the ground floor.

r2r_local.py: the DCT/DST kernels (types 1-4) along one unsplit axis; r2r_local_2d.py: types 2
and 3 along two axes at once; local_fft.py: inverse FFTs split into passes that stay right on
GPU at any size; complex_special.py: complex elementwise kernels with the Array API's special
cases.
"""
''',
    "plans": '''"""Pure-data plans, built without devices from layouts alone.

fft_plan.py: the distributed FFT plan (stages: local transforms, transposes, merges);
fft_planner.py: candidate plans, the cost model and exact retracing that choose one;
halo_plan.py: which cell fills each ghost cell along one axis; halo_spec.py: the arguments of
`halo` (widths, axes, boundary rules) normalised, with actionable errors. The backends execute
these plans; the extensions (fft/, halo/) build them.
"""
''',
    "engine": '''"""What every namespace section uses: the shared mechanism below api/ and extras/.

common.py: operand handling, the physical and logical apply paths, output layouts and axis
normalisation; arguments.py: what a function accepts where it takes an array; operands.py: the
rule for operands on different meshes; views.py: results that write through to their base;
slicing.py: basic-key reads and writes on the physical blocks; joining.py: concat and stack
without gathering; compaction.py: boolean masks and other data-dependent shapes;
reduce_scatter.py: a sum whose result is split again.
"""
''',
    "extras": '''"""numpy's and JAX's functions beyond the Array API standard, built on it.

at.py: ``x.at[idx]`` updates; binning.py: bincount and histogram; blockwise.py: creation block
by block; creation_extra.py: from_dlpack, meshgrid, tril, triu; numerical.py: einsum and
interp; numpy_reductions.py: nan-reductions and friends; quantiles.py: quantile, percentile,
median; reinterpret.py: ``x.view(dtype)``; stencils.py: pad and gradient on the halo exchange.
"""
''',
    "backends": '''"""Backends: the communication that executes darray's pure-data plans.

registry.py: which backend runs an FFT plan or a halo fill, chosen by name or by config, with
the native ones loaded late; errors.py: what a backend that cannot run raises; jax/: the
pure-JAX backend (fft_exec.py, halo_exchange.py, transpose.py); mpi_exec.py and
mpi_transport.py: the MPI backend (CPU); cudecomp.py and nccl.py: the GPU backends. This face
imports nothing, so importing one backend module runs no other.
"""
''',
}

ROOTS = ("darray", "tests", "docs", "benchmarks", "examples", "tools", "csrc", ".ci")
FILES = ("CONTRIBUTING.md", "README.md", "pyproject.toml")
TEXT_SUFFIXES = {".py", ".pyi", ".md", ".rst", ".txt", ".toml", ".cfg", ".ini", ".sh", ".cc",
                 ".cu", ".h", ".json", ".yaml", ".yml", ""}
SKIP_PARTS = {"_build", "__pycache__", ".git"}
SELF = pathlib.Path("tools/house_moves.py")


def _dotted(path: str) -> str:
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


# short dotted name -> short dotted name; the backends package's face is handled apart
MODULES = {_dotted(o): _dotted(n) for o, n in MOVES.items() if not o.endswith("__init__.py")}
for _twin, _into in MERGES.items():
    MODULES[_dotted(_twin)] = MODULES.get(_dotted(_into), _dotted(_into))
REGISTRY_OF = {"backends": "backends.registry"}  # a package whose names left for a module
PATHS = dict(MOVES)
for _twin, _into in MERGES.items():
    PATHS[_twin] = MOVES.get(_into, _into)


def _submodules(package: str) -> set[str]:
    """Names of the submodules of darray._src.`package`, as the tree holds them or will."""
    names = set()
    for path in list(MOVES) + list(MOVES.values()) + list(MERGES):
        parts = path.split("/")
        if "/".join(parts[:-1]) == package.replace(".", "/") and parts[-1] != "__init__.py":
            names.add(parts[-1].removesuffix(".py"))
        if "/".join(parts[:-2]) == package.replace(".", "/") and len(parts) >= 2:
            names.add(parts[-2])
    folder = pathlib.Path(SRC, *package.split("."))
    if folder.is_dir():
        for p in folder.iterdir():
            if p.suffix == ".py" and p.stem != "__init__":
                names.add(p.stem)
            elif p.is_dir() and (p / "__init__.py").exists():
                names.add(p.name)
    return names


SUBMODULES = {pkg: _submodules(pkg) for pkg in REGISTRY_OF}


def new_short(short: str) -> str:
    """The new short dotted name (under darray._src) of `short`, a module or a name in one."""
    parts = short.split(".")
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        if head in MODULES:
            return ".".join([MODULES[head]] + parts[i:])
    for package, registry in REGISTRY_OF.items():
        if short.startswith(package + ".") and parts[len(package.split("."))] not in (
                SUBMODULES[package] | {"__init__"}):
            return registry + short[len(package):]
    return short


def new_dotted(name: str) -> str:
    if not name.startswith("darray._src."):
        return name
    return "darray._src." + new_short(name[len("darray._src."):])


# -- imports -----------------------------------------------------------------------------------
FROM_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)from[ \t]+(?P<module>darray\._src(?:\.\w+)*|darray\._src)[ \t]+import"
    r"[ \t]+(?P<names>\([^)]*\)|[^\n(]*?)(?P<comment>[ \t]*#[^\n]*)?$", re.M)


def _parse_names(text: str) -> list[tuple[str, str | None, str]] | None:
    """[(name, alias, comment)] of an import's names, or None where comments sit between
    names of a parenthesised list in a way this script does not rewrite."""
    inner = text.strip()
    if inner.startswith("("):
        inner = inner[1:-1]
    out = []
    for line in inner.split("\n"):
        code, _, comment = line.partition("#")
        items = [c.strip() for c in code.split(",") if c.strip()]
        if comment and len(items) != 1:
            return None  # a comment that belongs to no single name: leave the import alone
        for item in items:
            name, _, alias = item.partition(" as ")
            out.append((name.strip(), alias.strip() or None,
                        ("#" + comment).rstrip() if comment else ""))
    return out


def _render(indent: str, module: str, names: list[tuple[str, str | None, str]],
            comment: str) -> str:
    items = [f"{n} as {a}" if a else n for n, a, _ in names]
    inner_comments = [c for _, _, c in names if c]
    one = f"{indent}from {module} import {', '.join(items)}"
    tail = comment or (f"  {inner_comments[0]}" if len(inner_comments) == 1 else "")
    if len(one) + len(tail) <= 100 and len(inner_comments) <= 1:
        return one + tail
    lines = [f"{indent}from {module} import ({comment.strip() and ' ' + comment.strip()}"
             .rstrip()]
    for (_, _, c), item in zip(names, items):
        lines.append(f"{indent}    {item},{'  ' + c if c else ''}")
    lines.append(f"{indent})")
    return "\n".join(lines)


def rewrite_import(match: re.Match) -> str:
    indent, module = match["indent"], match["module"]
    comment = match["comment"] or ""
    names = _parse_names(match["names"])
    if names is None:
        return match.group(0)
    short = module[len("darray._src."):] if module != "darray._src" else ""
    groups: dict[str, list] = {}
    changed = False
    for name, alias, c in names:
        full = f"{short}.{name}" if short else name
        if full in MODULES or (short == "" and name in REGISTRY_OF):
            # a module imported from its package: import it from its new package
            target = MODULES.get(full) or REGISTRY_OF[name]
            parent, _, base = target.rpartition(".")
            new_module = "darray._src" + (f".{parent}" if parent else "")
            local = alias or name
            groups.setdefault(new_module, []).append((base, local if local != base else None,
                                                      c))
            changed = True
            continue
        target_module = new_dotted(module)
        if short in REGISTRY_OF and name not in SUBMODULES[short]:
            target_module = "darray._src." + REGISTRY_OF[short]
        if target_module != module:
            changed = True
        groups.setdefault(target_module, []).append((name, alias, c))
    if not changed:
        return match.group(0)
    return "\n".join(_render(indent, m, ns, comment) for m, ns in groups.items())


IMPORT_MODULE = re.compile(r"^(?P<indent>[ \t]*)import[ \t]+(?P<module>darray\._src(?:\.\w+)+)",
                           re.M)


def rewrite_imports(text: str) -> str:
    text = FROM_IMPORT.sub(rewrite_import, text)
    return IMPORT_MODULE.sub(lambda m: m["indent"] + "import " + new_dotted(m["module"]), text)


# -- text: dotted names, paths, short names, renames ------------------------------------------
DOTTED = re.compile(r"(?<![\w.])darray\._src(?:\.\w+)+")


def _path_pattern(old: str) -> re.Pattern:
    # darray/_src/fft/plan.py, _src/fft/plan.py or fft/plan.py, not inside a longer path
    return re.compile(r"(?<![\w.\-/])((?:darray/)?(?:_src/)?)" + re.escape(old) + r"(?![\w/])")


PATH_RULES = [(_path_pattern(old), new) for old, new in
              sorted(PATHS.items(), key=lambda kv: -len(kv[0]))]
SHORT_QUOTED = re.compile(r"""(?P<q>["'`])(?P<name>[a-z_]+(?:\.[a-z_0-9]+)+)(?P=q)""")


def rewrite_text(text: str) -> str:
    text = DOTTED.sub(lambda m: new_dotted(m.group(0)), text)
    for pattern, new in PATH_RULES:
        text = pattern.sub(lambda m, new=new: m.group(1) + new, text)

    def short(m):
        name = m["name"]
        if name in MODULES:
            return m["q"] + MODULES[name] + m["q"]
        return m.group(0)
    return SHORT_QUOTED.sub(short, text)


def rewrite_renames(text: str, path: pathlib.Path) -> str:
    here = new_short(_dotted(str(path.relative_to(SRC)))) if path.is_relative_to(SRC) else None
    for module, names in RENAMES.items():
        full = "darray._src." + module
        parent, _, base = full.rpartition(".")
        uses = (here == module or full in text
                or re.search(rf"from {re.escape(parent)} import [^\n]*\b{base}\b", text))
        if not uses:
            continue
        for old, new in names.items():
            text = re.sub(rf"(?<![\w]){re.escape(old)}\b", new, text)
    return text


# -- the merge of twins --------------------------------------------------------------------------
def _top_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def merge_into(twin: pathlib.Path, survivor: pathlib.Path, renames: dict[str, str]) -> None:
    """Append `twin`'s definitions to `survivor`, its imports beside the survivor's."""
    t_text, s_text = twin.read_text(), survivor.read_text()
    for old, new in renames.items():
        t_text = re.sub(rf"(?<![\w.]){re.escape(old)}\b", new, t_text)
    clash = _top_names(ast.parse(t_text)) & _top_names(ast.parse(s_text))
    if clash:
        sys.exit(f"merging {twin} into {survivor}: both define {sorted(clash)}; "
                 "add them to MERGE_RENAMES")
    t_tree, s_tree = ast.parse(t_text), ast.parse(s_text)
    t_lines, s_lines = t_text.splitlines(keepends=True), s_text.splitlines(keepends=True)

    def head(tree):
        body = list(tree.body)
        first = 0
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            first = 1
        last = first
        while last < len(body) and isinstance(body[last], (ast.Import, ast.ImportFrom)):
            last += 1
        return body, first, last

    t_body, t_first, t_last = head(t_tree)
    s_body, _, s_last = head(s_tree)
    survivor_module = "darray._src." + _dotted(str(survivor.relative_to(SRC)))
    imports = []
    for node in t_body[t_first:t_last]:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.ImportFrom) and node.module == survivor_module:
            continue
        imports.append("".join(t_lines[node.lineno - 1:node.end_lineno]))
    rest_start = t_body[t_last].lineno - 1 if t_last < len(t_body) else len(t_lines)
    # decorators and comments right above the first definition belong to it
    while rest_start > 0 and t_lines[rest_start - 1].strip():
        rest_start -= 1
    rest = "".join(t_lines[rest_start:]).strip("\n")
    # the twin's docstring travels as a comment above its code
    doc = ast.get_docstring(t_tree) or ""
    banner = "# -- from " + twin.name + ": " + " ".join(doc.split())
    banner_lines, line = [], ""
    for word in banner.split(" "):
        if len(line) + len(word) + 1 > 99:
            banner_lines.append(line)
            line = "#"
        line = f"{line} {word}" if line else word
    banner_lines.append(line)
    insert_at = s_body[s_last - 1].end_lineno if s_last else 0
    out = (s_lines[:insert_at] + imports + s_lines[insert_at:])
    text = "".join(out).rstrip("\n") + "\n\n\n" + "\n".join(banner_lines) + "\n" + rest + "\n"
    survivor.write_text(text)


# -- driver --------------------------------------------------------------------------------------
def text_files() -> list[pathlib.Path]:
    files = [pathlib.Path(f) for f in FILES if pathlib.Path(f).exists()]
    for root in ROOTS:
        for p in sorted(pathlib.Path(root).rglob("*")):
            if (p.is_file() and p.suffix in TEXT_SUFFIXES and not SKIP_PARTS & set(p.parts)
                    and p != SELF and not p.is_symlink()):
                files.append(p)
    return files


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="list the changes, write none")
    args = parser.parse_args(argv)
    if not pathlib.Path(SRC).is_dir():
        sys.exit("run from the repository root (darray/_src not found)")

    changed = []
    # 1. rewrite the text of every file where it stands (before the moves)
    for path in text_files():
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        new = text
        if path.suffix in (".py", ".pyi"):
            new = rewrite_imports(new)
        new = rewrite_text(new)
        if path.suffix in (".py", ".pyi"):
            new = rewrite_renames(new, path)
        if new != text:
            changed.append(str(path))
            if not args.dry_run:
                path.write_text(new)

    # 2. the moves (a package's face leaves first, then the new packages get theirs)
    moves = []
    for old, new in MOVES.items():
        src, dst = pathlib.Path(SRC, old), pathlib.Path(SRC, new)
        if src.exists() and not (old.endswith("__init__.py") and dst.exists()):
            moves.append((src, dst))
    twins = []
    for twin, into in MERGES.items():
        src = pathlib.Path(SRC, twin)
        if src.exists():
            twins.append((src, pathlib.Path(SRC, MOVES.get(into, into)),
                          MERGE_RENAMES.get(twin, {})))
    for src, dst in moves:
        print(f"move {src} -> {dst}")
    for src, dst, _ in twins:
        print(f"merge {src} -> {dst}")
    for path in changed:
        print(f"rewrite {path}")
    if args.dry_run:
        return 0
    for src, dst in moves:
        dst.parent.mkdir(parents=True, exist_ok=True)
        git("mv", str(src), str(dst))
    for package, doc in NEW_PACKAGES.items():
        init = pathlib.Path(SRC, package, "__init__.py")
        if init.parent.is_dir() and not init.exists():
            init.write_text(doc)
            git("add", str(init))
    for src, dst, renames in twins:
        merge_into(src, dst, renames)
        git("rm", "-q", "-f", str(src))
        changed.append(str(dst))
    # 3. sort the import blocks that changed, as the lint asks
    python = [str(pathlib.Path(SRC, MOVES[p[len(SRC) + 1:]])) if p[len(SRC) + 1:] in MOVES
              else p for p in dict.fromkeys(changed) if p.endswith((".py", ".pyi"))]
    python = [p for p in python if pathlib.Path(p).exists()]
    if python:
        subprocess.run([sys.executable, "-m", "ruff", "check", "--quiet", "--select", "I,F811",
                        "--fix", "--exit-zero", *python], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
