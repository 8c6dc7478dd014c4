"""darray.linalg: the Array API linear algebra extension on DistArrays.

This module only re-exports; the implementation lives in darray._src.api.linalg.
"""
from darray._src.api.linalg import EighResult as EighResult
from darray._src.api.linalg import EigResult as EigResult
from darray._src.api.linalg import LstsqResult as LstsqResult
from darray._src.api.linalg import QRResult as QRResult
from darray._src.api.linalg import SlogdetResult as SlogdetResult
from darray._src.api.linalg import SVDResult as SVDResult
from darray._src.api.linalg import cholesky as cholesky
from darray._src.api.linalg import cross as cross
from darray._src.api.linalg import det as det
from darray._src.api.linalg import diagonal as diagonal
from darray._src.api.linalg import eig as eig
from darray._src.api.linalg import eigh as eigh
from darray._src.api.linalg import eigvals as eigvals
from darray._src.api.linalg import eigvalsh as eigvalsh
from darray._src.api.linalg import inv as inv
from darray._src.api.linalg import lstsq as lstsq
from darray._src.api.linalg import matmul as matmul
from darray._src.api.linalg import matrix_norm as matrix_norm
from darray._src.api.linalg import matrix_power as matrix_power
from darray._src.api.linalg import matrix_rank as matrix_rank
from darray._src.api.linalg import matrix_transpose as matrix_transpose
from darray._src.api.linalg import outer as outer
from darray._src.api.linalg import pinv as pinv
from darray._src.api.linalg import qr as qr
from darray._src.api.linalg import slogdet as slogdet
from darray._src.api.linalg import solve as solve
from darray._src.api.linalg import svd as svd
from darray._src.api.linalg import svdvals as svdvals
from darray._src.api.linalg import tensordot as tensordot
from darray._src.api.linalg import trace as trace
from darray._src.api.linalg import vecdot as vecdot
from darray._src.api.linalg import vector_norm as vector_norm
