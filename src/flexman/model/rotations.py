"""Elementary 4x4 rotations and URDF's roll-pitch-yaw, written once for the model (URDF reading,
overlays) and the dynamics (DH transforms, joint placements)."""
from __future__ import annotations

import numpy as np


def rot_x(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[1.0, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]])


def rot_y(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, 0.0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]])


def rot_z(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def rpy_matrix(rpy):
    """4x4 rotation of URDF's fixed-axis roll, pitch, yaw: Rz(yaw) Ry(pitch) Rx(roll)."""
    return rot_z(rpy[2]) @ rot_y(rpy[1]) @ rot_x(rpy[0])


def matrix_rpy(R) -> np.ndarray:
    """Roll, pitch, yaw of a rotation matrix (the inverse of :func:`rpy_matrix`)."""
    pitch = np.arctan2(-R[2, 0], np.hypot(R[0, 0], R[1, 0]))
    if np.hypot(R[0, 0], R[1, 0]) < 1e-12:  # gimbal lock: put everything in yaw
        return np.array([0.0, pitch, np.arctan2(-R[0, 1], R[1, 1])]) + 0.0
    return np.array([np.arctan2(R[2, 1], R[2, 2]), pitch, np.arctan2(R[1, 0], R[0, 0])]) + 0.0  # no -0
