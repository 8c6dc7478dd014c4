"""darray.jaxdecomp's implementation: jaxDecomp 0.3's public array API on darray.

config.py: the backend constants and `config`; specs.py: jaxDecomp's decomposition types and
output-sharding rules; placement.py: reading a plain jax.Array's mesh and spec and wrapping it
as a DistArray; fft.py, halo.py, transpose.py: the operations.
"""
