"""The Array API namespace: one module per section of the standard, and nothing else.

creation.py: creation functions (asarray, arange, zeros, full, linspace, eye, ..._like);
data_type_functions.py: astype, can_cast, finfo, iinfo, isdtype, result_type (the dtypes
themselves are darray/_src/base/dtypes.py); elementwise.py: every elementwise function, from one
table; indexing.py: ``x[key]``, take, take_along_axis; info.py: __array_namespace_info__;
linalg.py: matmul, tensordot, vecdot and the linalg extension; manipulation.py: manipulation
functions; searching.py: argmax, argmin, nonzero, searchsorted, where; set_functions.py: the
unique family and isin; sorting.py: sort, argsort; statistical.py: sum, mean, var, ...;
utility.py: all, any, diff; versions.py: which revision a namespace follows.

What every section uses lives one floor below, in engine/; numpy's functions beyond the
standard live one floor above, in extras/.
"""
