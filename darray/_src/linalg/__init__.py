"""Distributed linear algebra: factorizations that never gather the matrix (issue 50).

Modules (this face imports nothing; the namespace functions in api/linalg.py dispatch here):

* tall_skinny.py: one matrix axis split over the mesh, the other small. TSQR (a local QR per
  block, then one QR of the stacked small R factors) and what is built on it: qr, svd (reduced),
  svdvals, pinv, matrix_rank, matrix_norm (2, -2, 'nuc'). Short-wide matrices (the column axis
  split) go through their conjugate transpose, block by block.
* contraction.py: two-operand contractions (matmul, tensordot, vecdot, einsum) over split
  axes without gathering an operand: SUMMA panels, rings of collective-permutes, partial
  products plus a psum; `distributed_matmul` for the factorizations built on matmul.
* least_squares.py: `lstsq` (numpy's name, signature and 4-tuple), on the tall-skinny path
  where the layout fits and on the gathering path otherwise.
"""
