"""darray.fft's implementation: distributed transforms on DistArrays (the extension floor).

api.py: the Array API fft extension (fft, ifft, rfft, fftn, ... and `run_r2r`), each checking
its arguments and handing one `Request` (request.py) to core.py, which plans it
(plans/fft_planner.py, or split_axis.py where every axis is split), selects the backend once
(backends/registry.py) and runs the plan; freq.py: fftfreq,
rfftfreq, fftshift, ifftshift; r2r.py: DCT and DST with scipy.fft's signatures; r2r_split.py:
real-to-real transforms along axes that stay split; split_axis.py: the four-step FFT along a
split axis, with bluestein.py for lengths that do not divide; split_permute.py: reorders of one
split axis by point-to-point sends; mixed.py: Fourier on some axes, cosine or sine on others;
padding.py: padded transforms for dealiasing. The per-block kernels are in kernels/.
"""
