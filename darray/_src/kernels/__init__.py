"""Pure per-block math: what one device computes on its block, jax and numpy only.

Nothing here knows a mesh, a layout or a DistArray, so every module is on the ground floor.

r2r_local.py: the DCT/DST kernels (types 1-4) along one unsplit axis; r2r_local_2d.py: types 2
and 3 along two axes at once; local_fft.py: inverse FFTs split into passes that stay right on
GPU at any size; complex_special.py: complex elementwise kernels with the Array API's special
cases.
"""
