"""The foundation floor: what every other floor may read, and which reads no darray module.

errors.py: darray's exception types; config.py: the options (declared once, thread-local
overrides); compat.py: the seams between jax versions; native.py: loading the compiled FFI
handlers late; program_cache.py: the cache of compiled programs; dtypes.py: the Array API's
dtypes and their categories. kernels/ (pure per-block math) shares this floor.
"""
