"""Pure-JAX backend: shard_map blocks with lax.all_to_all transposes and jnp.fft local stages.

Runs on every platform JAX runs on; every op has JAX's own AD and batching rules.
"""
