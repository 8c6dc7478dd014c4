"""float64 numpy references for darray.particles: painting by np.add.at on the global grid,
readout by fancy indexing, written from the schemes' textbook definitions (cell centres at
integers, periodic box)."""
from __future__ import annotations

import itertools

import numpy as np


def stencil_numpy(scheme: str, pos):
    if scheme == "ngp":
        return np.floor(pos + 0.5).astype(int), [np.ones_like(pos)]
    if scheme == "cic":
        base = np.floor(pos)
        f = pos - base
        return base.astype(int), [1 - f, f]
    near = np.floor(pos + 0.5)
    d = pos - near
    return (near - 1).astype(int), [0.5 * (0.5 - d) ** 2, 0.75 - d ** 2, 0.5 * (0.5 + d) ** 2]


def _corners(disp, scheme):
    shape = disp.shape[:-1]
    q = np.indices(shape).astype(np.float64)
    bases, weights = zip(*[stencil_numpy(scheme, q[a] + disp[..., a]) for a in range(len(shape))])
    for offsets in itertools.product(range(len(weights[0])), repeat=len(shape)):
        index = tuple((b + o) % n for b, o, n in zip(bases, offsets, shape))
        w = np.prod([weights[a][o] for a, o in enumerate(offsets)], axis=0)
        yield index, w


def paint_numpy(disp, weights=None, scheme="cic"):
    disp = np.asarray(disp, np.float64)
    rho = np.zeros(disp.shape[:-1])
    mass = np.ones(rho.shape) if weights is None else np.asarray(weights, np.float64)
    for index, w in _corners(disp, scheme):
        np.add.at(rho, index, w * mass)
    return rho


def readout_numpy(field, disp, scheme="cic"):
    disp = np.asarray(disp, np.float64)
    field = np.asarray(field, np.float64)
    extra = field.shape[disp.ndim - 1:]
    out = np.zeros(disp.shape[:-1] + extra)
    for index, w in _corners(disp, scheme):
        out += w.reshape(w.shape + (1,) * len(extra)) * field[index]
    return out
