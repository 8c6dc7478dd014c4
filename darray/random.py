"""darray.random: random fields identical on any mesh and any process count.

This module only re-exports; the implementation lives in darray._src.extras.random.
"""
from darray._src.extras.random import integers as integers
from darray._src.extras.random import normal as normal
from darray._src.extras.random import uniform as uniform
