"""The type: `DistArray` (array.py), a jax.Array plus its Layout, as a pytree.

The stub darray/_src/distarray_methods.pyi declares for type checkers the methods that methods/
attaches at import; it stays loose in darray/_src because it names the extras' `AtIndexer`,
which this floor must not import.
"""
