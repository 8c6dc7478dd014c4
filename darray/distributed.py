"""darray.distributed: start a multi-process run under any launcher, with bounded failures.

This module only re-exports; the implementation lives in darray._src.distributed.
"""
from darray._src.distributed import DEAD_PEER_EXIT as DEAD_PEER_EXIT
from darray._src.distributed import detect_launch as detect_launch
from darray._src.distributed import gather as gather
from darray._src.distributed import initialize as initialize
from darray._src.distributed import report as report
from darray._src.host import NonLocalDataError as NonLocalDataError
