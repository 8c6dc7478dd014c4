"""The layout floor: the Layout and what needs only a Layout.

layout.py: `Layout`, pure data (shape, mesh, split axes, padding, halos) tested without devices;
axes.py: mesh-axis names and their sizes; host.py: host reads of a multi-process array (local,
or one explicit collective); memory.py: refusing at creation an array that can never fit.
"""
