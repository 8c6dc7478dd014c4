"""darray.distributed: start a multi-process run under any launcher, with bounded failures.

This module only re-exports; the implementation lives in darray._src.placement.distributed.
"""
from darray._src.layout.host import NonLocalDataError as NonLocalDataError
from darray._src.placement.distributed import DEAD_PEER_EXIT as DEAD_PEER_EXIT
from darray._src.placement.distributed import detect_launch as detect_launch
from darray._src.placement.distributed import gather as gather
from darray._src.placement.distributed import initialize as initialize
from darray._src.placement.distributed import report as report
