"""Mimic joints in traced code: the full robot is traced at ``q_full = G q + c`` and its terms
reduced, ``M = G^T M_full G``, ``b = G^T b_full``, ``tau = G^T tau_full`` (the numeric API does the
same in :mod:`flexman.dynamics.api`). G is a constant of the robot with one or two non-zero
entries per column, so only those products are recorded: a serial arm's tape is untouched and
a mimic robot's costs a few multiplications more than its full model's."""
from __future__ import annotations

import numpy as np


def _column_entries(G):
    """For each column a of G, the (row, value) pairs where G is non-zero."""
    return [[(int(i), float(G[i, a])) for i in np.flatnonzero(G[:, a])] for a in range(G.shape[1])]


def _objects(values):
    return np.array(list(values) + [None], dtype=object)[:-1]


def expand(G, c, v, offset=True):
    """Traced ``G v + c`` (``offset=False``: ``G v``, for rates and accelerations)."""
    out = []
    for i in range(G.shape[0]):
        s = float(c[i]) if offset else 0.0
        for a in np.flatnonzero(G[i]):
            s = s + float(G[i, a]) * v[a]
        out.append(s)
    return _objects(out)


def reduce_vector(G, v):
    """Traced ``G^T v``."""
    out = []
    for entries in _column_entries(G):
        s = 0.0
        for i, g in entries:
            s = s + g * v[i]
        out.append(s)
    return _objects(out)


def reduce_matrix(G, M):
    """Traced ``G^T M G`` for a symmetric M (the lower triangle computed, mirrored)."""
    cols = _column_entries(G)
    n = len(cols)
    out = np.empty((n, n), dtype=object)
    for a in range(n):
        for b in range(a + 1):
            s = 0.0
            for i, gi in cols[a]:
                for j, gj in cols[b]:
                    s = s + (gi * gj) * M[i, j]
            out[a, b] = out[b, a] = s
    return out


def full_coordinates(robot, q):
    """(the robot whose links are traced, its coordinates) for reduced coordinates ``q``: the
    full robot at ``G q + c`` for a robot with mimic joints, else the robot and ``q`` as they are."""
    if not getattr(robot, "mimic", None):
        return robot, q
    G, c = robot.mimic_map()
    return robot.full, expand(G, c, q)


def full_state(robot, q, *rates):
    """:func:`full_coordinates` with rates and accelerations: (the traced robot, its q, then each
    of ``rates`` as ``G v``) for a robot with mimic joints, else everything as it is."""
    traced, q_full = full_coordinates(robot, q)
    if traced is robot:
        return (robot, q, *rates)
    G, c = robot.mimic_map()
    return (traced, q_full, *(expand(G, c, v, offset=False) for v in rates))
