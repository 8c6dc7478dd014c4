"""darray.jaxdecomp.typing: jaxDecomp's `typing` submodule (re-exports only)."""
from darray._src.jaxdecomp_compat.specs import GdimsType as GdimsType
from darray._src.jaxdecomp_compat.specs import HaloExtentType as HaloExtentType
from darray._src.jaxdecomp_compat.specs import HLOResult as HLOResult
from darray._src.jaxdecomp_compat.specs import PdimsType as PdimsType
from darray._src.jaxdecomp_compat.specs import Periodicity as Periodicity
from darray._src.jaxdecomp_compat.specs import (
    TransposablePdimsType as TransposablePdimsType,
)
