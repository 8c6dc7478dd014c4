"""numpy's and JAX's functions beyond the Array API standard, built on it.

at.py: ``x.at[idx]`` updates; binning.py: bincount and histogram; blockwise.py: creation block
by block; creation_extra.py: from_dlpack, meshgrid, tril, triu; numerical.py: einsum and
interp; numpy_reductions.py: nan-reductions and friends; quantiles.py: quantile, percentile,
median; reinterpret.py: ``x.view(dtype)``; stencils.py: pad and gradient on the halo exchange;
printing.py: numpy-style printing of the few cells shown; io.py: zarr checkpoints;
random.py: mesh-independent random fields; autotune.py: timing meshes, decompositions and
backends for FFTs and halos; diagnostics.py: ``python -m darray.info``.
"""
