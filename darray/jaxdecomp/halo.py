"""darray.jaxdecomp.halo: jaxDecomp's `halo` submodule (re-exports only)."""
from darray._src.jaxdecomp_compat.halo import halo_exchange as halo_exchange
