"""Covers: darray/_src/fft/api.py, darray/_src/fft/r2r.py, darray/_src/kernels/r2r_local.py

XLA's memory plan of the distributed FFT programs (issue #21), read from
``jax.jit(f).lower(x).compile().memory_analysis()``.

What is counted: (temp_size_in_bytes + output_size_in_bytes) / argument_size_in_bytes, i.e. how
many arrays of the input's size the program allocates beyond its input, per device, at 64^3 on
the slab (8,), pencil (2, 4) and merged (2, 4)-input plans. The compiled programs are also
checked for all-gathers (there must be none).

On XLA's CPU backend every all-to-all becomes one send and one receive buffer per device of
the group, all live together, so an exchange holds two arrays of pieces at once; values that do
not overlap in time can share the output's buffer (only one value at a time), everything else
is packed by a heap ordered by size, then by lifetime. The bounds are the values measured on
both jax lines (0.10.2, 0.12), identical there, plus a little margin:

* fftn 3.00: the send and receive pieces (2) beside the output buffer, which holds the arrays
  before and after the exchange and the output: the floor of an exchange between two FFTs.
* ifftn 2.75 (pencil) to 2.875 (slab, merged): it ends in the 1/n pass of an earlier stage
  (fft_exec._deferred_stage), so the concatenation of the received pieces can use the output's
  buffer, and one send piece shares it too. Ended by the FFT itself, that concatenation sat in
  the heap where the pre-exchange FFT had been and pushed the receive pieces beyond the send
  pieces: 3.75-3.875.
* rfftn 3.09 (slab), 3.38 (pencil), 3.75 (merged): the same floor as fftn, three arrays of the
  complex half spectrum, counted against a real input half its size per element: 33/32 of the
  input, 36/32 and 40/32 where the 33 bins are padded to a multiple of 4 and 8 devices.
* irfftn 3.55 (merged) to 3.85 (slab): the complex intermediates do not fit the real output's
  buffer, so all of them are packed in the heap; by size then lifetime it places the
  pre-exchange FFT output (the longest-lived full array) first, and the post-exchange
  concatenation at the same offset, so the receive pieces land beyond the send pieces (a
  packing of 2.97 exists; XLA's size-ordered heap does not find it).
* dctn 3.06: its two-axis stage is one 2-D real FFT (r2r_local_2d), whose post-twiddle
  reads the spectrum's row mirror; XLA materialises that mirror (two real halves, 1.03 arrays)
  beside the spectrum. One axis at a time the program plans 3.00 (the DCT-II kernel's output,
  a stack of its two halves, is fused into the send slices: r2r_local.join_halves) but ran 1.17x
  slower (dctn+idctn 1.68 against 1.43x rfftn+irfftn, 256^3, (2, 4) mesh).
* idctn 3.03: the DCT-III kernel's complex input to its inverse real FFT (N/2 + 1 bins, 1.03
  arrays) is live beside the kernel's real result (r2r_local._dct3).
* dctn and idctn type 4 3.00 (3.75-3.88 before the stack form of r2r_local._interleave).
* dctn type 1 3.00 (pencil, merged), 3.88 (slab): its complex (N-1)-point FFT and that FFT's
  complex input are two arrays each (4.94 when run over the whole block at once; a single
  real FFT would need a running sum across bins, which loses accuracy), so the kernel runs
  over four slices of the rows in a loop (r2r_local._in_row_slices). On the slab the loop
  over axis 0 after the exchange works in its own buffer, which the heap places where the
  loop before the exchange had its buffer: the receive pieces land beyond the send pieces,
  as in irfftn.

A regression that adds a full extra copy (e.g. an optimization_barrier before every exchange,
a complex gather of a DCT's spectrum, a concatenated copy of the send rows, an inverse that
ends in its FFT again) moves a program above its bound.
"""
import jax
import numpy as np
import pytest
from helpers import mesh_of

import darray
import darray.fft as dfft

N = 64
# arrays beyond the input (temp + output over argument): measured on both jax lines + margin
BOUNDS = {
    "slab": {"fftn": 3.01, "ifftn": 2.89, "rfftn": 3.1, "irfftn": 3.86, "dctn": 3.07,
             "idctn": 3.04, "dctn type 1": 3.89, "dctn type 4": 3.01,
             "idctn type 4": 3.01},
    "pencil": {"fftn": 3.01, "ifftn": 2.76, "rfftn": 3.38, "irfftn": 3.65, "dctn": 3.07,
               "idctn": 3.04, "dctn type 1": 3.01, "dctn type 4": 3.01,
               "idctn type 4": 3.01},
    "merged": {"fftn": 3.01, "ifftn": 2.89, "rfftn": 3.76, "irfftn": 3.56, "dctn": 3.07,
               "idctn": 3.04, "dctn type 1": 3.01, "dctn type 4": 3.01,
               "idctn type 4": 3.01},
}


def _arrays_beyond_input(fn, x):
    compiled = jax.jit(fn).lower(x).compile()
    m = compiled.memory_analysis()
    gathers = compiled.as_text().count("all-gather")
    return (m.temp_size_in_bytes + m.output_size_in_bytes) / m.argument_size_in_bytes, gathers


@pytest.mark.parametrize("plan", ["slab", "pencil", "merged"])
def test_every_program_plans_at_most_the_pinned_arrays(plan):
    mesh_shape, names, decomposition = {
        "slab": ((8,), ("d",), "auto"), "pencil": ((2, 4), ("x", "y"), "pencil"),
        "merged": ((2, 4), ("x", "y"), "auto")}[plan]
    mesh = mesh_of(mesh_shape, names, explicit=True)
    host = np.random.default_rng(0).standard_normal((N, N, N)).astype(np.float32)
    xr = darray.asarray(host, mesh=mesh, spec=names)
    xc = darray.asarray(host.astype(np.complex64), mesh=mesh, spec=names)
    kc = dfft.fftn(xc, decomposition=decomposition)
    kr = dfft.rfftn(xr, decomposition=decomposition)
    programs = {
        "fftn": (lambda v: dfft.fftn(v, decomposition=decomposition), xc),
        "ifftn": (lambda v: dfft.ifftn(v, decomposition=decomposition), kc),
        "rfftn": (lambda v: dfft.rfftn(v, decomposition=decomposition), xr),
        "irfftn": (lambda v: dfft.irfftn(v, s=(N, N, N), decomposition=decomposition), kr),
        "dctn": (lambda v: dfft.dctn(v), xr),
        "idctn": (lambda v: dfft.idctn(v), xr),
        "dctn type 1": (lambda v: dfft.dctn(v, type=1), xr),
        "dctn type 4": (lambda v: dfft.dctn(v, type=4), xr),
        "idctn type 4": (lambda v: dfft.idctn(v, type=4), xr),
    }
    measured = {name: _arrays_beyond_input(fn, x) for name, (fn, x) in programs.items()}
    assert dict(kc.layout.mesh.shape) == dict(mesh.shape) and any(kr.layout.split)
    assert {name: g for name, (_, g) in measured.items() if g} == {}
    arrays = {name: v for name, (v, _) in measured.items()}
    over = {name: v for name, v in arrays.items() if v > BOUNDS[plan][name]}
    assert not over, (over, arrays)


@pytest.mark.x64
@pytest.mark.parametrize("family", ["dct", "dst"])
def test_type_1_kernels_run_in_row_slices_and_match_scipy(family):
    # r2r_local._in_row_slices: 8 rows run as 4 slices of 2 (a loop writing in place); odd and
    # even M = N -+ 1, the even recursion's inner odd steps, and a prime M
    import scipy.fft

    from darray._src.kernels.r2r_local import R2RKernel, apply_kernel

    rng = np.random.default_rng(4)
    ref_fn = scipy.fft.dct if family == "dct" else scipy.fft.dst
    for n in (2, 3, 4, 5, 6, 9, 16, 17, 18, 33, 60, 62):
        x = rng.standard_normal((2, 4, n))
        got = apply_kernel(jax.numpy.asarray(x), -1, R2RKernel(family, 1, norm="ortho"))
        ref = ref_fn(x, type=1, norm="ortho", axis=-1)
        assert got.shape == ref.shape
        np.testing.assert_allclose(np.asarray(got), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    # along axis 1 (length 5: an even M for both families, whose recursion runs inside the
    # slices, issue 49) with 3 * n rows that four slices do not divide (111, 105, 54 rows: 3,
    # 1 and 2 left over for one more call)
    for n in (37, 35, 18):
        x = rng.standard_normal((3, 5, n))
        got = apply_kernel(jax.numpy.asarray(x), 1, R2RKernel(family, 1))
        ref = ref_fn(x, type=1, axis=1)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    # the whole-block kernel planned 3.9 arrays of complex temporaries beside its output;
    # a prime M = 127 (odd: the step in frequency, which runs in slices)
    n = 128 if family == "dct" else 126
    x32 = jax.numpy.asarray(rng.standard_normal((64, 8, n)).astype(np.float32))
    kernel = R2RKernel(family, 1)
    compiled = jax.jit(lambda v: apply_kernel(v, -1, kernel)).lower(x32).compile()
    m = compiled.memory_analysis()
    assert "while" in compiled.as_text()
    assert (m.temp_size_in_bytes + m.output_size_in_bytes) / m.argument_size_in_bytes < 3.0
