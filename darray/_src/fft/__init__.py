"""darray.fft's implementation: distributed transforms on DistArrays (the extension floor).

api.py: the Array API fft extension (fft, ifft, rfft, fftn, ... and `run_r2r`), which builds a
plan (plans/fft_planner.py) and runs it on a backend (backends/registry.py); freq.py: fftfreq,
rfftfreq, fftshift, ifftshift; r2r.py: DCT and DST with scipy.fft's signatures; r2r_split.py:
real-to-real transforms along axes that stay split; split_axis.py: the four-step FFT along a
split axis, with bluestein.py for lengths that do not divide; split_permute.py: reorders of one
split axis by point-to-point sends; mixed.py: Fourier on some axes, cosine or sine on others;
padding.py: padded transforms for dealiasing. The per-block kernels are in kernels/.
"""
