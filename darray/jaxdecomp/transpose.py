"""darray.jaxdecomp.transpose: jaxDecomp's `transpose` submodule (re-exports only)."""
from darray._src.jaxdecomp_compat.transpose import transposeXtoY as transposeXtoY
from darray._src.jaxdecomp_compat.transpose import transposeXtoZ as transposeXtoZ
from darray._src.jaxdecomp_compat.transpose import transposeYtoX as transposeYtoX
from darray._src.jaxdecomp_compat.transpose import transposeYtoZ as transposeYtoZ
from darray._src.jaxdecomp_compat.transpose import transposeZtoX as transposeZtoX
from darray._src.jaxdecomp_compat.transpose import transposeZtoY as transposeZtoY
