"""The type: `DistArray` (array.py), a jax.Array plus its Layout, as a pytree.

distarray_methods.pyi declares for type checkers the methods that methods/ attaches at import.
"""
