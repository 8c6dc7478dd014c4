"""Import every case module so that the registry is complete."""
import cases_creation  # noqa: F401
import cases_elementwise  # noqa: F401
import cases_extra  # noqa: F401
import cases_linalg_fft  # noqa: F401
import cases_manipulation  # noqa: F401
import cases_numerical  # noqa: F401
import cases_reductions  # noqa: F401
