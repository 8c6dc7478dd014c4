"""Covers: darray/_src/api/blocks.py, darray/_src/jaxdecomp_compat/fft.py

Claims of the docs pages that a code block cannot show (issue 53, items 3 and 5): a heading
that spells a function's signature spells the current one, and docs/from_jaxdecomp.md says
what darray.jaxdecomp does with shapes that do not divide the mesh."""
import inspect
import pathlib
import re

import jax
import numpy as np
import pytest
from helpers import mesh_of
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import darray
import darray.jaxdecomp as jd

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


def test_halo_page_map_blocks_heading_is_the_signature():
    text = (DOCS / "halo.md").read_text()
    heading = re.search(r"^## `darray\.map_blocks(\(.*\))`$", text, re.M)
    assert heading is not None, "docs/halo.md has no map_blocks heading"
    parts = []
    for p in inspect.signature(darray.map_blocks).parameters.values():
        name = ("*" if p.kind is p.VAR_POSITIONAL else "") + p.name
        default = "" if p.default is p.empty else "=" + repr(p.default).replace("'", '"')
        parts.append(name + default)
    assert heading.group(1) == "(" + ", ".join(parts) + ")", heading.group(1)


@pytest.mark.x64
def test_from_jaxdecomp_uneven_shapes_as_documented():
    text = (DOCS / "from_jaxdecomp.md").read_text()
    assert "Shapes need not divide the mesh (darray pads blocks internally" not in text
    assert "IndivisibleError" in text
    mesh = mesh_of((2, 4))
    x = np.random.default_rng(5).standard_normal((30, 30, 30))
    with pytest.raises(ValueError, match="divisible|Indivisible|partitioned"):
        jax.device_put(x, NamedSharding(mesh, P("x", "y")))   # JAX cannot hold it split
    k = jd.pfft3d(darray.asarray(x, mesh=mesh, spec=("x", "y")))  # a DistArray: padded blocks
    np.testing.assert_allclose(np.asarray(k), np.fft.fftn(x).transpose(1, 2, 0), atol=1e-10)
    assert isinstance(k, jax.Array) and tuple(k.sharding.spec) == ("x",)
