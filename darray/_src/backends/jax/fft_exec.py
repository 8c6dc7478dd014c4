"""Execute an FFT `Plan` with the pure-JAX backend: one shard_map per call.

Inside the shard_map every device runs the plan's stages on its own block: jnp.fft for local
stages, `all_to_all_move` for transposes. Everything is a jnp/lax op with its own AD and
batching rules, so grad/jvp/vjp/jacfwd/jacrev/vmap work without custom rules (custom_vjp and
friends broke some transform when measured; see DESIGN.md).
"""
from __future__ import annotations

import jax.numpy as jnp

from darray._src import compat
from darray._src.backends.jax.transpose import all_to_all_move
from darray._src.fft.plan import Plan, Transpose


def run_stages(block, plan: Plan, norm: str):
    """The per-device body: apply every stage of `plan` to one local block."""
    for stage in plan.stages:
        if isinstance(stage, Transpose):
            block = all_to_all_move(block, stage.mesh_axes, stage.src, stage.dst,
                                    stage.src_len, stage.parts)
        elif stage.kind == "r2c":
            block = jnp.fft.rfft(block, n=stage.sizes[0], axis=stage.axes[0], norm=norm)
        elif stage.kind == "c2r":
            block = jnp.fft.irfft(block, n=stage.sizes[0], axis=stage.axes[0], norm=norm)
        else:
            fn = jnp.fft.ifftn if stage.inverse else jnp.fft.fftn
            block = fn(block, s=stage.sizes, axes=stage.axes, norm=norm)
    return block


def execute(plan: Plan, data, norm: str):
    """Physical array of `plan.in_layout` -> physical array of `plan.out_layout`."""
    if not plan.stages:
        return data
    body = compat.shard_map(lambda b: run_stages(b, plan, norm), mesh=plan.in_layout.mesh,
                            in_specs=(plan.in_layout.spec,), out_specs=plan.out_layout.spec)
    return body(data)


__all__ = ["execute", "run_stages"]
