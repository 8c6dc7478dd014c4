"""Pure-data plans, built without devices from layouts alone.

fft_plan.py: the distributed FFT plan (stages: local transforms, transposes, merges);
fft_planner.py: candidate plans, the cost model and exact retracing that choose one;
split_plan.py: the typed per-axis stages of a transform along axes that stay split;
halo_plan.py: which cell fills each ghost cell along one axis; halo_spec.py: the arguments of
`halo` (widths, axes, boundary rules) normalised, with actionable errors. The backends execute
these plans; the extensions (fft/, halo/) build them.
"""
