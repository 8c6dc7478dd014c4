"""The Array API namespace, one module per section of the standard."""
