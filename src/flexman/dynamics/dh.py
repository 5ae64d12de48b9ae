"""Denavit-Hartenberg link transforms, split as A(q) = P @ J(q) @ N.

J is the joint motion (Rz for revolute, Tz for prismatic), P and N are constant. Then
dA/dq = P @ G @ J @ N with G the joint's 4x4 generator, and d2A/dq2 = P @ G @ G @ J @ N.
Standard DH: A = Rz(theta) Tz(d) Tx(a) Rx(alpha); modified (Craig): A = Rx(alpha) Tx(a) Rz(theta) Tz(d).
A joint with a general placement (URDF style): A = O Rot(axis, q) with O = Trans(xyz) Rz Ry Rx(rpy);
written as P = O R, N = R^T with R a rotation taking z onto the axis, so that J(q) is again
about (along) z and every algorithm takes any fixed transform before the joint.
"""
from __future__ import annotations

import numpy as np

from ..model.rotations import rot_x, rot_y, rot_z, rpy_matrix  # noqa: F401 (part of this module's API)
from . import ops

GEN_REVOLUTE = np.array([[0.0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
GEN_PRISMATIC = np.array([[0.0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]])


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


def align_z(axis):
    """4x4 rotation taking z onto the unit vector ``axis`` (identity for z; for a coordinate
    axis a signed permutation, so traced equations keep exact zeros and ones)."""
    axis = np.asarray(axis, float)
    z = np.array([0.0, 0.0, 1.0])
    out = np.eye(4)
    c = float(axis @ z)
    if c > 1 - 1e-15:
        return out
    if c < -1 + 1e-15:
        return rot_x(np.pi)
    v = np.cross(z, axis)
    s = np.linalg.norm(v)
    k = v / s
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    out[:3, :3] = np.eye(3) + s * K + (1 - c) * K @ K  # Rodrigues
    return out


def link_convention(link, convention: str) -> str:
    """The convention that places a link's beam: a placed joint's frame sits at the joint,
    like modified DH, so its beam starts at the frame origin."""
    return "modified" if link.placement is not None else convention


def split(link, convention: str):
    """Constant parts (P, N) and the joint offset of a link's transform A = P J(q + offset) N."""
    P, N, offset = _split(link, convention)
    return _snap(P), _snap(N), offset


def placement_parts(placement):
    """(origin rotation-with-alignment O_R R, N = R^T) of a placed joint, without the translation."""
    R = align_z(placement.axis)
    return rpy_matrix(placement.rpy) @ R, R.T


def _split(link, convention: str):
    if link.placement is not None:
        rot, N = placement_parts(link.placement)
        return trans(*link.placement.xyz) @ rot, N, 0.0
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
