"""Particles on a distributed grid: paint, readout and the schemes' k-space windows.

api.py: `paint`, `readout`, `window` and `needed_capacity` on DistArrays (what darray.particles
re-exports); deposit.py: the block-level code every device runs inside `shard_map`;
schemes.py: the mass-assignment schemes (which cells a particle touches, with what weights).

This face imports nothing: `api.py` imports `deposit.py`, which runs this file first, so a
re-export of `api` here was a package-level import cycle. Import `darray._src.particles.api`.
"""
