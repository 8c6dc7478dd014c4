"""darray's version, written once: pyproject.toml reads it (scikit-build-core's regex provider)
and ``darray.__version__`` re-exports it, so a source checkout without an install has it too."""

__version__ = "0.2.0.dev0"
