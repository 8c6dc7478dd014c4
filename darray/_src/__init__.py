"""darray's implementation. Nothing here is public API; `darray/__init__.py` re-exports."""
