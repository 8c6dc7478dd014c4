"""darray.jaxdecomp.fft: jaxDecomp's `fft` submodule (re-exports only)."""
from darray._src.jaxdecomp_compat.fft import fftfreq3d as fftfreq3d
from darray._src.jaxdecomp_compat.fft import pfft3d as pfft3d
from darray._src.jaxdecomp_compat.fft import pifft3d as pifft3d
from darray._src.jaxdecomp_compat.fft import pirfft3d as pirfft3d
from darray._src.jaxdecomp_compat.fft import prfft3d as prfft3d
from darray._src.jaxdecomp_compat.fft import rfftfreq3d as rfftfreq3d
