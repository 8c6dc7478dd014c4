"""Ghost cells: `halo` fills them from neighbouring blocks, `halo_reduce` sums them back."""
from darray._src.halo.api import halo as halo
from darray._src.halo.api import halo_reduce as halo_reduce
from darray._src.halo.api import register_halo_backend as register_halo_backend
from darray._src.halo.api import unhalo as unhalo
