"""The placement floor: where the blocks of an array live (plans/ shares the floor).

physical.py: moving between the logical array and its padded, haloed storage; placement.py:
the rule that places an array made without a mesh; distributed.py: starting a multi-process
run (launcher detection, jax.distributed); rebuilt.py: layouts of the DistArrays that JAX
transformations rebuild around leaves of another rank.
"""
