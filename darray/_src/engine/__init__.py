"""What every namespace section uses: the shared mechanism below api/ and extras/.

common.py: operand handling, the physical and logical apply paths, output layouts and axis
normalisation; arguments.py: what a function accepts where it takes an array; operands.py: the
rule for operands on different meshes; views.py: results that write through to their base;
slicing.py: basic-key reads and writes on the physical blocks; joining.py: concat and stack
without gathering; compaction.py: boolean masks and other data-dependent shapes;
reduce_scatter.py: a sum whose result is split again.
"""
