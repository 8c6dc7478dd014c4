"""Backends: the communication that executes darray's pure-data plans.

registry.py: which backend runs an FFT plan or a halo fill, chosen by name or by config, with
the native ones loaded late; errors.py: what a backend that cannot run raises; jax/: the
pure-JAX backend (fft_exec.py, halo_exchange.py, transpose.py); mpi_exec.py and
mpi_transport.py: the MPI backend (CPU); cudecomp.py and nccl.py: the GPU backends. This face
imports nothing, so importing one backend module runs no other.
"""
