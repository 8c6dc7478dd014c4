"""What every namespace section uses: the shared mechanism below api/ and extras/.

arguments.py: the argument policy (what a function accepts, how host data is placed, no
`out=`); placing.py: `asarray` and `redistribute`; operands.py: the rule for operands on
different meshes; apply.py: the apply paths, with a table of which to call when; views.py:
results that write through to their base; slicing.py: basic-key reads and writes on the
physical blocks; joining.py: concat and stack without gathering; compaction.py: boolean masks
and other data-dependent shapes; reduce_scatter.py: a sum whose result is split again.
"""
