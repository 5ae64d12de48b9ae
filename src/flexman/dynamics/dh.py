"""Denavit-Hartenberg link transforms, split as A(q) = P @ J(q) @ N.

J is the joint motion (Rz for revolute, Tz for prismatic), P and N are constant. Then
dA/dq = P @ G @ J @ N with G the joint's 4x4 generator, and d2A/dq2 = P @ G @ G @ J @ N.
Standard DH: A = Rz(theta) Tz(d) Tx(a) Rx(alpha); modified (Craig): A = Rx(alpha) Tx(a) Rz(theta) Tz(d).
"""
from __future__ import annotations

import numpy as np

from . import ops

GEN_REVOLUTE = np.array([[0.0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
GEN_PRISMATIC = np.array([[0.0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]])


def rot_x(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[1.0, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]])


def rot_z(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def trans(x=0.0, y=0.0, z=0.0):
    out = np.eye(4)
    out[:3, 3] = (x, y, z)
    return out


def _snap(T, tol=1e-15):
    """Round entries within tol of 0 or +-1 (cos(pi/2) = 6e-17) so that traced equations
    carry no spurious terms."""
    T = T.copy()
    for target in (0.0, 1.0, -1.0):
        T[np.abs(T - target) < tol] = target
    return T


def split(link, convention: str):
    """Constant parts (P, N) and the joint offset of a link's DH transform."""
    P, N, offset = _split(link, convention)
    return _snap(P), _snap(N), offset


def _split(link, convention: str):
    revolute = link.joint == "revolute"
    if convention == "standard":
        if revolute:
            return np.eye(4), trans(z=link.d) @ trans(x=link.a) @ rot_x(link.alpha), link.theta
        return rot_z(link.theta), trans(x=link.a) @ rot_x(link.alpha), link.d
    pre = rot_x(link.alpha) @ trans(x=link.a)
    if revolute:
        return pre, trans(z=link.d), link.theta
    return pre @ rot_z(link.theta), np.eye(4), link.d


def joint_motion(q, revolute: bool, like=None):
    """J(q) as a stack (..., 4, 4): rotation about z or translation along z."""
    like = q if like is None else like
    out = ops.zeros_like_batch(np.shape(q), (4, 4), ops.asarray(like))
    if revolute:
        c, s = ops.cos(q), ops.sin(q)
        out[..., 0, 0] = c
        out[..., 0, 1] = -s
        out[..., 1, 0] = s
        out[..., 1, 1] = c
        out[..., 2, 2] = 1
    else:
        out[..., 0, 0] = out[..., 1, 1] = out[..., 2, 2] = 1
        out[..., 2, 3] = q
    out[..., 3, 3] = 1
    return out
