"""Sphinx configuration for the darray documentation site.

Build:  python3 -m sphinx -W -b html docs docs/_build/html   (pip install -e '.[docs]')

Pages are MyST Markdown. The API reference lists every public name of darray, darray.fft,
darray.linalg, darray.random and darray.distributed: the lists are computed from the modules at
build time (api/darray*.rst and api/_generated/, git-ignored), so a new re-export appears without
editing the docs.
The example figures are committed under _static/examples/, so the build never runs a simulation.
"""
from __future__ import annotations

import importlib
import inspect
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
# Importing darray imports jax; one CPU device is enough to read docstrings.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import darray  # noqa: E402

project = "darray"
author = "the darray developers"
copyright = "the darray developers"  # noqa: A001
release = getattr(darray, "__version__", "0.1.0")

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

# Google-style docstrings; "Layout:" is darray's own section (where the result lives and what
# the call communicates), rendered like "Notes".
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_custom_sections = [("Layout", "notes_style")]
autosummary_generate = True
autosummary_imported_members = True
# Classes (DistArray, Layout, BlockInfo) show their documented methods and properties.
autodoc_default_options = {"members": True}
autodoc_typehints = "none"        # signatures already show them; keeps long pages readable
add_module_names = False

html_theme = "furo" if __import__("importlib").util.find_spec("furo") else "alabaster"
html_title = "darray"
html_static_path = ["_static"]

# -- API lists generated from the modules ---------------------------------------------------
PUBLIC_MODULES = {
    "darray": "The namespace: creation, elementwise, statistical, manipulation, indexing, "
              "searching, sorting, sets, halos and blocks, binning and stencils, transforms.",
    "darray.fft": "The Array API fft extension, distributed (plus real-to-real transforms).",
    "darray.linalg": "The Array API linear algebra extension.",
    "darray.random": "Random fields that are the same on any mesh and process count.",
    "darray.distributed": "Multi-process runs: start-up under any launcher, failure handling.",
    "darray.errors": "Every exception darray raises on purpose (each also a builtin one).",
    "darray.jaxdecomp": "jaxDecomp 0.3's public array API on darray (see Coming from jaxDecomp).",
    "darray.jaxdecomp.fft": "jaxDecomp's fft submodule: pfft3d, pifft3d, prfft3d, pirfft3d.",
    "darray.particles": "Particle-mesh painting, interpolation and mass-assignment windows.",
    "darray.cosmo": "Power and energy spectra, Gaussian initial conditions, 1LPT and 2LPT.",
}
SUBMODULES = {"fft", "linalg", "random", "distributed", "errors", "particles", "cosmo"}


def public_names(module):
    """(documented callables and classes, other constants) re-exported by `module`."""
    import importlib
    mod = importlib.import_module(module)
    callables, constants = [], []
    for name, value in vars(mod).items():
        if name.startswith("_") and name not in ("__array_namespace_info__",
                                                 "__array_api_version__"):
            continue
        if inspect.ismodule(value):
            continue
        if name in ("annotations",):
            continue
        if inspect.isfunction(value) or inspect.isclass(value) or (
                callable(value) and hasattr(value, "__wrapped__")):
            callables.append(name)
        else:
            constants.append(name)
    return callables, constants


def write_api_pages():
    # Module pages in api/ (git-ignored: api/darray*.rst), one stub page per name in
    # api/_generated/ (autosummary writes those).
    out = HERE / "api"
    (out / "_generated").mkdir(parents=True, exist_ok=True)
    errors = set(importlib.import_module("darray.errors").__all__)
    for module, blurb in PUBLIC_MODULES.items():
        callables, constants = public_names(module)
        if module != "darray.errors":
            # an exception re-exported here too (darray.LayoutError) is documented once, in
            # darray.errors (Sphinx refuses two descriptions of one class)
            shared = [name for name in callables if name in errors]
            callables = [name for name in callables if name not in errors]
            if shared:
                blurb += (" Its exceptions " + ", ".join(f"``{n}``" for n in shared)
                          + " are described in :doc:`darray.errors`.")
        lines = [module, "=" * len(module), "", blurb, "",
                 f".. currentmodule:: {module}", "",
                 ".. autosummary::", "   :toctree: _generated", "   :nosignatures:", ""]
        lines += [f"   {name}" for name in callables]
        if constants:
            lines += ["", "Constants and data types", "-" * 24, "", ".. list-table::",
                      "   :header-rows: 1", "", "   * - name", "     - value"]
            for name in constants:
                value = getattr(__import__("importlib").import_module(module), name)
                text = repr(value).replace("`", "'")
                lines += [f"   * - ``{name}``", f"     - ``{text}``"]
        path = out / f"{module}.rst"
        text = "\n".join(lines) + "\n"
        if not path.exists() or path.read_text() != text:   # unchanged: no rebuild
            path.write_text(text)


# At configuration time, not in a builder-inited hook: Sphinx lists the source files (and
# autosummary the pages to write stubs for) before any hook runs.
write_api_pages()
