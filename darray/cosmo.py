"""darray.cosmo: power and energy spectra, Gaussian initial conditions and Lagrangian
displacements on distributed grids (re-exports only)."""
from darray._src.cosmo.ics import gaussian_field as gaussian_field
from darray._src.cosmo.ics import lpt2 as lpt2
from darray._src.cosmo.ics import zeldovich as zeldovich
from darray._src.cosmo.spectrum import EnergySpectrum as EnergySpectrum
from darray._src.cosmo.spectrum import PowerSpectrum as PowerSpectrum
from darray._src.cosmo.spectrum import energy_spectrum as energy_spectrum
from darray._src.cosmo.spectrum import interlace as interlace
from darray._src.cosmo.spectrum import power_spectrum as power_spectrum
