"""darray: distributed n-d arrays for JAX, an Array API namespace with distributed FFT and halos.

This module only re-exports; the implementation lives in darray._src.
"""
# -- core types ---------------------------------------------------------------------------
from darray._src.array import DistArray as DistArray
from darray._src.layout import Layout as Layout
from darray._src.errors import LayoutError as LayoutError
from darray._src.placement import default_mesh as default_mesh

# -- creation -----------------------------------------------------------------------------
from darray._src.api.creation import arange as arange
from darray._src.api.creation import asarray as asarray
from darray._src.api.creation import empty as empty
from darray._src.api.creation import empty_like as empty_like
from darray._src.api.creation import eye as eye
from darray._src.api.creation import full as full
from darray._src.api.creation import full_like as full_like
from darray._src.api.creation import linspace as linspace
from darray._src.api.creation import ones as ones
from darray._src.api.creation import ones_like as ones_like
from darray._src.api.creation import zeros as zeros
from darray._src.api.creation import zeros_like as zeros_like

# -- native part --------------------------------------------------------------------------
from darray._src.native import build_info as build_info
