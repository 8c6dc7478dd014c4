"""darray.particles: particle-mesh painting and interpolation on distributed grids (re-exports
only)."""
from darray._src.particles.api import ParticleError as ParticleError
from darray._src.particles.api import needed_capacity as needed_capacity
from darray._src.particles.api import paint as paint
from darray._src.particles.api import readout as readout
from darray._src.particles.api import window as window
from darray._src.particles.catalogue import paint_catalogue as paint_catalogue
from darray._src.particles.catalogue import readout_catalogue as readout_catalogue
