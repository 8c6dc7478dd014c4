"""Covers: darray/_src/distarray/array.py

A JAX user's first `jnp.sin(x)` (issue #28, point 10).

jax 0.10 and 0.12 honour `__jax_array__` for pytrees, but only by turning the object into a
plain jax.Array: for a DistArray that is its logical array, replicated when the split is uneven,
and `jax_array + x` would become a jax.Array too. darray does not define the hook (README,
docs/numpy_users.md say why); these tests pin what a user meets instead.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mesh_of

import darray
from darray import DistArray


@pytest.fixture(scope="module")
def mesh():
    return mesh_of((2, 4), ("x", "y"))


@pytest.mark.x64
def test_jnp_function_refuses_a_distarray_and_the_documented_spellings_work(mesh):
    host = np.random.default_rng(0).standard_normal((13, 10, 7))
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    assert not hasattr(x, "__jax_array__")
    with pytest.raises(TypeError, match="sin requires ndarray or scalar arguments"):
        jnp.sin(x)
    s = darray.sin(x)
    assert s.layout == x.layout and s.data.sharding.is_equivalent_to(x.sharding, 3)
    np.testing.assert_allclose(np.asarray(s), np.sin(host), rtol=1e-14)
    r = jnp.sin(x.to_jax())
    assert type(r) is not DistArray and r.shape == host.shape
    np.testing.assert_allclose(np.asarray(r), np.sin(host), rtol=1e-14)
    assert x.to_jax().sharding.is_fully_replicated  # the uneven logical array, as documented
    back = darray.asarray(r, device=x.device, spec=x.layout.spec)
    assert back.layout == x.layout and back.data.sharding.is_equivalent_to(x.sharding, 3)
    np.testing.assert_allclose(np.asarray(back), np.sin(host), rtol=1e-14)


@pytest.mark.x64
def test_jax_array_on_the_left_still_gives_a_distarray(mesh):
    """What defining __jax_array__ would break: jax.Array's operators would absorb x."""
    host = np.random.default_rng(1).standard_normal((16, 8))
    x = darray.asarray(host, device=mesh, spec=("x", "y"))
    out = jnp.ones(8) + x
    assert isinstance(out, DistArray) and out.layout == x.layout
    np.testing.assert_allclose(np.asarray(out), 1 + host)


def test_jax_honours_jax_array_only_for_pytrees():
    """The fact README states: a non-pytree object with __jax_array__ is refused by jitted
    jax.numpy functions on the supported jax lines (if this starts passing, revisit the
    docs)."""
    class Wrapped:
        def __init__(self, a):
            self.a = a

        def __jax_array__(self):
            return self.a

    with pytest.raises((ValueError, TypeError), match="__jax_array__"):
        jnp.sin(Wrapped(jnp.ones(3)))

    @jax.tree_util.register_pytree_node_class
    class Tree(Wrapped):
        def tree_flatten(self):
            return (self.a,), None

        @classmethod
        def tree_unflatten(cls, _, children):
            return cls(children[0])

    ones = jnp.ones(3)
    assert type(jnp.sin(Tree(ones))) is type(jnp.sin(ones))
    assert type(ones + Tree(ones)) is type(ones)  # absorbed by jax.Array's operator
