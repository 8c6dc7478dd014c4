"""Covers: darray/_src/engine/donation.py, darray/_src/engine/apply.py
Covers: darray/_src/api/elementwise.py, darray/_src/methods/table.py

In-place operators (``x += y``) write their result into x's buffer when nothing else can read
it (buffer donation), so x's old and new values are never both alive: results equal numpy's
and keep x's layout; the old jax.Array is deleted exactly when x alone held it, and every other
holder (a copy, a user's jax.Array, ``to_jax()``, pytree leaves, views, aliases over the same
device buffers) still reads its values. The compiled program aliases its output to x
(XLA's memory_analysis)."""
from __future__ import annotations

import copy
import operator
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_layout, mesh_of
from jax.sharding import NamedSharding, PartitionSpec

import darray
from darray._src.engine import apply, donation

MESHES = {"8": ((8,), ("d",)), "2x4": ((2, 4), ("x", "y"))}
SHAPE = (37, 13)  # uneven on both meshes


@pytest.fixture(autouse=True)
def _donate_small(monkeypatch):
    # the test arrays are a few KiB; the size floor is tested on its own below
    monkeypatch.setattr(donation, "MIN_BYTES", 0)


def _fresh(host, mesh_name, explicit=False):
    """A DistArray that alone holds its (freshly computed) data, split on every mesh axis."""
    shape, names = MESHES[mesh_name]
    mesh = mesh_of(shape, names, explicit=explicit)
    spec = names if len(names) == 2 else names + (None,)
    return darray.asarray(host, mesh=mesh, spec=spec) * 1


def _old(x):
    """x's data now and where it lies (its first block), kept without holding the array."""
    return x, weakref.ref(x._stored), x._stored.addressable_data(0).unsafe_buffer_pointer()


def _donated(old) -> bool:
    """Whether x's old jax.Array is gone and x's data lies where it lay: the program wrote
    into the old buffer (without donation the old array is alive while the result is written,
    so the two cannot coincide)."""
    x, array, pointer = old
    gone = array() is None or array().is_deleted()
    return gone and x._stored.addressable_data(0).unsafe_buffer_pointer() == pointer


OPS = [("+=", operator.iadd, 2.5, np.float32), ("*=", operator.imul, -3.0, np.float32),
       ("/=", operator.itruediv, 4.0, np.float32), ("-=", operator.isub, 7, np.int32),
       ("//=", operator.ifloordiv, 3, np.int32), ("%=", operator.imod, 5, np.int32),
       ("^=", operator.ixor, 6, np.int32), ("**=", operator.ipow, 2, np.float32)]


@pytest.mark.parametrize("symbol,op,scalar,dtype,mesh_name",
                         [o + (list(MESHES)[i % 2],) for i, o in enumerate(OPS)],
                         ids=[o[0] for o in OPS])
def test_inplace_scalar_equals_numpy_and_donates(symbol, op, scalar, dtype, mesh_name):
    """Each operator on one of the meshes (alternating, to keep the tier cheap)."""
    host = (np.arange(np.prod(SHAPE)).reshape(SHAPE) % 11 + 1).astype(dtype)
    x = _fresh(host, mesh_name)
    layout, old = x.layout, _old(x)
    x = op(x, scalar)
    np.testing.assert_array_equal(np.asarray(x), op(host.copy(), scalar))
    assert_layout(x, layout)
    assert _donated(old), f"x {symbol} {scalar}: x alone held its buffer, yet it was not donated"


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("operand", ["same layout", "signs row", "numpy row"])
def test_inplace_array_operands_donate(mesh_name, operand):
    """A same-layout DistArray, a broadcast row (svd_flip's ``u *= signs[None, :]``, signs a
    small array) and a numpy row."""
    host = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    x = _fresh(host, mesh_name)
    signs = np.where(np.arange(SHAPE[1]) % 2, -1.0, 1.0).astype(np.float32)
    other, expect = {
        "same layout": lambda: (_fresh(host + 1, mesh_name), host * (host + 1)),
        "signs row": lambda: (darray.sign(darray.asarray(signs))[None, :], host * signs),
        "numpy row": lambda: (signs[None, :], host * signs)}[operand]()
    layout, old = x.layout, _old(x)
    x *= other
    # (checked before any host read: a host read of a CPU array keeps zero-copy views of its
    # blocks, and jax then copies instead of donating, see engine/donation.py)
    assert _donated(old)
    np.testing.assert_array_equal(np.asarray(x), expect)
    assert_layout(x, layout)
    if operand == "same layout":
        np.testing.assert_array_equal(np.asarray(other), host + 1)  # never donated


def test_donating_programs_alias_their_output():
    """XLA's accounting: the donating program writes into its argument (alias = output) and
    needs no temporaries beyond the plain program's; the plain one does not alias. Both apply
    paths: the physical one (same layouts) and the logical one (a row split otherwise, as
    svd_flip's ``signs[None, :]``)."""
    x = _fresh(np.ones(SHAPE, np.float32), "2x4")
    row = darray.asarray(np.ones((1, SHAPE[1]), np.float32), mesh=x.mesh, spec=(None, "y"))
    programs = {
        "physical": lambda donate: (apply._physical_fn(
            jnp.multiply, ("dist", ("scalar", float)), x.layout, donate), (x.data, 2.0)),
        "logical": lambda donate: (apply._logical_fn(
            jnp.multiply, (x.layout, row.layout), x.layout, (), donate), (x.data, row.data)),
    }
    for name, program_of in programs.items():
        temps = []
        for donate in (0, None):
            program, args = program_of(donate)
            compiled = program.lower(*args).compile()
            m = compiled.memory_analysis()
            assert (m.alias_size_in_bytes == m.output_size_in_bytes > 0) == (donate == 0), name
            assert ("input_output_alias={ {}: (0" in compiled.as_text()) == (donate == 0), name
            temps.append(m.temp_size_in_bytes)
        assert temps[0] <= temps[1], (name, temps)


HOLDERS = {  # another holder of x's data: (how it is made, whether it holds x's jax.Array)
    "copy.copy": (copy.copy, True),
    ".data": (lambda x: x.data, True),
    "tree leaves": (lambda x: jax.tree.leaves(x)[0], True),
    "a block": (lambda x: x.data.addressable_shards[1].data, True),
    "to_jax (a copy)": (lambda x: x.to_jax(), False),
    "view x[:]": (lambda x: x[:], False),
}


@pytest.mark.parametrize("holder_name", HOLDERS)
def test_other_holders_keep_their_values(holder_name):
    host = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    x = _fresh(host, "8")
    make, shares = HOLDERS[holder_name]
    holder = make(x)
    old = _old(x)
    x += 1
    assert _donated(old) != shares, holder_name
    np.testing.assert_array_equal(np.asarray(x), host + 1)
    if holder_name.startswith("view"):
        np.testing.assert_array_equal(np.asarray(holder), host + 1)  # it shows x's write
    elif holder_name == "a block":  # block 1: rows 5..9 of the padded data
        np.testing.assert_array_equal(np.asarray(holder), host[5:10])
    elif holder_name in (".data", "tree leaves"):  # the padded physical data
        np.testing.assert_array_equal(np.asarray(holder)[:SHAPE[0]], host)
    else:
        np.testing.assert_array_equal(np.asarray(holder), host)


@pytest.mark.parametrize("explicit", [False, True])
def test_user_jax_array_stays_readable(explicit):
    """darray.asarray keeps a user's jax.Array as it is, or (an Explicit mesh: darray computes
    on its Auto twin) wraps the same device buffers in another jax.Array: either way the user's
    array is never donated. Once the user drops it, x alone holds the buffers."""
    mesh = mesh_of((8,), ("d",), explicit=explicit)
    host = np.arange(40 * 3, dtype=np.float32).reshape(40, 3)
    # (`* 1`: device memory of jax's own; a device_put of host data may borrow the host
    # array's memory, which jax never donates)
    j = jax.device_put(host, NamedSharding(mesh, PartitionSpec("d"))) * 1
    a = darray.asarray(j)
    assert (a._stored is j) != explicit  # the two ways of sharing
    old = _old(a)
    a += 1
    assert not _donated(old)
    np.testing.assert_array_equal(np.asarray(j), host)
    np.testing.assert_array_equal(np.asarray(a), host + 1)
    b = darray.asarray(jax.device_put(host, NamedSharding(mesh, PartitionSpec("d"))) * 1)
    old = _old(b)
    b *= 2
    assert _donated(old)
    np.testing.assert_array_equal(np.asarray(b), host * 2)
    assert_layout(b, split=("d", None))


def test_views_reread_and_are_never_donated():
    host = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    x = _fresh(host, "2x4")
    v = x[1:30:2]
    old = _old(x)
    x *= 2
    assert _donated(old)  # the view holds its own data and a weak link to x
    np.testing.assert_array_equal(np.asarray(v), host[1:30:2] * 2)
    view_old = _old(v)
    v += 1  # a view writes its base: its own data may be read again, never donated
    assert not _donated(view_old)
    expect = host * 2
    expect[1:30:2] += 1
    np.testing.assert_array_equal(np.asarray(x), expect)
    np.testing.assert_array_equal(np.asarray(v), expect[1:30:2])


def test_refused_dtype_change_leaves_x_intact():
    host = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)
    x = _fresh(host, "8")
    old = _old(x)
    with pytest.raises(TypeError, match="change the dtype of x from int32"):
        x /= 2
    assert not _donated(old)
    np.testing.assert_array_equal(np.asarray(x), host)


def test_self_operand_and_small_and_traced_arrays_are_not_donated(monkeypatch):
    host = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    with monkeypatch.context() as patch:
        patch.setattr(donation, "MIN_BYTES", 1 << 20)  # the default floor: x is 2 KiB
        x = _fresh(host, "8")
        old = _old(x)
        x -= 1
        assert not _donated(old)
        np.testing.assert_array_equal(np.asarray(x), host - 1)

    x = _fresh(host, "8")
    old = _old(x)
    x += x  # the operand is x's own buffer
    assert not _donated(old)
    np.testing.assert_array_equal(np.asarray(x), host * 2)

    @jax.jit
    def step(a):
        a += 1  # traced: functional, nothing donated
        return a * 2

    x = _fresh(host, "2x4")
    old = _old(x)
    y = step(x)
    assert not _donated(old) and not x._stored.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), (host + 1) * 2)
    np.testing.assert_array_equal(np.asarray(x), host)
    assert_layout(y, x.layout)


@pytest.mark.parametrize("mesh_name", MESHES)
def test_setitem_basic_key_donates_unless_shared(mesh_name):
    """``x[key] = value`` (a basic key: block-local writes) writes into x's buffer too; a copy
    of x, or a value that is x's own data, keeps it from donating."""
    host = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    expect = host.copy()
    x = _fresh(host, mesh_name)
    layout, old = x.layout, _old(x)
    x[3:30:4, 2] = -1.0
    expect[3:30:4, 2] = -1.0
    assert _donated(old)
    old = _old(x)
    x[5:9] = x[0:4]  # the value is read from x first: its own buffer
    expect[5:9] = expect[0:4]
    assert _donated(old)
    snapshot = copy.copy(x)
    old = _old(x)
    x[0] = 7.0
    assert not _donated(old)
    np.testing.assert_array_equal(np.asarray(snapshot), expect)
    expect[0] = 7.0
    del snapshot
    old = _old(x)
    x[:, :] = x  # the value is x itself
    assert not _donated(old)
    np.testing.assert_array_equal(np.asarray(x), expect)
    assert_layout(x, layout)
