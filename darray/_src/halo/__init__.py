"""Ghost cells: `halo.api` fills them from neighbouring blocks (`halo`) and sums them back
(`halo_reduce`); `plans.halo_plan` and `plans.halo_spec` are the pure-data parts it builds on.

This package's `__init__` imports nothing: `backends/jax/halo_exchange.py` imports
`plans.halo_plan`, which runs this file first, and a re-export of `halo.api` here (which imports the
backends) made a package-level import cycle. Import `darray._src.halo.api` directly.
"""
