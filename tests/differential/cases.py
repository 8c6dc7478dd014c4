"""Import every case module so that the registry is complete."""
import cases_elementwise  # noqa: F401
