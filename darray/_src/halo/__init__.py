"""Ghost cells: api.py fills them from neighbouring blocks (`halo`), sums them back
(`halo_reduce`) and drops them (`unhalo`).

The pure-data parts it builds on are plans/halo_plan.py and plans/halo_spec.py; the exchange
itself is backends/jax/halo_exchange.py (or a native backend). This face imports nothing, so
that importing `halo.api` runs no other module; import `darray._src.halo.api` directly.
"""
