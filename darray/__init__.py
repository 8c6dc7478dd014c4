"""darray: distributed n-d arrays for JAX, an Array API namespace with distributed FFT and halos.

This module only re-exports; the implementation lives in darray._src. Each section below is its
own import block (``# isort: split``), so sorting keeps every name under its section's banner.
"""
# -- version and core types ----------------------------------------------------------------
from darray._src.base.errors import LayoutError as LayoutError
from darray._src.base.errors import MemoryBudgetError as MemoryBudgetError
from darray._src.distarray.array import DistArray as DistArray
from darray._src.layout.layout import Layout as Layout
from darray._src.placement.placement import default_mesh as default_mesh
from darray._version import __version__ as __version__

# isort: split
# -- Array API namespace, part A: constants, dtypes, data type functions, info ----------
from math import e as e
from math import inf as inf
from math import nan as nan
from math import pi as pi

from darray._src.api.data_type_functions import astype as astype
from darray._src.api.data_type_functions import can_cast as can_cast
from darray._src.api.data_type_functions import finfo as finfo
from darray._src.api.data_type_functions import iinfo as iinfo
from darray._src.api.data_type_functions import isdtype as isdtype
from darray._src.api.data_type_functions import result_type as result_type
from darray._src.api.info import __array_namespace_info__ as __array_namespace_info__
from darray._src.base.dtypes import bool as bool
from darray._src.base.dtypes import complex64 as complex64
from darray._src.base.dtypes import complex128 as complex128
from darray._src.base.dtypes import float16 as float16
from darray._src.base.dtypes import float32 as float32
from darray._src.base.dtypes import float64 as float64
from darray._src.base.dtypes import int8 as int8
from darray._src.base.dtypes import int16 as int16
from darray._src.base.dtypes import int32 as int32
from darray._src.base.dtypes import int64 as int64
from darray._src.base.dtypes import uint8 as uint8
from darray._src.base.dtypes import uint16 as uint16
from darray._src.base.dtypes import uint32 as uint32
from darray._src.base.dtypes import uint64 as uint64

__array_api_version__ = "2025.12"
newaxis = None

# -- creation (the standard's, then numpy's names and creation without a host array) -------
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
from darray._src.extras.blockwise import from_callback as from_callback
from darray._src.extras.blockwise import fromfunction as fromfunction
from darray._src.extras.creation_extra import diag as diag
from darray._src.extras.creation_extra import from_dlpack as from_dlpack
from darray._src.extras.creation_extra import logspace as logspace
from darray._src.extras.creation_extra import meshgrid as meshgrid
from darray._src.extras.creation_extra import tril as tril
from darray._src.extras.creation_extra import triu as triu

# isort: split
# -- elementwise (one table: darray._src.api.elementwise.TABLE) ---------------------------
from darray._src.api.elementwise import abs as abs
from darray._src.api.elementwise import acos as acos
from darray._src.api.elementwise import acosh as acosh
from darray._src.api.elementwise import add as add
from darray._src.api.elementwise import asin as asin
from darray._src.api.elementwise import asinh as asinh
from darray._src.api.elementwise import atan as atan
from darray._src.api.elementwise import atan2 as atan2
from darray._src.api.elementwise import atanh as atanh
from darray._src.api.elementwise import bitwise_and as bitwise_and
from darray._src.api.elementwise import bitwise_invert as bitwise_invert
from darray._src.api.elementwise import bitwise_left_shift as bitwise_left_shift
from darray._src.api.elementwise import bitwise_or as bitwise_or
from darray._src.api.elementwise import bitwise_right_shift as bitwise_right_shift
from darray._src.api.elementwise import bitwise_xor as bitwise_xor
from darray._src.api.elementwise import ceil as ceil
from darray._src.api.elementwise import clip as clip
from darray._src.api.elementwise import conj as conj
from darray._src.api.elementwise import copysign as copysign
from darray._src.api.elementwise import cos as cos
from darray._src.api.elementwise import cosh as cosh
from darray._src.api.elementwise import divide as divide
from darray._src.api.elementwise import equal as equal
from darray._src.api.elementwise import exp as exp
from darray._src.api.elementwise import expm1 as expm1
from darray._src.api.elementwise import floor as floor
from darray._src.api.elementwise import floor_divide as floor_divide
from darray._src.api.elementwise import greater as greater
from darray._src.api.elementwise import greater_equal as greater_equal
from darray._src.api.elementwise import hypot as hypot
from darray._src.api.elementwise import imag as imag
from darray._src.api.elementwise import isfinite as isfinite
from darray._src.api.elementwise import isinf as isinf
from darray._src.api.elementwise import isnan as isnan
from darray._src.api.elementwise import less as less
from darray._src.api.elementwise import less_equal as less_equal
from darray._src.api.elementwise import log as log
from darray._src.api.elementwise import log1p as log1p
from darray._src.api.elementwise import log2 as log2
from darray._src.api.elementwise import log10 as log10
from darray._src.api.elementwise import logaddexp as logaddexp
from darray._src.api.elementwise import logical_and as logical_and
from darray._src.api.elementwise import logical_not as logical_not
from darray._src.api.elementwise import logical_or as logical_or
from darray._src.api.elementwise import logical_xor as logical_xor
from darray._src.api.elementwise import maximum as maximum
from darray._src.api.elementwise import minimum as minimum
from darray._src.api.elementwise import multiply as multiply
from darray._src.api.elementwise import negative as negative
from darray._src.api.elementwise import nextafter as nextafter
from darray._src.api.elementwise import not_equal as not_equal
from darray._src.api.elementwise import positive as positive
from darray._src.api.elementwise import pow as pow
from darray._src.api.elementwise import real as real
from darray._src.api.elementwise import reciprocal as reciprocal
from darray._src.api.elementwise import remainder as remainder
from darray._src.api.elementwise import round as round
from darray._src.api.elementwise import sign as sign
from darray._src.api.elementwise import signbit as signbit
from darray._src.api.elementwise import sin as sin
from darray._src.api.elementwise import sinh as sinh
from darray._src.api.elementwise import sqrt as sqrt
from darray._src.api.elementwise import square as square
from darray._src.api.elementwise import subtract as subtract
from darray._src.api.elementwise import tan as tan
from darray._src.api.elementwise import tanh as tanh
from darray._src.api.elementwise import trunc as trunc

# isort: split
# -- Array API namespace, part B: manipulation, indexing, searching, sorting, sets,
# -- statistical, utility, linear algebra ---------------------------------------------------
from darray._src.api.indexing import dynamic_slice as dynamic_slice
from darray._src.api.indexing import take as take
from darray._src.api.indexing import take_along_axis as take_along_axis
from darray._src.api.linalg import matmul as matmul
from darray._src.api.linalg import matrix_transpose as matrix_transpose
from darray._src.api.linalg import tensordot as tensordot
from darray._src.api.linalg import vecdot as vecdot
from darray._src.api.manipulation import broadcast_arrays as broadcast_arrays
from darray._src.api.manipulation import broadcast_shapes as broadcast_shapes
from darray._src.api.manipulation import broadcast_to as broadcast_to
from darray._src.api.manipulation import concat as concat
from darray._src.api.manipulation import expand_dims as expand_dims
from darray._src.api.manipulation import flip as flip
from darray._src.api.manipulation import moveaxis as moveaxis
from darray._src.api.manipulation import permute_dims as permute_dims
from darray._src.api.manipulation import repeat as repeat
from darray._src.api.manipulation import reshape as reshape
from darray._src.api.manipulation import roll as roll
from darray._src.api.manipulation import squeeze as squeeze
from darray._src.api.manipulation import stack as stack
from darray._src.api.manipulation import tile as tile
from darray._src.api.manipulation import unstack as unstack
from darray._src.api.searching import argmax as argmax
from darray._src.api.searching import argmin as argmin
from darray._src.api.searching import nonzero as nonzero
from darray._src.api.searching import searchsorted as searchsorted
from darray._src.api.searching import where as where
from darray._src.api.set_functions import isin as isin
from darray._src.api.set_functions import unique_all as unique_all
from darray._src.api.set_functions import unique_counts as unique_counts
from darray._src.api.set_functions import unique_inverse as unique_inverse
from darray._src.api.set_functions import unique_values as unique_values
from darray._src.api.sorting import argsort as argsort
from darray._src.api.sorting import sort as sort
from darray._src.api.statistical import count_nonzero as count_nonzero
from darray._src.api.statistical import cumulative_prod as cumulative_prod
from darray._src.api.statistical import cumulative_sum as cumulative_sum
from darray._src.api.statistical import max as max
from darray._src.api.statistical import mean as mean
from darray._src.api.statistical import min as min
from darray._src.api.statistical import prod as prod
from darray._src.api.statistical import std as std
from darray._src.api.statistical import sum as sum
from darray._src.api.statistical import var as var
from darray._src.api.utility import all as all
from darray._src.api.utility import any as any
from darray._src.api.utility import diff as diff

# isort: split
# -- numpy's names beyond the standard: nan-reductions, cumulative, quantiles, numerical
# -- tools, stencils, binning ---------------------------------------------------------------
from darray._src.extras.binning import bincount as bincount
from darray._src.extras.binning import histogram as histogram
from darray._src.extras.numerical import einsum as einsum
from darray._src.extras.numerical import interp as interp
from darray._src.extras.numpy_reductions import cross as cross
from darray._src.extras.numpy_reductions import cumprod as cumprod
from darray._src.extras.numpy_reductions import cumsum as cumsum
from darray._src.extras.numpy_reductions import nanargmax as nanargmax
from darray._src.extras.numpy_reductions import nanargmin as nanargmin
from darray._src.extras.numpy_reductions import nanmax as nanmax
from darray._src.extras.numpy_reductions import nanmean as nanmean
from darray._src.extras.numpy_reductions import nanmin as nanmin
from darray._src.extras.numpy_reductions import nanprod as nanprod
from darray._src.extras.numpy_reductions import nanstd as nanstd
from darray._src.extras.numpy_reductions import nansum as nansum
from darray._src.extras.numpy_reductions import nanvar as nanvar
from darray._src.extras.quantiles import median as median
from darray._src.extras.quantiles import nanmedian as nanmedian
from darray._src.extras.quantiles import nanpercentile as nanpercentile
from darray._src.extras.quantiles import nanquantile as nanquantile
from darray._src.extras.quantiles import percentile as percentile
from darray._src.extras.quantiles import quantile as quantile
from darray._src.extras.stencils import gradient as gradient
from darray._src.extras.stencils import pad as pad

# isort: split
# -- submodules: fft, linalg, random fields, particles, cosmology, multi-process ------------
from darray import cosmo as cosmo
from darray import distributed as distributed
from darray import errors as errors
from darray import fft as fft
from darray import linalg as linalg
from darray import particles as particles
from darray import random as random

# isort: split
# -- transforms, halo and blocks (ghost cells, per-device functions) -----------------------
from darray._src.api.blocks import BlockInfo as BlockInfo
from darray._src.api.blocks import map_blocks as map_blocks
from darray._src.api.transforms import grad as grad
from darray._src.api.transforms import value_and_grad as value_and_grad
from darray._src.api.transforms import vmap as vmap
from darray._src.halo.api import halo as halo
from darray._src.halo.api import halo_reduce as halo_reduce
from darray._src.halo.api import unhalo as unhalo

# isort: split
# -- configuration, checkpoints, tuning, the native part -----------------------------------
from darray._src.backends.registry import record_backends as record_backends
from darray._src.base.config import config_context as config_context
from darray._src.base.config import get_config as get_config
from darray._src.base.config import set_config as set_config
from darray._src.base.memory_budget import MemoryReport as MemoryReport
from darray._src.base.memory_budget import check_memory as check_memory
from darray._src.base.native import build_info as build_info
from darray._src.extras.autotune import autotune as autotune
from darray._src.extras.io import load as load
from darray._src.extras.io import save as save

# isort: split
# -- DistArray's operators and methods ----------------------------------------------------
# Attached once, here, from the namespace above (as jax.numpy attaches jax.Array's): the type
# in darray._src.distarray.array knows nothing of the namespace; darray._src.methods.table
# holds the tables.
from darray._src.methods.table import register as _register_methods

_register_methods(DistArray, __import__("sys").modules[__name__])
del _register_methods
