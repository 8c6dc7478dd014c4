"""darray.fft: the Array API fft extension on distributed arrays (re-exports only)."""
from darray._src.fft.api import fft as fft
from darray._src.fft.api import ifft as ifft
from darray._src.fft.api import fftn as fftn
from darray._src.fft.api import ifftn as ifftn
from darray._src.fft.api import rfft as rfft
from darray._src.fft.api import irfft as irfft
from darray._src.fft.api import rfftn as rfftn
from darray._src.fft.api import irfftn as irfftn
from darray._src.fft.api import hfft as hfft
from darray._src.fft.api import ihfft as ihfft
from darray._src.fft.freq import fftfreq as fftfreq
from darray._src.fft.freq import rfftfreq as rfftfreq
from darray._src.fft.freq import fftshift as fftshift
from darray._src.fft.freq import ifftshift as ifftshift
