"""Emptied: the engine's rooms are arguments.py (the argument policy), apply.py (the apply
paths and their table), operands.py (the mesh rule); the layout helpers live in
layout/layout.py and layout/axes.py, the padding masks in placement/physical.py.

Only the FFT wing (fft/api.py, fft/freq.py, edited by its own owner) still imports these two
names from here; delete this module when those imports name engine/arguments.py and
engine/apply.py.
"""
from __future__ import annotations

from darray._src.engine.apply import apply_logical as apply_logical
from darray._src.engine.arguments import ensure_array as ensure_array
