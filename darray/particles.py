"""darray.particles: particle-mesh painting and interpolation on distributed grids (re-exports
only)."""
from darray._src.particles import ParticleError as ParticleError
from darray._src.particles import needed_capacity as needed_capacity
from darray._src.particles import paint as paint
from darray._src.particles import readout as readout
from darray._src.particles import window as window
