"""darray.jaxdecomp: jaxDecomp 0.3's public array API on darray (re-exports only).

Functions take and return plain sharded jax.Arrays with jaxDecomp 0.3.1's values, shapes and
output shardings, so code written against jaxDecomp runs unchanged, including JaxPM with
``sys.modules["jaxdecomp"] = darray.jaxdecomp``. See docs/from_jaxdecomp.md for the
differences (halo_exchange's gradient is the correct one). Under jax.jit on Auto mesh axes,
with no mesh in context, darray plans when XLA partitions the program, as jaxDecomp does.
"""
from darray._src.jaxdecomp_compat.config import Decomposition as Decomposition
from darray._src.jaxdecomp_compat.config import HaloCommBackend as HaloCommBackend
from darray._src.jaxdecomp_compat.config import JAXDecompConfig as JAXDecompConfig
from darray._src.jaxdecomp_compat.config import (
    TransposeCommBackend as TransposeCommBackend,
)
from darray._src.jaxdecomp_compat.config import TransposeType as TransposeType
from darray._src.jaxdecomp_compat.config import config as config
from darray._src.jaxdecomp_compat.config import finalize as finalize
from darray._src.jaxdecomp_compat.config import get_autotuned_config as get_autotuned_config
from darray._src.jaxdecomp_compat.config import get_pencil_info as get_pencil_info
from darray._src.jaxdecomp_compat.config import init as init
from darray._src.jaxdecomp_compat.config import make_config as make_config
from darray._src.jaxdecomp_compat.fft import fftfreq3d as fftfreq3d
from darray._src.jaxdecomp_compat.fft import pfft3d as pfft3d
from darray._src.jaxdecomp_compat.fft import pifft3d as pifft3d
from darray._src.jaxdecomp_compat.fft import rfftfreq3d as rfftfreq3d
from darray._src.jaxdecomp_compat.halo import halo_exchange as halo_exchange
from darray._src.jaxdecomp_compat.specs import (
    get_fft_output_sharding as get_fft_output_sharding,
)
from darray._src.jaxdecomp_compat.specs import get_output_specs as get_output_specs
from darray._src.jaxdecomp_compat.specs import (
    validate_spec_matches_mesh as validate_spec_matches_mesh,
)
from darray._src.jaxdecomp_compat.transpose import transposeXtoY as transposeXtoY
from darray._src.jaxdecomp_compat.transpose import transposeXtoZ as transposeXtoZ
from darray._src.jaxdecomp_compat.transpose import transposeYtoX as transposeYtoX
from darray._src.jaxdecomp_compat.transpose import transposeYtoZ as transposeYtoZ
from darray._src.jaxdecomp_compat.transpose import transposeZtoX as transposeZtoX
from darray._src.jaxdecomp_compat.transpose import transposeZtoY as transposeZtoY
from darray.jaxdecomp import fft as fft
from darray.jaxdecomp import halo as halo
from darray.jaxdecomp import transpose as transpose
from darray.jaxdecomp import typing as typing

NO_DECOMP = Decomposition.NO_DECOMP
SLAB_XY = Decomposition.SLAB_XY
SLAB_YZ = Decomposition.SLAB_YZ
PENCILS = Decomposition.PENCILS
TRANSPOSE_XY = TransposeType.TRANSPOSE_XY
TRANSPOSE_YZ = TransposeType.TRANSPOSE_YZ
TRANSPOSE_ZY = TransposeType.TRANSPOSE_ZY
TRANSPOSE_YX = TransposeType.TRANSPOSE_YX
HALO_COMM_MPI = HaloCommBackend.HALO_COMM_MPI
HALO_COMM_MPI_BLOCKING = HaloCommBackend.HALO_COMM_MPI_BLOCKING
HALO_COMM_NCCL = HaloCommBackend.HALO_COMM_NCCL
HALO_COMM_NVSHMEM = HaloCommBackend.HALO_COMM_NVSHMEM
HALO_COMM_NVSHMEM_BLOCKING = HaloCommBackend.HALO_COMM_NVSHMEM_BLOCKING
TRANSPOSE_COMM_MPI_P2P = TransposeCommBackend.TRANSPOSE_COMM_MPI_P2P
TRANSPOSE_COMM_MPI_P2P_PL = TransposeCommBackend.TRANSPOSE_COMM_MPI_P2P_PL
TRANSPOSE_COMM_MPI_A2A = TransposeCommBackend.TRANSPOSE_COMM_MPI_A2A
TRANSPOSE_COMM_NCCL = TransposeCommBackend.TRANSPOSE_COMM_NCCL
TRANSPOSE_COMM_NCCL_PL = TransposeCommBackend.TRANSPOSE_COMM_NCCL_PL
TRANSPOSE_COMM_NVSHMEM = TransposeCommBackend.TRANSPOSE_COMM_NVSHMEM
TRANSPOSE_COMM_NVSHMEM_PL = TransposeCommBackend.TRANSPOSE_COMM_NVSHMEM_PL
__version__ = "0.3.1"  # the jaxDecomp API this module follows
